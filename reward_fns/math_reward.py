"""MATH scorer: verl's ``math_reward.compute_score`` (the Hendrycks MATH rule
from lm-evaluation-harness), verdict for verdict.

Extraction (verl): the last ``\\boxed{...}`` of the response (``\\fbox{...}``
when there is no ``\\boxed``; when the text contains ``"\\boxed "`` the part
after its last occurrence up to the next ``$``). No box -> 0.0.

Equivalence: both the boxed answer and the ground truth go through
``strip_string`` (remove spaces, ``\\left``/``\\right``, ``^\\circ``, ``\\$``,
a trailing ``\\text{ unit}``, ``\\%``; ``dfrac``/``tfrac`` -> ``frac``;
``\\frac12`` -> ``\\frac{1}{2}``; ``a/b`` -> ``\\frac{a}{b}``; ``0.5`` ->
``\\frac{1}{2}``; a short ``k = `` prefix dropped) and must then be equal
strings. When normalisation itself fails (e.g. a dangling ``\\frac``) the raw
strings are compared, as in verl.
"""
from __future__ import annotations

import logging
from typing import Any

from rewardsmith.reward_fns.latex_boxes import last_boxed_any_form, unwrap_boxed_any_form
from rewardsmith.reward_fns.scorer_inputs import require_text

logger = logging.getLogger(__name__)


def _fix_fracs(string: str) -> str:
    # \frac12 -> \frac{1}{2}, \frac1{72} -> \frac{1}{72}; \frac{..} untouched.
    head, *tails = string.split("\\frac")
    out = head
    for tail in tails:
        out += "\\frac"
        if tail[0] == "{":  # IndexError on a dangling "\frac", as in verl
            out += tail
            continue
        if len(tail) < 2:
            return string
        numerator, second, rest = tail[0], tail[1], tail[2:]
        if second != "{":
            out += "{" + numerator + "}{" + second + "}" + rest
        else:
            out += "{" + numerator + "}" + second + rest
    return out


def _fix_a_slash_b(string: str) -> str:
    parts = string.split("/")
    if len(parts) != 2:
        return string
    try:
        numerator, denominator = int(parts[0]), int(parts[1])
    except ValueError:
        return string
    if string != f"{numerator}/{denominator}":
        return string
    return "\\frac{" + str(numerator) + "}{" + str(denominator) + "}"


def _remove_right_units(string: str) -> str:
    # "\text{ " only ever introduces units in the MATH data.
    if "\\text{ " not in string:
        return string
    parts = string.split("\\text{ ")
    if len(parts) != 2:
        raise ValueError(f"more than one unit in {string!r}")
    return parts[0]


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    head, *tails = string.split("\\sqrt")
    out = head
    for tail in tails:
        # tail[0] raises IndexError on a dangling "\sqrt", as in verl.
        out += "\\sqrt" + tail if tail[0] == "{" else "\\sqrt{" + tail[0] + "}" + tail[1:]
    return out


# The percent markers strip_string removes: verl's math_reward and prime_math
# drop ``\\%`` and ``\%``; mathruler's copy (geo3k) drops ``\%`` and ``%``.
VERL_PERCENT = ("\\\\%", "\\%")


def strip_string(string: str, percent: tuple[str, str] = VERL_PERCENT) -> str:
    """Hendrycks MATH answer normalisation (see the module docstring)."""
    string = string.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    string = string.replace("tfrac", "frac").replace("dfrac", "frac")
    string = string.replace("\\left", "").replace("\\right", "")
    string = string.replace("^{\\circ}", "").replace("^\\circ", "")
    string = string.replace("\\$", "")
    string = _remove_right_units(string)
    string = string.replace(percent[0], "").replace(percent[1], "")
    string = string.replace(" .", " 0.").replace("{.", "{0.")
    if not string:
        return string
    if string[0] == ".":
        string = "0" + string
    sides = string.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        string = sides[1]
    string = _fix_sqrt(string)
    string = string.replace(" ", "")
    string = _fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    return _fix_a_slash_b(string)


def is_equiv(str1: str | None, str2: str | None) -> bool:
    """verl's MATH equivalence: equal after ``strip_string`` on both sides."""
    if str1 is None or str2 is None:
        return str1 is None and str2 is None
    try:
        return strip_string(str1) == strip_string(str2)
    except Exception:  # noqa: BLE001 - verl falls back to raw equality on any failure
        return str1 == str2


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    **kwargs: Any,
) -> float:
    """1.0 when the last boxed answer is equivalent to ``ground_truth``, else 0.0."""
    require_text("math_reward", "ground_truth", ground_truth)
    require_text("math_reward", "solution_str", solution_str)
    try:
        boxed = last_boxed_any_form(solution_str)
        if boxed is not None and is_equiv(unwrap_boxed_any_form(boxed), ground_truth):
            return 1.0
    except Exception as exc:  # noqa: BLE001 - verl scores any failure as 0.0
        logger.debug("math_reward: %s: %s", type(exc).__name__, exc)
    return 0.0
