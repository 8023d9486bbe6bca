"""DAPO math scorer: verl's ``math_dapo.compute_score``, verdict for verdict.

Only the last 300 characters of the response are read. Extraction (verl's
"Minerva" rule): the last match of ``(?i)Answer\\s*:\\s*([^\\n]+)``, i.e. the
rest of the line after the last ``Answer:``; none -> ``"[INVALID]"``. Both it
and the ground truth go through ``normalize_final_answer`` (keep what follows
the last ``=``, drop spaces and a list of unit words, unwrap ``\\text{}``,
``\\boxed{}``, ``$..$``, ``\\frac12`` -> ``\\frac{1}{2}``, drop commas in
plain integers) and must then be equal strings.

When no ``Answer:`` line exists, the last ``\\boxed{}`` within the last 100
characters decides instead, compared verbatim with the ground truth (verl
0.9's fallback); with ``strict_box_verify=True`` only that box rule is used.

Returns ``{"score": 1.0 | -1.0, "acc": bool, "pred": str | None}``.
"""
from __future__ import annotations

import re
from typing import Any

from rewardsmith.reward_fns.latex_boxes import last_boxed_brace_form, unwrap_boxed_brace_form
from rewardsmith.reward_fns.scorer_inputs import require_text

TAIL_CHARS = 300
STRICT_BOX_TAIL_CHARS = 100
ANSWER_PATTERN = r"(?i)Answer\s*:\s*([^\n]+)"

SUBSTITUTIONS = [
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    (r"\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
]

REMOVED_EXPRESSIONS = [
    "square", "ways", "integers", "dollars", "mph", "inches", "hours", "km",
    "units", "\\ldots", "sue", "points", "feet", "minutes", "digits", "cents",
    "degrees", "cm", "gm", "pounds", "meters", "meals", "edges", "students",
    "childrentickets", "multiples", "\\text{s}", "\\text{.}", "\\text{\ns}",
    "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}", r"\mathrm{th}",
    r"^\circ", r"^{\circ}", r"\;", r",\!", "{,}", '"', "\\dots",
]


INVALID = "[INVALID]"


def normalize_final_answer(final_answer: str) -> str:
    """Minerva-style answer normalisation (see the module docstring)."""
    final_answer = final_answer.split("=")[-1]
    for before, after in SUBSTITUTIONS:
        final_answer = final_answer.replace(before, after)
    for expression in REMOVED_EXPRESSIONS:
        final_answer = final_answer.replace(expression, "")
    final_answer = re.sub(r"(.*?)(\$)(.*?)(\$)(.*)", "$\\3$", final_answer)
    final_answer = re.sub(r"(\\text\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\textbf\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\overline\{)(.*?)(\})", "\\2", final_answer)
    final_answer = re.sub(r"(\\boxed\{)(.*)(\})", "\\2", final_answer)
    # Shorthand TeX: \fracab -> \frac{a}{b}, \sqrta -> \sqrt{a}.
    final_answer = re.sub(r"(frac)([^{])(.)", "frac{\\2}{\\3}", final_answer)
    final_answer = re.sub(r"(sqrt)([^{])", "sqrt{\\2}", final_answer)
    final_answer = final_answer.replace("$", "")
    if final_answer.replace(",", "").isdigit():
        final_answer = final_answer.replace(",", "")
    return final_answer.strip()


def is_correct_minerva(
    solution_str: str, gt: str, gt_need_extract: bool = False, answer_pattern: str = ANSWER_PATTERN
) -> tuple[bool, str]:
    """``(correct, normalised prediction)`` under the ``Answer:`` rule."""
    matches = re.findall(answer_pattern, solution_str)
    pred = normalize_final_answer(matches[-1] if matches else INVALID)
    if gt_need_extract:
        boxed = last_boxed_brace_form(gt)
        if boxed is None:
            raise ValueError(f"math_dapo: ground truth has no \\boxed{{}} to extract: {gt!r}")
        gt = unwrap_boxed_brace_form(boxed)
    return pred == normalize_final_answer(gt), pred


def is_correct_strict_box(
    pred: str, gt: str, pause_tokens_index: list[int] | None = None
) -> tuple[bool, str | None]:
    """``(correct, boxed prediction)``: the last box near the end, compared verbatim."""
    if pause_tokens_index is not None:
        if len(pause_tokens_index) != 4:
            raise ValueError(f"math_dapo: pause_tokens_index needs 4 entries, got {len(pause_tokens_index)}")
        pred = pred[pause_tokens_index[-1] - STRICT_BOX_TAIL_CHARS :]
    else:
        pred = pred[-STRICT_BOX_TAIL_CHARS:]
    boxed = last_boxed_brace_form(pred)
    extracted = unwrap_boxed_brace_form(boxed) if boxed is not None else None
    return extracted == gt, extracted


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    strict_box_verify: bool = False,
    pause_tokens_index: list[int] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """``{"score": ±1.0, "acc": bool, "pred": ...}`` by verl's DAPO rule."""
    require_text("math_dapo", "ground_truth", ground_truth)
    tail = require_text("math_dapo", "solution_str", solution_str)[-TAIL_CHARS:]
    if strict_box_verify:
        correct, pred = is_correct_strict_box(tail, ground_truth, pause_tokens_index)
    else:
        correct, pred = is_correct_minerva(tail, ground_truth)
        if pred == INVALID:
            box_correct, box_pred = is_correct_strict_box(tail, ground_truth, pause_tokens_index)
            if box_pred is not None:
                correct, pred = box_correct, box_pred
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": pred}
