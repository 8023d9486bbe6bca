"""Judging whether a final answer equals the gold answer, for ``math_answer``.

Each judgement is a :class:`Verdict`: ``correct``, ``wrong`` or ``undecided``,
the judge that gave it (``method``) and why. Times of day and quantities
with units are read from the answers as written (:mod:`.clock`,
:mod:`.units`); then both sides are put in canonical form
(:mod:`~rewardsmith.reward_fns.math_verifier.normalize`), and the first judge
that applies decides:

``answer too long`` a final answer over 1,000 characters: wrong, unread.
``parts``          a multi-part answer (``(a) 12; (b) 7``, as the commitment
                   reads labelled parts) against the gold's parts (labelled,
                   else its comma-separated items): the same number of parts,
                   each equal to the gold's part in its place.
``time of day``    both are times of day, one with AM/PM: the same time.
``date``           both are weekdays ("Tue" = "Tuesday") or both calendar dates
                   ("5 March" = "March 5" = ``2024-03-05``): the same day
                   (:mod:`.dates`).
``quantity``       the gold and the answer are quantities with units: the same
                   value once converted to the gold's unit (pint).
``empty gold``     undecided.
``string``         identical canonical strings, also once spaces beside symbols
                   and braces around a one-token power or index go
                   (``x^{2} + 1`` = ``x^2+1``: ``normalize.compact``).
``hedge``          the answer offers alternatives ("42 or 43") that are not all
                   equal: wrong, unless together they are the gold ("2 or -2"
                   for ``\\pm 2``, reported as ``collection``). A gold that
                   itself lists alternatives ("1 or 2") needs the same
                   collection back.
``numeric``        both are plain numbers (a lower-case Roman numeral, "xvii",
                   against a number gold): exact rational equality; a
                   percentage may stand for itself or a hundredth (25% = 25 =
                   0.25), but a bare number for a percentage gold must be the
                   number of percent (25 for 25%; 0.25 only under
                   ``accept_decimal_for_percent``). Digits followed by an
                   ellipsis that is no repeating pattern ("2...", "3.14159...")
                   are never exactly equal (``ellipsis``).
``congruence``     a residue class (``x \\equiv 3 \\pmod{7}``, ``3 \\bmod 7``)
                   against a class or an integer (``_congruence``).
``solution set``   a special solution set (the empty set, the real line,
                   "infinitely many", in any spelling) against another form
                   (``_solution_set``).
``spaced digits``  digit groups separated by spaces that are not thousands
                   groups ("4 2"): wrong, never read as 42.
``restatement``    a quantity restated in other units ("60 minutes = 1 hour"):
                   correct when any side is the gold number.
``approximation``  a decimal literal against a value whose decimal expansion
                   does not terminate (1/3, sqrt(2), pi), when the literal has
                   at least 3 significant digits and equals the value rounded
                   half-up *or* truncated to the literal's number of decimals
                   (0.333 and 0.3333 for 1/3, 0.667 / 0.666 for 2/3). As the
                   answer it is wrong unless the policy accepts approximations
                   (``accept_decimal_approximation``; ``approximation_rel_tol``
                   widens the rule to a relative error). As the gold (0.333)
                   it accepts the exact answer (1/3) when it is the answer
                   rounded; a gold that is only its truncation (0.666 for 2/3,
                   10.1 for 10 deg 10') is undecided: a truncation, or another
                   value written exactly. A value that terminates
                   (1/8) must be given exactly.
``text``           (first) words with no digit, LaTeX or math name
                   ("[ANSWER]", "Grader: award full marks") against a number
                   gold: wrong, in-process.
``base``           a base-n number (``1F_{16}``; ``0x1F``, ``25₈``, "25 (base 8)"
                   and a base in words are read so): the same base and digits;
                   a subscripted answer against plain gold digits, its value
                   (the same digits in another base are undecided: the gold may
                   be the digits or the number); plain digits against a
                   subscripted gold, the same digits; digits invalid in the
                   base, wrong.
``choice``         a choice with its value ("(C) 12") on either side: the
                   letter or the value answers it.
``choice``         a multiple-choice letter gold (C, (C)) against the letter
                   the answer starts with.
``text``           word answers (Monday, yes): case, punctuation and articles
                   ignored (a yes / no answer is its first word, "Yes, it is
                   even"; checked before canonical form), never handed to a symbolic parser (which reads
                   "Monday" as a product of symbols).
``sequence``       a gold list that repeats a term (1, 1, 2, 3, 5): term by
                   term, in order and number (bracketed or arrow-joined answers).
``type``           a set against a tuple, interval or matrix, or the reverse,
                   a bound (``\\le 8``, ``x > 4``) against a number, or a
                   number against a bound: wrong (:mod:`.answer_types`).
``equation``       two equations (``y = 2x + 3``, ``2x - y + 3 = 0``): equal when
                   ``lhs - rhs`` of one is a nonzero constant times the other's;
                   wrong when the variables differ or the ratio takes two
                   values at the probe points; else undecided.
                   An assignment ``x = 5`` against a value compares ``5``.
``numeric items``  a tuple, interval or set of plain numbers against one with
                   the same brackets: item by item with the numeric judge
                   (a set in any order), without sympy.
``antiderivative`` either side adds a constant of integration (``+ C``, ``+ K``,
                   ``+ C_1``): equal when the two differ by a constant (the
                   difference has derivative zero), the constant named anyhow
                   or left out on the other side.
``math_verify``    math-verify (sympy) on both sides, each wrapped in
                   ``\\boxed{}`` so that an unboxed or undelimited answer and a
                   gold without ``$`` still parse.
``sympy``          plain-text math (``2sqrt(3)``, ``3pi/2``) parsed with sympy
                   and compared by simplifying the difference; also an
                   unbased ``\\log`` read as the natural log (``\\log 2`` = ``\\ln 2``)
                   and ``i`` as the imaginary unit when nothing else is
                   symbolic (``e^{i\\pi}`` = -1).
``unparsed gold``, ``unparsed answer``
                   a side math-verify and sympy cannot read: undecided.
``step function``  a floor or ceiling in one variable, compared exactly on a
                   grid (sympy proves few of their identities): the integers
                   -30..30 for a variable named ``n``, ``m`` or ``k``; for
                   another, the integers and every 1/24 between -4 and 4.
                   Equal at every point is ``correct``, else ``wrong``.
``undecidable``    math-verify cannot show two expressions equal and their
                   difference is zero wherever it is evaluated: undecided (a
                   nonzero value at a probe point makes it ``math_verify``, wrong).
                   Sets, tuples, intervals and matrices of expressions it does
                   not find equal are compared so item by item: wrong when
                   kinds, sizes or end points differ or an item differs from
                   every item it may stand for, else undecided.

``quick_judge`` runs the judges that need no symbolic algebra and answers
``None`` when only math-verify / sympy could decide.
:func:`rewardsmith.reward_fns.math_verifier.symbolic.judge` runs them all (the last two
live in that module) and may take unbounded time, so callers run it under a
hard timeout.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from typing import Any, Callable, Optional

from rewardsmith.reward_fns.math_verifier.normalize import (
    ParsedNumber,
    canonical_answer,
    compact,
    parse_number,
    restated_numbers,
    split_assignment,
)
from rewardsmith.reward_fns.math_verifier.answer_types import answer_type, part_values, type_verdict
from rewardsmith.reward_fns.math_verifier.clock import clock_verdict
from rewardsmith.reward_fns.math_verifier.constructs import (
    angles_in_radians,
    collective_count,
    has_degrees,
    is_cycles,
    permutation,
    read_golden_ratio,
    residue_classes,
    same_classes,
    subunit_amount,
)
from rewardsmith.reward_fns.math_verifier.dates import date_verdict
from rewardsmith.reward_fns.math_verifier.numerals import roman_number, words_to_number
from rewardsmith.reward_fns.math_verifier.notation import EMPTY_SET, INFINITELY_MANY, REAL_LINE, based_number, congruence, is_prefixed
from rewardsmith.reward_fns.math_verifier.units import quantity_verdict

MIN_APPROX_SIGNIFICANT_DIGITS = 3
# A final answer longer than this is judged wrong unread: no math answer is that long, and
# the canonical-form regexes need not stay fast on adversarial text of any length.
MAX_ANSWER_CHARS = 1000

_OR = re.compile(r"\s+or\s+|\s*\\lor\s*|\s*\\vee\s*")
_PART_SEPARATOR = re.compile(r"\s*;\s*|\s*,\s+|,(?!\d{3}(?:\D|$))")  # not the comma of 1,234
_ITEM_SEPARATOR = re.compile(r"\s*,\s*")
_LIST_SEPARATOR = re.compile(r"\s+or\s+|\s+and\s+|\s*,\s*|\s*;\s*")
_CHOICE = re.compile(r"^(?:(?:option|choice)\s+)?\(?([A-Ea-e])\)?(?:$|[\s.:)])", re.IGNORECASE)
_GOLD_CHOICE = re.compile(r"^\(?([A-E])\)?$")
_WORDS = re.compile(r"^[A-Za-z][A-Za-z '\-]*$")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_TEXT_SYNONYMS = {"true": "yes", "false": "no", "dne": "does not exist", "sí": "yes", "si": "yes", "oui": "yes",
                  "ja": "yes", "nein": "no", "non": "no"}
# A yes/no answer followed by its reason ("Yes, it is always even."): the verdict word is the answer.
_VERDICT_WORD = re.compile(r"^(yes|no|true|false|sí|si|oui|ja|nein|non)\b\s*[,.;:!—–-]", re.IGNORECASE)
# A choice given with its value ("(C) 12", "(E) Evelyn"): the letter or the value answers it.
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|mathrm)\s*\{([^{}]*)\}")
_LABELLED_CHOICE = re.compile(r"^\(([A-E])\)\s*(\S.*)$")
_SPACED_DIGITS = re.compile(r"^[+-]?\d+(?:\s+\d+)+$")
_LETTERS = re.compile(r"[A-Za-z]")
_ALNUM = re.compile(r"^[0-9A-Za-z]+$")
_PROSE = re.compile(r"[\[({<\"'\s]*[A-Za-z][A-Za-z\s'\-,.:;!?()\[\]{}<>\"]*")
_MATH_NAMES = frozenset({"sqrt", "log", "sin", "cos", "tan", "cot", "sec", "csc", "exp", "arcsin", "arccos", "arctan",
                         "sinh", "cosh", "tanh", "mod", "gcd", "lcm", "max", "min", "det", "abs"})
_SUBSCRIPTED = re.compile(r"^(?=[0-9A-Za-z]*\d)[0-9A-Za-z]+\s*_\s*\{?\s*\d+\s*\}?$")  # digits with a base, valid or not
ELLIPSIS = "\\ldots"


@dataclass(frozen=True)
class GradingPolicy:
    """How lenient ``math_answer`` is; the defaults grade as a careful human grader does.

    ``accept_decimal_approximation``: a decimal for a value whose expansion does
    not terminate (0.333 for 1/3, 3.14 for pi) counts when it is that value
    rounded or truncated to the digits shown (at least 3 significant digits).
    ``approximation_rel_tol`` (> 0, with the former): also any decimal within this
    relative error. ``accept_decimal_for_percent``: a bare number equal to a
    percentage gold's hundredth (0.25 or 1/4 for 25%) counts.
    """

    accept_decimal_approximation: bool = False
    approximation_rel_tol: float = 0.0
    accept_decimal_for_percent: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.approximation_rel_tol < 1.0:
            raise ValueError(f"approximation_rel_tol must be in [0, 1), got {self.approximation_rel_tol!r}")


STRICT = GradingPolicy()


VERDICTS = ("correct", "wrong", "undecided")


@dataclass(frozen=True)
class Verdict:
    """The verdict on an answer (one of :data:`VERDICTS`), the judge that gave it and why.

    ``undecided`` means the verifier cannot tell: the gold or the answer cannot
    be read as any type, or the comparison cannot be decided (sympy cannot
    simplify the difference). ``Verdict(True, m)`` / ``Verdict(False, m)`` are
    read as ``correct`` / ``wrong``.
    """

    verdict: str
    method: str
    why: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.verdict, bool):
            object.__setattr__(self, "verdict", "correct" if self.verdict else "wrong")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if not self.why:
            object.__setattr__(self, "why", _WHY.get(self.method, self.method))

    @property
    def correct(self) -> bool:
        """Whether the verdict is ``correct`` (``wrong`` and ``undecided`` are not)."""
        return self.verdict == "correct"


# The reason a judge gives when it has nothing more specific to say.
_WHY = {
    "answer too long": "the answer is over 1,000 characters",
    "string": "the same canonical form",
    "hedge": "the answer offers alternatives that are not all equal",
    "collection": "compared as a collection of items, in any order",
    "numeric": "compared as exact numbers",
    "spaced digits": "digit groups separated by spaces are several numbers",
    "restatement": "a quantity restated in other units, compared by its numbers",
    "approximation": "a decimal against a value whose expansion does not terminate",
    "ellipsis": "digits before an ellipsis that is no repeating pattern are no exact number",
    "choice": "compared as a multiple-choice letter",
    "text": "compared as words (case, punctuation and articles ignored)",
    "equation": "compared as equations (lhs - rhs up to a nonzero factor)",
    "math_verify": "compared by math-verify (sympy)",
    "step function": "a floor or ceiling in one variable, compared on a grid of points",
    "sympy": "compared by sympy on plain-text math",
    "quantity": "compared as quantities with units (pint)",
    "type": "the answer's type cannot be the gold's",
    "time of day": "compared as times of day",
    "parts": "compared part by part, in order",
    "numeric items": "tuples, intervals or sets of numbers compared item by item (sets in any order)",
    "date": "compared as days of the week or calendar dates",
    "congruence": "compared as residue classes",
    "permutation": "compared as permutations (the mapping the cycles or two-line notation name)",
    "collective": "a count in collective numerals (dozen, score, gross), compared by the count it names",
    "base": "compared as numbers in a base (digits and base)",
    "sequence": "compared term by term, in order (the gold repeats a term: no set)",
    "solution set": "compared as special solution sets",
    "piecewise": "compared branch by branch as a piecewise function",
    "antiderivative": "compared as antiderivatives (up to a constant)",
    "no answer": "there is no answer to compare",
    "empty gold": "the gold answer is empty",
    "unparsed gold": "the gold cannot be read as any answer type",
    "unparsed answer": "unreadable answer: it cannot be read as any answer type",
    "undecidable": "sympy cannot decide whether the difference is zero",
}


# Decides two canonical, single answers that the plain judges could not: (answer, target,
# answer as a number, target as a number) -> Verdict.
SymbolicJudge = Callable[[str, str, Optional[ParsedNumber], Optional[ParsedNumber]], Verdict]


def quick_judge(pred: str, gold: str, policy: GradingPolicy = STRICT) -> Verdict | None:
    """The judgement when it needs no symbolic algebra, else ``None``."""
    return run_judges(pred, gold, None, policy)


def run_judges(pred: str, gold: str, symbolic: SymbolicJudge | None, policy: GradingPolicy = STRICT) -> Verdict | None:
    """Judge answer ``pred`` against ``gold`` (see the module docstring).

    ``symbolic`` decides what the plain judges cannot; without it such cases
    give ``None``.
    """
    if len(pred) > MAX_ANSWER_CHARS:
        return Verdict(False, "answer too long")
    pred, gold = _same_angle_unit(read_golden_ratio(pred, gold), gold)
    parts = part_values(pred)
    if parts is not None:
        return _parts(parts, part_values(gold) or _split(_PART_SEPARATOR, gold.strip()), symbolic, policy)
    times = clock_verdict(pred, gold)  # before units: "2 pm" is a time, not two picometres
    if times is not None:
        return Verdict(times[0], "time of day", times[1])
    dates = date_verdict(pred, gold)
    if dates is not None:
        return Verdict(dates[0], "date", dates[1])
    quantities = quantity_verdict(pred, gold)
    if quantities is not None:
        return Verdict(quantities[0], "quantity", quantities[1])
    answer, target = canonical_answer(pred), canonical_answer(gold)
    if not target:
        return Verdict("undecided", "empty gold")
    if _letters(answer) == {"j"} and _letters(target) == {"i"}:
        answer = answer.replace("j", "i")  # the engineers' imaginary unit, when the gold writes i
    verdict_word = _VERDICT_WORD.match(_TEXT_COMMAND.sub(r"\1", pred).strip(" $*"))
    if verdict_word and _text_key(target) in ("yes", "no"):
        return Verdict(_text_key(verdict_word.group(1)) == _text_key(target), "text")
    if not answer:
        return Verdict(False, "no answer")
    gold_options = _split(_OR, target)
    if len(gold_options) > 1:
        return _same_collection(_split(_LIST_SEPARATOR, answer), gold_options, symbolic, policy)
    options = _split(_OR, answer)
    for option in options[1:]:
        verdict = _equal(option, options[0], symbolic, policy)
        if verdict is None:
            return None
        if not verdict.correct:
            return _hedge_or_collection(options, target, symbolic, policy)
    return _equal(options[0], target, symbolic, policy)


_PI = re.compile(r"\\pi(?![A-Za-z])|π")


def _same_angle_unit(pred: str, gold: str) -> tuple[str, str]:
    """``pred`` and ``gold`` with the side in degrees written in radians when the other is in radians (has
    pi and no degrees): canonical form drops degree signs, which would leave "60" against pi/3."""
    if has_degrees(pred) and not has_degrees(gold) and _PI.search(gold):
        return angles_in_radians(pred), gold
    if has_degrees(gold) and not has_degrees(pred) and _PI.search(pred):
        return pred, angles_in_radians(gold)
    return pred, gold


def _parts(parts: list[str], golds: list[str], symbolic: SymbolicJudge | None,
           policy: GradingPolicy) -> Verdict | None:
    """A multi-part answer against the gold's parts (its labelled parts, else its comma-separated items),
    each part equal to the gold's part of the same place."""
    if len(parts) != len(golds):
        return Verdict(False, "parts", f"{len(parts)} parts against a gold of {len(golds)}")
    for place, (part, gold) in enumerate(zip(parts, golds), 1):
        verdict = run_judges(part, gold, symbolic, policy)
        if verdict is None or not verdict.correct:
            return verdict if verdict is None or verdict.verdict == "undecided" else \
                Verdict(False, "parts", f"part {place}: {verdict.why}")
    return Verdict(True, "parts", f"each of the {len(parts)} parts equals the gold's part in its place")


def _letters(text: str) -> set[str]:
    """The letters of ``text`` outside LaTeX macro names."""
    return set(_LETTERS.findall(re.sub(r"\\[A-Za-z]+", "", text)))


_RELATION = re.compile(r"\s*(<=|>=|\\leq?(?![A-Za-z])|\\geq?(?![A-Za-z])|\\lt(?![A-Za-z])|\\gt(?![A-Za-z])|[<>≤≥])\s*")
_UPPER = {"<": ")", "\\lt": ")", "<=": "]", "\\le": "]", "\\leq": "]", "≤": "]"}
_LOWER = {">": "(", "\\gt": "(", ">=": "[", "\\ge": "[", "\\geq": "[", "≥": "["}
_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "\\lt": "\\gt", "\\gt": "\\lt", "\\le": "\\ge", "\\ge": "\\le",
            "\\leq": "\\geq", "\\geq": "\\leq", "≤": "≥", "≥": "≤"}


def _interval_of(inequality: str) -> str | None:
    """The interval an inequality in one variable states (``x \\le 3``: ``(-\\infty, 3]``; ``-2 < x < 4``:
    ``(-2, 4)``), else ``None``."""
    tokens = [t.strip() for t in _RELATION.split(inequality)]
    if len(tokens) == 3:
        left, op, right = tokens
        if re.fullmatch(r"[A-Za-z]", right) and not re.fullmatch(r"[A-Za-z]", left):  # "3 > x" is "x < 3"
            left, right, op = right, left, _FLIPPED[op]
        if not re.fullmatch(r"[A-Za-z]", left) or parse_number(right) is None:
            return None
        if op in _UPPER:
            return f"(-\\infty, {right}{_UPPER[op]}"
        return f"{_LOWER[op]}{right}, \\infty)" if op in _LOWER else None
    if len(tokens) == 5 and re.fullmatch(r"[A-Za-z]", tokens[2]) and tokens[1] in _UPPER and tokens[3] in _UPPER:
        low, high = tokens[0], tokens[4]
        if parse_number(low) is None or parse_number(high) is None:
            return None
        return ("[" if _UPPER[tokens[1]] == "]" else "(") + f"{low}, {high}" + _UPPER[tokens[3]]
    return None


# A tuple, point or interval gold: one object with ordered parts, not a list of solutions.
_BRACKETED_PAIR = re.compile(r"^(?:\\left)?[(\[].*,.*(?:\\right)?[)\]]$", re.DOTALL)


def _hedge_or_collection(options: list[str], target: str, symbolic: SymbolicJudge | None,
                         policy: GradingPolicy = STRICT) -> Verdict | None:
    # "2 or -2" hedges against gold 2, but is the whole answer when the gold is "\pm 2" or
    # "-2, 2": against a gold that is one number, letter or word, or a tuple or interval, it is always a hedge;
    # otherwise the symbolic judge is asked about the alternatives as a collection.
    if parse_number(target) is not None or _GOLD_CHOICE.match(target) or _is_text(target):
        return Verdict(False, "hedge")
    intervals = [_interval_of(option) for option in options]
    if all(intervals):  # "x < -2 or x > 2" is one answer, the union of its intervals, not a hedge
        return _equal_values(" \\cup ".join(intervals), target, symbolic, policy)
    if _BRACKETED_PAIR.match(target.strip()):
        return Verdict(False, "hedge")  # "2 or -1" offers two numbers, never the point (2,-1)
    if symbolic is None:
        return None
    whole = symbolic(", ".join(options), target, None, None)
    return Verdict(True, "collection") if whole.correct else Verdict(False, "hedge")


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _split(pattern: re.Pattern[str], text: str) -> list[str]:
    parts = [p.strip() for p in pattern.split(text)]
    if len(parts) < 2 or not all(p and _balanced(p) for p in parts):
        return [text]
    return parts


def _same_collection(
    items: list[str], golds: list[str], symbolic: SymbolicJudge | None, policy: GradingPolicy
) -> Verdict | None:
    if len(items) != len(golds):
        return Verdict(False, "collection")
    unmatched = list(items)
    for gold in golds:
        for item in unmatched:
            verdict = _equal(item, gold, symbolic, policy)
            if verdict is None:
                return None
            if verdict.correct:
                unmatched.remove(item)
                break
        else:
            return Verdict(False, "collection")
    return Verdict(True, "collection")


def _equal(answer: str, target: str, symbolic: SymbolicJudge | None, policy: GradingPolicy) -> Verdict | None:
    # Assignments and equations first: "x = 5" against "5" is 5; two equations are compared whole.
    if answer == target:
        return Verdict(True, "string")
    point = _assigned_point(answer) if answer_type(target) == "tuple" else None
    if point is not None:  # "y = 1, x = 4" against (4, 1): the point its variables name, in their order
        return _equal_values(point, target, symbolic, policy)
    answer_sides, target_sides = split_assignment(answer), split_assignment(target)
    if answer_sides and target_sides and (answer_sides[0] == target_sides[0] or not _has_variables(answer, target)):
        return _equal_values(canonical_answer(answer_sides[1]), canonical_answer(target_sides[1]), symbolic, policy)
    if "=" in answer and "=" in target:
        return None if symbolic is None else symbolic(answer, target, None, None)
    if answer_sides and "=" not in target:
        answer = canonical_answer(answer_sides[1])
    elif target_sides and "=" not in answer:
        target = canonical_answer(target_sides[1])
    return _equal_values(answer, target, symbolic, policy)


# A system's solution set out as a brace of lines: cases, or an array / aligned block after "\\left\\{".
_CASES_ENVIRONMENT = re.compile(r"^(?:(?:\\left\s*)?\\\{\s*)?\\begin\{(cases|array|aligned|gathered)\}(?:\{[^{}]*\})?(.*)"
                                r"\\end\{\1\}(?:\s*\\right\s*\.)?$", re.DOTALL)
_ASSIGNMENT_SEPARATOR = re.compile(r"\s*(?:,|;|\\\\(?:\[[^\]]*\])?|\band\b)\s*")
_ONE_ASSIGNMENT = re.compile(r"^([A-Za-z])\s*=\s*([^=]+)$")


def _assigned_point(answer: str) -> str | None:
    """The tuple that assignments to two or more one-letter variables name ("y = 1, x = 4", a ``cases``
    environment of them), its coordinates in alphabetical order of the variables: ``(4, 1)``; else ``None``."""
    cases = _CASES_ENVIRONMENT.match(answer.strip())
    parts = [p.replace("&", "") for p in _ASSIGNMENT_SEPARATOR.split(cases.group(2) if cases else answer) if p.strip()]
    assignments = [_ONE_ASSIGNMENT.match(part.strip()) for part in parts]
    if len(parts) < 2 or any(a is None for a in assignments):
        return None
    names = [a.group(1) for a in assignments]
    if len(set(names)) != len(names):
        return None
    return "(" + ", ".join(a.group(2).strip() for a in sorted(assignments, key=lambda a: a.group(1))) + ")"


def _has_variables(*assignments: str) -> bool:
    return any(_LETTERS.search(split_assignment(text)[1]) for text in assignments)


def _equal_values(answer: str, target: str, symbolic: SymbolicJudge | None, policy: GradingPolicy) -> Verdict | None:
    if answer == target or compact(answer) == compact(target):
        return Verdict(True, "string")
    answer_number, target_number = parse_number(answer), parse_number(target)
    if answer_number is None and target_number is not None and answer.isalpha() and answer.islower():
        # a lower-case Roman numeral ("xvii") against a number; elsewhere "cd" may be a product of variables
        roman = roman_number(answer.upper())
        answer_number = None if roman is None else ParsedNumber(Fraction(roman), None, 0, False)
    if answer_number is not None and target_number is not None:
        return _compare_numbers(answer_number, target_number, policy)
    counted = _collective_verdict(answer, target_number, policy)
    if counted is not None:
        return counted
    permutations = _permutation_verdict(answer, target)
    if permutations is not None:
        return permutations
    residues = _congruence(answer, target, answer_number, target_number)
    if residues is not None:
        return residues
    special = _solution_set(answer, target, answer_number, target_number)
    if special is not None:
        return special
    if _SPACED_DIGITS.match(answer):
        return Verdict(False, "spaced digits")
    if answer.endswith(ELLIPSIS) and answer_number is None and not target.endswith(ELLIPSIS):
        return Verdict(False, "ellipsis")
    sides = answer.split("=")
    if len(sides) == 2 and target_number is not None:
        left, right = parse_number(sides[0].strip()), parse_number(sides[1].strip())
        if left is not None and right is not None and _compare_numbers(left, right, policy).correct is False \
                and _compare_numbers(right, left, policy).correct is False:
            # "0.5 = \frac{5}{9}": a false equality commits to neither side.
            return Verdict("undecided", "false equality", f"the sides of {answer!r} differ: it states no one value")
    restated = restated_numbers(answer) if target_number is not None else None
    if restated is not None:
        correct = any(_compare_numbers(parse_number(number), target_number, policy).correct for number in restated)
        return Verdict(correct, "restatement")
    if target_number is not None and _is_prose(answer):
        return Verdict(False, "text", "words that state no number, against a number")
    based = _based_verdict(answer, target)
    if based is not None:
        return based
    labelled = _labelled_choice_verdict(answer, target, symbolic, policy)
    if labelled is not None:
        return labelled
    choice = _GOLD_CHOICE.match(target)
    if choice is not None:
        picked = _CHOICE.match(answer)
        return Verdict(picked is not None and picked.group(1).upper() == choice.group(1), "choice")
    if _is_text(target) or _is_text(answer):
        return _text_verdict(answer, target)
    sequence = _sequence_verdict(answer, target, symbolic, policy)
    if sequence is not None:
        return sequence
    mismatch = type_verdict(answer, target)
    if mismatch is not None:
        return Verdict(False, "type", mismatch)
    items = _numeric_items_verdict(answer, target, policy)
    if items is not None:
        return items
    # An inequality in one variable against an interval (or the reverse) is the interval it states:
    # decided item by item in-process when its bounds are numbers, as math-verify would decide it.
    as_interval = _interval_of(answer) if answer_type(target) == "interval" else None
    gold_interval = _interval_of(target) if answer_type(answer) == "interval" else None
    if as_interval or gold_interval:
        ends = _numeric_items(as_interval or answer), _numeric_items(gold_interval or target)
        if ends[0] is not None and ends[1] is not None:
            if ends[0][0] != ends[1][0]:
                return Verdict(False, "numeric items", "the intervals include different end points")
            return _numeric_items_verdict(as_interval or answer, gold_interval or target, policy)
    if symbolic is None:
        return None
    return symbolic(answer, target, answer_number, target_number)


def _bare_list(text: str) -> list[str] | None:
    items = _split(_PART_SEPARATOR, text)
    return items if len(items) > 1 else None


def _sequence_verdict(answer: str, target: str, symbolic: SymbolicJudge | None,
                      policy: GradingPolicy) -> Verdict | None:
    """A gold list that repeats an item (``1, 1, 2, 3, 5``) is a sequence, not a set: the answer's items
    (bare, or in square brackets or parentheses) must equal the gold's in order and number."""
    golds = _bare_list(target)
    if golds is None or len({compact(g) for g in golds}) == len(golds):
        return None
    inner = answer[1:-1] if answer[:1] in "[(" and answer[-1:] in "])" and _balanced(answer[1:-1]) else answer
    items = _bare_list(inner) or [inner]
    if len(items) != len(golds):
        return Verdict(False, "sequence", f"{len(items)} terms against the gold's {len(golds)}")
    for place, (item, gold) in enumerate(zip(items, golds), 1):
        verdict = _equal(item, gold, symbolic, policy)
        if verdict is None:
            return None
        if not verdict.correct:
            return Verdict(False, "sequence", f"term {place}: {verdict.why}")
    return Verdict(True, "sequence", f"each of the {len(golds)} terms equals the gold's term in its place")


def _based_verdict(answer: str, target: str) -> Verdict | None:
    """Numbers with a base subscript (``1F_{16}``) or prefix (``0x1F``): the same base and digits; against
    plain digits, the same digits (``1011`` for ``1011_2``), but a prefixed number against the value it
    names (``0x10`` for 16). ``None`` when neither side has a base."""
    answer_based, target_based = based_number(answer), based_number(target)
    if answer_based is None and target_based is None:
        return None
    if (answer_based is None and _SUBSCRIPTED.match(answer)) or (target_based is None and _SUBSCRIPTED.match(target)):
        return Verdict(False, "base", "digits that are not valid in the base written")
    if answer_based is not None and target_based is not None:
        return Verdict(answer_based == target_based, "base")
    based, plain = (answer_based, target) if answer_based is not None else (target_based, answer)
    same_digits = _ALNUM.match(plain) is not None and based[0] == (plain.upper().lstrip("0") or "0")
    if answer_based is not None and not is_prefixed(answer) and _ALNUM.match(plain):
        # The answer's subscript changes its value (42_8 is 34): the gold's plain digits are its value, or
        # its digits in a base only the question names; the same digits in base 10 are the same number.
        plain_number = parse_number(plain)
        if plain_number is not None and plain_number.value == int(based[0], based[1]):
            return Verdict(True, "base", f"{based[0]} in base {based[1]} is {plain}")
        if same_digits:
            return Verdict("undecided", "base", f"{based[0]} in base {based[1]} is {int(based[0], based[1])}; "
                                                f"the gold {plain!r} may be that value's digits or the number {plain}")
        return Verdict(False, "base", f"{based[0]} in base {based[1]} is {int(based[0], based[1])}, not {plain}")
    if not is_prefixed(answer if answer_based is not None else target):
        return Verdict(same_digits, "base") if _ALNUM.match(plain) else None
    # A prefix names a value (0x10 is sixteen): against plain decimal digits, the value decides; the same
    # digits in another value may be the gold written in the answer's base.
    plain_number = parse_number(plain)
    if plain_number is not None and plain_number.value == int(based[0], based[1]):
        return Verdict(True, "base", f"{based[0]} in base {based[1]} is {plain}")
    if same_digits or plain_number is None:
        return Verdict("undecided", "base", f"{plain!r} may be the value or the digits in base {based[1]}")
    return Verdict(False, "base", f"{based[0]} in base {based[1]} is {int(based[0], based[1])}, not {plain}")


def _labelled_choice_verdict(answer: str, target: str, symbolic: SymbolicJudge | None,
                             policy: GradingPolicy) -> Verdict | None:
    """A choice with its value on either side: the gold "(C) 12" takes "C", "(C)", "12" or "(C) 12"; an
    answer "(E) Evelyn" against a gold without a letter is judged by its value."""
    gold_choice, answer_choice = _LABELLED_CHOICE.match(target), _LABELLED_CHOICE.match(answer)
    if gold_choice is None and answer_choice is None:
        return None
    if gold_choice is not None:
        letter = _GOLD_CHOICE.match(answer)
        if letter is not None:
            return Verdict(letter.group(1).upper() == gold_choice.group(1), "choice")
        if answer_choice is not None and answer_choice.group(1) != gold_choice.group(1):
            return Verdict(False, "choice")
        value = answer_choice.group(2) if answer_choice is not None else answer
        return _equal_values(value.strip(), gold_choice.group(2).strip(), symbolic, policy)
    if _GOLD_CHOICE.match(target):
        return None  # a letter gold: the choice judge reads the answer's letter
    return _equal_values(answer_choice.group(2).strip(), target, symbolic, policy)


def _permutation_verdict(answer: str, target: str) -> Verdict | None:
    """Cycles against cycles or two-line notation, compared as mappings; cycles against anything else are
    undecided (math-verify reads ``(1 3 2)`` as a number); ``None`` when neither side is in cycle notation."""
    if not (is_cycles(answer) or is_cycles(target)):
        return None  # two matrices, whatever their rows hold, are compared as matrices
    answer_map, target_map = permutation(answer), permutation(target)
    if answer_map is None or target_map is None:
        return Verdict("undecided", "permutation", "a permutation against what is no permutation")
    return Verdict(answer_map == target_map, "permutation")


def _collective_verdict(answer: str, target_number: ParsedNumber | None, policy: GradingPolicy) -> Verdict | None:
    """A count in collective numerals ("3 dozen") against a number: right when the count it names is the
    gold; undecided when only the number of dozens is (the question may count dozens). An amount in
    cents is right in cents or in the main unit ("75 cents" for 75 or 0.75). ``None`` when the answer
    is neither or the gold no number."""
    if target_number is None:
        return None
    amount = subunit_amount(answer)
    if amount is not None:
        same = any(_compare_numbers(ParsedNumber(v, None, 0, False), target_number, policy).correct for v in amount)
        return Verdict(same, "collective", f"{answer!r} is {amount[0]} hundredths, {amount[1]} in the main unit")
    counted = collective_count(answer)
    if counted is None:
        return None
    if _compare_numbers(parse_number(counted), target_number, policy).correct:
        return Verdict(True, "collective", f"{answer!r} is {counted}")
    leading = parse_number(answer.split()[0])
    if leading is not None and _compare_numbers(leading, target_number, policy).correct:
        return Verdict("undecided", "collective", f"{answer!r} is {counted}; the gold may count the groups")
    return Verdict(False, "collective", f"{answer!r} is {counted}")


def _classes(text: str, single: tuple[int, int] | None) -> tuple[frozenset[int], int] | None:
    """The residue classes ``text`` names, from its single class ``single`` when it has one."""
    return (frozenset({single[0] % single[1]}), single[1]) if single is not None else residue_classes(text)


def _congruence(answer: str, target: str, answer_number: ParsedNumber | None,
                target_number: ParsedNumber | None) -> Verdict | None:
    """A residue class against a class or an integer; ``None`` when neither side is a class.

    A union of classes (``x \\equiv 2, 5 \\pmod 6``) or a class written as a set or family
    (``\\{15k+8 : k \\in \\mathbb{Z}\\}``: :func:`.constructs.residue_classes`) equals a class
    or union holding the same integers; against anything else it is undecided.

    Two classes are equal when their moduli are and their residues agree
    modulo it. A class answer for an integer gold must reduce to it (``x
    \\equiv 10 \\pmod 7`` for 3; a modulus of 1 reduces everything to 0, never
    to 3). An integer answer for a class gold is right when it is the least
    residue, wrong when it is no member, and undecided when it is another member.
    """
    answer_class, target_class = congruence(answer), congruence(target)
    if answer_class is None and target_class is None:
        answer_classes, target_classes = residue_classes(answer), residue_classes(target)
        if answer_classes is None and target_classes is None:
            return None
    else:
        answer_classes, target_classes = _classes(answer, answer_class), _classes(target, target_class)
    if answer_classes is not None and target_classes is not None and (answer_class is None or target_class is None):
        return Verdict(same_classes(answer_classes, target_classes), "congruence",
                       f"residue classes {sorted(answer_classes[0])} mod {answer_classes[1]} and "
                       f"{sorted(target_classes[0])} mod {target_classes[1]}")
    if answer_class is None and target_class is None:
        return Verdict("undecided", "congruence", "a union of residue classes against what is no class")
    if answer_class is not None and target_class is not None:
        (residue, modulus), (gold_residue, gold_modulus) = answer_class, target_class
        same = modulus == gold_modulus and (residue - gold_residue) % modulus == 0
        return Verdict(same, "congruence", f"residue classes {residue} mod {modulus} and {gold_residue} mod {gold_modulus}")
    number = target_number if answer_class is not None else answer_number
    if number is None or number.percent or number.value.denominator != 1:
        return Verdict(False, "congruence", "a residue class against what is no integer")
    value = int(number.value)
    if answer_class is not None:
        residue, modulus = answer_class
        return Verdict(residue % modulus == value, "congruence", f"{residue} mod {modulus} reduces to {residue % modulus}")
    residue, modulus = target_class
    if (value - residue) % modulus:
        return Verdict(False, "congruence", f"{value} is not {residue} mod {modulus}")
    if value == residue % modulus:
        return Verdict(True, "congruence", f"{value} is the least residue {residue} mod {modulus}")
    return Verdict("undecided", "congruence", f"{value} is {residue} mod {modulus} but not its least residue")


def _solution_set(answer: str, target: str, answer_number: ParsedNumber | None,
                  target_number: ParsedNumber | None) -> Verdict | None:
    """A special solution set (``notation.solution_set``) against an answer of another form.

    Two different special sets, or one against a word, a tuple or a
    non-zero number, are wrong; the empty set against the number 0 is
    undecided (no solution, or zero of them?). Sets and intervals go on to
    math-verify (``(-\\infty, 0) \\cup [0, \\infty)`` is the real line).
    """
    specials = (EMPTY_SET, REAL_LINE, INFINITELY_MANY)
    if answer not in specials and target not in specials:
        return None
    if answer in specials and target in specials:
        return Verdict(False, "solution set", f"{answer} is not {target}")
    number = target_number if answer in specials else answer_number
    if number is not None:
        if number.value == 0 and answer == EMPTY_SET:
            return Verdict("undecided", "solution set", "the empty set against 0: no solution, or their number?")
        return Verdict(False, "solution set", "a special solution set is no number")
    other = target if answer in specials else answer
    if _is_text(other) or answer_type(other) in ("tuple", "matrix", "choice", "equation"):
        return Verdict(False, "solution set", f"a special solution set is no {answer_type(other)}")
    return None


_INFINITIES = {"\\infty": "+inf", "+\\infty": "+inf", "-\\infty": "-inf"}


def _numeric_items(canonical: str) -> tuple[str, list[str]] | None:
    """``(brackets, items)`` of a tuple, interval or set whose items are plain numbers (or infinities, in an
    interval), else ``None``: such collections need no sympy."""
    kind = answer_type(canonical)
    if kind == "set":
        brackets, inner = "{}", canonical[2:-2]
    elif kind in ("tuple", "interval") and "\\cup" not in canonical:
        brackets, inner = canonical[0] + canonical[-1], canonical[1:-1]
    else:
        return None
    items = [item.strip() for item in _split(_ITEM_SEPARATOR, inner)]
    if len(items) < 2 and kind != "set":
        return None
    for item in items:
        if item not in _INFINITIES and parse_number(item) is None:
            return None
    return brackets, items


def _numeric_items_verdict(answer: str, target: str, policy: GradingPolicy) -> Verdict | None:
    """Tuples, intervals and sets of plain numbers, item by item with the numeric judge (sets in any order)."""
    answer_items, target_items = _numeric_items(answer), _numeric_items(target)
    if answer_items is None or target_items is None or answer_items[0] != target_items[0]:
        return None  # "(1, 2)" may be a point or an open interval: math-verify decides
    (brackets, items), (_, golds) = answer_items, target_items

    def same(item: str, gold: str) -> bool:
        if item in _INFINITIES or gold in _INFINITIES:
            return _INFINITIES.get(item) == _INFINITIES.get(gold)
        return _compare_numbers(parse_number(item), parse_number(gold), policy).correct

    if brackets == "{}":  # a set: each element of one is an element of the other ({1, 1, 2} = {1, 2})
        return Verdict(all(any(same(i, g) for g in golds) for i in items)
                       and all(any(same(i, g) for i in items) for g in golds), "numeric items")
    if len(items) != len(golds):
        return Verdict(False, "numeric items", f"{len(items)} items against {len(golds)}")
    return Verdict(all(same(i, g) for i, g in zip(items, golds)), "numeric items")


def _is_prose(text: str) -> bool:
    """Words with no digit, no LaTeX and no math name ("[see reference]", "Grader: award full marks"):
    no number, so never a number gold; decided here rather than by sympy's reading of a product of symbols."""
    if not _PROSE.fullmatch(text):
        return False
    words = re.findall(r"[A-Za-z]+", text)
    return (any(len(w) >= 3 and w.lower() not in _MATH_NAMES for w in words)
            and words_to_number(" ".join(words)) is None)


def _is_text(text: str) -> bool:
    if not _WORDS.match(text):
        return False
    words = text.split()
    return len(words) > 1 or len(text) >= 3 or text.lower() in ("no",)


def _text_verdict(answer: str, target: str) -> Verdict:
    """Words against words: the same words are right; the gold's words with more ("isosceles triangle"
    for "isosceles") are undecided, since the rest may name what the gold describes or change it."""
    answer_key, target_key = _text_key(answer), _text_key(target)
    if answer_key == target_key:
        return Verdict(True, "text")
    extra = answer_key.split()
    for word in target_key.split():
        if word not in extra:
            return Verdict(False, "text")
        extra.remove(word)
    if target_key and extra and _is_text(target):
        return Verdict("undecided", "text", f"the gold's words with more ({' '.join(extra)!r}), which nothing reads")
    return Verdict(False, "text")


def _text_key(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch.isalnum() or ch.isspace())
    text = " ".join(_ARTICLES.sub(" ", text).split())
    return _TEXT_SYNONYMS.get(text, text)


def _compare_numbers(answer: ParsedNumber, target: ParsedNumber, policy: GradingPolicy) -> Verdict:
    # A bare number for a percentage gold is the number of percent (25 for 25%), not its hundredth.
    bare_for_percent = target.percent and not answer.percent and not policy.accept_decimal_for_percent
    targets = (target.value,) if bare_for_percent else target.candidates()
    if not (answer.truncated or target.truncated) and any(a == t for a in answer.candidates() for t in targets):
        return Verdict(True, "numeric")
    for exact in targets:
        verdict = approximation_verdict(answer, exact, policy)
        if verdict is not None:
            return verdict
    reverse = approximation_verdict(target, answer.value, policy, literal_is_answer=False)
    if reverse is not None:
        return reverse
    return Verdict(False, "ellipsis" if answer.truncated else "numeric")


def approximation_verdict(
    literal: ParsedNumber, exact: Any, policy: GradingPolicy, literal_is_answer: bool = True
) -> Verdict | None:
    """The verdict on decimal ``literal`` as an approximation of ``exact``; ``None`` when it is none.

    As the answer it counts only under ``policy.accept_decimal_approximation``;
    as the gold (0.333 for an exact 1/3) it always accepts the exact value.
    """
    if literal_is_answer and policy.accept_decimal_approximation:
        if approximates(literal, exact) or _within_tolerance(literal, exact, policy.approximation_rel_tol):
            return Verdict(True, "approximation")
        return None
    if approximates(literal, exact, truncated=literal_is_answer):
        return Verdict(not literal_is_answer, "approximation")
    if not literal_is_answer and approximates(literal, exact):
        # 10.1 for 10.1666...: a gold truncated, or an exact gold another value (10.1 degrees, not 10 deg 10')
        return Verdict("undecided", "approximation", "the gold is the answer truncated, not rounded: a truncation "
                       "of it, or another value")
    return None


def _terminates(value: Fraction) -> bool:
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


def _approximable(literal: ParsedNumber, exact: Any) -> bool:
    # Only a decimal literal approximates, and only a value whose expansion never ends.
    return literal.decimals is not None and not (isinstance(exact, Fraction) and _terminates(exact))


def _within_tolerance(literal: ParsedNumber, exact: Any, rel_tol: float) -> bool:
    if rel_tol <= 0 or not _approximable(literal, exact):
        return False
    exact_decimal = _to_decimal(exact, 40)
    if exact_decimal is None or exact_decimal == 0:
        return False
    shown = Decimal(literal.value.numerator) / Decimal(literal.value.denominator)
    return abs(shown - exact_decimal) <= Decimal(repr(rel_tol)) * abs(exact_decimal)


def approximates(literal: ParsedNumber, exact: Any, truncated: bool = True) -> bool:
    """Whether decimal ``literal`` is ``exact`` rounded half-up or truncated (see the module docstring).

    ``exact`` is a Fraction or a real sympy number.
    """
    if not _approximable(literal, exact) or literal.significant < MIN_APPROX_SIGNIFICANT_DIGITS:
        return False
    shown = [(literal.value, literal.decimals)]
    if literal.percent:
        shown.append((literal.value / 100, literal.decimals + 2))
    for value, decimals in shown:
        with localcontext() as ctx:
            ctx.prec = decimals + 40
            exact_decimal = _to_decimal(exact, ctx.prec)
            if exact_decimal is None:
                return False
            target = Decimal(value.numerator) / Decimal(value.denominator)
            quantum = Decimal(1).scaleb(-decimals)
            if target == exact_decimal.quantize(quantum, ROUND_HALF_UP) or (
                    truncated and target == exact_decimal.quantize(quantum, ROUND_DOWN)):
                return True
    return False


def _to_decimal(exact: Any, digits: int) -> Decimal | None:
    if isinstance(exact, Fraction):
        return Decimal(exact.numerator) / Decimal(exact.denominator)
    value = exact.evalf(digits)
    if not value.is_real or not value.is_number:
        return None
    return Decimal(str(value))
