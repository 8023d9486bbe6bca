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

Verdicts are cached by ``(pred, gold, policy)``: the samples of a group share
their gold and often commit to the same answer string, and a judgement
depends on nothing else. A timeout raises and is never cached.
"""
from __future__ import annotations

from functools import lru_cache

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.math_verifier.answer_types import in_gold_convention
from rewardsmith.reward_fns.math_verifier.constructs import unread_constant
from rewardsmith.reward_fns.math_verifier.judges import STRICT, VERDICTS, GradingPolicy, Verdict, quick_judge
from rewardsmith.reward_fns.math_verifier.normalize import canonical_answer, parse_number
from rewardsmith.reward_fns.math_verifier.readable import code_notation, unread_notation, unread_words
from rewardsmith.reward_fns.math_verifier.spoken import unread_spoken

__all__ = ["STRICT", "VERDICTS", "GradingPolicy", "Verdict", "compare"]


def compare(pred: str, gold: str, policy: GradingPolicy = STRICT, *, timeout: float) -> Verdict:
    """The verdict on answer ``pred`` against ``gold`` (see the module docstring).

    Raises ``TimeoutError`` when the symbolic judgement overruns ``timeout`` seconds.
    """
    return _cached_compare(pred, gold, policy, timeout)


@lru_cache(maxsize=4096)
def _cached_compare(pred: str, gold: str, policy: GradingPolicy, timeout: float) -> Verdict:
    pred = in_gold_convention(pred, gold)
    verdict = quick_judge(pred, gold, policy)
    if verdict is None:
        # Imported only when needed: it brings in math-verify and sympy.
        from rewardsmith.reward_fns.math_verifier.symbolic import judge

        verdict = run_with_hard_timeout(judge, (pred, gold, policy), timeout)
    return _as_read(verdict, pred, gold)


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
