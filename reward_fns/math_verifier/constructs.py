"""Readers of notations that carry their value in more than digits, for ``math_answer``.

Canonical form drops what it takes for decoration (degree signs, unit words,
``\\text{}`` around a symbol); some notations put part of the value there, and
reading only the digits would misread the answer as another value. Each reader
here turns one such notation into the plain value it names, from a small
explicit table:

* :func:`collective_count`: a count in collective numerals, "3 dozen",
  "two score", "half a dozen", "a baker's dozen", "1 gross" (optionally
  followed by the noun counted: "2 dozen eggs") -> the integer;
* :func:`subunit_amount`: an amount in a currency's hundredth, "75 cents" ->
  ``(75, 0.75)``: the number of cents, or the amount in the main unit;
* :func:`read_angles`: an angle in degrees, minutes and seconds,
  ``137^\\circ 30'``, ``15°0′36″`` -> its degrees (``137.5^\\circ``);
* :func:`read_per_mille`: ``5‰`` (also ``\\text{‰}``, "5 per mille") -> ``0.5%`` (which is
  0.005, or 0.5 where the gold counts percent);
* :func:`angles_in_radians`: each angle in degrees -> its radians, for a gold in
  radians (``(2, 60^\\circ)`` against ``(2, \\frac{\\pi}{3})``);
* :func:`read_gcd_lcm`: ``\\gcd(12, 18)``, ``\\operatorname{lcm}(8, 12, 15)``
  of integers -> the integer;
* :func:`read_golden_ratio`: ``\\varphi`` (``\\phi``, ``φ``) against a gold
  with no letters -> ``(1+\\sqrt{5})/2``, the golden ratio the letter names
  there (the one named constant math-verify does not know that answers use);
* :func:`unread_constant`: a letter that names a constant the verifier does not
  evaluate (``G``, Catalan's; math-verify reads ``\\gamma`` as Euler-Mascheroni's)
  against a gold with no letters: no value to compare, so undecided;
* :func:`residue_classes`: a union of residue classes written as a set or a
  family, ``\\{15k+8 : k \\in \\mathbb{Z}\\}``, ``n = 4k-1, k \\in \\mathbb{Z}``,
  ``\\{\\ldots, -5, 2, 9, \\ldots\\}``, ``x \\equiv 2, 5 \\pmod 6`` -> its residues and modulus;
* :func:`permutation`: a permutation in cycle notation, ``(1\\ 3\\ 2)(4\\ 5)``,
  or in two-line notation (a two-row ``pmatrix`` whose first row lists the
  points) -> the mapping it names, so that ``(1 3 2)`` and ``(3 2 1)`` are
  one permutation and ``(1 2 3)`` another;
* :func:`dropped_marks`: what is left that a reader should have consumed: a
  prime or double prime after a digit (minutes, seconds, feet, inches).
"""
from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

from rewardsmith.reward_fns.math_verifier.numerals import words_to_number

# Collective numerals: each names a fixed count.
COLLECTIVES = {"dozen": 12, "score": 20, "gross": 144, "great gross": 1728, "baker's dozen": 13,
               "bakers dozen": 13, "half dozen": 6, "half-dozen": 6, "myriad": 10000}
_COLLECTIVE = "|".join(sorted((re.escape(k) for k in COLLECTIVES), key=len, reverse=True))
_COUNT = re.compile(
    rf"^(?P<count>half(?:\s+an?)?|[+-]?\d+(?:\.\d+)?|[A-Za-z][A-Za-z -]*?)\s+(?:of\s+)?(?P<noun>{_COLLECTIVE})s?"
    r"(?:\s+(?:of\s+)?[A-Za-z]+)?$", re.IGNORECASE)
_COUNT_ALONE = re.compile(rf"^(?:an?\s+)?(?P<noun>{_COLLECTIVE})(?:\s+(?:of\s+)?[A-Za-z]+)?$", re.IGNORECASE)

# A currency's hundredth: "75 cents" answers in cents (75) or in dollars (0.75).
SUBUNITS = frozenset({"cent", "cents", "penny", "pennies", "pence", "paise", "centimes", "eurocents"})
_SUBUNIT = re.compile(r"^(?P<n>[+-]?\d+(?:\.\d+)?)\s*(?P<unit>[a-z]+)$", re.IGNORECASE)
# Words after a number that change its value; never read as the noun counted.
VALUE_WORDS = frozenset({"squared", "cubed", "factorial", "fold", "halves",
                         "thirds", "quarters", "fifths", "sixths", "eighths", "tenths", "hundredths", "thousandths",
                         "permille", "basis", "bps", "sigma"})
_DEGREE = r"(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree\b)"
_PRIME = r"(?:'|′|\^\s*\{\s*\\prime\s*\}|\^\s*\\prime\b)"
_DOUBLE_PRIME = r"(?:''|″|\"|\^\s*\{\s*\\prime\s*\\prime\s*\}|\^\s*\\prime\s*\\prime\b)"
_DMS = re.compile(
    rf"(?P<deg>\d+(?:\.\d+)?)\s*{_DEGREE}\s*(?:(?P<min>\d+(?:\.\d+)?)\s*{_PRIME}(?!')\s*)?"
    rf"(?:(?P<sec>\d+(?:\.\d+)?)\s*{_DOUBLE_PRIME}\s*)?")
_ANGLE = re.compile(rf"(\d+(?:\.\d+)?|\\frac\s*\{{\d+\}}\s*\{{\d+\}})\s*{_DEGREE}")
_PER_MILLE = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*(?:\\text\s*\{\s*‰\s*\}|‰|\\permil\b|\s+per\s*mill?e\b)")
_GCD_LCM = re.compile(
    r"^\s*(?:\\(?:operatorname|mathrm|text)\s*\{\s*(gcd|lcm)\s*\}|\\(gcd)|(gcd|lcm))\s*\(\s*([+-]?\d+(?:\s*,\s*[+-]?\d+)+)\s*\)\s*$",
    re.IGNORECASE)
_INTEGERS = r"(?:\\in|∈)\s*(?:\\mathbb\s*\{\s*Z\s*\}|\\Z\b|ℤ)"
_FAMILY_SET = re.compile(rf"^\\\{{\s*(?P<expr>[^:|]+?)\s*(?::|\\mid|\|)\s*(?P<p>[a-z])\s*{_INTEGERS}\s*\\\}}$")
_FAMILY_ASSIGNED = re.compile(
    rf"^(?:[A-Za-z]\s*=\s*)?(?P<expr>[^=,]+?)\s*(?:,|;|\\text\s*\{{\s*(?:for|where)\s*\}})\s*(?P<p>[a-z])\s*{_INTEGERS}$")
_LINEAR_FIRST = re.compile(r"^(?P<a>[+-]?\d*)\s*(?:\\cdot\s*)?(?P<p>[a-z])\s*(?:(?P<s>[+-])\s*(?P<b>\d+))?$")
_CONSTANT_FIRST = re.compile(r"^(?P<b>[+-]?\d+)\s*(?P<s>[+-])\s*(?P<a>\d*)\s*(?:\\cdot\s*)?(?P<p>[a-z])$")
_PROGRESSION = re.compile(r"^\\\{\s*\\ldots\s*,(?P<terms>(?:\s*[+-]?\d+\s*,){3,})\s*\\ldots\s*\\\}$")
_CLASSES = re.compile(r"^(?:[A-Za-z]\s*(?:\\equiv|≡)\s*)(?P<rs>[+-]?\d+(?:\s*,\s*[+-]?\d+)+)\s*\(?\s*"
                      r"(?:\\pmod|\\bmod|\\mod|mod)\s*\{?\s*(?P<m>\d+)\s*\}?\s*\)?$")
GOLDEN_RATIO = "\\left(\\frac{1+\\sqrt{5}}{2}\\right)"
_PHI = re.compile(r"\\(?:var)?phi(?![A-Za-z])|[φϕ]")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")
_CYCLES = re.compile(r"^(?:\(\s*\d+(?:\s+\d+)+\s*\)\s*)+$")
_CYCLE = re.compile(r"\(([^()]*)\)")
_TWO_LINE = re.compile(r"^\\begin\{[pb]matrix\}\s*([\d\s&]+?)\s*\\\\\s*([\d\s&]+?)\s*\\end\{[pb]matrix\}$")
# math-verify reads \gamma as the Euler-Mascheroni constant; Catalan's G it takes for a variable.
_UNREAD_CONSTANTS = ((re.compile(r"(?<![A-Za-z\\])G(?![A-Za-z])"), "Catalan's constant G"),)
_MARK_AFTER_DIGIT = re.compile(r"\d\s*(?:''|'|′|″|\\prime\b)")


def collective_count(text: str) -> str | None:
    """The integer a count in collective numerals names ("3 dozen" -> ``36``), else ``None``."""
    text = " ".join(text.replace("’", "'").split())
    alone = _COUNT_ALONE.match(text)
    if alone:
        return str(COLLECTIVES[alone.group("noun").lower()])
    match = _COUNT.match(text)
    if match is None:
        return None
    count_text = match.group("count").lower()
    if count_text.startswith("half"):
        count: Fraction | None = Fraction(1, 2)
    elif count_text[0].isdigit() or count_text[0] in "+-":
        count = Fraction(count_text)
    else:
        words = words_to_number(count_text)
        count = None if words is None else Fraction(words)
    if count is None:
        return None
    value = count * COLLECTIVES[match.group("noun").lower()]
    return str(value.numerator) if value.denominator == 1 else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def subunit_amount(text: str) -> tuple[Fraction, Fraction] | None:
    """``(count, amount)`` of an amount in a currency's hundredth ("75 cents" -> (75, 3/4)), else ``None``."""
    match = _SUBUNIT.match(" ".join(text.split()))
    if match is None or match.group("unit").lower() not in SUBUNITS:
        return None
    count = Fraction(match.group("n"))
    return count, count / 100


def _plain(value: Fraction) -> str:
    """``value`` as a terminating decimal when it is one, else as ``\\frac{p}{q}``."""
    if value.denominator == 1:
        return str(value.numerator)
    rest = value.denominator
    for prime in (2, 5):
        while rest % prime == 0:
            rest //= prime
    if rest == 1:
        return format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def read_angles(text: str) -> str:
    """``text`` with each angle in degrees and minutes (and seconds) written in degrees: ``22^\\circ 30'`` ->
    ``22.5^\\circ``. A plain ``30^\\circ`` stays as it is."""
    def degrees(match: re.Match[str]) -> str:
        if match.group("min") is None and match.group("sec") is None:
            return match.group(0)
        value = (Fraction(match.group("deg")) + Fraction(match.group("min") or 0) / 60
                 + Fraction(match.group("sec") or 0) / 3600)
        return f"{_plain(value)}^\\circ " if match.group(0).endswith(" ") else f"{_plain(value)}^\\circ"

    return _DMS.sub(degrees, text)


def read_per_mille(text: str) -> str:
    """``text`` with each number per mille written in percent (``5‰`` -> ``0.5%``)."""
    return _PER_MILLE.sub(lambda m: _plain(Fraction(m.group(1)) / 10) + "%", text)


def has_degrees(text: str) -> bool:
    """Whether ``text`` writes a number in degrees."""
    return _ANGLE.search(text) is not None


def angles_in_radians(text: str) -> str:
    """``text`` with each number in degrees (minutes and seconds read) written in radians:
    ``60^\\circ`` -> ``\\frac{60\\pi}{180}``."""
    return _ANGLE.sub(lambda m: f"\\frac{{{m.group(1)}\\pi}}{{180}}", read_angles(text))


def read_gcd_lcm(text: str) -> str | None:
    """The integer a gcd or lcm of integers names (``\\operatorname{lcm}(8, 12, 15)`` -> ``120``), else ``None``."""
    match = _GCD_LCM.match(text)
    if match is None:
        return None
    name = next(g for g in match.groups()[:3] if g).lower()
    numbers = [int(n) for n in match.group(4).split(",")]
    return str(math.gcd(*numbers) if name == "gcd" else abs(math.lcm(*numbers)))


def _linear(expr: str, parameter: str) -> tuple[int, int] | None:
    """``(a, b)`` of ``a k + b`` (or ``b + a k``) in the integer parameter ``k``, else ``None``."""
    match = _LINEAR_FIRST.match(expr.strip()) or _CONSTANT_FIRST.match(expr.strip())
    if match is None or match.group("p") != parameter:
        return None
    a_text = match.group("a")
    a = int(a_text + "1") if a_text in ("", "+", "-") else int(a_text)
    b = int(match.group("s") + match.group("b")) if match.group("b") else 0
    if match.re is _CONSTANT_FIRST:
        a, b = (a if match.group("s") == "+" else -a), int(match.group("b"))
    return a, b


def residue_classes(text: str) -> tuple[frozenset[int], int] | None:
    """``(residues, modulus)`` of a union of residue classes written as a set or a family (see the module
    docstring), else ``None``."""
    text = text.strip()
    family = _FAMILY_SET.match(text) or _FAMILY_ASSIGNED.match(text)
    if family is not None:
        linear = _linear(family.group("expr"), family.group("p"))
        if linear is None or linear[0] == 0:
            return None
        modulus = abs(linear[0])
        return frozenset({linear[1] % modulus}), modulus
    progression = _PROGRESSION.match(text)
    if progression is not None:
        terms = [int(t) for t in progression.group("terms").split(",") if t.strip()]
        steps = {b - a for a, b in zip(terms, terms[1:])}
        if len(steps) != 1 or next(iter(steps)) <= 0:
            return None
        modulus = steps.pop()
        return frozenset({terms[0] % modulus}), modulus
    classes = _CLASSES.match(text)
    if classes is not None and int(classes.group("m")) > 0:
        modulus = int(classes.group("m"))
        return frozenset(int(r) % modulus for r in classes.group("rs").split(",")), modulus
    return None


def same_classes(first: tuple[frozenset[int], int], second: tuple[frozenset[int], int]) -> bool:
    """Whether two unions of residue classes hold the same integers (compared modulo the lcm of their moduli)."""
    common = math.lcm(first[1], second[1])
    def spread(classes: tuple[frozenset[int], int]) -> set[int]:
        residues, modulus = classes
        return {(r + i * modulus) % common for r in residues for i in range(common // modulus)}
    return spread(first) == spread(second)


def read_golden_ratio(pred: str, gold: str) -> str:
    """``pred`` with the golden ratio's letter written as its value, when ``gold`` has no letters of its own
    (a number: the letter cannot be a variable of the gold's)."""
    if not _PHI.search(pred) or _LETTER.search(_COMMAND.sub(" ", gold)) or _PHI.search(gold):
        return pred
    return _PHI.sub(lambda m: GOLDEN_RATIO, pred)


def is_cycles(canonical: str) -> bool:
    """Whether ``canonical`` is a permutation in cycle notation (``(1 3 2)(4 5)``)."""
    return _CYCLES.match(canonical.strip()) is not None


def permutation(canonical: str) -> tuple[tuple[int, int], ...] | None:
    """The points a permutation moves with their images, sorted (see the module docstring), else ``None``."""
    text = canonical.strip()
    mapping: dict[int, int] = {}
    if _CYCLES.match(text):
        # Cycles compose right to left; disjoint ones (the usual answer) in any order.
        for cycle in reversed(_CYCLE.findall(text)):
            points = [int(p) for p in cycle.split()]
            if len(set(points)) != len(points):
                return None
            step = {a: b for a, b in zip(points, points[1:] + points[:1])}
            mapping = {p: step.get(mapping.get(p, p), mapping.get(p, p)) for p in set(mapping) | set(step)}
    else:
        two_line = _TWO_LINE.match(text)
        if two_line is None:
            return None
        top, bottom = ([int(p) for p in row.split("&")] for row in two_line.groups())
        if top != list(range(1, len(top) + 1)) or sorted(bottom) != top:
            return None  # two-line notation lists the points 1..n in order above their images
        mapping = dict(zip(top, bottom))
    return tuple(sorted((p, q) for p, q in mapping.items() if p != q))


def unread_constant(pred: str, gold: str) -> str | None:
    """The constant ``pred`` names that the verifier does not evaluate, against a ``gold`` with no letters
    (where the letter cannot be a variable of the gold's), named; else ``None``."""
    if _LETTER.search(_COMMAND.sub(" ", gold)):
        return None
    for pattern, name in _UNREAD_CONSTANTS:
        if pattern.search(pred):
            return f"{name}, which the verifier does not evaluate"
    return None


def dropped_marks(canonical: str) -> str | None:
    """A mark after a digit no reader consumed (a prime: minutes, feet; a double prime), named; else ``None``."""
    match = _MARK_AFTER_DIGIT.search(canonical)
    return None if match is None else f"the mark {match.group(0)[-1]!r} after a number, which no reader consumed"
