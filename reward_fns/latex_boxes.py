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
