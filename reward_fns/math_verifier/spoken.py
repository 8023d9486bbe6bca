"""Math written out in English words, read by one small grammar into code for the code reader.

:func:`spoken_expression` reads a whole answer spoken as math ("three over
four", "two times the square root of three", "two root three", "x squared
plus one", "x cubed minus eight", "negative five halves", "two to the power
of ten") into the LaTeX of its value: each word becomes a token of Python
syntax (numbers through :func:`~rewardsmith.reward_fns.math_verifier.numerals.words_to_number`,
i.e. text2num), and :func:`~rewardsmith.reward_fns.math_verifier.code_syntax.code_value`
parses the result.

The grammar:

* a number: a run of number words ("twenty one"), or a number and a
  denominator word ("five halves", "three quarters": a fraction);
* a variable: x, y, z, n, t, k; the constant pi;
* ``plus``, ``minus``, ``times`` / ``multiplied by``, ``over`` / ``divided by``,
  ``squared``, ``cubed``, ``to the power of N`` / ``to the Nth (power)``;
* ``negative`` / ``minus`` first or after an operator: the sign;
* ``root`` ("two root three"), ``(the) square root of`` and ``(the) cube root
  of``, which apply to the next number or variable only;
* a number before a letter is a product ("four x cubed" is ``4*x**3``).

What stays unread (``None``): any other word, an answer with no operator word
(numbers alone have their own readers), and scope that speech leaves open: a
"root of" followed by another operator ("the square root of x plus one": of x,
or of x + 1? "root five plus one" is not open), and ``over`` together with ``plus`` or ``minus`` ("x plus one over
two").
"""
from __future__ import annotations

import re

from rewardsmith.reward_fns.math_verifier.code_syntax import code_value
from rewardsmith.reward_fns.math_verifier.numerals import words_to_number

_TEXT = re.compile(r"^\\(?:text|textrm|mathrm|textit|mbox)\s*\{([^{}]*)\}$")
_VARIABLES = frozenset({"x", "y", "z", "n", "t", "k"})
_DENOMINATORS = {"half": 2, "halves": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fourth": 4,
                 "fourths": 4, "fifth": 5, "fifths": 5, "sixth": 6, "sixths": 6, "seventh": 7, "sevenths": 7,
                 "eighth": 8, "eighths": 8, "ninth": 9, "ninths": 9, "tenth": 10, "tenths": 10}
_ORDINAL_POWERS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
                   "ninth": 9, "tenth": 10}
# Longest phrases first: each maps to its code and whether it is a binary operator.
_PHRASES = (
    ("to the power of", "**", True), ("multiplied by", "*", True), ("divided by", "/", True),
    ("the square root of", "sqrt", False), ("square root of", "sqrt", False), ("the cube root of", "cbrt", False),
    ("cube root of", "cbrt", False), ("plus", "+", True), ("minus", "-", True), ("times", "*", True),
    ("over", "/", True), ("root", "root", False), ("squared", "**2", False), ("cubed", "**3", False),
    ("negative", "neg", False),
)
_OPERATOR_WORDS = frozenset(code for _, code, _ in _PHRASES)


def _words(text: str) -> list[str] | None:
    text = text.strip().rstrip(".").strip()
    match = _TEXT.match(text)
    if match is not None:
        text = match.group(1)
    if not re.fullmatch(r"[A-Za-z \-]+", text):
        return None
    return text.lower().replace("-", " ").split()


def _number(words: list[str], at: int) -> tuple[str, int] | None:
    """The longest run of number words from ``at`` (with a denominator word after it), and where it ends."""
    for end in range(len(words), at, -1):
        value = words_to_number(" ".join(words[at:end]), ("en",))
        if value is not None and not any(w in ("minus", "negative") for w in words[at:end]):
            if end < len(words) and words[end] in _DENOMINATORS and not (end + 1 < len(words) and words[end + 1] == "of"):
                return f"({value}/{_DENOMINATORS[words[end]]})", end + 1
            return str(value), end
    return None


def _tokens(words: list[str]) -> list[str] | None:
    tokens: list[str] = []
    at = 0
    while at < len(words):
        phrase = next(((length, code) for text, code, _ in _PHRASES
                       if words[at : at + (length := len(text.split()))] == text.split()), None)
        if words[at] == "to" and at + 2 <= len(words) and words[at + 1] == "the" and at + 2 < len(words) \
                and words[at + 2] in _ORDINAL_POWERS:
            tokens.append(f"**{_ORDINAL_POWERS[words[at + 2]]}")
            at += 3 + (at + 3 < len(words) and words[at + 3] == "power")
        elif phrase is not None:
            tokens.append(phrase[1])
            at += phrase[0]
        elif words[at] in _VARIABLES or words[at] == "pi":
            tokens.append(words[at])
            at += 1
        elif (number := _number(words, at)) is not None:
            tokens.append(number[0])
            at = number[1]
        else:
            return None
    return tokens


def _code(tokens: list[str]) -> str | None:
    """Python syntax for ``tokens``, else ``None`` when the scope of a root or a fraction is left open."""
    binary = {"+", "-", "*", "/", "**"}
    out: list[str] = []
    operand_expected = True
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in ("sqrt", "cbrt", "root"):
            operand = tokens[index + 1] if index + 1 < len(tokens) else None
            if operand is None or operand in _OPERATOR_WORDS or operand.startswith("**"):
                return None
            if token != "root" and index + 2 < len(tokens) and tokens[index + 2] in binary - {"**"}:
                return None  # "the square root of x plus one": of x, or of x + 1? ("root five plus one" is not open)
            if not operand_expected:
                out.append("*")  # "two root three"
            out.append(f"{'sqrt' if token == 'root' else token}({operand})")
            index += 2
            operand_expected = False
            continue
        if token in ("neg", "-") and operand_expected:
            out.append("-")
        elif token in binary:
            if operand_expected:
                return None
            out.append(token)
            operand_expected = True
        elif token.startswith("**"):
            if operand_expected:
                return None
            out.append(token)
        else:
            if not operand_expected and (token[0].isdigit() or token[0] == "(" or not out[-1][-1].isdigit()):
                return None  # two numbers side by side: "three four"; "x y"
            if not operand_expected:
                out.append("*")  # a number times a letter: "four x cubed"
            out.append(token)
            operand_expected = False
        index += 1
    if operand_expected or ("/" in out and {"+", "-"} & set(out[1:])):
        return None  # "x plus one over two": (x + 1)/2 or x + 1/2?
    return " ".join(out)


def _spoken_tokens(text: str) -> list[str] | None:
    """The grammar's tokens for ``text`` when every word is the grammar's and one is an operator, else ``None``."""
    words = _words(text)
    if not words or len(words) > 40:
        return None
    tokens = _tokens(words)
    if tokens is None or not (_OPERATOR_WORDS & set(tokens) or any(t.startswith(("**", "(")) for t in tokens)):
        return None
    return tokens


def spoken_expression(text: str) -> str | None:
    """The LaTeX of an answer spoken as math (see the module docstring), else ``None``."""
    tokens = _spoken_tokens(text)
    code = None if tokens is None else _code(tokens)
    return None if code is None else code_value(code)


def unread_spoken(text: str) -> str | None:
    """Why ``text``, spoken math in the grammar's words, has no one reading (an open scope), else ``None``."""
    tokens = _spoken_tokens(text)
    if tokens is None or spoken_expression(text) is not None:
        return None
    return "spoken math whose scope is open (a root or a fraction over a sum)"
