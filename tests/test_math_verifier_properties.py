"""The math verifier by construction: random typed golds, rendered in every notation the
renderers below know, must be ``correct``; near misses (off by one, sign, swapped order where
order matters, wrong unit magnitude, swapped parts, truncated) must never be ``correct``.

Golds are drawn by hypothesis (bounded examples, so the default run stays fast; set
``RS_PROPERTY_EXAMPLES=10`` for ten times as many); every comparison goes through
:func:`compare`, the symbolic ones through the hard-timeout guard.
"""
from __future__ import annotations

import os
from decimal import Decimal
from fractions import Fraction

import pytest

hypothesis = pytest.importorskip("hypothesis")
num2words = pytest.importorskip("num2words").num2words
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rewardsmith.reward_fns.math_verifier.compare import GradingPolicy, Verdict, compare  # noqa: E402

TIMEOUT_S = 60.0
_SCALE = int(os.environ.get("RS_PROPERTY_EXAMPLES", "1"))
FAST = settings(max_examples=25 * _SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SYMBOLIC = settings(max_examples=8 * _SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Digits of other scripts (every one a Unicode Nd block) and the fullwidth / bold forms.
_DIGIT_ZEROS = {"arabic-indic": 0x660, "devanagari": 0x966, "bengali": 0x9E6, "thai": 0xE50, "fullwidth": 0xFF10,
                "math bold": 0x1D7CE}
_WORD_LANGUAGES = ("en", "fr", "es", "de", "pt", "nl")


def _judge(pred: str, gold: str, policy: GradingPolicy | None = None) -> Verdict:
    return compare(pred, gold, policy or GradingPolicy(), timeout=TIMEOUT_S)


def _assert_all_correct(gold: str, renderings: list[str]) -> None:
    for rendering in renderings:
        verdict = _judge(rendering, gold)
        assert verdict.verdict == "correct", (rendering, gold, verdict)


def _assert_none_correct(gold: str, misses: list[str]) -> None:
    for miss in misses:
        verdict = _judge(miss, gold)
        assert verdict.verdict != "correct", (miss, gold, verdict)


def _in_script(text: str, zero: int) -> str:
    return "".join(chr(zero + int(ch)) if ch.isdigit() else ch for ch in text)


def integer_renderings(n: int) -> list[str]:
    """Every way the renderers write integer ``n``."""
    out = [str(n), f"\\boxed{{{n}}}", f"${n}$", f"{n}.0", f"\\text{{{n}}}", f"{n:,}", f"{n:,}".replace(",", "{,}")]
    if abs(n) >= 1000:
        out.append(f"{n:,}".replace(",", "\\,"))
    out += [_in_script(str(n), zero) for zero in _DIGIT_ZEROS.values()]
    if n < 0:
        out.append("\u2212" + str(-n))  # the Unicode minus sign
    out += [num2words(n, lang=lang) for lang in _WORD_LANGUAGES if abs(n) <= 100_000]
    if 0 <= n <= 10**8:
        import cn2an

        out.append(cn2an.an2cn(n))
    if 1 <= n < 4000:
        import roman

        numeral = roman.toRoman(n)
        if len(numeral) >= 2:  # one letter is a choice or a variable, never read as a numeral
            out.append(numeral)
    return out


def integer_misses(n: int) -> list[str]:
    """Near misses of integer ``n``: off by one, the sign, a digit lost, digits swapped."""
    out = [str(n + 1), str(n - 1), num2words(n + 1)]
    if n != 0:
        out.append(str(-n))
    if abs(n) >= 10:
        out.append(str(n)[:-1])  # truncated
        digits = str(abs(n))
        swapped = digits[1] + digits[0] + digits[2:]
        if swapped != digits:
            out.append(("-" if n < 0 else "") + swapped.lstrip("0") or "0")
    if 2 <= n < 3999:
        import roman

        numeral = roman.toRoman(n + 1)
        if len(numeral) >= 2:
            out.append(numeral)
    return out


def fraction_renderings(value: Fraction) -> list[str]:
    """Every way the renderers write non-integer rational ``value``."""
    p, q = value.numerator, value.denominator
    sign, a = ("-" if p < 0 else ""), abs(p)
    out = [f"{sign}\\frac{{{a}}}{{{q}}}", f"{sign}\\dfrac{{{a}}}{{{q}}}", f"{sign}\\tfrac{{{a}}}{{{q}}}",
           f"{sign}{a}/{q}", f"\\frac{{{p}}}{{{q}}}", f"{sign}\\frac{{{2 * a}}}{{{2 * q}}}", f"{sign}{a}\u2044{q}"]
    if a > q:
        whole, rest = divmod(a, q)
        out.append(f"{sign}{whole}\\frac{{{rest}}}{{{q}}}")  # a mixed number
    scaled = q
    for prime in (2, 5):
        while scaled % prime == 0:
            scaled //= prime
    if scaled == 1:  # the decimal expansion terminates: the exact decimal is the value
        digits = 0
        while (value * 10**digits).denominator != 1:
            digits += 1
        out.append(f"{float(value):.{digits}f}")
    return out


def fraction_misses(value: Fraction) -> list[str]:
    p, q = value.numerator, value.denominator
    out = [f"\\frac{{{-p}}}{{{q}}}", f"\\frac{{{p + 1}}}{{{q}}}", f"\\frac{{{p}}}{{{q + 1}}}"]
    if abs(p) != q and p > 0:
        out.append(f"\\frac{{{q}}}{{{p}}}")  # numerator and denominator swapped
    if q % 2 == 1 and q % 5 == 1 and q > 2:
        out.append(f"{float(value):.2f}")  # a rounded decimal of a value that never terminates
    return out


@FAST
@given(st.integers(min_value=-10**6, max_value=10**6))
def test_integers_in_every_notation_are_correct(n):
    _assert_all_correct(str(n), integer_renderings(n))


@FAST
@given(st.integers(min_value=-10**6, max_value=10**6))
def test_integer_near_misses_are_never_correct(n):
    _assert_none_correct(str(n), integer_misses(n))


@FAST
@given(st.fractions(min_value=-50, max_value=50, max_denominator=40).filter(lambda v: v.denominator > 1))
def test_fractions_in_every_notation_are_correct(value):
    gold = f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    _assert_all_correct(gold, fraction_renderings(value))
    _assert_all_correct(f"{value.numerator}/{value.denominator}", fraction_renderings(value))


@FAST
@given(st.fractions(min_value=-50, max_value=50, max_denominator=40).filter(lambda v: v.denominator > 1))
def test_fraction_near_misses_are_never_correct(value):
    _assert_none_correct(f"\\frac{{{value.numerator}}}{{{value.denominator}}}", fraction_misses(value))


@FAST
@given(st.integers(min_value=1, max_value=10**5), st.integers(min_value=1, max_value=4))
def test_decimals_and_percentages(mantissa, decimals):
    value = Fraction(mantissa, 10**decimals)
    shown = f"{float(value):.{decimals}f}"
    _assert_all_correct(shown, [shown + "0", f"\\boxed{{{shown}}}", f"{value.numerator}/{value.denominator}",
                                _in_script(shown, _DIGIT_ZEROS["fullwidth"]).replace(".", "\uff0e")])
    _assert_none_correct(shown, [f"{float(value + Fraction(1, 10**decimals)):.{decimals}f}", "-" + shown])
    percent = f"{shown}\\%"
    _assert_all_correct(percent, [f"{shown}%", f"{shown} percent", f"{shown}\\%"])
    _assert_none_correct(percent, [f"{float(value) + 1:.{decimals}f}%", f"-{shown}%"])


# (unit, how many of the base unit it holds, other spellings); the gold is written in the first unit.
_LENGTHS = [("m", 1, ["m", "meters", "\\text{ m}", "\\,\\mathrm{m}"]),
            ("km", 1000, ["km", "kilometers", "\\text{ km}"]),
            ("cm", Fraction(1, 100), ["cm", "centimeters", "\\text{ cm}"]), ("mm", Fraction(1, 1000), ["mm"])]
_TIMES = [("s", 1, ["s", "seconds", "\\text{ s}"]), ("min", 60, ["min", "minutes"]), ("h", 3600, ["h", "hours", "hr"])]
_MASSES = [("g", 1, ["g", "grams"]), ("kg", 1000, ["kg", "kilograms", "\\text{ kg}"])]


def _number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


@FAST
@given(st.integers(min_value=1, max_value=5000), st.sampled_from([_LENGTHS, _TIMES, _MASSES]), st.data())
def test_quantities_in_other_units(magnitude, dimension, data):
    gold_unit, gold_scale, _ = data.draw(st.sampled_from(dimension))
    gold = f"{magnitude} \\text{{ {gold_unit}}}"
    renderings = []
    for unit, scale, spellings in dimension:
        value = Fraction(magnitude) * Fraction(gold_scale) / Fraction(scale)
        if len(_number(value)) > 12 or Fraction(_number(value)) != value:
            continue  # only conversions a decimal writes exactly
        renderings += [f"{_number(value)} {spelling}".replace(" \\", "\\") for spelling in spellings]
    _assert_all_correct(gold, renderings)
    other_unit = next(unit for unit, scale, _ in dimension if scale != gold_scale)
    other_dimension = next(d for d in (_LENGTHS, _TIMES, _MASSES) if d is not dimension)
    _assert_none_correct(gold, [
        f"{magnitude} {other_unit}",  # the same number in a unit of another magnitude
        f"{magnitude + 1} {gold_unit}",
        f"{magnitude} {other_dimension[1][0]}",  # another dimension
    ])


@FAST
@given(st.lists(st.integers(min_value=-30, max_value=30), min_size=2, max_size=5, unique=True), st.randoms())
def test_sets_in_any_order(items, rng):
    gold = "\\{" + ", ".join(map(str, items)) + "\\}"
    shuffled = list(items)
    rng.shuffle(shuffled)
    _assert_all_correct(gold, ["\\{" + ", ".join(map(str, shuffled)) + "\\}",
                               "\\left\\{" + ",".join(map(str, shuffled)) + "\\right\\}"])
    _assert_none_correct(gold, ["\\{" + ", ".join(map(str, items[:-1])) + "\\}",  # truncated
                                "\\{" + ", ".join(map(str, [*items[:-1], items[-1] + 100])) + "\\}"])


@SYMBOLIC
@given(st.lists(st.integers(min_value=-30, max_value=30), min_size=2, max_size=4, unique=True))
def test_ordered_tuples(items):
    gold = "(" + ", ".join(map(str, items)) + ")"
    _assert_all_correct(gold, ["\\left(" + ", ".join(map(str, items)) + "\\right)",
                               "\\langle " + ", ".join(map(str, items)) + " \\rangle",
                               "\\begin{pmatrix}" + " \\\\ ".join(map(str, items)) + "\\end{pmatrix}"])
    swapped = [items[1], items[0], *items[2:]]
    _assert_none_correct(gold, ["(" + ", ".join(map(str, swapped)) + ")",  # order matters
                                "(" + ", ".join(map(str, items[:-1])) + ")",  # truncated
                                "\\{" + ", ".join(map(str, items)) + "\\}",  # a set has no order
                                "(" + ", ".join(map(str, [-items[0], *items[1:]])) + ")" if items[0] else "(1)"])


@SYMBOLIC
@given(st.integers(min_value=-20, max_value=20), st.integers(min_value=1, max_value=20),
       st.sampled_from(["[]", "[)", "(]"]))
def test_intervals(low, width, brackets):
    high = low + width
    gold = f"{brackets[0]}{low}, {high}{brackets[1]}"
    _assert_all_correct(gold, [f"\\left{brackets[0]}{low},{high}\\right{brackets[1]}"])
    flipped = {"[": "(", "(": "["}[brackets[0]] + f"{low}, {high}" + brackets[1]
    _assert_none_correct(gold, [flipped, f"{brackets[0]}{low}, {high + 1}{brackets[1]}",
                                f"{brackets[0]}{high}, {low}{brackets[1]}"])  # the ends swapped


@SYMBOLIC
@given(st.lists(st.integers(min_value=-9, max_value=9), min_size=4, max_size=4))
def test_matrices(entries):
    a, b, c, d = entries

    def matrix(env: str, rows: list[list[int]]) -> str:
        return f"\\begin{{{env}}}" + " \\\\ ".join(" & ".join(map(str, row)) for row in rows) + f"\\end{{{env}}}"

    gold = matrix("pmatrix", [[a, b], [c, d]])
    _assert_all_correct(gold, [matrix("bmatrix", [[a, b], [c, d]]), matrix("matrix", [[a, b], [c, d]])])
    misses = [matrix("pmatrix", [[a + 1, b], [c, d]]), matrix("bmatrix", [[a, b], [c, -d - 1 if d >= 0 else -d]])]
    if b != c:
        misses.append(matrix("pmatrix", [[a, c], [b, d]]))  # transposed
    _assert_none_correct(gold, misses)


@SYMBOLIC
@given(st.integers(min_value=1, max_value=9), st.integers(min_value=-9, max_value=9).filter(bool),
       st.integers(min_value=-9, max_value=9))
def test_polynomials(a, b, c):
    gold = f"{a}x^2 {'+' if b > 0 else '-'} {abs(b)}x {'+' if c >= 0 else '-'} {abs(c)}"
    _assert_all_correct(gold, [f"{c} + {b}x + {a}x^2".replace("+ -", "- "),
                               f"{a}\\cdot x^{{2}}+{b}\\cdot x+{c}".replace("+-", "-"),
                               f"x({a}x + {b}) + {c}".replace("+ -", "- ")])
    _assert_none_correct(gold, [f"{a}x^2 + {b}x + {c + 1}".replace("+ -", "- "),
                                f"{a}x^2 + {-b}x + {c}".replace("+ -", "- "),
                                f"{a}x^3 + {b}x + {c}".replace("+ -", "- ")])


@FAST
@given(st.integers(min_value=0, max_value=23), st.integers(min_value=0, max_value=59))
def test_times_of_day(hour, minute):
    twelve = hour % 12 or 12
    meridiem = "AM" if hour < 12 else "PM"
    gold = f"{twelve}:{minute:02d} \\text{{ {meridiem}}}"
    twenty_four = f"{hour}:{minute:02d}" if hour > 12 or hour == 0 else f"{twelve}:{minute:02d} {meridiem}"
    _assert_all_correct(gold, [f"{twelve}:{minute:02d} {meridiem.lower()}", f"{twelve}:{minute:02d} {meridiem[0]}.m.",
                               twenty_four])
    other = "PM" if meridiem == "AM" else "AM"
    _assert_none_correct(gold, [f"{twelve}:{minute:02d} {other}", f"{twelve}:{(minute + 1) % 60:02d} {meridiem}",
                                f"{twelve % 12 + 1}:{minute:02d} {meridiem}"])


_MAGNITUDE_NAMES = {3: ["thousand", "k", "K", "\\text{ thousand}", "\\text{k}"],
                    6: ["million", "M", "mn", "\\text{ million}", "\\text{M}"],
                    9: ["billion", "bn", "\\text{ billion}"], 12: ["trillion"]}


@FAST
@given(st.integers(min_value=1, max_value=999), st.integers(min_value=0, max_value=2),
       st.sampled_from(sorted(_MAGNITUDE_NAMES)), st.data())
def test_magnitude_words_and_suffixes(whole, decimals, power, data):
    mantissa = Decimal(whole).scaleb(-decimals)
    gold = str(int(mantissa.scaleb(power)))
    name = data.draw(st.sampled_from(_MAGNITUDE_NAMES[power]))
    space = "" if name.startswith("\\") or len(name) == 1 else data.draw(st.sampled_from(["", " "]))
    _assert_all_correct(gold, [f"{mantissa}{space}{name}", f"{int(gold):,}"])
    other = data.draw(st.sampled_from([p for p in _MAGNITUDE_NAMES if p != power]))
    _assert_none_correct(gold, [f"{mantissa}{space}{_MAGNITUDE_NAMES[other][0]}", f"{mantissa + 1}{space}{name}"])
    if len(name) == 1:
        _assert_none_correct(gold, [f"{mantissa} {name}"])  # a lone letter after a space is a unit (300 K)


@FAST
@given(st.integers(min_value=1, max_value=60), st.integers(min_value=2, max_value=90), st.data())
def test_chances_in_words(part, whole, data):
    part = min(part, whole - 1)
    gold = data.draw(st.sampled_from([f"\\frac{{{part}}}{{{whole}}}", f"{part}/{whole}"]))
    _assert_all_correct(gold, [f"{part} in {whole}", f"{part} out of {whole}", f"{part}\\text{{ out of }}{whole}",
                               f"{part} \\text{{ chance in }} {whole}", f"{part} chances in {whole}"])
    misses = [f"{part} in {whole + 1}", f"{part + 1} out of {whole}"]
    if 2 * part != whole:
        misses.append(f"{whole - part} in {whole}")  # the complement
    _assert_none_correct(gold, misses)


_EMPTY_SPELLINGS = ["\\emptyset", "\\varnothing", "∅", "\\{\\}", "\\{ \\}", "\\text{no solution}", "no real solutions",
                    "\\text{no real roots}", "none", "the empty set", "there are no solutions"]
_REAL_SPELLINGS = ["\\mathbb{R}", "\\mathbb R", "ℝ", "(-\\infty, \\infty)", "(-\\infty,+\\infty)", "all real numbers",
                   "\\text{all reals}", "every real number", "any real x"]


@FAST
@given(st.sampled_from(_EMPTY_SPELLINGS), st.sampled_from(_EMPTY_SPELLINGS), st.sampled_from(_REAL_SPELLINGS),
       st.sampled_from(_REAL_SPELLINGS))
def test_special_solution_sets_in_any_spelling(empty, other_empty, reals, other_reals):
    _assert_all_correct(empty, [other_empty])
    _assert_all_correct(reals, [other_reals])
    _assert_none_correct(empty, [reals, "\\{0\\}", "1"])
    _assert_none_correct(reals, [empty, "\\text{infinitely many}", "(0, \\infty)"])


@FAST
@given(st.integers(min_value=2, max_value=40), st.integers(min_value=0, max_value=200), st.integers(0, 3), st.data())
def test_residue_classes(modulus, number, lift, data):
    residue = number % modulus
    written = data.draw(st.sampled_from(["x \\equiv {r} \\pmod{{{m}}}", "{r} \\pmod {m}", "n ≡ {r} (mod {m})",
                                         "{r} \\bmod {m}", "x \\equiv {r} \\ (\\mathrm{{mod}}\\ {m})"]))
    member = residue + lift * modulus
    _assert_all_correct(str(residue), [written.format(r=member, m=modulus)])
    _assert_all_correct(f"x \\equiv {residue} \\pmod{{{modulus}}}", [str(residue), written.format(r=member, m=modulus)])
    _assert_none_correct(str(residue), [written.format(r=member + 1, m=modulus), f"x \\equiv {residue} \\pmod{{1}}"
                                        if residue else f"x \\equiv 1 \\pmod{{{modulus}}}"])
    _assert_none_correct(f"x \\equiv {residue} \\pmod{{{modulus}}}", [str(residue + 1), str(residue + modulus + 1)])


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@FAST
@given(st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=28),
       st.integers(min_value=1900, max_value=2100))
def test_calendar_dates(month, day, year):
    name = _MONTHS[month - 1]
    gold = f"{year}-{month:02d}-{day:02d}"
    _assert_all_correct(gold, [f"{name} {day}", f"{day} {name}", f"\\text{{{name[:3]}. {day}}}", f"{name} {day}, {year}",
                               f"{day} {name} {year}", f"the {day}th of {name}"])
    _assert_none_correct(gold, [f"{name} {day + 1}", f"{_MONTHS[month % 12]} {day}", f"{name} {day}, {year + 1}"])


@FAST
@given(st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=6))
def test_weekdays(day, offset):
    gold = _WEEKDAYS[day]
    _assert_all_correct(gold, [gold.lower(), gold[:3], f"{gold[:3]}.", f"\\text{{{gold.upper()}}}"])
    _assert_none_correct(gold, [_WEEKDAYS[(day + offset) % 7], _WEEKDAYS[(day + offset) % 7][:3]])


@FAST
@given(st.lists(st.integers(min_value=-99, max_value=99), min_size=2, max_size=4, unique=True), st.data())
def test_labelled_parts_in_order(values, data):
    from rewardsmith.reward_fns import math_answer

    labels = data.draw(st.sampled_from([["(a)", "(b)", "(c)", "(d)"], ["**(a)**", "**(b)**", "**(c)**", "**(d)**"],
                                        ["Part (a):", "Part (b):", "Part (c):", "Part (d):"], ["(i)", "(ii)", "(iii)", "(iv)"]]))
    gold = ", ".join(map(str, values))

    def response(parts: list[int]) -> str:
        return " ".join(f"{label} The value is $\\boxed{{{v}}}$." for label, v in zip(labels, parts))

    assert math_answer.compute_score("lighteval/MATH", response(values), gold)["verdict"] == "correct"
    misses = [values[:-1], [*values[:-1], values[-1] + 1]]
    if values[0] != values[1]:
        misses.append([values[1], values[0], *values[2:]])  # two parts swapped
    for miss in misses:
        result = math_answer.compute_score("lighteval/MATH", response(miss), gold)
        assert result["verdict"] != "correct", (miss, gold, result)
