"""OpenAI's PRM800K answer grader, as the two copies verl scores with carry it.

``grade_answer(given, gold)`` is correct when the Hendrycks ("mathd")
normalisations of both sides are equal, or the prm800k normalisations are
equal, or, element by element for tuples and intervals, sympy simplifies the
difference to 0 (never for unreduced fractions, and never between an integer
and a non-integer).

Two copies differ in small ways, kept here as a :class:`Variant`:

* ``PRIME`` - verl's ``reward_score/prime_math`` (the ``numina_*`` rows): the
  unit list includes "liter", mathd drops ``\\\\%``/``\\%``, and the sympy
  check runs under a 10 s timeout (a timeout or error is "not equal").
* ``MATHRULER`` - the ``mathruler`` package verl's ``geo3k`` imports: spaces and
  braces are dropped at the end of normalisation and mathd drops ``\\%``/``%``.
  mathruler runs sympy without a timeout; here it gets the same 10 s, so a
  comparison that would hang verl's trainer scores "not equal" instead.

The sympy check parses model text with sympy's parser (which evaluates
Python), so, as in both copies, only expressions with at most two distinct
letters and no ``^{``/``^(`` are parsed, and the check runs in a guard
subprocess (:func:`run_with_hard_timeout`).
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.math_reward import VERL_PERCENT, strip_string

BAD_SUBSTRINGS = ["^{", "^("]
BAD_REGEXES = [r"\^[0-9]+\^", r"\^[0-9][0-9]+"]
TUPLE_CHARS = "()[]"
SYMPY_TIMEOUT = 10.0
_UNITS = ["degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day",
          "week", "month", "year", "foot", "feet", "inch", "yard"]


@dataclass(frozen=True)
class Variant:
    """What distinguishes one copy of the grader from another (see the module docstring)."""

    units: tuple[str, ...]
    mathd_percent: tuple[str, str]
    drop_spaces_and_braces: bool


PRIME = Variant(units=(*_UNITS, "liter"), mathd_percent=VERL_PERCENT, drop_spaces_and_braces=False)
MATHRULER = Variant(units=tuple(_UNITS), mathd_percent=("\\%", "%"), drop_spaces_and_braces=True)


def normalize_mathd(answer: str | None, variant: Variant) -> str | None:
    """The Hendrycks MATH normalisation (prm800k's ``math_normalize.normalize_answer``)."""
    if answer is None:
        return None
    answer = answer.strip()
    try:
        m = re.search(r"^\\text\{(?P<text>.+?)\}$", answer)
        if m is not None:
            answer = m.group("text").strip()
        return strip_string(answer, variant.mathd_percent)
    except Exception:  # noqa: BLE001 - both copies fall back to the stripped answer
        return answer


def _sympy_parse(expr: str):
    # Imported here: sympy's parser is only needed when the strings differ.
    from sympy.parsing import sympy_parser

    return sympy_parser.parse_expr(
        expr.replace("^", "**"),
        transformations=(*sympy_parser.standard_transformations, sympy_parser.implicit_multiplication_application),
    )


def _parse_latex(expr: str) -> str:
    from pylatexenc import latex2text

    expr = expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac")
    expr = expr.replace("\\frac", " \\frac")  # mixed numbers: 1\frac{1}{2}
    expr = latex2text.LatexNodes2Text().latex_to_text(expr)
    for symbol, name in (("√", "sqrt"), ("π", "pi"), ("∞", "inf"), ("∪", "U"), ("·", "*"), ("×", "*")):
        expr = expr.replace(symbol, name)
    return expr.strip()


def _is_float(num: str) -> bool:
    try:
        float(num)
        return True
    except ValueError:
        return False


def _is_int(x: float) -> bool:
    try:
        return abs(x - int(round(x))) <= 1e-7
    except Exception:  # noqa: BLE001 - inf / nan
        return False


def _is_frac(expr: str) -> bool:
    return bool(re.search(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$", expr))


def _str_is_int(x: str) -> bool:
    try:
        value = float(_strip_properly_formatted_commas(x))
        return abs(value - int(round(value))) <= 1e-7
    except Exception:  # noqa: BLE001 - not a number
        return False


def _strip_properly_formatted_commas(expr: str) -> str:
    # Thousands separators only; tuple commas stay.
    pattern = re.compile(r"(\d)(,)(\d\d\d)($|\D)")
    while True:
        next_expr = pattern.sub(r"\1\3\4", expr)
        if next_expr == expr:
            return next_expr
        expr = next_expr


def normalize(expr: str | None, variant: Variant) -> str | None:
    """prm800k's own normalisation (units, words, LaTeX to text, case)."""
    if expr is None:
        return None
    m = re.search(r"^\\text\{(?P<text>.+?)\}$", expr)
    if m is not None:
        expr = m.group("text")
    expr = expr.replace("\\%", "%").replace("\\$", "$").replace("$", "").replace("%", "")
    expr = expr.replace(" or ", " , ").replace(" and ", " , ")
    expr = expr.replace("million", "*10^6").replace("billion", "*10^9").replace("trillion", "*10^12")
    for unit in variant.units:
        expr = re.sub(f"{unit}(es)?(s)? *(\\^[0-9]+)?", "", expr)
    expr = re.sub(r"\^ *\\circ", "", expr)
    if len(expr) > 0 and expr[0] == "{" and expr[-1] == "}":
        expr = expr[1:-1]
    expr = re.sub(",\\\\! *", "", expr)
    if _is_float(expr) and _is_int(float(expr)):
        expr = str(int(round(float(expr))))
    if "\\" in expr:
        with contextlib.suppress(Exception):
            expr = _parse_latex(expr)
    expr = re.sub("- *", "-", expr)
    expr = re.sub(r"([0-9]) +([0-9])", r"\1+\2", expr)  # mixed numbers: 7 3/4 -> 7+3/4
    if variant.drop_spaces_and_braces:
        expr = expr.replace(" ", "").replace("{", "").replace("}", "")
    expr = expr.lower()
    if _str_is_int(expr):
        expr = str(int(float(expr.replace(",", ""))))
    return expr


def should_allow_eval(expr: str) -> bool:
    """Whether ``expr`` is safe and small enough to hand to sympy's parser."""
    letters = {x for x in expr.replace("sqrt", "").replace("frac", "") if x.isalpha()}
    if len(letters) > 2:
        return False
    if any(bad in expr for bad in BAD_SUBSTRINGS):
        return False
    return all(re.search(bad, expr) is None for bad in BAD_REGEXES)


def are_equal_under_sympy(gold_normalized: str, given_normalized: str) -> bool:
    """Whether sympy simplifies ``gold - given`` to 0 (unbounded time: run it guarded)."""
    import sympy

    try:
        expr = f"({gold_normalized})-({given_normalized})"
        if should_allow_eval(expr):
            return bool(sympy.simplify(_sympy_parse(expr)) == 0)
    except Exception:  # noqa: BLE001 - unparsable means not equal, in both copies
        pass
    return False


def split_tuple(expr: str) -> list[str]:
    """The elements of a tuple or interval, thousands separators kept inside numbers."""
    expr = _strip_properly_formatted_commas(expr)
    if len(expr) == 0:
        return []
    if len(expr) > 2 and expr[0] in TUPLE_CHARS and expr[-1] in TUPLE_CHARS \
            and all(ch not in expr[1:-1] for ch in TUPLE_CHARS):
        return [elem.strip() for elem in expr[1:-1].split(",")]
    return [expr]


def _sympy_equal(gold: str, given: str) -> bool:
    try:
        return run_with_hard_timeout(are_equal_under_sympy, (gold, given), SYMPY_TIMEOUT)
    except Exception:  # noqa: BLE001 - a timeout counts as "not equal", as in verl's copy
        return False


def grade_answer(given_answer: str | None, ground_truth: str, variant: Variant) -> bool:
    """prm800k's verdict on ``given_answer`` against ``ground_truth`` (see the module docstring)."""
    if given_answer is None:
        return False
    if normalize_mathd(ground_truth, variant) == normalize_mathd(given_answer, variant):
        return True
    gold = normalize(ground_truth, variant)
    given = normalize(given_answer, variant)
    if gold is None:
        return False
    if gold == given:
        return True
    if len(given) == 0:
        return False
    gold_elems, given_elems = split_tuple(gold), split_tuple(given)
    if len(gold_elems) > 1 and (gold[0] != given[0] or gold[-1] != given[-1]) or len(gold_elems) != len(given_elems):
        return False
    for gold_elem, given_elem in zip(gold_elems, given_elems):
        if _is_frac(gold_elem) and _is_frac(given_elem):
            # An unreduced fraction is wrong: no sympy here.
            correct = gold_elem == given_elem
        elif _str_is_int(gold_elem) != _str_is_int(given_elem):
            # An integer gold needs an integer answer.
            correct = False
        else:
            correct = _sympy_equal(gold_elem, given_elem)
        if not correct:
            return False
    return True
