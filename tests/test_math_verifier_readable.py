"""The verdict model's rule: ``wrong`` only when the inequality is established.

An answer holding notation the verifier cannot read (an unknown command, an
unknown named function) is ``undecided``, never ``correct`` and never
``wrong``, whatever value it wraps; readable values that differ stay
``wrong``. Notations read since the rule (special functions, polar complex
numbers) are judged by value.
"""
from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rewardsmith.reward_fns.math_answer import compute_score  # noqa: E402
from rewardsmith.reward_fns.math_verifier.compare import GradingPolicy, Verdict, compare  # noqa: E402
from rewardsmith.reward_fns.math_verifier.readable import KNOWN_COMMANDS, KNOWN_FUNCTIONS  # noqa: E402

TIMEOUT_S = 60.0
RULE = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Names no verifier reads: letters only, never a command or function it knows.
_UNKNOWN = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=3, max_size=8).filter(
    lambda name: name not in KNOWN_COMMANDS and name not in KNOWN_FUNCTIONS)
_VALUES = st.sampled_from(["7", "\\frac{3}{4}", "\\sqrt{2}", "x^2+1", "2\\pi", "(1, 2)", "\\{1, 3\\}", "-5"])
_WRAPPINGS = st.sampled_from(["\\{name}{{{value}}}", "\\{name} {value}", "{value}\\{name}",
                              "\\operatorname{{{name}}}({value})", "\\text{{{name}}}({value})",
                              "2\\operatorname{{{name}}}{value}"])


def _judge(pred: str, gold: str) -> Verdict:
    return compare(pred, gold, GradingPolicy(), timeout=TIMEOUT_S)


@RULE
@given(_UNKNOWN, _VALUES, _WRAPPINGS, st.booleans())
def test_an_answer_with_unknown_notation_is_undecided_whatever_it_wraps(name, value, wrapping, around_gold):
    # Around the gold itself or around another value: the parser drops what it does not know,
    # so neither "equal" nor "different" is established.
    gold = value if around_gold else "8"
    verdict = _judge(wrapping.format(name=name, value=value), gold)
    assert verdict.verdict == "undecided", (wrapping.format(name=name, value=value), gold, verdict)
    assert verdict.why.startswith("unreadable answer"), verdict.why


@RULE
@given(_UNKNOWN, st.integers(min_value=-50, max_value=50))
def test_a_gold_with_unknown_notation_never_makes_an_answer_wrong(name, number):
    verdict = _judge(str(number), f"\\{name}{{{number + 1}}}")
    assert verdict.verdict != "wrong", verdict


@pytest.mark.parametrize("pred, gold", [
    ("7", "8"),
    ("x+1", "x+2"),
    ("\\{1, 2\\}", "\\{1, 3\\}"),
    ("(1, 2)", "(2, 1)"),
    ("\\frac{1}{2}", "\\frac{1}{3}"),
    ("\\sqrt{3}", "\\sqrt{2}"),
    ("\\zeta(3)", "\\frac{\\pi^2}{6}"),
    ("\\Gamma(5)", "25"),
    ("\\sqrt{2}e^{-i\\pi/4}", "1+i"),
    ("2\\operatorname{cis}\\frac{\\pi}{3}", "2i"),
    ("\\operatorname{erf}(0)", "1"),
    ("\\text{erf}(x+1)", "x"),
    ("Tuesday", "Monday"),
])
def test_readable_values_that_differ_stay_wrong(pred, gold):
    assert _judge(pred, gold).verdict == "wrong"


@pytest.mark.parametrize("pred, gold", [
    ("\\Gamma\\left(\\frac{1}{2}\\right)", "\\sqrt{\\pi}"),
    ("\\mathrm{B}(2,3)", "\\frac{1}{12}"),
    ("\\operatorname{B}(2, 3)", "\\frac{1}{12}"),
    ("\\zeta(2)", "\\frac{\\pi^2}{6}"),
    ("\\zeta(4)", "\\frac{\\pi^{4}}{90}"),
    ("\\operatorname{erf}(0)", "0"),
    ("\\operatorname{erf}(1)", "0.8427"),
    ("\\sqrt{2}e^{i\\pi/4}", "1+i"),
    ("1+\\sqrt{3}i", "2e^{i\\pi/3}"),
    ("2\\operatorname{cis}\\frac{\\pi}{2}", "2i"),
    ("2\\,\\mathrm{cis}(\\pi/3)", "1+\\sqrt{3}i"),
    ("2\\left(\\cos\\frac{\\pi}{3} + i\\sin\\frac{\\pi}{3}\\right)", "1+\\sqrt{3}i"),
])
def test_special_functions_and_polar_forms_are_read_by_value(pred, gold):
    assert _judge(pred, gold).verdict == "correct"


def test_the_scorer_names_the_unread_part():
    result = compute_score("lighteval/MATH", "So the answer is $\\boxed{\\weird 7}$.", "8")
    assert result["verdict"] == "undecided" and result["score"] is None
    assert result["why"] == "unreadable answer: the unknown command \\weird"
    assert compute_score("lighteval/MATH", "So the answer is $\\boxed{7}$.", "8")["verdict"] == "wrong"


@pytest.mark.parametrize("pred, gold, verdict", [
    ("xvii", "17", "correct"),  # a lower-case Roman numeral against a number
    ("iv", "4", "correct"),
    ("xvi", "17", "wrong"),
    ("DIX", "509", "correct"),  # upper case is Roman, not the French word dix (10)
    ("dix", "10", "correct"),
])
def test_roman_numerals_in_either_case(pred, gold, verdict):
    assert _judge(pred, gold).verdict == verdict


@pytest.mark.parametrize("pred, gold, verdict", [
    ("\\frac{e^{2x}}{2} + K", "\\frac{1}{2}e^{2x} + C", "correct"),  # the constant named otherwise
    ("-\\frac{1}{2}\\cos 2x + C", "\\sin^{2} x + C", "correct"),  # differs from the gold by 1/2
    ("\\frac{x^3}{3}+C_1", "\\frac{1}{3}x^3", "correct"),  # the gold writes no constant
    ("x\\ln x - x", "x\\ln x - x + C", "correct"),  # the answer writes none
    ("\\cos x + C", "-\\cos x + C", "wrong"),
    ("x\\ln x + x + C", "x\\ln x - x + C", "wrong"),
    ("C+B+A", "A+B+C", "correct"),  # a sum that names C, no constant of integration
])
def test_antiderivatives_are_equal_up_to_a_constant(pred, gold, verdict):
    assert _judge(pred, gold).verdict == verdict


@pytest.mark.parametrize("pred, gold", [
    ("sinc(2)", "1"),  # parsed as i*n*s*c(2): c applied to a value has none
    ("\\{sinc(2), 1\\}", "\\{1, 2\\}"),  # the same inside a set: math-verify's "no" compared no read value
    ("\\mathcal{X}", "8"),
])
def test_values_with_undefined_parts_are_undecided(pred, gold):
    verdict = _judge(pred, gold)
    assert verdict.verdict == "undecided" and verdict.why.startswith("unreadable answer"), verdict


@pytest.mark.parametrize("pred, gold", [
    ("f(x)=2x", "x^2"),  # function notation names the value; its right side differs
    ("g(x) = 3x+2", "3x-2"),
    ("\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"),
    ("O", "0"),  # the letter, not the digit
])
def test_function_notation_matrices_and_letters_stay_wrong(pred, gold):
    assert _judge(pred, gold).verdict == "wrong"


@pytest.mark.parametrize("pred, gold, verdict", [
    # each item equal where evaluated, not shown equal by sympy: no established inequality
    ("\\left\\{\\frac{a+b+|a-b|}{2}, a^2\\right\\}", "\\{\\max(a,b), a^2\\}", "undecided"),
    ("\\left(\\frac{a+b+|a-b|}{2}, 1\\right)", "(\\max(a,b), 1)", "undecided"),
    # an item that differs at a probe point, or end points that differ, settle it
    ("\\left(\\frac{a+b+|a-b|}{2}, 2\\right)", "(\\max(a,b), 1)", "wrong"),
    ("\\{\\sqrt{2}, x\\}", "\\{\\sqrt{3}, x\\}", "wrong"),
    ("[\\sqrt{2}, \\pi)", "[\\sqrt{2}, \\pi]", "wrong"),
])
def test_collections_are_wrong_only_when_an_item_differs(pred, gold, verdict):
    assert _judge(pred, gold).verdict == verdict


@pytest.mark.parametrize("pred, gold, verdict", [
    ("y = 2x + 3", "2x - y + 3 = 0", "correct"),
    ("y = 2x + 4", "2x - y + 3 = 0", "wrong"),
    ("x + y + z = 1", "x + y + z = 2", "wrong"),  # the ratio is no constant: a probe tells
    ("\\weird y = 2x", "y = 2x", "undecided"),  # a side that cannot be read is no different equation
    ("2y = @@", "y = 2x", "undecided"),
    # (a + b + |a - b|) / 2 is max(a, b): sympy cannot show the ratio constant, and it is 1 wherever evaluated
    ("2y = a+b+|a-b|", "y = \\max(a,b)", "undecided"),
])
def test_equations_are_wrong_only_when_shown_different(pred, gold, verdict):
    assert _judge(pred, gold).verdict == verdict


@pytest.mark.parametrize("pred, gold", [
    ("3∠45°", "3"),  # the parser drops ∠45: never paid as 3
    ("5′", "5"),
    ("x ∈ ℝ", "\\mathbb{R}"),
])
def test_symbols_the_verifier_does_not_read_are_undecided(pred, gold):
    verdict = _judge(pred, gold)
    assert verdict.verdict == "undecided" and verdict.why.startswith("unreadable answer"), verdict


@pytest.mark.parametrize("pred, gold, verdict", [
    ("一百二十三", "123", "correct"),  # a whole answer read as one number stands
    ("一百二十三", "124", "wrong"),
    ("42\u200b", "42", "correct"),  # an invisible character carries no value
    ("±2", "\\pm 2", "correct"),
    ("α+1", "\\alpha+1", "correct"),
])
def test_numbers_read_whole_and_read_symbols_stand(pred, gold, verdict):
    assert _judge(pred, gold).verdict == verdict


@pytest.mark.parametrize("pred, gold, verdict", [
    # the condition's words, in \\text or bare, parse as products of letters: no reading either way
    ("2x+1 \\text{ where } x \\text{ is real}", "2x+1", "undecided"),
    ("2x+1 where x is real", "2x+1", "undecided"),  # bare words parse as products of letters
    ("2x+1 where x is real", "2x+3", "undecided"),
    ("\\frac{n(n+1)}{2} for all n", "\\frac{n(n-1)}{2}", "undecided"),
    ("2, 4, 8, and 16", "2, 4, 8, 16", "correct"),  # math-verify reads "and" as a comma
    ("the square root of 2", "2", "wrong"),  # words around a number, against a number: read as such
])
def test_bare_words_in_a_parsed_answer_leave_it_undecided(pred, gold, verdict):
    assert _judge(pred, gold).verdict == verdict
