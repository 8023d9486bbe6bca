"""The symbolic judges of ``math_answer``: math-verify and sympy.

Importing this module imports math-verify and sympy, so the parent process
of a reward run only pays for it when a case needs symbolic algebra, and the
timeout guard subprocess preloads it before its clock starts. :func:`judge`
is the entry point the guard runs (see :mod:`math_equivalence` for the order
of the judges).
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig
from sympy.parsing.sympy_parser import (
    convert_xor,
    implicit_multiplication_application,
    parse_expr,
    standard_transformations,
)

from rewardkit.reward_fns.answer_normalize import ParsedNumber
from rewardkit.reward_fns.math_equivalence import Verdict, approximates, run_judges
from rewardkit.reward_fns.math_verify_lib import parse, verify

_PLAIN_MATH = re.compile(r"^[0-9a-zA-Z+\-*/^(). ]+$")
# Only these multi-letter names may appear in plain-text math handed to sympy's
# parser (which evaluates Python): anything else is not parsed at all.
_PLAIN_NAMES = frozenset({"sqrt", "pi", "e", "i", "I", "log", "ln", "sin", "cos", "tan", "exp"})
_TRANSFORMATIONS = (*standard_transformations, implicit_multiplication_application, convert_xor)


def judge(pred: str, gold: str) -> Verdict:
    """Full judgement of answer ``pred`` against ``gold``; may take unbounded time."""
    verdict = run_judges(pred, gold, symbolic_equal)
    assert verdict is not None  # symbolic_equal always decides
    return verdict


def _math_verify_parse(text: str) -> list[Any]:
    # Wrapped in \boxed{} so that an answer without $..$ still parses as LaTeX.
    parsed = parse("\\boxed{" + text + "}", (LatexExtractionConfig(),), fallback_mode="no_fallback")
    return parsed or parse(text, (ExprExtractionConfig(),), fallback_mode="no_fallback")


def _exact_real(parsed: list[Any]) -> Any | None:
    """The first exact real number among math-verify's parses (a Fraction when rational)."""
    for value in parsed:
        if getattr(value, "is_number", False) and getattr(value, "is_real", False) and not value.is_Float:
            return Fraction(int(value.p), int(value.q)) if value.is_Rational else value
    return None


def _plain_sympy(text: str) -> Any | None:
    """``text`` as a sympy expression when it is plain-text math over known names only."""
    if len(text) > 200 or not _PLAIN_MATH.match(text):
        return None
    if any(len(name) > 1 and name not in _PLAIN_NAMES for name in re.findall(r"[A-Za-z]+", text)):
        return None
    try:
        return parse_expr(text.replace("ln", "log"), transformations=_TRANSFORMATIONS)
    except Exception:  # noqa: BLE001 - unparsable text simply is not plain math
        return None


def symbolic_equal(
    answer: str, target: str, answer_number: ParsedNumber | None, target_number: ParsedNumber | None
) -> Verdict:
    """math-verify, then the approximation rule against a symbolic value, then sympy on plain text."""
    gold_parsed, pred_parsed = _math_verify_parse(target), _math_verify_parse(answer)
    if gold_parsed and pred_parsed and verify(gold_parsed, pred_parsed, allow_set_relation_comp=True):
        return Verdict(True, "math_verify")
    literal, other = (answer_number, gold_parsed) if answer_number is not None else (target_number, pred_parsed)
    if literal is not None and literal.decimals is not None:
        exact = _exact_real(other)
        if exact is not None and approximates(literal, exact):
            return Verdict(True, "approximation")
    # Plain-text math ("3pi/2") that the LaTeX parser misreads: sympy's own parser on that side.
    plain_answer, plain_target = _plain_sympy(answer), _plain_sympy(target)
    golds = [plain_target] if plain_target is not None else gold_parsed
    preds = [plain_answer] if plain_answer is not None else pred_parsed
    if (plain_answer is not None or plain_target is not None) and golds and preds and verify(golds, preds):
        return Verdict(True, "sympy")
    if not gold_parsed and plain_target is None:
        return Verdict(False, "unparsed gold")
    return Verdict(False, "math_verify")
