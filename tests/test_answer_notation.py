"""Notations rewritten before an answer is canonicalised (reward_fns/math_verifier/notation.py)."""
import json
from pathlib import Path

import pytest

from rewardsmith.reward_fns.math_verifier.normalize import canonical_answer, parse_number
from rewardsmith.reward_fns.math_verifier.notation import spelled_number, typeset_quantities
from rewardsmith.reward_fns.math_verifier.judges import quick_judge

CASES = Path(__file__).parent / "data" / "math_answer_cases.jsonl"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\\SI{5}{\\meter}", "5\\text{ meter}"),
        ("\\SI{2.5}{\\kilo\\gram}", "2.5\\text{ kilo gram}"),
        ("\\qty{12}{cm}", "12\\text{ cm}"),
        ("\\SI{50}{\\percent}", "50\\%"),
        ("\\SI{45}{\\degree}", "45^\\circ"),
        ("\\num{1200}", "1200"),
        ("5\\,\\si{cm}", "5\\,\\text{ cm}"),
        ("100°C", "100°"),
        ("30^{\\circ}\\text{F}", "30^{\\circ}"),
        ("x² + 1", "x^{2} + 1"),
        ("10⁻³", "10^{-3}"),
        ("Cats", "Cats"),  # a capital C after no degree sign is left alone
    ],
)
def test_typeset_quantities(text, expected):
    assert typeset_quantities(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("three quarters", "\\frac{3}{4}"),
        ("one half", "\\frac{1}{2}"),
        ("two-thirds", "\\frac{2}{3}"),
        ("a dozen", "12"),
        ("two dozen", "24"),
        ("the 3rd", "3"),
        ("21^{st}", "21"),
        ("the third", "3"),
        ("2 and 1/2", "2 1/2"),
        ("2 and \\frac{1}{2}", "2\\frac{1}{2}"),
        ("(1011)_2", "1011_2"),
        ("many halves", None),
        ("the cat", None),
        ("third", None),  # an ordinal word alone may be a noun ("a third"), not a number
    ],
)
def test_spelled_number(text, expected):
    assert spelled_number(text) == expected


@pytest.mark.parametrize(
    "answer, value",
    [("\\boxed{\\SI{2.5}{\\kilo\\gram}}", "5/2"), ("25 \\text{ cm}^{2}", "25"), ("80 km/h", "80"), ("36 cm²", "36"),
     ("0.(3)", "1/3"), ("0.\\dot{3}", "1/3"), ("33\\frac13\\%", "100/3"), ("two thirds", "2/3")],
)
def test_canonical_numbers(answer, value):
    from fractions import Fraction

    assert parse_number(canonical_answer(answer)).value == Fraction(value)


@pytest.mark.parametrize(
    "pred, gold, correct",
    [("option B", "B", True), ("Choice (C)", "B", False), ("∛2", "\\sqrt[3]{2}", True), ("n³", "n^3", True),
     ("\\SI{5}{\\meter}", "6", False), ("the 4th", "3", False), ("one third", "\\frac{1}{2}", False)],
)
def test_quick_judge_on_notations(pred, gold, correct):
    verdict = quick_judge(pred, gold)
    assert (None if verdict is None else verdict.correct) is correct


def test_known_misses_have_reasons():
    for line in CASES.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        assert case["core"] or case.get("known_miss"), case["id"]
