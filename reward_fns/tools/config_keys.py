"""Unknown keys in a built-in tool's config are errors naming the key, not silently ignored."""
from __future__ import annotations

from typing import Mapping, Sequence


def check_keys(tool: str, config: Mapping, known: Sequence[str]) -> None:
    """Raise ``ValueError`` naming each key of ``config`` that ``tool`` does not know."""
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise ValueError(f"{tool}: unknown config key(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(known)}")
