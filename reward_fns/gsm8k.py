"""GSM8K scorer: verl's ``gsm8k.compute_score``, verdict for verdict.

Extraction (verl): only the last 300 characters are searched.

* ``method="strict"`` (default): the *last* ``#### <number>`` where the number
  matches ``-?[0-9.,]+``; commas and ``$`` are removed. No ``#### `` -> no
  answer.
* ``method="flexible"``: the last run of ``-?[0-9.,]+`` that is not ``""`` or
  ``"."``.

The extracted string is compared with ``ground_truth`` by plain string
equality (so ``72.00`` or ``72.`` is *not* ``72``, as in verl). Score:
``score`` (1.0) when equal, ``format_score`` (0.0) when an answer was found but
differs, 0.0 when none was found.
"""
from __future__ import annotations

import re
from typing import Any

from rewardsmith.reward_fns.scorer_inputs import require_text

TAIL_CHARS = 300
_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
_FLEXIBLE = re.compile(r"(\-?[0-9\.\,]+)")
_NOT_A_NUMBER = ("", ".")


def extract_solution(solution_str: str, method: str = "strict") -> str | None:
    """The answer string verl's GSM8K scorer would extract, or ``None``."""
    if method not in ("strict", "flexible"):
        raise ValueError(f"gsm8k: method must be 'strict' or 'flexible', got {method!r}")
    tail = solution_str[-TAIL_CHARS:]
    if method == "strict":
        found = _STRICT.findall(tail)
        return found[-1].replace(",", "").replace("$", "") if found else None
    candidates = _FLEXIBLE.findall(tail)
    if not candidates:
        return None
    # verl walks back to the last candidate that is not a bare "." and, when
    # every candidate is one, ends up holding the first of them.
    for candidate in reversed(candidates):
        if candidate not in _NOT_A_NUMBER:
            return candidate
    return candidates[0]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    method: str = "strict",
    format_score: float = 0.0,
    score: float = 1.0,
    **kwargs: Any,
) -> float:
    """Score a GSM8K response (verl's rule; see the module docstring)."""
    require_text("gsm8k", "ground_truth", ground_truth)
    answer = extract_solution(require_text("gsm8k", "solution_str", solution_str), method=method)
    if answer is None:
        return 0.0
    return float(score if answer == ground_truth else format_score)
