"""Spacing request starts so that at most ``rpm`` begin in any minute."""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional


class RateLimiter:
    """``wait()`` returns when the caller may start a request: starts are at least
    ``60 / rpm`` seconds apart (no bursts). ``rpm`` None never waits."""

    def __init__(self, rpm: Optional[int], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)
