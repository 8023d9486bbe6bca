"""``SandboxClient``: a client for our sandbox server or any SandboxFusion server.

``requests`` with a pooled session, a cap on requests in flight, and retries
with exponential backoff on connection errors, 5xx and 429 (honouring
``Retry-After``). Read timeouts follow the request's own compile and run
timeouts. The URL may be the server's base URL or verl-style
``http://host:8080/run_code``, with an optional ``?token=`` (what verl users
write, since verl sends no headers).
"""
from __future__ import annotations

import base64
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter


class SandboxUnavailable(ConnectionError):
    """The sandbox could not be reached or kept failing after every retry."""


class SandboxRequestError(ValueError):
    """The sandbox rejected the request itself (4xx other than 429)."""

    def __init__(self, message: str, status_code: int):
        super().__init__(message)
        self.status_code = status_code


_RETRY_STATUS = {429, 500, 502, 503, 504}


class SandboxClient:
    """Thread-safe; share one instance across threads to share its connection pool."""

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        max_concurrency: int = 64,
        retries: int = 4,
        backoff_s: float = 0.5,
        timeout_margin_s: float = 15.0,
        connect_timeout_s: float = 5.0,
    ):
        self.base_url, url_token = _split_url(url)
        token = token or url_token
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_margin_s = timeout_margin_s
        self.connect_timeout_s = connect_timeout_s
        self.max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=max_concurrency, pool_block=True)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers["Accept"] = "application/json"
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"
        self._batch_supported: Optional[bool] = None

    # -- endpoints ---------------------------------------------------------------

    def run_code(
        self,
        code: str,
        language: str = "python",
        *,
        stdin: Optional[str] = None,
        compile_timeout: float = 10.0,
        run_timeout: float = 10.0,
        memory_limit_mb: int = -1,
        files: Optional[dict[str, bytes]] = None,
        fetch_files: Optional[list[str]] = None,
    ) -> dict[str, Any]:
        """``POST /run_code``; returns the response body (SandboxFusion's shape)."""
        body = {
            "code": code,
            "language": language,
            "stdin": stdin,
            "compile_timeout": compile_timeout,
            "run_timeout": run_timeout,
            "memory_limit_MB": memory_limit_mb,
            "files": {path: base64.b64encode(data).decode() for path, data in (files or {}).items()},
            "fetch_files": list(fetch_files or []),
        }
        return self._post("/run_code", body, compile_timeout + run_timeout)

    def run_batch(
        self,
        code: str,
        stdins: list[Optional[str]],
        language: str = "python",
        *,
        compile_timeout: float = 10.0,
        run_timeout: float = 10.0,
        memory_limit_mb: int = -1,
    ) -> dict[str, Any]:
        """Run one program once per stdin: ``{"status", "message", "compile_result", "results": [...]}``.

        Uses ``POST /v1/run_batch`` (compile once) when the server has it, and
        falls back to concurrent ``/run_code`` calls against plain SandboxFusion.
        """
        if self._batch_supported is not False:
            body = {
                "code": code,
                "language": language,
                "compile_timeout": compile_timeout,
                "run_timeout": run_timeout,
                "memory_limit_MB": memory_limit_mb,
                "cases": [{"stdin": s} for s in stdins],
            }
            try:
                reply = self._post("/v1/run_batch", body, compile_timeout + run_timeout * max(1, len(stdins)))
                self._batch_supported = True
                return reply
            except SandboxRequestError as exc:
                if exc.status_code != 404:
                    raise
                self._batch_supported = False

        def one(stdin):
            return self.run_code(code, language, stdin=stdin, compile_timeout=compile_timeout,
                                 run_timeout=run_timeout, memory_limit_mb=memory_limit_mb)

        with ThreadPoolExecutor(max_workers=min(len(stdins), self.max_concurrency) or 1) as pool:
            replies = list(pool.map(one, stdins))
        return _merge_replies(replies)

    def ping(self) -> bool:
        """True when ``GET /v1/ping`` answers."""
        try:
            reply = self._session.get(self.base_url + "/v1/ping", timeout=self.connect_timeout_s)
        except requests.RequestException:
            return False
        return reply.ok

    def status(self) -> dict[str, Any]:
        """``GET /v1/status`` (our server only): isolation layers, queue depth, verdict counts."""
        return self._request("GET", "/v1/status", None, 0.0)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> "SandboxClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------

    def _post(self, path: str, body: dict, work_s: float) -> dict[str, Any]:
        return self._request("POST", path, body, work_s)

    def _request(self, method: str, path: str, body: Optional[dict], work_s: float) -> dict[str, Any]:
        url = self.base_url + path
        timeout = (self.connect_timeout_s, work_s + self.timeout_margin_s)
        last_problem = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * (2 ** attempt) * (0.5 + random.random())
            try:
                with self._slots:
                    reply = self._session.request(method, url, json=body, timeout=timeout)
            except requests.RequestException as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            else:
                if reply.status_code < 400:
                    try:
                        return reply.json()
                    except ValueError as exc:
                        raise SandboxUnavailable(f"{method} {url} answered {reply.status_code} with a body that "
                                                 f"is not JSON: {reply.text[:200]!r}") from exc
                if reply.status_code not in _RETRY_STATUS:
                    raise SandboxRequestError(f"{method} {url} -> {reply.status_code}: {_detail(reply)}",
                                              reply.status_code)
                last_problem = f"HTTP {reply.status_code}: {_detail(reply)}"
                retry_after = reply.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    wait = max(wait, float(retry_after))
            if attempt < self.retries:
                time.sleep(wait)
        raise SandboxUnavailable(f"sandbox at {self.base_url} unavailable after {self.retries + 1} attempts: "
                                 f"{last_problem}")


def _split_url(url: str) -> tuple[str, Optional[str]]:
    """Base URL without a ``/run_code`` suffix, and a ``?token=`` found in it (verl-style URLs)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for suffix in ("/run_code", "/v1/run_batch"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    token = parse_qs(parts.query).get("token", [None])[0]
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), token


def _detail(reply: requests.Response) -> str:
    try:
        return str(reply.json().get("detail", reply.text))
    except ValueError:
        return reply.text[:500]


def _merge_replies(replies: list[dict]) -> dict[str, Any]:
    """Shape per-case ``/run_code`` replies like a ``/v1/run_batch`` reply."""
    compile_result = next((r.get("compile_result") for r in replies if r.get("compile_result")), None)
    statuses = {r.get("status") for r in replies}
    status = "SandboxError" if "SandboxError" in statuses else "Success" if statuses == {"Success"} else "Failed"
    compiled = compile_result is None or compile_result.get("return_code") == 0
    return {
        "status": status,
        "message": "; ".join(sorted({r.get("message", "") for r in replies} - {""})),
        "compile_result": compile_result,
        "results": [r.get("run_result") for r in replies] if compiled else [],
    }
