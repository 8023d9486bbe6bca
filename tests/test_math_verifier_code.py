"""Answers in code syntax (Python, SymPy, R, spreadsheets, Mathematica) are read by value, by construction.

For random values, each value is written in every code notation the reader
knows: the equal rendering must be ``correct`` and a near miss (off by one)
never ``correct``. Code the reader cannot read fully, or must not run, stays
unread: never ``correct``, and the reader never evaluates it.
"""
from __future__ import annotations

from fractions import Fraction
from math import factorial

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rewardsmith.reward_fns.math_answer import compute_score  # noqa: E402
from rewardsmith.reward_fns.math_verifier.code_syntax import code_expression  # noqa: E402

RULE = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA_SOURCE = "lighteval/MATH"


def _verdict(answer: str, gold: str) -> str:
    return compute_score(DATA_SOURCE, f"Working it out.\nAnswer: {answer}", gold)["verdict"]


def _latex_fraction(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


FRACTIONS = ("Rational({p}, {q})", "Fraction({p}, {q})", "sympy.Rational({p}, {q})", "Rational[{p}, {q}]", "={p}/{q}",
             "\\texttt{{Rational({p}, {q})}}", "`Fraction({p}, {q})`")
ROOTS = ("{a}*math.sqrt({r})", "{a}*np.sqrt({r})", "{a}*sqrt({r})", "{a} * {r}**0.5", "={a}*SQRT({r})",
         "{a} Sqrt[{r}]", "{a}*sqrt({r})", "\\texttt{{{a}*math.sqrt({r})}}")
POWERS = ("{n}**{k}", "pow({n}, {k})", "=POWER({n},{k})", "Power[{n}, {k}]", "math.pow({n}, {k})")
REMAINDERS = ("{a} %% {m}", "{a} % {m}", "=MOD({a},{m})", "Mod[{a}, {m}]", "Mod({a}, {m})")
FACTORIALS = ("factorial({n})", "math.factorial({n})", "=FACT({n})", "Factorial[{n}]")


@RULE
@given(st.integers(-40, 40), st.integers(2, 40), st.sampled_from(FRACTIONS))
def test_a_fraction_in_code_is_its_value(p: int, q: int, notation: str) -> None:
    gold = Fraction(p, q)
    assert _verdict(notation.format(p=p, q=q), _latex_fraction(gold)) == "correct"
    assert _verdict(notation.format(p=p + q, q=q), _latex_fraction(gold)) != "correct"


@RULE
@given(st.integers(1, 9), st.sampled_from([2, 3, 5, 6, 7, 10, 11]), st.sampled_from(ROOTS))
def test_a_root_in_code_is_its_value(a: int, r: int, notation: str) -> None:
    gold = f"{a}\\sqrt{{{r}}}" if a != 1 else f"\\sqrt{{{r}}}"
    assert _verdict(notation.format(a=a, r=r), gold) == "correct"
    assert _verdict(notation.format(a=a + 1, r=r), gold) != "correct"


@RULE
@given(st.integers(2, 12), st.integers(2, 6), st.sampled_from(POWERS))
def test_a_power_in_code_is_its_value(n: int, k: int, notation: str) -> None:
    assert _verdict(notation.format(n=n, k=k), str(n**k)) == "correct"
    assert _verdict(notation.format(n=n, k=k + 1), str(n**k)) != "correct"


@RULE
@given(st.integers(10, 500), st.integers(3, 9), st.sampled_from(REMAINDERS))
def test_a_remainder_in_code_is_its_value(a: int, m: int, notation: str) -> None:
    assert _verdict(notation.format(a=a, m=m), str(a % m)) == "correct"
    assert _verdict(notation.format(a=a, m=m), str(a % m + m)) != "correct"


@RULE
@given(st.integers(2, 12), st.sampled_from(FACTORIALS))
def test_a_factorial_in_code_is_its_value(n: int, notation: str) -> None:
    assert _verdict(notation.format(n=n), str(factorial(n))) == "correct"
    assert _verdict(notation.format(n=n + 1), str(factorial(n))) != "correct"


@pytest.mark.parametrize(("answer", "gold"), [
    ("log(8, base = 2)", "3"),
    ("=PI()/2", "\\frac{\\pi}{2}"),
    ("=SUM(12,24)", "36"),
    ("\\texttt{Exp[2]}", "e^2"),
    ("\\texttt{\\{\\{x -> 1\\}, \\{x -> 3\\}\\}}", "1, 3"),
    ("sqrt(3)*pi", "\\sqrt{3}\\pi"),
    ("Interval(0, 1)", "[0, 1]"),
    ("FiniteSet(1, 2)", "\\{1, 2\\}"),
    ("x**2 + 1", "x^2+1"),
    ("cbrt(4)", "\\sqrt[3]{4}"),
])
def test_code_notations_are_read(answer: str, gold: str) -> None:
    assert _verdict(answer, gold) == "correct"


@pytest.mark.parametrize("code", [
    "__import__('os').system('true')", "os.system(1)", "math.__class__", "().__class__", "lambda: 1",
    "2**10**10", "factorial(10**7)", "factorial(factorial(5))", "9**999999", "x.real", "e**2",
    "=ROUNDDOWN(42.6,0)", "foo(3)", "Foo[2]", "50%", "1/0", "sqrt(" + "1+" * 200 + "1)",
    # values that grow past any bound: each took seconds to minutes before the bounds
    "pow(999999, 999999)", "binomial(999999, 499999)", "perm(999999, 99999)", "floor(exp(999999))",
    "((999999**100)**100)**100",
])
def test_code_that_cannot_be_read_whole_or_safely_stays_unread(code: str) -> None:
    assert code_expression(code) is None


def test_an_unread_code_answer_is_undecided_not_guessed() -> None:
    assert _verdict("=ROUNDDOWN(42.6,0)", "43") == "undecided"
    assert _verdict("foo(3)", "3") != "correct"


# Spoken math: numbers spelled by num2words (an independent renderer), joined by the grammar's words.
num2words = pytest.importorskip("num2words").num2words


def _spoken(n: int) -> str:
    return ("negative " if n < 0 else "") + num2words(abs(n)).replace(",", "")


SPOKEN_FRACTIONS = ("{p} over {q}", "{p} divided by {q}", "\\text{{{p} over {q}}}")


@RULE
@given(st.integers(-99, 99), st.integers(2, 99), st.sampled_from(SPOKEN_FRACTIONS))
def test_a_spoken_fraction_is_its_value(p: int, q: int, notation: str) -> None:
    gold = _latex_fraction(Fraction(p, q))
    assert _verdict(notation.format(p=_spoken(p), q=_spoken(q)), gold) == "correct"
    assert _verdict(notation.format(p=_spoken(p + q), q=_spoken(q)), gold) != "correct"


@RULE
@given(st.integers(1, 20), st.sampled_from([2, 3, 5, 7]),
       st.sampled_from(("{a} times the square root of {r}", "{a} root {r}", "{a} times root {r}")))
def test_a_spoken_root_is_its_value(a: int, r: int, notation: str) -> None:
    gold = f"{a}\\sqrt{{{r}}}"
    assert _verdict(notation.format(a=_spoken(a), r=_spoken(r)), gold) == "correct"
    assert _verdict(notation.format(a=_spoken(a + 1), r=_spoken(r)), gold) != "correct"


@RULE
@given(st.integers(1, 50), st.sampled_from([("squared", 2), ("cubed", 3), ("to the fourth", 4), ("to the power of five", 5)]),
       st.sampled_from(["plus", "minus"]))
def test_a_spoken_polynomial_is_its_value(c: int, power: tuple[str, int], sign: str) -> None:
    words, k = power
    gold = f"x^{k}{'+' if sign == 'plus' else '-'}{c}"
    assert _verdict(f"x {words} {sign} {_spoken(c)}", gold) == "correct"
    assert _verdict(f"x {words} {sign} {_spoken(c + 1)}", gold) != "correct"


@pytest.mark.parametrize(("answer", "gold"), [
    ("the square root of x plus one", "\\sqrt{x+1}"),  # of x, or of x + 1?
    ("x plus one over two", "\\frac{x+1}{2}"),  # (x + 1)/2 or x + 1/2?
])
def test_spoken_math_with_an_open_scope_is_undecided(answer: str, gold: str) -> None:
    assert _verdict(answer, gold) == "undecided"


@pytest.mark.parametrize(("answer", "gold", "verdict"), [
    ("root five plus one", "1+\\sqrt{5}", "correct"),  # "root N" takes the next number only
    ("root five plus one", "\\sqrt{5}-1", "wrong"),
    ("four x cubed", "4x^3", "correct"),  # a number before a letter is a product
    ("four x cubed", "4x^2", "wrong"),
    ("negative five halves", "-\\frac{5}{2}", "correct"),
])
def test_spoken_math_table(answer: str, gold: str, verdict: str) -> None:
    assert _verdict(answer, gold) == verdict
