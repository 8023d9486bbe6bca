"""Canonical forms of final answers, for ``math_answer``.

``canonical_answer`` turns what a model (or a dataset) wrote as a final answer
into a plain LaTeX-ish string: math delimiters, ``\\boxed``, spacing commands,
degree signs, currency, trailing units and a leading ``x =`` are removed.
``parse_number`` reads a canonical answer that is a plain number (integer,
decimal, fraction, mixed number, percentage, thousands separators, number
words) into an exact :class:`~fractions.Fraction`, remembering how it was
written so that approximations can be judged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rewardkit.reward_fns.latex_boxes import closing_brace_index

_DELIMITERS = ("\\[", "\\]", "\\(", "\\)", "$", "\\displaystyle")
_SPACING = ("\\left", "\\right", "\\,", "\\;", "\\:", "\\quad", "\\qquad")
_DEGREES = ("^{\\circ}", "^\\circ", "°", "\\degree")
_TEXT_GROUP = re.compile(r"\\(?:text|textbf|mathrm|mbox|textit|mathbf)\s*\{([^{}]*)\}")
_TRAILING_TEXT_GROUP = re.compile(r"^(.*?\S)\s*\\(?:text|mathrm|mbox)\s*\{\s*[A-Za-z][A-Za-z .^0-9/-]*\}$")
_NUMBER_CORE = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+"
# Words after a number are units when set off by a space ("5 cm", "18 dollars"); glued to the
# number only a few abbreviations are, since "3x" is an expression.
_UNIT_WORDS = r"(?!(?:or|and)\b)[A-Za-z][A-Za-z.]*(?:\s+(?!(?:or|and)\b)[A-Za-z][A-Za-z.]*)*"
_UNIT_SUFFIX = re.compile(
    rf"^({_NUMBER_CORE})(?:\s*%?\s+({_UNIT_WORDS})|%?(cm|mm|km|kg|ft|mph|hrs|sec|min))\^?[23]?$"
)
_CURRENCY_PREFIX = re.compile(r"^(?:USD|US\$?|Rs\.?|€|£|¥)\s*(?=[\d.])")
_ASSIGNMENT = re.compile(r"^\s*(?:[A-Za-z](?:_\{?\w+\}?)?|\\[A-Za-z]+)\s*(?:=|\\approx|≈)\s*(.+)$", re.DOTALL)
_DECIMAL = re.compile(r"^([+-]?)(\d{1,3}(?:,\d{3})+|\d*)(?:\.(\d+))?$")
_SLASH_FRACTION = re.compile(r"^([+-]?)(\d+)\s*/\s*(\d+)$")
_LATEX_FRACTION = re.compile(r"^([+-]?)(\d+)?\s*\\frac\s*\{\s*([+-]?\d+)\s*\}\s*\{\s*(\d+)\s*\}$")
_SHORT_FRACTION = re.compile(r"^([+-]?)\\frac(\d)(\d)$")

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}


def unwrap_command(text: str, command: str) -> str:
    """``\\command{X}`` -> ``X`` when the whole of ``text`` is one such group."""
    text = text.strip()
    if not text.startswith(command):
        return text
    end = closing_brace_index(text, len(command))
    if end != len(text) - 1 or text[len(command):].lstrip()[:1] != "{":
        return text
    return text[text.index("{", len(command)) + 1 : end].strip()


def canonical_answer(text: str) -> str:
    """The canonical form of a final answer (see the module docstring)."""
    text = text.strip().strip("*").strip()
    for box in ("\\boxed", "\\fbox"):
        text = unwrap_command(text, box)
    text = text.replace("\\$", "")  # a currency sign, before "$" is read as a math delimiter
    for token in _DELIMITERS:
        text = text.replace(token, "")
    text = text.replace("\\!", "")  # a negative space, as in "10,\!000"
    for token in _SPACING:
        text = text.replace(token, " ")
    text = re.sub(r"(?<!\\)\\ ", " ", text).replace("~", " ").replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    for token in _DEGREES:
        text = text.replace(token, "")
    text = text.replace("\\%", "%").replace("{,}", ",")
    text = text.strip().rstrip(".;,").strip()
    for box in ("\\boxed", "\\fbox"):
        text = unwrap_command(text, box)
    # Units: a trailing \text{ cm} group after an answer, then bare words after a number.
    while True:
        match = _TRAILING_TEXT_GROUP.match(text)
        if match is None:
            break
        text = match.group(1)
    text = _TEXT_GROUP.sub(lambda m: m.group(1), text)
    text = _CURRENCY_PREFIX.sub("", " ".join(text.split()))
    match = _UNIT_SUFFIX.match(text)
    if match is not None and not _is_number_word_phrase(match.group(2) or ""):
        percent = "%" if "%" in text[match.end(1):] else ""
        text = match.group(1) + percent
    match = _ASSIGNMENT.match(text)
    if match is not None and "=" not in match.group(1):
        text = match.group(1).strip()
    return " ".join(text.split()).rstrip(".").strip()


@dataclass(frozen=True)
class ParsedNumber:
    """An exactly-read number and how it was written."""

    value: Fraction
    decimals: int | None  # digits after the point when written as a decimal literal, else None
    significant: int  # significant digits of a decimal literal (0 otherwise)
    percent: bool

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


def _is_number_word_phrase(text: str) -> bool:
    return words_to_number(text) is not None


def words_to_number(text: str) -> int | None:
    """``"negative twenty-one"`` -> -21; ``None`` unless every word is a number word."""
    words = text.lower().replace("-", " ").replace(",", " ").split()
    sign = 1
    if words and words[0] in ("negative", "minus"):
        sign, words = -1, words[1:]
    if not words:
        return None
    total = current = 0
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total += max(current, 1) * _SCALES[word]
            current = 0
        elif word != "and":
            return None
    return sign * (total + current)


def parse_number(text: str) -> ParsedNumber | None:
    """Read a canonical answer that is a plain number, exactly; ``None`` otherwise.

    Accepted: ``-12``, ``1,234.5``, ``.5``, ``3/4``, ``\\frac{3}{4}``, ``\\frac34``,
    ``2\\frac{1}{2}`` (a mixed number, 5/2), ``12.5%``, number words.
    Long inputs are refused so that exact arithmetic stays cheap.
    """
    spelled = words_to_number(text)
    if spelled is not None:
        return ParsedNumber(Fraction(spelled), None, 0, False)
    text = text.strip().replace(" ", "")
    if not text or len(text) > 60:
        return None
    percent = text.endswith("%")
    body = text[:-1] if percent else text
    parsed = _decimal_literal(body)
    if parsed is None:
        parsed = _fraction(body)
    if parsed is None:
        return None
    return ParsedNumber(parsed.value, parsed.decimals, parsed.significant, percent)


def _fraction(text: str) -> ParsedNumber | None:
    match = _SLASH_FRACTION.match(text)
    if match is not None:
        sign, num, den = match.groups()
        whole = None
    else:
        match = _LATEX_FRACTION.match(text) or _SHORT_FRACTION.match(text)
        if match is None:
            return None
        if len(match.groups()) == 4:
            sign, whole, num, den = match.groups()
        else:
            (sign, num, den), whole = match.groups(), None
    if int(den) == 0:
        return None
    value = Fraction(int(num), int(den))
    if whole is not None:
        # "2\frac{1}{2}" is the mixed number 2 1/2, as written in MATH answers.
        if value < 0:
            return None
        value += int(whole)
    return ParsedNumber(-value if sign == "-" else value, None, 0, False)
