"""Geometry3K scorer (``hiyouga/geometry3k``): verl's ``reward_score/geo3k``, verdict for verdict.

``score = 0.9 * accuracy + 0.1 * format`` (``format_score`` sets the 0.1):

* accuracy: the content of the last ``\\boxed{`` (up to its matching brace;
  the text ``"None"`` when there is none) graded against the ground truth by
  mathruler's copy of the prm800k grader
  (:data:`prm800k_grader.MATHRULER`); with ``use_boxed=False`` the whole
  response is graded.
* format: the whole response matches ``<think>...</think>...\\boxed{...}...``.

mathruler's sympy comparison has no time limit; here it gets 10 s, after which
it counts as "not equal" (verl's trainer would wait for it).
"""
from __future__ import annotations

import re
from typing import Any

from rewardsmith.reward_fns.prm800k_grader import MATHRULER, grade_answer
from rewardsmith.reward_fns.scorer_inputs import require_text

_FORMAT = re.compile(r"<think>.*</think>.*\\boxed\{.*\}.*", re.DOTALL)


def extract_boxed_content(text: str) -> str:
    """mathruler's extraction: the last ``\\boxed{...}`` content, stripped; ``"None"`` when absent or unclosed."""
    start = text.rfind(r"\boxed{")
    if start == -1:
        return "None"
    content = text[start + len(r"\boxed{"):]
    depth = 0
    for i, char in enumerate(content):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == -1:
            return content[:i].strip()
    return "None"


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    use_boxed: bool = True,
    format_score: float = 0.1,
    **kwargs: Any,
) -> float:
    """``(1 - format_score) * accuracy + format_score * format`` (see the module docstring)."""
    output = require_text("geo3k", "solution_str", solution_str)
    gold = require_text("geo3k", "ground_truth", ground_truth)
    answer = extract_boxed_content(output) if use_boxed else output
    accuracy = 1.0 if grade_answer(answer, gold, MATHRULER) else 0.0
    form = 1.0 if _FORMAT.fullmatch(output) else 0.0
    return (1.0 - format_score) * accuracy + format_score * form
