"""The comparison of one answer with one gold: the verifier's entry point for scorers.

``compare(pred, gold, policy, timeout)`` returns a :class:`Verdict`
(``correct``, ``wrong`` or ``undecided``, the judge that decided, and why).
Both strings are final answers (what the response commits to, and the gold),
not whole responses. Judgements that need no symbolic algebra are made
in-process (:func:`~rewardsmith.reward_fns.math_verifier.judges.quick_judge`);
the rest run in a guard subprocess killed after ``timeout`` seconds
(:func:`~rewardsmith.reward_fns.math_verifier.symbolic.judge`), because
sympy can run unbounded and math-verify's own alarm-based timeout cannot stop
C-level work: an overrun raises ``TimeoutError``, which the reward pipeline
records for that sample.

A verdict rests on a reading of both sides: when the answer (or, for
``wrong``, the gold) holds notation the verifier cannot read
(:func:`~rewardsmith.reward_fns.math_verifier.readable.unread_notation`), a
``correct`` or ``wrong`` reached by the math judges is ``undecided``
(``unreadable answer`` / ``could not compare``): the parsers drop what they do
not know, so the value compared was not the one written. Identical strings,
and judges that read words, choices, units, dates and times themselves, stand. A
letter naming a constant the verifier does not evaluate (Catalan's ``G``) against a
gold with no letters is undecided too
(:func:`~rewardsmith.reward_fns.math_verifier.constructs.unread_constant`), and so is a ``wrong``
by the parsers or the number reader when the answer holds code notation they misread
(:func:`~rewardsmith.reward_fns.math_verifier.readable.code_notation`: ``3//4``, ``3 % 4``,
``Math.pow(2, 8)``, ``M_PI / 4``, ``2 sup 10``).

An answer written exactly and as a decimal, ``exact \\approx decimal`` (``\\sin 30^\\circ \\approx 0.5``,
``\\frac{1}{3} \\approx 0.333``), commits to both: it is judged by its exact side when the decimal
approximates it (to within a unit of its last digit, or 1%), and it is ``wrong`` when the decimal contradicts
it (``\\sin 30^\\circ \\approx -.988``: a calculator in the wrong angle mode), since the two cannot both be the answer.
A named quantity before its value, ``P(\\text{no rain}) = \\frac{7}{10}`` or ``\\operatorname{Var}(X) = \\frac{35}{12}``,
is read as its value when the gold is no equation: the label's words say what was computed.

Verdicts are cached by ``(pred, gold, policy)``: the samples of a group share
their gold and often commit to the same answer string, and a judgement
depends on nothing else. A timeout raises and is never cached.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.math_verifier.answer_types import in_gold_convention
from rewardsmith.reward_fns.math_verifier.constructs import unread_constant
from rewardsmith.reward_fns.math_verifier.judges import STRICT, VERDICTS, GradingPolicy, Verdict, quick_judge
from rewardsmith.reward_fns.math_verifier.normalize import canonical_answer, parse_number
from rewardsmith.reward_fns.math_verifier.readable import KNOWN_COMMANDS, code_notation, unread_notation, unread_words
from rewardsmith.reward_fns.math_verifier.spoken import unread_spoken

__all__ = ["STRICT", "VERDICTS", "GradingPolicy", "Verdict", "compare"]


def compare(pred: str, gold: str, policy: GradingPolicy = STRICT, *, timeout: float) -> Verdict:
    """The verdict on answer ``pred`` against ``gold`` (see the module docstring).

    Raises ``TimeoutError`` when the symbolic judgement overruns ``timeout`` seconds.
    """
    return _cached_compare(pred, gold, policy, timeout)


@lru_cache(maxsize=4096)
def _cached_compare(pred: str, gold: str, policy: GradingPolicy, timeout: float) -> Verdict:
    sides = _exact_and_decimal(pred)
    if sides is not None:
        exact, decimal, agreement = sides
        agrees = _cached_compare(decimal, exact, agreement, timeout)
        if agrees.verdict == "wrong":
            return Verdict("wrong", "approximation", f"the decimal {decimal!r} contradicts the exact value {exact!r}")
        if agrees.correct:
            return _cached_compare(exact, gold, policy, timeout)
    value = _labelled_value(pred) if "=" not in gold else None
    if value is not None:
        return _cached_compare(value, gold, policy, timeout)
    pred = in_gold_convention(pred, gold)
    verdict = quick_judge(pred, gold, policy)
    if verdict is None:
        # Imported only when needed: it brings in math-verify and sympy.
        from rewardsmith.reward_fns.math_verifier.symbolic import judge

        verdict = run_with_hard_timeout(judge, (pred, gold, policy), timeout)
    return _as_read(verdict, pred, gold)


# "exact ≈ decimal": the decimal agrees with the exact side when it approximates it.
_APPROX = re.compile(r"\\approx(?![A-Za-z])|≈|\\simeq(?![A-Za-z])|≃|\\doteq(?![A-Za-z])|≐")
_NAMES = re.compile(r"\\([A-Za-z]+)|([A-Za-z]+)")


def _exact_and_decimal(pred: str) -> tuple[str, str, GradingPolicy] | None:
    """``(exact, decimal, the policy under which the decimal agrees with it)`` for an answer
    ``exact ≈ decimal`` whose exact side names no unknown (``x ≈ 1.4`` is an assignment), else ``None``.

    The decimal agrees when it is within a unit of its last digit of the exact value (rounded or cut
    off there), or within 1%.
    """
    sides = _APPROX.split(pred)
    if len(sides) != 2 or "=" in pred:
        return None
    exact, decimal = sides[0].strip(" $"), sides[1].strip(" $")
    number = parse_number(canonical_answer(decimal))
    names = [m.group(1) or m.group(2) for m in _NAMES.finditer(exact)]
    if not exact or number is None or number.decimals is None or number.value == 0 \
            or any(n not in KNOWN_COMMANDS for n in names):
        return None
    unit_share = float(Fraction(1, 10**number.decimals) / abs(number.value))
    return exact, decimal, GradingPolicy(accept_decimal_approximation=True,
                                         approximation_rel_tol=min(max(unit_share, 0.01), 0.5))


# A named quantity before its value: "P(\\text{no rain}) = ...", "\\operatorname{Var}(X) = ...", "E[X^2] = ...".
_LABEL = re.compile(r"\s*(?:\\operatorname\{[A-Za-z]+\}|\\(?:Pr|mathbb\{[EPV]\}|mathrm\{[A-Za-z]+\})|[A-Za-z]{1,4})\s*"
                    r"(?:\\left\s*)?([(\[])")
_CLOSING = {"(": ")", "[": "]"}
# A named measure of a figure: "m\\angle ACB = 40^\\circ", "\\overline{AB} = 5", "m\\widehat{AC} = 80^\\circ".
_MEASURE_NAME = re.compile(r"[\s$]*(?:m\s*)?\\(?:angle|measuredangle|triangle|overline|overarc|widehat|wideparen|arc)\s*"
                           r"\{?\s*[A-Z]{1,3}\s*\}?\s*=(?!=)")


def _labelled_value(pred: str) -> str | None:
    """What ``label(...) = value`` gives as the value (``P(\\text{no rain}) = \\frac{7}{10}``: ``\\frac{7}{10}``,
    ``m\\angle ACB = 40^\\circ``: ``40^\\circ``): the words and names of the label say what was computed, not its
    value. ``None`` for any other answer."""
    measure = _MEASURE_NAME.match(pred)
    if measure is not None:
        return pred[measure.end() :].strip(" $") or None
    label = _LABEL.match(pred)
    if label is None:
        return None
    opening, depth = label.group(1), 0
    for at in range(label.start(1), len(pred)):
        depth += {opening: 1, _CLOSING[opening]: -1}.get(pred[at], 0)
        if depth == 0:
            rest = pred[at + 1 :].lstrip()
            if not rest.startswith("=") or rest.startswith("=="):
                return None
            value = rest[1:].strip()
            return value or None
    return None


# Judges whose verdict does not rest on the math parsers' reading of the answer (``numeric`` reads a
# whole answer as one number, in digits, words or numerals, or not at all).
_OWN_READERS = frozenset({"string", "answer too long", "no answer", "empty gold", "text", "choice", "quantity",
                          "time of day", "date", "numeric", "unparsed gold", "undecidable", "collective"})

# Judges that compare what math-verify's or sympy's parser made of the whole answer, words included.
_PARSED = frozenset({"math_verify", "sympy", "equation", "antiderivative", "step function"})
# Judges whose reading code notation misleads: the parsers, and the number reader (``3 % 4`` reads as 3).
_MISREAD = _PARSED | {"numeric"}


def _as_read(verdict: Verdict, pred: str, gold: str) -> Verdict:
    """``verdict``, or ``undecided`` when it compared a value parsed from notation the verifier cannot read."""
    if verdict.method == "unparsed answer":
        unread = unread_notation(pred, canonical_answer(pred))
        return verdict if unread is None else Verdict("undecided", verdict.method, f"unreadable answer: {unread}")
    if verdict.verdict == "wrong" and verdict.method == "text" and unread_spoken(pred) is not None:
        return Verdict("undecided", "unreadable answer", f"unreadable answer: {unread_spoken(pred)}")
    code = code_notation(pred, canonical_answer(pred)) if verdict.verdict == "wrong" and verdict.method in _MISREAD else None
    if code is not None:
        return Verdict("undecided", "unreadable answer", f"unreadable answer: {code}")
    if verdict.verdict == "undecided" or verdict.method in _OWN_READERS:
        return verdict
    unread = unread_notation(pred, canonical_answer(pred))
    if unread is None and verdict.method in _PARSED:
        unread = unread_constant(pred, gold)
    if unread is None and verdict.method in _PARSED and (verdict.correct or parse_number(canonical_answer(gold)) is None):
        # Words around a number against a number gold are read by the commitment rules (a range, an
        # attribution, a negation): only elsewhere do they leave the parsed value in doubt.
        unread = unread_words(canonical_answer(pred))
    if unread is not None:
        return Verdict("undecided", "unreadable answer", f"unreadable answer: {unread}")
    unread = unread_notation(gold, canonical_answer(gold)) if verdict.verdict == "wrong" else None
    if unread is not None:
        return Verdict("undecided", "could not compare", f"could not compare: the gold has {unread}")
    return verdict
