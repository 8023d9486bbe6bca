"""JSON over HTTP to model servers: load-balanced URLs, timeouts, retries with back-off.

Retried: connection errors, timeouts, 5xx and 429. Never retried: other 4xx
(the request itself is wrong), and a connection that no URL has accepted yet
(a wrong address, or a server not started: it fails within the connect time). A request that finally fails raises
:class:`RequestFailed` with the status the sample gets (timeout, unavailable,
error); the message never contains request headers, and URLs in it are
redacted (no ``user:pass@``, no ``?token=``), so credentials stay out of logs,
scored rows and metrics.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Optional

import requests

from rewardsmith.common.network import network_error_summary
from rewardsmith.common.redaction import redact_text
from rewardsmith.plugins.scoring import ERROR, INVALID, TIMEOUT, UNAVAILABLE


class RequestFailed(Exception):
    """A request failed for good; ``status`` is the sample status it maps to."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(redact_text(message))  # it lands in scored rows and logs
        self.status = status


def retryable(status_code: int) -> bool:
    """Server-side trouble worth retrying: 5xx and 429 (too many requests)."""
    return status_code >= 500 or status_code == 429


class JsonClient:
    """POSTs JSON to the least busy of ``urls`` (ties in turn), retrying on another URL.

    ``backoff`` is the first retry delay in seconds, doubled each retry.
    ``headers`` (e.g. an Authorization bearer) are sent with every request.
    """

    def __init__(self, urls: list[str], timeout: float, max_retries: int, backoff: float,
                 headers: Optional[dict[str, str]] = None) -> None:
        if not urls:
            raise ValueError("JsonClient needs at least one URL")
        self.urls = list(urls)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._headers = dict(headers or {})
        self._lock = threading.Lock()
        self._in_flight = [0] * len(self.urls)
        self._turn = 0
        self._local = threading.local()
        self.retries = 0
        self._answered = False  # whether any URL has answered: until then, a refused connection is not retried

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _pick(self) -> int:
        with self._lock:
            n = len(self.urls)
            order = [(self._turn + k) % n for k in range(n)]
            best = min(order, key=lambda i: self._in_flight[i])
            self._turn = (best + 1) % n
            self._in_flight[best] += 1
            return best

    def post(self, payload: Any, path: str = "") -> Any:
        """The decoded JSON answer to ``payload`` POSTed to ``url + path``; raises :class:`RequestFailed`."""
        last = RequestFailed(UNAVAILABLE, "no attempt made")
        refused: set[int] = set()
        for attempt in range(self.max_retries + 1):
            if attempt:
                with self._lock:
                    self.retries += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))
            index = self._pick()
            url = self.urls[index].rstrip("/") + path
            try:
                response = self._session().post(url, json=payload, headers=self._headers, timeout=self.timeout)
            except requests.ConnectionError as exc:  # a connection refused or not made in time (ConnectTimeout)
                last = RequestFailed(UNAVAILABLE, f"{url}: {network_error_summary(exc)}")
                refused.add(index)
                if not self._answered and len(refused) == len(self.urls):
                    raise last from None  # no URL has ever answered: a wrong address or a server not started
                continue
            except requests.Timeout:
                last = RequestFailed(TIMEOUT, f"{url}: no answer within {self.timeout:g}s")
                continue
            except requests.RequestException as exc:
                last = RequestFailed(UNAVAILABLE, f"{url}: {network_error_summary(exc)}")
                continue
            finally:
                with self._lock:
                    self._in_flight[index] -= 1
            self._answered = True
            if response.status_code >= 400:
                last = RequestFailed(UNAVAILABLE if retryable(response.status_code) else ERROR,
                                     f"{url}: HTTP {response.status_code}: {response.text[:200]}")
                if retryable(response.status_code):
                    continue
                raise last
            try:
                return response.json()
            except ValueError:
                raise RequestFailed(INVALID, f"{url}: answer is not JSON: {response.text[:200]!r}") from None
        raise last

    def take_retries(self) -> int:
        """Retries made since the previous call."""
        with self._lock:
            n, self.retries = self.retries, 0
            return n
