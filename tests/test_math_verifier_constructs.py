"""``wrong`` needs the whole committed answer read: notations whose value is partly in words or marks.

Canonical form drops what it takes for decoration (unit words, degree signs,
``\\text{}``, primes); where that part carries value, reading only the digits
misreads the answer as another number. Known constructs (collective numerals,
degrees-minutes-seconds, base prefixes, per mille, gcd/lcm, residue-class sets,
permutations, the golden ratio) are read into their value; anything else
attached to a number leaves a differing answer ``undecided``, never ``wrong``.
"""
from __future__ import annotations

from fractions import Fraction

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rewardsmith.reward_fns.math_answer import compute_score  # noqa: E402
from rewardsmith.reward_fns.math_verifier.constructs import COLLECTIVES, VALUE_WORDS, collective_count  # noqa: E402
from rewardsmith.reward_fns.math_verifier.readable import _english_words, _singulars  # noqa: E402

RULE = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA_SOURCE = "lighteval/MATH"


def _verdict(response: str, gold: str, data_source: str = DATA_SOURCE) -> str:
    return compute_score(data_source, response, gold)["verdict"]


def _boxed(answer: str) -> str:
    return f"So the answer is $\\boxed{{{answer}}}$."


def _decimal(value: Fraction) -> str:
    """``value`` (a terminating fraction) as a plain decimal."""
    whole, rest = divmod(value.numerator * 10**6 // value.denominator, 10**6)
    return f"{whole}.{rest:06d}".rstrip("0").rstrip(".")


_NUMBERS = st.integers(min_value=1, max_value=999)
# Marks and symbols no reader consumes: primes (minutes, feet), and symbols beyond ASCII that scale or
# qualify a number (per ten thousand, angle, ounce, per).
_MARKS = st.sampled_from(["'", "''", "′", "″", "\\text{‱}", "‱", "∠", "℥", "⅌"])
# Words in no English word list (and no unit): a reader cannot tell what they do to the number.
_NONSENSE = st.text("bcdfghjklmnpqrstvwxz", min_size=4, max_size=8).filter(
    lambda word: not any(form in _english_words() for form in _singulars(word)))


@RULE
@given(_NUMBERS, _NUMBERS, _MARKS)
def test_a_number_with_an_unknown_mark_is_never_wrong(number, gold, mark):
    assert _verdict(_boxed(f"{number}{mark}"), str(gold)) != "wrong"


@RULE
@given(_NUMBERS, _NUMBERS, st.one_of(_NONSENSE, st.sampled_from(sorted(VALUE_WORDS))))
def test_a_number_with_an_unread_word_is_never_wrong_by_its_number(number, gold, word):
    # The word is named nowhere else in the response: it is no noun the response counts.
    # Nor correct: a number read without its word is no established value either way.
    response = f"Working it out carefully.\n#### {number} {word}"
    assert _verdict(response, str(gold), "openai/gsm8k") == "undecided", (response, gold)
    assert _verdict(response, str(number), "openai/gsm8k") == "undecided", (response, number)


@RULE
@given(_NUMBERS, _NUMBERS)
def test_a_noun_the_response_counts_is_read_as_its_unit(number, gold):
    response = f"Each box holds some muffins, so we count muffins.\n#### {number} muffins"
    assert _verdict(response, str(gold), "openai/gsm8k") == ("correct" if number == gold else "wrong")


@RULE
@given(st.integers(min_value=1, max_value=40), st.sampled_from(sorted(COLLECTIVES)), st.booleans())
def test_collective_numerals_name_their_count(count, noun, in_words):
    written = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(count) if in_words else None
    answer = f"{written or count} {noun}"
    total = count * COLLECTIVES[noun]
    assert _verdict(f"#### {answer}", str(total), "openai/gsm8k") == "correct"
    assert _verdict(f"#### {answer}", str(total + 1), "openai/gsm8k") == "wrong"
    # The bare count may be the gold's when the question counts dozens: not established either way.
    assert _verdict(f"#### {answer}", str(count), "openai/gsm8k") == "undecided"


@RULE
@given(st.integers(min_value=0, max_value=359), st.integers(min_value=0, max_value=59),
       st.integers(min_value=0, max_value=59))
def test_an_angle_in_degrees_minutes_and_seconds_is_its_degrees(degrees, minutes, seconds):
    value = degrees + Fraction(minutes, 60) + Fraction(seconds, 3600)
    gold = f"\\frac{{{value.numerator}}}{{{value.denominator}}}^\\circ"
    answer = f"{degrees}^\\circ {minutes}' {seconds}''"
    assert _verdict(_boxed(answer), gold) == "correct"
    near_miss = f"{degrees}^\\circ {minutes}' {(seconds + 1) % 60}''"
    assert _verdict(_boxed(near_miss), gold) == "wrong"
    unicode_form = f"{degrees}°{minutes}′{seconds}″"
    assert _verdict(_boxed(unicode_form), gold) == "correct"


@RULE
@given(st.integers(min_value=0, max_value=179).map(lambda d: 2 * d + 1))
def test_an_angle_in_degrees_against_radians(degrees):
    value = Fraction(degrees, 180)
    gold = f"\\left(2, \\frac{{{value.numerator}\\pi}}{{{value.denominator}}}\\right)"
    assert _verdict(_boxed(f"(2, {degrees}^\\circ)"), gold) == "correct"
    assert _verdict(_boxed(f"(2, {degrees + 2}^\\circ)"), gold) == "wrong"


@RULE
@given(st.integers(min_value=16, max_value=10**6), st.sampled_from([("0x", "x", 16), ("0b", "b", 2), ("0o", "o", 8)]))
def test_a_base_prefix_names_its_value(number, prefix):
    written, code, _base = prefix
    digits = format(number, code).upper() if code == "x" else format(number, code)
    assert _verdict(_boxed(f"\\texttt{{{written}{digits}}}"), str(number)) == "correct"
    assert _verdict(f"Answer: {written}{digits}", str(number + 1), "math_dapo") == "wrong"


@RULE
@given(st.integers(min_value=1, max_value=999))
def test_per_mille_is_a_thousandth(number):
    value = Fraction(number, 1000)
    assert _verdict(_boxed(f"{number}\\text{{‰}}"), _decimal(value)) == "correct"
    assert _verdict(f"Answer: {number}‰", f"{_decimal(value * 100)}\\%", "math_dapo") == "correct"
    assert _verdict(_boxed(f"{number}\\text{{‰}}"), _decimal(value + Fraction(1, 1000))) == "wrong"


@RULE
@given(st.lists(st.integers(min_value=1, max_value=60), min_size=2, max_size=3), st.sampled_from(["gcd", "lcm"]))
def test_gcd_and_lcm_of_integers_are_their_value(numbers, name):
    import math

    value = math.gcd(*numbers) if name == "gcd" else math.lcm(*numbers)
    answer = f"\\operatorname{{{name}}}({', '.join(map(str, numbers))})"
    assert _verdict(_boxed(answer), str(value)) == "correct"
    assert _verdict(_boxed(answer), str(value + 1)) == "wrong"


@RULE
@given(st.integers(min_value=2, max_value=30), st.integers(min_value=0, max_value=100), st.integers(-5, 5))
def test_a_residue_class_as_a_set_or_family(modulus, residue, shift):
    gold = f"x \\equiv {residue % modulus} \\pmod{{{modulus}}}"
    member = residue + shift * modulus
    for answer in (f"\\{{{modulus}k+{member % modulus} : k \\in \\mathbb{{Z}}\\}}",
                   f"n = {modulus}k + {member % modulus},\\ k \\in \\mathbb{{Z}}",
                   f"\\{{\\ldots, {member}, {member + modulus}, {member + 2 * modulus}, \\ldots\\}}"):
        assert _verdict(_boxed(answer), gold) == "correct", answer
    near_miss = f"\\{{{modulus}k+{(residue + 1) % modulus} : k \\in \\mathbb{{Z}}\\}}"
    assert _verdict(_boxed(near_miss), gold) == "wrong"


def test_a_union_of_classes_equals_the_class_it_spells():
    assert _verdict(_boxed("x \\equiv 2, 5 \\pmod 6"), "x \\equiv 2 \\pmod 3") == "correct"
    assert _verdict(_boxed("x \\equiv 2, 4 \\pmod 6"), "x \\equiv 2 \\pmod 3") == "wrong"


@RULE
@given(st.permutations(list(range(1, 6))), st.integers(min_value=0, max_value=4))
def test_permutations_in_cycle_and_two_line_notation(images, rotation):
    cycle = [1]
    while images[cycle[-1] - 1] != 1:
        cycle.append(images[cycle[-1] - 1])
    if len(cycle) < 2:
        return
    mapping = {p: images[p - 1] for p in cycle}
    rotated = cycle[rotation % len(cycle):] + cycle[: rotation % len(cycle)]
    gold = "(" + "\\ ".join(map(str, cycle)) + ")"
    assert _verdict(_boxed("(" + "\\ ".join(map(str, rotated)) + ")"), gold) == "correct"
    points = range(1, 6)  # two-line notation: every point above its image
    two_line = ("\\begin{pmatrix}" + "&".join(map(str, points)) + "\\\\"
                + "&".join(str(mapping.get(p, p)) for p in points) + "\\end{pmatrix}")
    assert _verdict(_boxed(two_line), gold) == "correct"
    if len(cycle) > 2:
        reversed_cycle = "(" + "\\ ".join(map(str, [cycle[0], *reversed(cycle[1:])])) + ")"
        assert _verdict(_boxed(reversed_cycle), gold) == "wrong"  # the inverse


@pytest.mark.parametrize("answer, gold, verdict", [
    ("\\varphi", "\\frac{1+\\sqrt{5}}{2}", "correct"),
    ("\\frac{1}{\\varphi}", "\\frac{\\sqrt{5}-1}{2}", "correct"),
    ("\\varphi^2", "\\frac{3+\\sqrt{5}}{2}", "correct"),
    ("\\varphi + 2", "\\frac{3+\\sqrt{5}}{2}", "wrong"),
    ("\\mathbf{k}", "\\begin{pmatrix} 0 \\\\ 0 \\\\ 1 \\end{pmatrix}", "correct"),
    ("3\\hat{\\imath}+2\\hat{\\jmath}+2\\hat{k}", "\\begin{pmatrix} 3 \\\\ 2 \\\\ 2 \\end{pmatrix}", "correct"),
    ("30'", "30", "undecided"),  # 30 minutes (or feet): not the number 30
])
def test_named_constants_unit_vectors_and_marks(answer, gold, verdict):
    assert _verdict(_boxed(answer), gold) == verdict


@pytest.mark.parametrize("answer, gold, verdict", [
    ("75 cents", "0.75", "correct"),
    ("75 cents", "75", "correct"),
    ("75 cents", "7.5", "wrong"),
    ("a baker's dozen", "13", "correct"),
    ("half a dozen", "6", "correct"),
    ("two score", "40", "correct"),
    ("2 dozen eggs", "24", "correct"),
])
def test_amounts_in_words(answer, gold, verdict):
    assert _verdict(f"#### {answer}", gold, "openai/gsm8k") == verdict


@pytest.mark.parametrize("text, value", [
    ("a dozen", "12"), ("two dozen", "24"), ("3 dozen", "36"), ("half a dozen", "6"), ("a baker's dozen", "13"),
    ("1 gross", "144"), ("two score", "40"), ("a score", "20"), ("2 dozen eggs", "24"),
    ("dozen", "12"), ("the score", None), ("5 apples", None), ("a score of 85", None),
])
def test_collective_count_reads_the_table(text, value):
    assert collective_count(text) == value


@pytest.mark.parametrize("answer, gold, verdict", [
    ("\\gamma", "0.5772", "correct"),  # math-verify reads the Euler-Mascheroni constant
    ("1-\\gamma", "0.4229", "wrong"),
    ("2G", "1.83", "undecided"),  # Catalan's constant: not evaluated, so not compared as a variable
])
def test_named_constants_are_read_or_left_undecided(answer, gold, verdict):
    assert _verdict(_boxed(answer), gold) == verdict


@pytest.mark.parametrize("answer, gold, verdict", [
    ("\\text{Isosceles triangle}", "isosceles", "undecided"),  # the gold's word and one more: not read
    ("\\text{isosceles}", "isosceles", "correct"),
    ("\\text{scalene triangle}", "isosceles", "wrong"),
])
def test_words_beyond_the_golds_are_not_compared_away(answer, gold, verdict):
    assert _verdict(_boxed(answer), gold) == verdict


def test_words_the_gold_writes_too_are_compared_as_written():
    assert _verdict("#### 3 lakh", "3 lakh", "openai/gsm8k") == "correct"
    assert _verdict("#### 5 qzxv", "5 qzxv", "openai/gsm8k") == "correct"


@pytest.mark.parametrize("response, verdict", [
    ("<think>3 of 4 slices</think><answer>\\frac{3}{4}</answer>", "correct"),  # not the 4 inside \frac{3}{4}
    ("So the share is \\frac{3}{4}.", "correct"),
    ("So the share is \\frac{4}{3}.", "wrong"),
])
def test_a_latex_value_outside_delimiters_is_read_whole(response, verdict):
    assert _verdict(response, "0.75") == verdict


@pytest.mark.parametrize("answer, gold, verdict", [
    ("10^\\circ 10'", "10.1^\\circ", "undecided"),  # 10.1666... truncated, or 10 deg 6': not established
    ("\\frac{2}{3}", "0.667", "correct"),  # a rounded gold stands for the exact value
    ("\\frac{2}{3}", "0.666", "undecided"),
    ("\\frac{2}{3}", "0.665", "wrong"),
])
def test_a_gold_decimal_is_a_rounding_of_the_answer_not_a_truncation(answer, gold, verdict):
    assert _verdict(_boxed(answer), gold) == verdict


def test_two_matrices_are_never_read_as_permutations():
    two_rows = "\\begin{pmatrix}1 & 2 \\\\ 2 & 1\\end{pmatrix}"
    assert _verdict(_boxed("\\begin{bmatrix}1 & 2 \\\\ 2 & 1\\end{bmatrix}"), two_rows) == "correct"
    assert _verdict(_boxed("\\begin{matrix}1 & 2 \\\\ 2 & 1\\end{matrix}"), two_rows) == "correct"


END_MARKS = ("∎", "□", "■", "✓", "✔", "✔️", "☑", "✅", " ∎", " ✓ ∎")


@RULE
@given(st.integers(-500, 500), st.sampled_from(END_MARKS), st.sampled_from(("Answer: {}", "#### {}", "$\\boxed{{{}}}$")))
def test_an_end_of_proof_or_check_mark_after_an_answer_carries_no_value(n: int, mark: str, frame: str) -> None:
    assert _verdict(frame.format(f"{n} {mark}"), str(n)) == "correct"
    assert _verdict(frame.format(f"{n + 1} {mark}"), str(n)) == "wrong"
    assert _verdict(frame.format(f"{n} ✗"), str(n)) != "correct"  # a cross says the value is wrong


@pytest.mark.parametrize(("answer", "gold", "verdict"), [
    ("\\operatorname{arctg} 1", "\\frac{\\pi}{4}", "correct"),
    ("\\operatorname{tg} \\frac{\\pi}{4}", "1", "correct"),
    ("\\mathrm{ctg}\\,\\frac{\\pi}{4}", "1", "correct"),
    ("\\operatorname{arctg} 1", "\\frac{\\pi}{3}", "wrong"),
])
def test_national_trig_names_in_operatorname_are_read(answer: str, gold: str, verdict: str) -> None:
    assert _verdict(_boxed(answer), gold) == verdict


@RULE
@given(st.lists(st.integers(-20, 20), min_size=2, max_size=3), st.sampled_from("PQMCDAB"),
       st.sampled_from(("{}{}", "{} {}", "{}\\left{}")))
def test_a_named_point_is_the_point_against_a_point_gold(coords: list[int], letter: str, frame: str) -> None:
    point = "(" + ", ".join(map(str, coords)) + ")"
    answer = frame.format(letter, point) if "left" not in frame else f"{letter}\\left({point[1:-1]}\\right)"
    assert _verdict(_boxed(answer), point) == "correct"
    moved = "(" + ", ".join(map(str, [coords[0] + 1, *coords[1:]])) + ")"
    assert _verdict(_boxed(answer), moved) == "wrong"


@RULE
@given(st.integers(1, 12), st.data())
def test_p_of_n_k_is_a_permutation_count_against_a_number_gold(n: int, data: st.DataObject) -> None:
    import math

    k = data.draw(st.integers(0, n))
    assert _verdict(f"Answer: P({n},{k})", str(math.perm(n, k))) == "correct"
    assert _verdict(f"Answer: P({n},{k})", str(math.perm(n, k) + 1)) == "wrong"
    assert _verdict(f"Answer: P({n},{k})", "x + 1") != "correct"  # no convention: the letter stays unread


@RULE
@given(st.lists(st.integers(-9, 9), min_size=1, max_size=3, unique=True),
       st.sampled_from(("\\mathbb{R} \\setminus \\{", "\\mathbb{R} - \\{", "ℝ \\setminus \\{", "\\mathbb{R}\\backslash\\{")))
def test_the_real_line_without_points_is_the_union_of_intervals(points: list[int], notation: str) -> None:
    ends = ["-\\infty", *map(str, sorted(points)), "\\infty"]
    gold = "\\cup".join(f"({low},{high})" for low, high in zip(ends, ends[1:]))
    assert _verdict(_boxed(notation + ", ".join(map(str, points)) + "\\}"), gold) == "correct"
    moved = [points[0] + 10, *points[1:]]
    assert _verdict(_boxed(notation + ", ".join(map(str, moved)) + "\\}"), gold) == "wrong"


@RULE
@given(st.integers(1, 12), st.integers(1, 6), st.booleans())
def test_a_factorial_power_is_its_value(n: int, k: int, falling: bool) -> None:
    import math

    value = math.perm(n, k) if falling else math.prod(range(n, n + k))
    answer = f"{n}^{{\\{'underline' if falling else 'overline'}{{{k}}}}}"
    assert _verdict(_boxed(answer), str(value)) == "correct"
    assert _verdict(_boxed(answer), str(value + 1)) == "wrong"


# A note set over or under a value is a remark on it, not part of it.
_NOTED = ["\\overset{{{note}}}{{{v}}}", "\\underset{{{note}}}{{{v}}}", "\\stackrel{{{note}}}{{{v}}}",
          "\\underbrace{{{v}}}_{{{note}}}", "\\overbrace{{{v}}}^{{{note}}}", "\\underbrace{{{v}}}_\\text{{{note}}}"]


@RULE
@given(st.integers(-300, 300), st.integers(-300, 300), st.sampled_from(_NOTED),
       st.sampled_from(["{w}", "\\text{{not }} {w}", "{w}?", "\\text{{cf. }} {w}"]),
       st.sampled_from(["$\\boxed{{{a}}}$", "The answer is ${a}$.", "Answer: ${a}$"]))
def test_a_note_over_or_under_a_value_is_not_part_of_it(v, w, form, note, frame):
    response = frame.format(a=form.format(v=v, note=note.format(w=w)))
    assert compute_score("lighteval/MATH", response, str(v))["verdict"] == "correct", response
    if w != v:
        assert compute_score("lighteval/MATH", response, str(w))["verdict"] != "correct", response
