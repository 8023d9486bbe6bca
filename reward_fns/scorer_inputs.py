"""Input checks shared by the built-in scorers, so that a malformed row fails
with a message naming the scorer and the field instead of scoring 0 silently.
"""
from __future__ import annotations

from typing import Any


def require_text(scorer: str, field: str, value: Any) -> str:
    """Return ``value`` when it is a ``str``; raise ``TypeError`` naming the field otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{scorer}: {field} must be a string, got {type(value).__name__} {value!r:.80}")
    return value
