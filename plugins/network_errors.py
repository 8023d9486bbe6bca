"""Telling a scorer's failed network call apart from a bug in the scorer.

A custom file that calls a judge or a service over HTTP fails with that
library's connection or timeout error when the service is down; that sample
could not be judged (``unavailable``), it was not judged wrong. The check goes
by exception type names and modules, so it needs none of the HTTP libraries
installed, and follows the exception's chain (``raise X from exc`` and
implicit chaining), since files often wrap the original error.
"""
from __future__ import annotations

import re
import traceback
import urllib.error
from typing import Optional

# Top-level packages whose connection/timeout exceptions mean "the service did not answer".
_NETWORK_PACKAGES = {"requests", "urllib3", "httpx", "httpcore", "aiohttp", "openai", "anthropic", "grpc",
                     "websockets", "http"}
_NETWORK_WORDS = ("Connect", "Connection", "Timeout", "Network", "Unavailable", "ProtocolError",
                  "RemoteDisconnected", "MaxRetry")
# Frames a network timeout is raised from (TimeoutError is also what a scorer's own guard raises).
_NETWORK_FILES = ("socket.py", "ssl.py", "selectors.py", "/http/client.py", "/urllib/request.py", "/asyncio/")
_RETRYABLE_HTTP = {408, 429, 500, 502, 503, 504}


def is_network_failure(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a failed network call."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _is_network(current):
            return True
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return False


def _is_network(exc: BaseException) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in _RETRYABLE_HTTP
    if isinstance(exc, (ConnectionError, urllib.error.URLError)):
        return True
    if isinstance(exc, OSError) and type(exc).__name__ == "gaierror":
        return True
    if isinstance(exc, TimeoutError):
        frames = traceback.extract_tb(exc.__traceback__)
        return bool(frames) and any(part in frames[-1].filename for part in _NETWORK_FILES)
    packages = {cls.__module__.split(".")[0] for cls in type(exc).__mro__}
    if not packages & _NETWORK_PACKAGES:
        return False
    if any(word in cls.__name__ for cls in type(exc).__mro__ for word in _NETWORK_WORDS):
        return True
    # An HTTP client's status error (raise_for_status, openai's APIStatusError) on a busy or failing server.
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return status in _RETRYABLE_HTTP
