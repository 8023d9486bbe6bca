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
        ("two dozen", None),  # a collective numeral: constructs.collective_count reads it (test_math_verifier_constructs)
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


# -- the spent blind split 3's notation classes, by construction ---------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rewardsmith.reward_fns import math_answer  # noqa: E402

NOTATION_PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None)


def _verdict(answer: str, gold: str) -> str:
    return math_answer.compute_score("lighteval/MATH", f"The answer is $\\boxed{{{answer}}}$.", gold)["verdict"]


@NOTATION_PROPERTY
@given(whole=st.integers(-99, 999), digits=st.sampled_from([1, 2, 4, 5]), frac=st.integers(1, 10**5 - 1))
def test_a_latex_decimal_comma_is_a_decimal_point(whole, digits, frac):
    fraction = str(frac % 10**digits).zfill(digits)
    if fraction.endswith("0"):
        fraction = fraction[:-1] + "7"
    written = f"{whole}{{,}}{fraction}"
    assert _verdict(written, f"{whole}.{fraction}") == "correct", written
    assert _verdict(written, f"{whole + 1}.{fraction}") != "correct", written  # off by one is never paid


@pytest.mark.parametrize("written, gold, verdict", [
    ("1{,}000", "1000", "correct"),  # three digits after the comma: a thousands group
    ("1{,}000", "1", "wrong"),
    ("12{,}500", "12.5", "wrong"),
    ("1{,}234{,}567", "1234567", "correct"),
])
def test_a_latex_comma_before_three_digits_stays_a_thousands_separator(written, gold, verdict):
    assert _verdict(written, gold) == verdict


_SEPARATORS = ("\\mid", ":", "|")
_DOMAINS = ("", "\\in \\mathbb{R}", "\\in\\mathbb{R}")
_OPS = {"<": ("(", ")"), "\\le": ("[", "]")}


@NOTATION_PROPERTY
@given(low=st.integers(-20, 20), width=st.integers(1, 20), left=st.sampled_from(sorted(_OPS)),
       right=st.sampled_from(sorted(_OPS)), sep=st.sampled_from(_SEPARATORS), domain=st.sampled_from(_DOMAINS))
def test_set_builder_notation_is_its_interval(low, width, left, right, sep, domain):
    high = low + width
    written = f"\\{{x {domain} {sep} {low} {left} x {right} {high}\\}}"
    interval = f"{_OPS[left][0]}{low},{high}{_OPS[right][1]}"
    assert _verdict(written, interval) == "correct", (written, interval)
    flipped = f"{_OPS[left][0]}{low},{high}{_OPS['<' if right != '<' else chr(92) + 'le'][1]}"
    assert _verdict(written, flipped) != "correct", (written, flipped)  # strictness matters
    assert _verdict(written, f"{_OPS[left][0]}{low},{high + 1}{_OPS[right][1]}") != "correct"


@pytest.mark.parametrize("written, gold, verdict", [
    ("\\{x \\mid x > 3\\}", "(3,\\infty)", "correct"),
    ("\\{x : x \\ge 3\\}", "(3,\\infty)", "wrong"),
    ("\\{x \\in \\mathbb{R} \\mid x \\neq 2\\}", "\\mathbb{R}\\setminus\\{2\\}", "correct"),
    ("\\{n \\in \\mathbb{Z} : 0 < n < 4\\}", "\\{1,2,3\\}", "correct"),
    ("\\{n \\in \\mathbb{Z} : 0 \\le n < 4\\}", "\\{1,2,3\\}", "wrong"),
    ("\\{n \\in \\mathbb{Z} : -2 \\le n \\le 1\\}", "\\{-2,-1,0,1\\}", "correct"),
])
def test_set_builder_examples(written, gold, verdict):
    assert _verdict(written, gold) == verdict


@pytest.mark.parametrize("written, gold, verdict", [
    ("\\lfloor 7/2 \\rfloor", "3", "correct"),
    ("\\lceil 7/2 \\rceil", "4", "correct"),
    ("\\left\\lfloor \\frac{17}{5} \\right\\rfloor", "3", "correct"),
    ("\\lfloor 7/2 \\rfloor", "4", "wrong"),
    ("\\lceil -7/2 \\rceil", "-3", "correct"),
])
def test_floor_and_ceiling_values(written, gold, verdict):
    assert _verdict(written, gold) == verdict


_EUROPEAN = {
    "German": "Die gesuchte Zahl ist also {v}, und das ist die Lösung.\n$\\boxed{{{v}}}$",
    "French": "On a donc une valeur de {v} pour cet exemple, c'est la réponse.\nRéponse : {v}",
    "Spanish": "Por lo tanto el valor es {v}, y es la respuesta con una cifra.\nRespuesta: {v}",
}


@NOTATION_PROPERTY
@given(whole=st.integers(0, 999), fraction=st.sampled_from(["5", "25", "75", "0625", "3"]),
       language=st.sampled_from(sorted(_EUROPEAN)))
def test_a_plain_decimal_comma_in_a_european_language_is_a_decimal_point(whole, fraction, language):
    response = _EUROPEAN[language].format(v=f"{whole},{fraction}")
    assert math_answer.compute_score("math_dapo", response, f"{whole}.{fraction}")["verdict"] == "correct", response
    assert math_answer.compute_score("math_dapo", response, f"{whole + 1}.{fraction}")["verdict"] == "wrong", response


@NOTATION_PROPERTY
@given(whole=st.integers(1, 999), group=st.integers(100, 999), language=st.sampled_from(sorted(_EUROPEAN)))
def test_a_comma_before_three_digits_in_a_european_language_is_never_decided_on_one_reading(whole, group, language):
    response = _EUROPEAN[language].format(v=f"{whole},{group}")
    for gold in (f"{whole}{group}", f"{whole}.{group}"):  # the two readings: never paid on either alone
        assert math_answer.compute_score("math_dapo", response, gold)["verdict"] == "undecided", (response, gold)


@pytest.mark.parametrize("response, gold, verdict", [
    ("The two roots are 2 and 5.\n$\\boxed{2,5}$", "2.5", "wrong"),  # English: a list, never a decimal
    ("The count is $\\boxed{1,234}$.", "1234", "correct"),  # English: a thousands separator
    ("The count is $\\boxed{1,234}$.", "1.234", "wrong"),
])
def test_a_comma_in_english_is_no_decimal_comma(response, gold, verdict):
    assert math_answer.compute_score("lighteval/MATH", response, gold)["verdict"] == verdict


@NOTATION_PROPERTY
@given(b=st.integers(2, 7), shift=st.integers(-3, 3), name=st.sampled_from(["n", "m", "k"]))
def test_floor_and_ceiling_identities_in_an_integer_variable(b, shift, name):
    # ceil((v + s)/b) = floor((v + s + b - 1)/b) for every integer v; sympy proves few such identities.
    ceiling = f"\\left\\lceil \\frac{{{name}{shift:+d}}}{{{b}}} \\right\\rceil"
    assert _verdict(ceiling, f"\\left\\lfloor \\frac{{{name}{shift + b - 1:+d}}}{{{b}}} \\right\\rfloor") == "correct"
    assert _verdict(ceiling, f"\\left\\lfloor \\frac{{{name}{shift + b:+d}}}{{{b}}} \\right\\rfloor") == "wrong"


@pytest.mark.parametrize("written, gold, verdict", [
    ("\\lceil -x \\rceil", "-\\lfloor x \\rfloor", "correct"),
    ("\\lfloor x + 3 \\rfloor", "\\lfloor x \\rfloor + 3", "correct"),
    ("\\lceil x \\rceil", "\\lfloor x \\rfloor + 1", "wrong"),  # they part at the integers
    ("\\lfloor 2x \\rfloor", "2\\lfloor x \\rfloor", "wrong"),  # they part at x = 1/2
    ("\\frac{n}{2} - \\frac{1-(-1)^{n}}{4}", "\\left\\lfloor \\frac{n}{2}\\right\\rfloor", "correct"),
])
def test_floor_and_ceiling_identities_in_one_variable(written, gold, verdict):
    assert _verdict(written, gold) == verdict


# -- the spent blind split 5's typesetting classes, by construction ---------------------------------
_ENDPOINTS = st.sampled_from(["-\\infty", "-3", "0", "\\frac{1}{2}", "2", "5"])


@NOTATION_PROPERTY
@given(low=_ENDPOINTS, high=st.sampled_from(["7", "\\infty", "+\\infty"]), opened=st.booleans(), closed=st.booleans())
def test_french_interval_brackets_are_read(low, high, opened, closed):
    """``]a, b[`` is the open interval (a, b): a reversed bracket opens that end."""
    open_low, open_high = opened or low == "-\\infty", closed or "infty" in high
    french = f"{']' if open_low else '['}{low}, {high}{'[' if open_high else ']'}"
    if "[" not in french[1:] and not french.startswith("]"):
        return  # no reversed bracket: the ordinary notation
    gold = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
    assert _verdict(french, gold) == "correct", (french, gold)
    if low != "-\\infty" and "infty" not in high:
        flipped = f"{'[' if open_low else '('}{low}, {high}{')' if open_high else ']'}"
        assert _verdict(french, flipped) != "correct", (french, flipped)


@NOTATION_PROPERTY
@given(size=st.sampled_from(["big", "Big", "bigg", "Bigg"]), side=st.booleans(),
       items=st.lists(st.integers(-9, 9), min_size=2, max_size=3))
def test_sized_delimiters_are_their_delimiters(size, side, items):
    inner = ", ".join(map(str, items))
    written = f"\\{size}{'l' if side else ''}( {inner} \\{size}{'r' if side else ''})"
    assert _verdict(written, f"({inner})") == "correct", written
    assert _verdict(written, f"({', '.join(str(i + 1) for i in items)})") == "wrong", written


@NOTATION_PROPERTY
@given(p=st.integers(1, 50), q=st.integers(2, 50))
def test_tex_over_is_a_fraction(p, q):
    for written, gold, miss in ((f"{{{p} \\over {q}}}", f"\\frac{{{p}}}{{{q}}}", f"\\frac{{{p}}}{{{q + 1}}}"),
                                (f"{p} \\over {q}", f"\\frac{{{p}}}{{{q}}}", f"\\frac{{{p + 1}}}{{{q}}}"),
                                (f"{{x+{p} \\over x-{q}}}", f"\\frac{{x+{p}}}{{x-{q}}}", f"\\frac{{x+{p}}}{{x+{q}}}")):
        assert _verdict(written, gold) == "correct", written
        assert _verdict(written, miss) != "correct", (written, miss)


@NOTATION_PROPERTY
@given(n=st.integers(0, 10**6))
def test_html_character_references_are_their_characters(n):
    digits = str(n)
    for written in ("".join(f"&#{ord(c)};" for c in digits), digits[:-1] + f"&#x{ord(digits[-1]):x};"):
        assert math_answer.compute_score("openai/gsm8k", f"So the total is this.\n#### {written}", digits)["verdict"] == "correct", written
        assert math_answer.compute_score("openai/gsm8k", f"So the total is this.\n#### {written}", str(n + 1))["verdict"] == "wrong", written


@pytest.mark.parametrize("written, gold", [
    ("\\mathrm{tg}\\, x", "\\tan x"), ("\\operatorname{ctg} x", "\\cot x"), ("\\mathrm{tg}\\,60^\\circ", "\\sqrt{3}"),
    ("\\operatorname{cosec} x", "\\csc x"), ("\\mathrm{ctg}\\, 45^\\circ", "1"),
])
def test_national_trig_names_are_the_functions(written, gold):
    assert _verdict(written, gold) == "correct", written
    assert _verdict(f"2{written}", gold) != "correct", written


@NOTATION_PROPERTY
@given(rows=st.integers(1, 3), columns=st.integers(1, 3), data=st.data(), comma=st.booleans())
def test_a_matlab_matrix_is_its_matrix(rows, columns, data, comma):
    if rows * columns == 1:
        return  # a 1x1 matrix is its entry
    entries = [[data.draw(st.integers(-9, 9)) for _ in range(columns)] for _ in range(rows)]
    gap = ",\\ " if comma else "\\ "
    written = "[" + ";\\ ".join(gap.join(map(str, row)) for row in entries) + "]"
    if rows == 1:
        written += "'"  # a row without ";" is a list; transposed, a column
        entries = [[entry] for entry in entries[0]]
    gold = "\\begin{pmatrix}" + " \\\\ ".join(" & ".join(map(str, row)) for row in entries) + "\\end{pmatrix}"
    assert _verdict(written, gold) == "correct", (written, gold)
    entries[0][0] += 1
    miss = "\\begin{pmatrix}" + " \\\\ ".join(" & ".join(map(str, row)) for row in entries) + "\\end{pmatrix}"
    assert _verdict(written, miss) != "correct", (written, miss)


@NOTATION_PROPERTY
@given(p=st.integers(1, 30), q=st.integers(2, 30))
def test_mathml_is_read(p, q):
    fraction = f"<math><mfrac><mn>{p}</mn><mn>{q}</mn></mfrac></math>"
    assert _verdict(fraction, f"\\frac{{{p}}}{{{q}}}") == "correct", fraction
    assert _verdict(fraction, f"\\frac{{{p + 1}}}{{{q}}}") == "wrong", fraction
    power = f"<math><msup><mi>x</mi><mn>{q}</mn></msup><mo>-</mo><mn>{p}</mn></math>"
    assert _verdict(power, f"x^{{{q}}}-{p}") == "correct", power
    assert _verdict(f"<math><msqrt><mn>{q}</mn></msqrt></math>", f"\\sqrt{{{q}}}") == "correct"


@NOTATION_PROPERTY
@given(n=st.integers(2, 30), data=st.data())
def test_code_binomials_and_names_are_read(n, data):
    from math import comb
    k = data.draw(st.integers(1, n - 1))
    for written in (f"Binomial[{n}, {k}]", f"choose({n}, {k})", f"\\texttt{{choose({n},{k})}}"):
        assert _verdict(written, str(comb(n, k))) == "correct", written
        assert _verdict(written, str(comb(n, k) + 1)) == "wrong", written
    assert _verdict(f"\\texttt{{Pi/{n}}}", f"\\frac{{\\pi}}{{{n}}}") == "correct"
    assert _verdict(f"\\texttt{{Pi/{n}}}", f"\\frac{{\\pi}}{{{n + 1}}}") == "wrong"
    assert _verdict(f"\\texttt{{Interval({k}, oo)}}", f"[{k},\\infty)") == "correct"
    assert _verdict(f"\\texttt{{Interval.open({k}, {n})}}", f"({k},{n})") == "correct"
    assert _verdict(f"\\texttt{{Interval.open({k}, {n})}}", f"[{k},{n}]") != "correct"


@NOTATION_PROPERTY
@given(parts=st.lists(st.integers(1, 4), min_size=2, max_size=4), r=st.integers(1, 5), extra=st.integers(0, 4))
def test_multinomials_and_permutations_are_their_values(parts, r, extra):
    from math import factorial, perm, prod
    n = sum(parts)
    written = f"\\binom{{{n}}}{{{','.join(map(str, parts))}}}"
    value = factorial(n) // prod(factorial(k) for k in parts)
    assert _verdict(written, str(value)) == "correct", written
    assert _verdict(written, str(value + 1)) == "wrong", written
    assert _verdict(f"\\binom{{{n + 1}}}{{{','.join(map(str, parts))}}}", str(value)) != "correct"  # parts short: unread
    total = r + extra
    for form in (f"{{}}_{{{total}}}P_{{{r}}}", f"{total}P{r}"):
        assert _verdict(form, str(perm(total, r))) == "correct", form
        assert _verdict(form, str(perm(total, r) + 1)) == "wrong", form


@NOTATION_PROPERTY
@given(n=st.integers(0, 999), colour=st.sampled_from(["red", "blue", "green!50!black"]),
       command=st.sampled_from(["\\color{{{c}}}{{{v}}}", "\\textcolor{{{c}}}{{{v}}}", "{{\\color{{{c}}} {v}}}"]))
def test_a_colour_is_decoration_but_white_is_hidden(n, colour, command):
    assert _verdict(command.format(c=colour, v=n), str(n)) == "correct"
    assert _verdict(command.format(c=colour, v=n), str(n + 1)) == "wrong"
    assert _verdict(command.format(c="white", v=n), str(n)) != "correct"
