"""Answers of the LLM judge kept for identical requests (group sampling, repeated validation)."""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Optional

from rewardsmith.common.canonical import canonical_json


def request_key(payload: dict[str, Any]) -> str:
    """A digest of everything that decides the judge's answer: model, messages and sampling settings."""
    return hashlib.sha256(canonical_json(payload, "the judge request").encode()).hexdigest()


class JudgeCache:
    """A least-recently-used map from :func:`request_key` to the judge's text, counting hits and misses.
    ``size`` 0 keeps nothing."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Optional[str]:
        with self._lock:
            text = self._items.get(key)
            if text is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return text

    def record_hit(self) -> None:
        """Count a request answered by an identical one of the same batch."""
        with self._lock:
            self.hits += 1

    def put(self, key: str, text: str) -> None:
        if not self.size:
            return
        with self._lock:
            self._items[key] = text
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def take_counts(self) -> tuple[int, int]:
        """``(hits, misses)`` since the previous call."""
        with self._lock:
            counts = (self.hits, self.misses)
            self.hits = self.misses = 0
            return counts
