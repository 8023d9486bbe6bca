"""Canonical forms of final answers, for ``math_answer``.

``canonical_answer`` turns what a model (or a dataset) wrote as a final answer
into a plain LaTeX-ish string: math delimiters, ``\\boxed``, spacing commands,
degree signs, currency and trailing units are removed; unicode math (``½``,
``¹⁄₂``, ``π``, ``√2``, ``−``) becomes LaTeX; a trigonometric function of an
angle in degrees gets the angle in radians; a trailing ellipsis becomes
``\\ldots``; a number wrapped in words ("an integer 42", "42, since ...")
becomes the number; a number with a magnitude ("2.5 million", ``45k``), a chance
in words ("1 in 4") and a special solution set ("no solution", "all real
numbers") become the number, fraction or set they name
(:mod:`~rewardsmith.reward_fns.math_verifier.notation`). :func:`split_assignment` reads ``x = 5`` and
:func:`restated_numbers` the sides of ``60 minutes = 1 hour``.
:func:`parse_number` reads a canonical answer that is a plain number (integer,
decimal, fraction, mixed number, percentage, thousands separators, repeating
decimal, number words) into an exact :class:`~fractions.Fraction`, remembering
how it was written so that approximations can be judged.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from rewardsmith.reward_fns.math_verifier.code_syntax import code_expression
from rewardsmith.reward_fns.math_verifier.spoken import spoken_expression
from rewardsmith.reward_fns.math_verifier.notation import (
    base_marked,
    plain_typesetting,
    chance_phrase,
    decimal_comma,
    factorial_power,
    set_builder,
    written_form,
    scaled_number,
    solution_set,
    spelled_number,
    typeset_quantities,
    unit_vectors,
)
from rewardsmith.reward_fns.latex_boxes import closing_brace_index
from rewardsmith.reward_fns.math_verifier.answer_types import untransposed, vector_as_tuple
from rewardsmith.reward_fns.math_verifier.constructs import COLLECTIVES, SUBUNITS, VALUE_WORDS, read_angles, read_gcd_lcm, read_per_mille
from rewardsmith.reward_fns.math_verifier.numerals import (DIGIT_GROUPS, chinese_number, number_in_cjk_prose, plain_digits, roman_number,
                                                         words_to_number)

_DELIMITERS = ("\\[", "\\]", "\\(", "\\)", "$", "\\displaystyle")
_SPACING = ("\\left", "\\right", "\\,", "\\;", "\\:", "\\quad", "\\qquad")
_DEGREES = ("^{\\circ}", "^\\circ", "°", "\\degree")
_TEXT_GROUP = re.compile(r"\\(?:text|textbf|texttt|mathrm|mbox|textit|mathbf|mathtt)\s*\{([^{}]*)\}")
_TRAILING_TEXT_GROUP = re.compile(
    r"^(.*?\S)\s*\\(?:text|mathrm|mbox)\s*\{\s*[A-Za-z][A-Za-z .^0-9/-]*\}(?:\s*\^\s*\{?\s*[23]\s*\}?)?$")
_NUMBER_CORE = r"[+-]?(?:" + DIGIT_GROUPS + r"|\d+)(?:\.\d+)?|[+-]?\.\d+"
# Words after a number are units when set off by a space ("5 cm", "18 dollars"); glued to the
# number only a few abbreviations are, since "3x" is an expression.
_UNIT_WORD = r"(?!(?:or|and)\b)[A-Za-z][A-Za-z.]*(?:/[A-Za-z]+)?"  # "km/h" is one unit
_UNIT_WORDS = rf"{_UNIT_WORD}(?:\s+{_UNIT_WORD})*"
_GLUED_UNITS = r"cm|mm|km|kg|ft|mph|hrs|sec|min"
# A clause after the answer ("42, which is even", "42 because 6 * 7 = 42"); never one that
# starts with "or" / "and", which make a hedge or a list.
_CLAUSE = (r"\s*(?:[,;:(]|--|—|\.(?=\s))\s*(?!(?:or|and)\b)(?:a|[A-Za-z]{2,})\b.*"
           r"|\s+(?:since|because|as|which|so|i\.e\.|where|when|given)\b.*")
_NUMBER_IN_PROSE = re.compile(
    rf"^(?P<words>(?:[A-Za-z]+,?\s+)*)(?P<number>{_NUMBER_CORE})(?:\s*(?P<percent>%))?"
    rf"(?:(?:\s+(?P<units>{_UNIT_WORDS})|{_GLUED_UNITS})(?:\^\{{?[23]\}}?|[23])?)?(?:{_CLAUSE})?$",
    re.DOTALL,
)
# Words before a number that change or hide its value: "at least 42", "not 42", "root of 2".
_QUALIFYING_WORDS = frozenset(
    "not no never except least most more less fewer greater than over under up to nearly almost between "
    "from below above negative minus plus positive times half twice double triple root square cube "
    "factorial power sqrt sin cos tan cot sec csc log ln exp pi mod choose or and".split()
)
# A clause after the number that gives another value beside it: "5050 (teacher key) / 4950", "$10; in the 3rd
# edition it's $12.50" (two answers, not a number and its gloss).
_OTHER_VALUE = re.compile(r"[^/;]*?(?:/|;[^\n]*?)\s*[$€£₹]?\d")
_LINE_BREAK_SPACING = re.compile(r"\\\\\[[^\]\n]{0,20}\]")
_CURRENCY_PREFIX = re.compile(r"^(?:USD|US\$?|Rs\.?|INR|€|£|¥|₹)\s*(?=[\d.])")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z](?:_\{?\w+\}?)?|\\[A-Za-z]+)\s*(?:=|\\approx|≈)\s*(.+)$", re.DOTALL)
_RESTATED_SIDE = re.compile(rf"^({_NUMBER_CORE})\s*({_UNIT_WORDS})$")
_ELLIPSIS = re.compile(r"\s*(?:\.{3,}|…|\\[lc]?dots\b|\\dotsc\b)\s*$")
# Marks that close an answer and carry no value: end of proof (∎, □, ■) and check marks (✓, ✔, ☑, ✅,
# with or without the emoji variation selector). A cross (✗) says the value is wrong: it stays, unread.
_END_MARK = re.compile(r"(?:\s*[∎□■▪◼✓✔☑✅]\ufe0f?)+\s*$")
# Quotation marks of any convention around a whole answer: ("..." “...” „...“ «...» ‹...› 「...」 '...' ``...'').
_QUOTE_PAIRS = {'"': ('"',), "“": ("”", "“"), "„": ("“", "”"), "«": ("»",), "»": ("«",), "‹": ("›",), "「": ("」",),
                "『": ("』",), "'": ("'",), "‘": ("’",), "``": ("''",)}


def unquoted(text: str) -> str:
    """``text`` without quotation marks around the whole of it (one pair, of any convention), else unchanged."""
    text = text.strip()
    for opening, closings in _QUOTE_PAIRS.items():
        for closing in closings:
            inner = text[len(opening) : len(text) - len(closing)]
            if (len(text) > len(opening) + len(closing) and text.startswith(opening) and text.endswith(closing)
                    and opening not in inner and closing not in inner):
                return inner.strip()
    return text


_ENDS_WITH_JOINER = re.compile(r"\b(?:or|and)\s*\}?\s*$")
_PERCENT_WORD = re.compile(r"\s*\b(?:percent|per cent)\b")
_LOG_BASE_E = re.compile(r"\\log_\{?e\}?(?![A-Za-z])")
# A trigonometric function of an angle in degrees: "\sin 60^\circ", "cos(30°)", "\tan^2 45^{\circ}".
_TRIG_DEGREES = re.compile(
    r"\\?\b(sin|cos|tan|cot|sec|csc)\s*(\^\s*\{?\d\}?)?\s*(\\left\(|\()?\s*([+-]?\d+(?:\.\d+)?)\s*"
    r"(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree)\s*(\\right\)|\))?"
)
_SQRT_SYMBOL = re.compile(r"([√∛∜])\s*(?:(\d+(?:\.\d+)?|[A-Za-z])|\(([^()]*)\)|\{([^{}]*)\})")
_VULGAR_FRACTIONS = {
    char: unicodedata.normalize("NFKD", char).split("\u2044")
    for char in map(chr, [*range(0xBC, 0xBF), *range(0x2150, 0x218A)])
    if re.fullmatch(r"\d+\u2044\d+", unicodedata.normalize("NFKD", char))
}
_VULGAR = re.compile(r"(\d*)\s*([" + "".join(_VULGAR_FRACTIONS) + "])")
_SUPERSCRIPTS, _SUBSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹", "₀₁₂₃₄₅₆₇₈₉"
_SLASHED_FRACTION = re.compile(rf"([{_SUPERSCRIPTS}\d]+)\s*[⁄∕]\s*([{_SUBSCRIPTS}\d]+)")
_PLAIN_DIGITS = str.maketrans(_SUPERSCRIPTS + _SUBSCRIPTS, "0123456789" * 2)
_UNICODE_SYMBOLS = (("π", "\\pi "), ("∞", "\\infty "), ("−", "-"), ("×", "\\times "), ("·", "\\cdot "),
                    ("÷", "/"), ("≤", "\\le "), ("≥", "\\ge "), ("≠", "\\neq "), ("≡", "\\equiv "))

_DECIMAL = re.compile(r"^([+-]?)(" + DIGIT_GROUPS + r"|\d*)(?:\.(\d+))?$")
_SLASH_FRACTION = re.compile(r"^([+-]?)(\d+)\s*/\s*(\d+)$")
_LATEX_FRACTION = re.compile(r"^([+-]?)(\d+)?\s*\\frac\s*\{\s*([+-]?\d+)\s*\}\s*\{\s*(\d+)\s*\}$")
_SHORT_FRACTION = re.compile(r"^([+-]?)(\d+)?\\frac(\d)(\d)$")
_SPACE_BESIDE_SYMBOL = re.compile(r"\s*([^\d\s])\s*")
# Digit groups separated by spaces are one number only as thousands groups ("4 200", as
# "4\,200" reads); "4 2" is no number. "2 1/2" is a mixed number.
# Markdown emphasis around a value inside an answer ("4 · 3 · 2 = *24*") is no multiplication; "2*3*4" is.
_EMPHASIS = re.compile(r"(?<![\w*\\])\*{1,2}(?=[^\s*])([^*\n]{1,200}?)(?<=[^\s*\\])\*{1,2}(?![\w*])")
# A NumPy scalar's repr is its number: np.float64(0.75) is 0.75.
_NUMPY_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint|complex)(?:8|16|32|64|128)?\(\s*([^()]*?)\s*\)")
# Digit groups joined by underscores, as Python, Rust, Java and Ruby write them ("1_024" is 1024); a
# subscript ("10_2", "x_1") has no group of three after it.
_UNDERSCORE_GROUPS = re.compile(r"(?<![\w.])\d{1,3}(?:_\d{3})+(?![\w.])")
_SPACED_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?$")
_SPACED_MIXED = re.compile(r"^([+-]?)(\d+) (\d+)/(\d+)$")
# The repeating block under a bar or dot, or in parentheses: 0.1\overline{6}, 0.\dot{3}, 0.(3).
_REPEATING_BAR = re.compile(r"^([+-]?)(\d*)\.(\d*)(?:\\(?:overline|bar|dot)\{(\d+)\}|\((\d+)\))$")
_ELLIPSIS_DECIMAL = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?\\ldots$")
MAX_REPEATING_PERIOD = 6

ENGLISH = ("en",)  # words after a number are read in English only (see words_to_number)


def unwrap_command(text: str, command: str) -> str:
    """``\\command{X}`` -> ``X`` when the whole of ``text`` is one such group."""
    text = text.strip()
    if not text.startswith(command):
        return text
    end = closing_brace_index(text, len(command))
    if end != len(text) - 1 or text[len(command):].lstrip()[:1] != "{":
        return text
    return text[text.index("{", len(command)) + 1 : end].strip()


def _unicode_to_latex(text: str) -> str:
    # "2½" is the mixed number 2 1/2; "¹⁄₂" and "1⁄2" are 1/2.
    def vulgar(match: re.Match[str]) -> str:
        numerator, denominator = _VULGAR_FRACTIONS[match.group(2)]
        return f"{match.group(1)}\\frac{{{numerator}}}{{{denominator}}}"

    text = _VULGAR.sub(vulgar, text)
    text = _SLASHED_FRACTION.sub(
        lambda m: f"\\frac{{{m.group(1).translate(_PLAIN_DIGITS)}}}{{{m.group(2).translate(_PLAIN_DIGITS)}}}", text)
    for symbol, latex in _UNICODE_SYMBOLS:
        text = text.replace(symbol, latex)
    def root(match: re.Match[str]) -> str:
        index = {"√": "", "∛": "[3]", "∜": "[4]"}[match.group(1)]
        return f"\\sqrt{index}{{" + next(g for g in match.groups()[1:] if g is not None) + "}"

    return _SQRT_SYMBOL.sub(root, text)


def _trig_degrees_to_radians(text: str) -> str:
    # Degree signs are dropped later ("30^\circ" = 30), which would leave "\sin 60" in radians.
    def radians(match: re.Match[str]) -> str:
        function, power, opened, degrees, closed = match.groups()
        if (opened is None) != (closed is None):
            return match.group(0)
        return f"\\{function}{power or ''}(\\frac{{{degrees}\\pi}}{{180}})"

    return _TRIG_DEGREES.sub(radians, text)


_WORDS_THEN_DIGITS = re.compile(r"^([A-Za-z][A-Za-z\s-]*?)\s*\(\s*([+-]?\d+)\s*\)$")


def _restated_in_digits(text: str) -> str | None:
    """The number of words restated in digits, "twelve (12)", when both say it; else ``None``."""
    match = _WORDS_THEN_DIGITS.match(text)
    if match is None or words_to_number(match.group(1)) != int(match.group(2)):
        return None
    return match.group(2)


def _number_in_prose(text: str) -> str | None:
    """The number of "an integer 42", "42 apples", "42, which is even"; ``None`` for other shapes."""
    match = _NUMBER_IN_PROSE.match(text)
    if match is None or _OTHER_VALUE.match(text, match.end("number")):
        return None
    words = match.group("words").replace(",", " ").split()
    if any(word.lower() in _QUALIFYING_WORDS or (len(word) == 1 and word.lower() != "a") for word in words):
        return None
    units = (match.group("units") or "").lower().replace("’", "'")
    if units and (words_to_number(units, ENGLISH) is not None or any(units.startswith(c) for c in COLLECTIVES)
                  or units.split()[0] in SUBUNITS or VALUE_WORDS & set(units.split())):
        return None  # "5 million" and "3 dozen" are numbers (or counts of dozens), not 5 of a unit
    return match.group("number") + (match.group("percent") or "")


def dropped_words(answer: str) -> str | None:
    """The words after a number that canonical form drops as its unit or the noun it counts ("5 apples",
    ``5\\text{ cm}``: ``apples``, ``cm``), or that change its value ("5 factorial"), else ``None``."""
    text = plain_digits(answer).strip().strip("*").strip()
    for box in ("\\boxed", "\\fbox"):
        text = unwrap_command(text, box)
    for token in _DELIMITERS:
        text = text.replace(token, "")
    text = " ".join(_TEXT_GROUP.sub(lambda m: f" {m.group(1)}", text).replace("\\ ", " ").split()).rstrip(".")
    match = _NUMBER_IN_PROSE.match(text)
    units = match.group("units") if match is not None else None
    if units is None or (_number_in_prose(text) is None and not VALUE_WORDS & set(units.lower().split())):
        return None
    return units


def canonical_answer(text: str) -> str:
    """The canonical form of a final answer (see the module docstring)."""
    # Emphasis first: "*96* cupcakes" stripped of its outer stars would read "96* cupcakes", a product.
    text = _END_MARK.sub("", _EMPHASIS.sub(r"\1", plain_digits(text))).strip().strip("*").strip()
    for box in ("\\boxed", "\\fbox"):
        text = unwrap_command(text, box)
    text = _EMPHASIS.sub(r"\1", _NUMPY_SCALAR.sub(r"\1", unquoted(text)))
    # Before any LaTeX rule: "x**2", "17 %% 5" and "x squared plus one" are read whole, or not at all.
    text = code_expression(text) or spoken_expression(text) or text
    text = typeset_quantities(_unicode_to_latex(plain_typesetting(text)))
    text = text.replace("\\$", "")  # a currency sign, before "$" is read as a math delimiter
    text = _LINE_BREAK_SPACING.sub(r"\\\\", text)  # "\\[4pt]" is a line break, not display math opening
    for token in _DELIMITERS:
        text = text.replace(token, "")
    text = text.replace("\\!", "")  # a negative space, as in "10,\!000"
    for token in _SPACING:
        text = text.replace(token, " ")
    # a vector written with angle brackets is the tuple it names: <1, 2> is (1, 2); transposed, the same vector
    text = untransposed(text.replace("\\langle", "(").replace("\\rangle", ")"))
    text = re.sub(r"(?<!\\)\\ ", " ", text).replace("~", " ").replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = _trig_degrees_to_radians(read_angles(read_per_mille(text)))
    for token in _DEGREES:
        text = text.replace(token, "")
    text = decimal_comma(text).replace("\\%", "%").replace("{,}", ",")
    text = _UNDERSCORE_GROUPS.sub(lambda m: m.group(0).replace("_", ""), text)
    text = _ELLIPSIS.sub("\\\\ldots", text)  # before trailing dots go: "2..." is not "2"
    text = text.strip().rstrip(".;,").strip()
    for box in ("\\boxed", "\\fbox"):
        text = unwrap_command(text, box)
    text = factorial_power(text) or text  # before \overline is read as a repeating block
    text = base_marked(text) or text  # before remarks and units go: "25 (base 8)" is 21, not 25
    text = scaled_number(text) or text  # before units: "1.2\\text{k}" is 1200, not 1.2 of a unit k
    # Units: a trailing \text{ cm} group after an answer (not after an equation's last side:
    # "60 \text{ minutes} = 1 \text{ hour}" is a restatement), then bare words after a number.
    while "=" not in text:
        match = _TRAILING_TEXT_GROUP.match(text)
        word = text[text.index("{", len(match.group(1))) + 1 : -1] if match else ""
        if (match is None or words_to_number(word, ENGLISH) is not None or word.strip().lower() in COLLECTIVES
                or _ENDS_WITH_JOINER.search(match.group(1))):
            break  # "5\text{ thousand}" is 5000 and "8\text{ dozen}" 96, not 5 or 8 of a unit; "\text{yes} \text{ or } \text{no}" is a hedge
        text = match.group(1)
    text = unit_vectors(text) or text  # before \mathbf goes: \mathbf{k} is a unit vector, k alone a letter
    text = _TEXT_GROUP.sub(lambda m: m.group(1), text)
    text = _CURRENCY_PREFIX.sub("", " ".join(text.split()))
    text = _LOG_BASE_E.sub(r"\\ln", _PERCENT_WORD.sub("%", text))
    text = (set_builder(text) or read_gcd_lcm(text) or scaled_number(text) or chance_phrase(text) or solution_set(text) or written_form(text)
            or _number_in_prose(text) or number_in_cjk_prose(text) or _restated_in_digits(text) or spelled_number(text) or text)
    return vector_as_tuple(" ".join(text.split()).rstrip(".").strip())


_SPACE_BY_SYMBOL = re.compile(r"\s*([^\w\s\\])\s*")
_ONE_TOKEN_GROUP = re.compile(r"([_^])\{(\w|\\[A-Za-z]+)\}")


def compact(canonical: str) -> str:
    """``canonical`` without spaces beside symbols and braces around a one-token power or index
    (``x^{2} + 1`` -> ``x^2+1``, ``1011_{2}`` -> ``1011_2``): two answers equal here are the same text.

    Spaces between words or digits stay ("4 2" is two numbers, "2 1/2" a mixed number).
    """
    return _ONE_TOKEN_GROUP.sub(r"\1\2", _SPACE_BY_SYMBOL.sub(r"\1", canonical))


def split_assignment(text: str) -> tuple[str, str] | None:
    """``("x", "5")`` for a canonical ``x = 5`` (one variable on the left), else ``None``."""
    match = _ASSIGNMENT.match(text)
    if match is None or "=" in match.group(2):
        return None
    return match.group(1), match.group(2).strip()


def restated_numbers(text: str) -> list[str] | None:
    """The numbers of a quantity restated in other units (``60 minutes = 1 hour`` -> 60, 1), else ``None``."""
    sides = [_RESTATED_SIDE.match(side.strip()) for side in text.split("=")]
    if len(sides) < 2 or not all(sides) or any(words_to_number(side.group(2), ENGLISH) is not None for side in sides):
        return None
    return [side.group(1) for side in sides]


@dataclass(frozen=True)
class ParsedNumber:
    """An exactly-read number and how it was written."""

    value: Fraction
    decimals: int | None  # digits after the point when written as a decimal literal, else None
    significant: int  # significant digits of a decimal literal (0 otherwise)
    percent: bool
    truncated: bool = False  # digits followed by an ellipsis that is no repeating pattern ("3.14159...")

    def candidates(self) -> tuple[Fraction, ...]:
        """The values it may stand for: ``25%`` is 25 or 0.25."""
        return (self.value, self.value / 100) if self.percent else (self.value,)


def _decimal_literal(text: str) -> ParsedNumber | None:
    match = _DECIMAL.match(text)
    if match is None or not (match.group(2) or match.group(3)):
        return None
    sign, whole, frac = match.group(1), match.group(2).replace(",", ""), match.group(3)
    digits = (whole or "0") + (frac or "")
    value = Fraction(int(digits), 10 ** len(frac or ""))
    if sign == "-":
        value = -value
    if frac is None:
        return ParsedNumber(value, None, 0, False)
    significant = len(digits.lstrip("0")) or 1
    return ParsedNumber(value, len(frac), significant, False)


def _repeating_value(sign: str, whole: str, fixed: str, block: str) -> Fraction:
    # whole.fixed(block)(block)... exactly: 0.1(6) = 1/10 + 6/90.
    value = int(whole or "0") + Fraction(int(fixed or "0"), 10 ** len(fixed))
    value += Fraction(int(block), 10 ** len(fixed) * (10 ** len(block) - 1))
    return -value if sign == "-" else value


def _repeating_block(digits: str) -> tuple[str, str] | None:
    """``(fixed, block)`` when ``digits`` end with a block written at least twice ("1666" -> "1", "6")."""
    for period in range(1, min(MAX_REPEATING_PERIOD, len(digits) // 2) + 1):
        block = digits[-period:]
        if digits[-2 * period : -period] == block:
            fixed = digits
            while fixed.endswith(block):
                fixed = fixed[:-period]
            return fixed, block
    return None


def _repeating_decimal(text: str) -> ParsedNumber | None:
    """``0.\\overline{3}``, ``0.1\\bar{6}``, ``0.333\\ldots`` exactly; other digits before an ellipsis as truncated."""
    bar = _REPEATING_BAR.match(text)
    if bar is not None:
        sign, whole, fixed, block, parenthesised = bar.groups()
        return ParsedNumber(_repeating_value(sign, whole, fixed, block or parenthesised), None, 0, False)
    dots = _ELLIPSIS_DECIMAL.match(text)
    if dots is None or not (dots.group(2) or dots.group(3)):
        return None
    sign, whole, digits = dots.group(1), dots.group(2), dots.group(3) or ""
    repeating = _repeating_block(digits)
    shown = _decimal_literal(f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}")
    if repeating is None:
        return ParsedNumber(shown.value, shown.decimals, shown.significant, False, truncated=True)
    # The digits shown still count for the approximation rule.
    return ParsedNumber(_repeating_value(sign, whole, *repeating), shown.decimals, shown.significant, False)


def _spaced_number(text: str) -> ParsedNumber | None:
    if _SPACED_THOUSANDS.match(text):
        return _decimal_literal(text.replace(" ", ""))
    mixed = _SPACED_MIXED.match(text)
    if mixed is None or int(mixed.group(4)) == 0:
        return None
    sign, whole, numerator, denominator = mixed.groups()
    value = int(whole) + Fraction(int(numerator), int(denominator))
    return ParsedNumber(-value if sign == "-" else value, None, 0, False)


def parse_number(text: str) -> ParsedNumber | None:
    """Read a canonical answer that is a plain number, exactly; ``None`` otherwise.

    Accepted: ``-12``, ``1,234.5``, ``4 200`` (groups of three), ``.5``, ``3/4``,
    ``\\frac{3}{4}``, ``\\frac34``, ``2\\frac{1}{2}`` and ``2 1/2`` (mixed numbers,
    5/2), ``12.5%``, ``0.\\overline{3}`` and ``0.333\\ldots`` (1/3), number words.
    Refused: ``4 2`` (two numbers). Long inputs are refused so that exact
    arithmetic stays cheap.
    """
    # An upper-case Roman numeral first: "DIX" is 509, not the French word dix (10).
    spelled = roman_number(text)
    if spelled is None:
        spelled = words_to_number(text)
    if spelled is not None:
        return ParsedNumber(Fraction(spelled), None, 0, False)
    chinese = chinese_number(text)
    if chinese is not None:
        return ParsedNumber(chinese[0], None, 0, chinese[1])
    text = _SPACE_BESIDE_SYMBOL.sub(r"\1", text.strip())
    if not text or len(text) > 60:
        return None
    percent = text.endswith("%")
    body = text[:-1] if percent else text
    if " " in body:
        parsed = _spaced_number(body)
    else:
        parsed = _decimal_literal(body) or _repeating_decimal(body) or _fraction(body)
    if parsed is None:
        return None
    return ParsedNumber(parsed.value, parsed.decimals, parsed.significant, percent, parsed.truncated)


def _fraction(text: str) -> ParsedNumber | None:
    match = _SLASH_FRACTION.match(text)
    if match is not None:
        sign, num, den = match.groups()
        whole = None
    else:
        match = _LATEX_FRACTION.match(text) or _SHORT_FRACTION.match(text)
        if match is None:
            return None
        sign, whole, num, den = match.groups()
    if int(den) == 0:
        return None
    value = Fraction(int(num), int(den))
    if whole is not None:
        # "2\frac{1}{2}" is the mixed number 2 1/2, as written in MATH answers.
        if value < 0:
            return None
        value += int(whole)
    return ParsedNumber(-value if sign == "-" else value, None, 0, False)
