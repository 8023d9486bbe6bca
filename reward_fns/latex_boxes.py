"""Brace matching for ``\\boxed{...}``-style LaTeX answers.

Shared by the verl ports (which each keep verl's own rules for *which* box to
take) and by ``math_answer``'s extraction.
"""
from __future__ import annotations


def closing_brace_index(text: str, start: int) -> int | None:
    """Index of the ``}`` that closes the first ``{`` at or after ``start``.

    Braces are counted naively (no escapes), exactly as verl and the
    lm-evaluation-harness do; ``None`` when the group never closes.
    """
    depth = 0
    for i in range(start, len(text)):
        char = text[i]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def brace_partners(text: str) -> dict[int, int]:
    """For every ``{`` that closes, the index of its ``}``, in one pass.

    Same pairing as :func:`closing_brace_index`, but linear in ``len(text)``
    however many groups are asked about.
    """
    partners: dict[int, int] = {}
    open_at: list[int] = []
    for i, char in enumerate(text):
        if char == "{":
            open_at.append(i)
        elif char == "}" and open_at:
            partners[open_at.pop()] = i
    return partners
