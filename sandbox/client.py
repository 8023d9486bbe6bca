"""``SandboxClient``: a client for our sandbox server or any SandboxFusion server.

``requests`` with a pooled session, a cap on requests in flight (not
samples: against a plain SandboxFusion every test case is a request), and
retries with exponential backoff on connection errors, 5xx and 429
(honouring ``Retry-After``); a server that has never answered is not retried
(a wrong URL fails within the connect timeout). Read timeouts follow the request's own compile
and run timeouts. The URL may be the server's base URL or verl-style
``http://host:8080/run_code``, with an optional ``?token=`` (what verl users
write, since verl sends no headers).

Which kind of server answers is found by a capability check (``GET
/v1/status`` answering with our server's fields), never by the status code of
a failed call: a gateway answering 401/403/405 on an unknown path must not
make every sample unavailable. Against a plain SandboxFusion, which runs
everything it is sent at once, the cap adapts to what the server sustains
(:class:`AdaptiveLimit`).
"""
from __future__ import annotations

import base64
import logging
import random
import statistics
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter

from rewardsmith.common.network import network_error_summary
from rewardsmith.common.redaction import redact_text, redact_url


class SandboxUnavailable(ConnectionError):
    """The sandbox could not be reached or kept failing after every retry."""


class SandboxRequestError(ValueError):
    """The sandbox rejected the request itself (4xx other than 429)."""

    def __init__(self, message: str, status_code: int):
        super().__init__(message)
        self.status_code = status_code


_RETRY_STATUS = {429, 500, 502, 503, 504}
_OVERLOAD_STATUS = {429, 503}
# Status codes that mean "no such endpoint" on a server that passed the capability check.
_NO_ENDPOINT = {404, 405, 501}
# Requests in flight a plain SandboxFusion starts with, before adapting.
PLAIN_START = 8

log = logging.getLogger("rewardsmith.sandbox.client")


class AdaptiveLimit:
    """A cap on requests in flight, optionally adapting to the server (additive
    increase, multiplicative decrease).

    Each round of ``max(4, limit)`` answered requests compares its median
    latency with the best round minimum of the last ten rounds: above twice
    that, the server is queueing work (or contended), and the limit drops by a
    quarter; otherwise it grows by one, up to ``maximum``. An overloaded
    answer (429/503, a refused or reset connection, a read timeout) halves it.
    """

    def __init__(self, maximum: int, adaptive: bool = False, start: Optional[int] = None) -> None:
        self.maximum = maximum
        self.adaptive = adaptive
        self.limit = float(min(maximum, start or maximum))
        self.in_flight = 0
        self.peak = 0
        self._cond = threading.Condition()
        self._round: list[float] = []
        self._round_minima: deque[float] = deque(maxlen=10)

    @property
    def current(self) -> int:
        """The cap now (at least 1)."""
        return max(1, int(self.limit))

    def start_adapting(self, start: int) -> None:
        """Switch to adapting, from ``start`` requests in flight."""
        with self._cond:
            self.adaptive = True
            self.limit = float(max(1, min(self.maximum, start)))

    def acquire(self) -> None:
        with self._cond:
            while self.in_flight >= self.current:
                self._cond.wait()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def release(self, latency: Optional[float] = None, overloaded: bool = False) -> None:
        with self._cond:
            self.in_flight -= 1
            if self.adaptive:
                self._adapt(latency, overloaded)
            self._cond.notify_all()

    def _adapt(self, latency: Optional[float], overloaded: bool) -> None:
        if overloaded:
            self.limit = max(1.0, self.limit / 2)
            self._round.clear()
            return
        if latency is None:
            return
        self._round.append(latency)
        if len(self._round) < max(4, self.current):
            return
        self._round_minima.append(min(self._round))
        median = statistics.median(self._round)
        self._round.clear()
        if median > 2 * min(self._round_minima):
            self.limit = max(1.0, self.limit * 0.75)
        else:
            self.limit = min(float(self.maximum), self.limit + 1)


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
        self.shown_url = redact_url(self.base_url)  # in messages: no user:pass@
        token = token or url_token
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_margin_s = timeout_margin_s
        self.connect_timeout_s = connect_timeout_s
        self.max_concurrency = max_concurrency
        self.limit = AdaptiveLimit(max_concurrency)
        self._session = requests.Session()
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=max_concurrency, pool_block=True)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers["Accept"] = "application/json"
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"
        self._batch_supported: Optional[bool] = None
        self._detect_lock = threading.Lock()
        self._probe_failed_at = -float("inf")
        self._answered = False  # whether the server has ever answered this client

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
        if self.batch_supported():
            body = {
                "code": code,
                "language": language,
                "compile_timeout": compile_timeout,
                "run_timeout": run_timeout,
                "memory_limit_MB": memory_limit_mb,
                "cases": [{"stdin": s} for s in stdins],
            }
            try:
                return self._post("/v1/run_batch", body, compile_timeout + run_timeout * max(1, len(stdins)))
            except SandboxRequestError as exc:
                if exc.status_code not in _NO_ENDPOINT:
                    raise
                self._use_plain(f"/v1/run_batch answered {exc.status_code}")

        def one(stdin):
            return self.run_code(code, language, stdin=stdin, compile_timeout=compile_timeout,
                                 run_timeout=run_timeout, memory_limit_mb=memory_limit_mb)

        # The cap on requests in flight is shared by every sample; more threads would only wait on it.
        with ThreadPoolExecutor(max_workers=min(len(stdins), self.limit.current) or 1) as pool:
            replies = list(pool.map(one, stdins))
        return _merge_replies(replies)

    def batch_supported(self) -> bool:
        """Whether the server has ``/v1/run_batch``, from a capability check made once.

        Our server answers ``GET /v1/status`` with its workers and languages; a
        plain SandboxFusion (404) or a gateway (401/403/405, an HTML page) does
        not, and gets one ``/run_code`` request per case under an adaptive cap.
        An unreachable server is asked again on the next call.
        """
        with self._detect_lock:
            if self._batch_supported is None and time.monotonic() - self._probe_failed_at > self.connect_timeout_s:
                try:
                    reply = self._session.get(self.base_url + "/v1/status", timeout=(self.connect_timeout_s, 30))
                except requests.RequestException:
                    # Undecided (asked again later): /run_code will report the server's state.
                    self._probe_failed_at = time.monotonic()
                    return False
                self._answered = True
                try:
                    body = reply.json() if reply.ok else None
                except ValueError:
                    body = None
                if isinstance(body, dict) and {"workers", "languages"} <= set(body):
                    self._batch_supported = True
                else:
                    self._use_plain(f"GET /v1/status answered {reply.status_code}")
            return bool(self._batch_supported)

    def _use_plain(self, why: str) -> None:
        if self._batch_supported is False:
            return
        self._batch_supported = False
        self.limit.start_adapting(PLAIN_START)
        log.warning(
            "sandbox at %s has no batch endpoint (%s): a plain SandboxFusion server. Each test case is one "
            "request; at most %d requests in flight, adapting to the latency it sustains (starting at %d). "
            "See docs/sandbox.md.", self.shown_url, why, self.max_concurrency, self.limit.current,
        )

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
        url, shown = self.base_url + path, self.shown_url + path
        timeout = (self.connect_timeout_s, work_s + self.timeout_margin_s)
        last_problem = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * (2 ** attempt) * (0.5 + random.random())
            self.limit.acquire()
            started = time.perf_counter()
            try:
                reply = self._session.request(method, url, json=body, timeout=timeout)
            except requests.RequestException as exc:
                self.limit.release(overloaded=isinstance(exc, (requests.ConnectionError, requests.Timeout)))
                last_problem = redact_text(network_error_summary(exc))
                if isinstance(exc, requests.ConnectionError) and not self._answered:
                    # Never reached (a wrong URL, a server not started): retrying would only add the back-off.
                    raise SandboxUnavailable(f"sandbox at {self.shown_url} cannot be reached: {last_problem}") from None
            else:
                self._answered = True
                self.limit.release(time.perf_counter() - started, overloaded=reply.status_code in _OVERLOAD_STATUS)
                if reply.status_code < 400:
                    try:
                        return reply.json()
                    except ValueError as exc:
                        raise SandboxUnavailable(f"{method} {shown} answered {reply.status_code} with a body that "
                                                 f"is not JSON: {reply.text[:200]!r}") from exc
                if reply.status_code not in _RETRY_STATUS:
                    raise SandboxRequestError(f"{method} {shown} -> {reply.status_code}: {_detail(reply)}",
                                              reply.status_code)
                last_problem = f"HTTP {reply.status_code}: {_detail(reply)}"
                retry_after = reply.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    wait = max(wait, float(retry_after))
            if attempt < self.retries:
                time.sleep(wait)
        raise SandboxUnavailable(f"sandbox at {self.shown_url} unavailable after {self.retries + 1} attempts: "
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


_shared: dict[tuple, SandboxClient] = {}
_shared_lock = threading.Lock()


def shared_client(url: str, *, max_concurrency: int = 64, backoff_s: float = 0.5) -> SandboxClient:
    """The one client of this process for ``url`` and these settings, so its cap on
    requests in flight and its knowledge of the server are shared by every caller."""
    key = (url, max_concurrency, backoff_s)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = SandboxClient(url, max_concurrency=max_concurrency, backoff_s=backoff_s)
        return _shared[key]
