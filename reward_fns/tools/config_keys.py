"""Config keys shared by the built-in tools: unknown keys are errors naming the key; verl's rate limit."""
from __future__ import annotations

from typing import Mapping, Sequence


def check_keys(tool: str, config: Mapping, known: Sequence[str]) -> None:
    """Raise ``ValueError`` naming each key of ``config`` that ``tool`` does not know."""
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"{tool}: unknown config key(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(known)}")


def rate_limit(config: Mapping, workers: int, default: int) -> int:
    """Requests in flight: ``rate_limit`` when ``enable_global_rate_limit`` (verl's default, true), else ``workers``."""
    if not config.get("enable_global_rate_limit", True):
        return workers
    return max(1, int(config.get("rate_limit", default)))
