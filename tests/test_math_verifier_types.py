"""The math verifier's typed answers: the three-valued verdict, numerals read by their
libraries, quantities through pint, the type rules, and what stays undecided."""
from __future__ import annotations

from fractions import Fraction

import pytest

from rewardsmith.reward_fns.math_verifier.answer_types import answer_type, vector_as_tuple
from rewardsmith.reward_fns.math_verifier.compare import GradingPolicy, Verdict, compare
from rewardsmith.reward_fns.math_verifier.normalize import parse_number
from rewardsmith.reward_fns.math_verifier.numerals import chinese_number, plain_digits, roman_number, words_to_number
from rewardsmith.reward_fns.math_verifier.units import quantity_verdict, read_quantity


def _verdict(pred: str, gold: str) -> Verdict:
    return compare(pred, gold, GradingPolicy(), timeout=60.0)


def test_verdict_is_three_valued_and_says_why():
    assert Verdict(True, "string").verdict == "correct" and Verdict(True, "string").correct
    assert Verdict(False, "numeric").verdict == "wrong" and not Verdict(False, "numeric").correct
    undecided = Verdict("undecided", "unparsed gold")
    assert not undecided.correct and "gold" in undecided.why
    with pytest.raises(ValueError, match="verdict must be one of"):
        Verdict("maybe", "string")


@pytest.mark.parametrize(
    "text, value",
    [("forty-two", 42), ("Negative twenty one", -21), ("vingt et un", 21), ("dreiundzwanzig", 23),
     ("veintiuno", 21), ("one hundred and five", 105), ("Monday", None), ("a dozen", None)],
)
def test_words_to_number(text, value):
    assert words_to_number(text) == value


def test_words_after_a_number_are_read_in_english_only():
    assert words_to_number("miles") == 1000  # Spanish, as a whole answer
    assert words_to_number("miles", ("en",)) is None
    assert parse_number("120 miles") is None  # not 120 thousand


@pytest.mark.parametrize("text, value", [("XIV", 14), ("MCMXCIV", 1994), ("IIII", None), ("C", None), ("xiv", None)])
def test_roman_numerals(text, value):
    assert roman_number(text) == value


@pytest.mark.parametrize(
    "text, value",
    [("一百二十三", (Fraction(123), False)), ("负五", (Fraction(-5), False)), ("二点五", (Fraction(5, 2), False)),
     ("三分之一", (Fraction(1, 3), False)), ("百分之二十", (Fraction(20), True)), ("两千", (Fraction(2000), False)),
     ("abc", None)],
)
def test_chinese_numerals(text, value):
    assert chinese_number(text) == value


def test_plain_digits_reads_the_listed_characters_only():
    assert plain_digits("٤٢") == "42"  # Arabic-Indic digits
    assert plain_digits("１２．５") == "12.5"  # fullwidth
    assert plain_digits("𝟒𝟐") == "42"  # mathematical bold
    assert plain_digits("\u22125") == "-5" and plain_digits("1\u202f000") == "1 000"
    assert plain_digits("x²") == "x²"  # a superscript is a power, not a digit
    assert plain_digits("π") == "π"


@pytest.mark.parametrize(
    "pred, gold, verdict",
    [
        ("5 km", "5000 \\text{ m}", "correct"),
        ("\\SI{5}{\\kilo\\meter}", "5000 m", "correct"),
        ("500 mm^2", "5 \\text{ cm}^2", "correct"),
        ("2 hours 30 minutes", "2.5 \\text{ hours}", "correct"),  # parts of one dimension add up
        ("150 minutes", "2 \\text{ hours and } 30 \\text{ minutes}", "correct"),
        ("100^\\circ C", "212 °F", "correct"),
        ("3 \\times 10^8 m/s", "300000000 \\text{ m/s}", "correct"),
        ("5 m", "5 \\text{ km}", "wrong"),  # the same number in another unit
        ("5 kg", "5 \\text{ m}", "wrong"),  # another dimension
        ("5", "5 \\text{ km}", "correct"),  # no unit: the gold's is implied
        ("5 m", "5", "correct"),  # a gold without a unit: the answer's unit is not checked
        ("5 apples", "5 \\text{ km}", "correct"),  # not a unit pint knows: the number is compared
    ],
)
def test_quantities(pred, gold, verdict):
    assert _verdict(pred, gold).verdict == verdict


@pytest.mark.parametrize(
    "pred, gold, verdict",
    [("3:45 p.m.", "3:45 \\text{ PM}", "correct"), ("15:45", "3:45 \\text{ PM}", "correct"),
     ("9:00 AM", "9 \\text{ AM}", "correct"), ("3:45 pm", "3:45", "correct"),  # no meridiem: either half of the day
     ("3:45 AM", "3:45 \\text{ PM}", "wrong"), ("3:54 pm", "3:45", "wrong"), ("9 pm", "9:00 \\text{ AM}", "wrong")],
)
def test_times_of_day(pred, gold, verdict):
    result = _verdict(pred, gold)
    assert (result.verdict, result.method) == (verdict, "time of day"), result


def test_a_ratio_is_no_time_of_day():
    assert _verdict("3:4", "3:4").method == "string"
    assert _verdict("4:3", "3:4").verdict == "wrong"


def test_quantity_reading():
    assert read_quantity("5 apples") is None  # not a unit
    assert read_quantity("5 a") is None  # pint's "a" (a year) is no unit here
    assert read_quantity("72") is None
    assert quantity_verdict("5 km", "5") is None  # the gold has no unit: not decided here


@pytest.mark.parametrize(
    "canonical, kind",
    [("C", "choice"), ("-12", "number"), ("\\frac{3}{4}", "number"), ("XIV", "number"), ("\\{1, 2\\}", "set"),
     ("[1, 2)", "interval"), ("(0, 1) \\cup (2, 3)", "interval"),
     ("(1, 2, 3)", "tuple"), ("(-\\infty, 2)", "interval"), ("\\begin{pmatrix}1 & 2\\end{pmatrix}", "matrix"),
     ("1, 2, 3", "list"), ("x \\ge 3", "inequality"), ("y = 2x + 3", "equation"), ("Monday", "text"),
     ("2\\sqrt{3}", "expression")],
)
def test_answer_type(canonical, kind):
    assert answer_type(canonical) == kind


def test_vector_as_tuple():
    assert vector_as_tuple("\\begin{pmatrix}1 \\\\ 2\\end{pmatrix}") == "(1, 2)"
    assert vector_as_tuple("\\begin{bmatrix}1 & 2\\end{bmatrix}") == "(1, 2)"
    square = "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}"
    assert vector_as_tuple(square) == square


@pytest.mark.parametrize(
    "pred, gold, verdict, method",
    [
        ("\\{1, 2\\}", "(1, 2)", "wrong", "type"),  # math-verify alone takes the set for the interval
        ("(1, 2)", "\\{1, 2\\}", "wrong", "type"),
        ("\\begin{pmatrix}1 \\\\ 2\\end{pmatrix}", "(1, 2)", "correct", "string"),  # a column vector is its tuple
        ("XIV", "14", "correct", "numeric"),
        ("三分之一", "\\frac{1}{3}", "correct", "numeric"),
        ("@@##", "5", "undecided", "unparsed answer"),
        ("5", "@@##", "undecided", "unparsed gold"),
        ("", "5", "wrong", "no answer"),
        ("5", "", "undecided", "empty gold"),
        ("x^2 + 2x + 2", "(x+1)^2", "wrong", "math_verify"),  # decided: the difference is 1
        ("-\\infty", "\\infty", "wrong", "math_verify"),  # no numeric difference, still decided
    ],
)
def test_typed_verdicts(pred, gold, verdict, method):
    result = _verdict(pred, gold)
    assert (result.verdict, result.method) == (verdict, method), result
    assert result.why


def test_a_difference_sympy_cannot_settle_is_undecided():
    # zeta(3) is 1.2020569031595942... to every digit shown: sympy cannot show the two equal or different.
    result = _verdict("\\zeta(3)", "1.2020569031595942")
    assert result.verdict == "undecided" and result.method == "undecidable"
