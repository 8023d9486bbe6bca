"""``math_answer``: rewardsmith's own math verifier, for any data_source.

1. Read what the response commits to as its answer
   (:mod:`rewardsmith.reward_fns.math_verifier.commitment`): the row's
   convention first (``####`` for GSM8K, ``Answer:`` for DAPO/AIME,
   ``\\boxed{}`` otherwise), then the other markers; values that are only
   mentioned (negated, doubted, conditioned, attributed, echoed, listed,
   hidden, in code, cut off) are not commitments, and a clear self-correction
   commits to the corrected value. The gold is read after ``####``, inside a
   box, or as is.
2. Compare it with the gold by the answer's type
   (:func:`rewardsmith.reward_fns.math_verifier.compare.compare`: numbers,
   quantities with units, sets, tuples, intervals, matrices, expressions,
   equations, choices, text; sympy / math-verify when needed).
3. Give a verdict: ``correct``, ``wrong`` or ``undecided``, with why.
   Undecided is for real ambiguity only: several different answers committed
   side by side (or a hedge, "7 or 8") of which one is the gold, or a gold
   that cannot be read, or an answer the comparison cannot decide (it cannot
   be read as any type, it holds notation the verifier does not read, or sympy
   cannot tell). ``wrong`` needs an established inequality: the answer read
   into a typed value and compared with the gold's with a decisive result. Several answers that are all wrong are ``wrong``:
   whichever was meant, it is not the gold. For DAPO data sources, whose
   prompt asks for an ``Answer:`` line, a response with no marked answer is
   ``wrong``.

An undecided sample scores ``None`` (abstain: the reward pipeline leaves it
unscored, or hands it to a configured fallback); ``undecided="wrong"`` scores
it 0.0 instead (two-valued, as before), the verdict still reported.

Judgements that need no symbolic algebra are made in-process. The rest run
under a hard process-level timeout (``timeout`` seconds) in a guard
subprocess that is killed when it overruns, because math-verify's own
``signal.alarm`` timeout fails outside the main thread and cannot stop C-level
work; an overrun raises ``TimeoutError`` so the reward manager records a
timeout for that sample.

Grading options (keyword arguments, e.g. ``reward_kwargs``): see
:class:`~rewardsmith.reward_fns.math_verifier.judges.GradingPolicy`
(``accept_decimal_approximation``, ``approximation_rel_tol``,
``accept_decimal_for_percent``); all are off by default.

Returns ``{"score": 1.0 | 0.0 | None, "verdict": "correct" | "wrong" |
"undecided", "why": str, "pred": str, "gold": str, "method": str}``;
``method`` names the judge that decided (or ``no answer``, ``several
answers``).
"""
from __future__ import annotations

import fnmatch
from dataclasses import replace
from typing import Any

from rewardsmith.reward_fns.answer_extraction import convention_for, gold_answer
from rewardsmith.reward_fns.math_verifier.commitment import (
    CHOICE_LETTER,
    CLOSING,
    PHRASE,
    Reading,
    alternatives,
    read_commitment,
    undetermined_symbols,
)
from rewardsmith.reward_fns.math_verifier.compare import GradingPolicy, Verdict, compare
from rewardsmith.reward_fns.math_verifier.notation import negative_in_words, separator_readings
from rewardsmith.reward_fns.math_verifier.normalize import canonical_answer
from rewardsmith.reward_fns.math_verifier.readable import unconsumed_words, unread_words
from rewardsmith.reward_fns.scorer_inputs import require_text

DEFAULT_TIMEOUT_S = 10.0
CORRECT, WRONG, UNDECIDED = "correct", "wrong", "undecided"
UNDECIDED_POLICIES = ("abstain", "wrong")
# Data sources whose prompt demands a marked answer: an unmarked one is no answer.
_MARKED_ONLY = ("*dapo*",)
_UNMARKED_RULES = (PHRASE, CLOSING)
_UNREADABLE_GOLD = ("empty gold", "unparsed gold")
_UNREAD = ("unreadable answer", "unparsed answer")  # methods of an answer the comparison could not read
# Judges that compare the number of an answer whose trailing words canonical form dropped (or that a
# math parser read as a product of letters).
_NUMBER_JUDGES = ("numeric", "approximation", "math_verify", "sympy", "string")


def _golds(ground_truth: Any) -> list[str]:
    if hasattr(ground_truth, "tolist") and not isinstance(ground_truth, str):
        ground_truth = ground_truth.tolist()  # a list column read from parquet as a numpy array
    if isinstance(ground_truth, str):
        return [gold_answer(ground_truth)]
    if isinstance(ground_truth, (list, tuple)) and ground_truth and all(isinstance(g, str) for g in ground_truth):
        return [gold_answer(g) for g in ground_truth]
    raise TypeError(
        "math_answer: ground_truth must be a string or a non-empty list of strings (accepted answers), "
        f"got {type(ground_truth).__name__} {ground_truth!r:.80}"
    )


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    accept_decimal_approximation: bool = False,
    approximation_rel_tol: float = 0.0,
    accept_decimal_for_percent: bool = False,
    undecided: str = "abstain",
    **kwargs: Any,
) -> dict[str, Any]:
    """Score ``solution_str`` against ``ground_truth`` (see the module docstring).

    ``ground_truth`` may also be a list of accepted answers; any match counts.
    ``undecided``: ``"abstain"`` (score ``None``) or ``"wrong"`` (score 0.0).
    """
    if undecided not in UNDECIDED_POLICIES:
        raise ValueError(f"math_answer: undecided must be one of {', '.join(UNDECIDED_POLICIES)}, got {undecided!r}")
    policy = GradingPolicy(accept_decimal_approximation, approximation_rel_tol, accept_decimal_for_percent)
    golds = _golds(ground_truth)
    response = require_text("math_answer", "solution_str", solution_str)
    reading = read_commitment(response, convention_for(data_source))
    if reading.answer is None:
        verdict, method, why = WRONG, "no answer", reading.why
    elif reading.rule in _UNMARKED_RULES and any(fnmatch.fnmatchcase(str(data_source).lower(), p) for p in _MARKED_ONLY):
        verdict, method, why = WRONG, "no answer", "no marked answer (this data_source's prompt asks for one)"
        reading = replace(reading, unread="")  # the prompt asked for a marked answer: none is decisive
    else:
        verdict, method, why, golds = _judged(reading, response, golds, policy, timeout)
        if verdict != CORRECT and reading.restated and (method in _UNREAD or reading.unread
                                                        or unread_words(canonical_answer(reading.answer))
                                                        or (CHOICE_LETTER.match(reading.answer) and not CHOICE_LETTER.match(golds[0]))):
            # "`(expt 2 10)`, i.e. 1024": the form said again stands in for one the reader could not read
            # (the parsers read 'expt' as a product of letters), and "(B), i.e. 30" for a letter against a
            # value; "25, i.e. 24" stays two answers.
            again = replace(reading, answer=reading.restated, restated="",
                            others=tuple(o for o in reading.others if o != reading.restated))
            verdict, method, why, golds = _judged(again, response, golds, policy, timeout)
            reading = again
    if verdict == WRONG and reading.answer and negative_in_words(reading.answer, response) \
            and compare("-" + reading.answer.strip(), golds[0], policy, timeout=timeout).correct:
        verdict, method, why = CORRECT, "sign in words", f"{reading.answer!r} is written as negative in words, as the gold"
    # A reading that left part of the response unread proves no inequality (commitment, section 5b).
    if verdict == WRONG and reading.unread and method != "undetermined symbol":
        verdict, method, why = UNDECIDED, "unreadable answer", f"unreadable answer: {reading.unread}"
    score = {CORRECT: 1.0, WRONG: 0.0}.get(verdict, None if undecided == "abstain" else 0.0)
    return {"score": score, "verdict": verdict, "why": why, "pred": reading.answer or "", "gold": golds[0],
            "method": method}


def _judged(reading: Reading, response: str, golds: list[str], policy: GradingPolicy,
            timeout: float) -> tuple[str, str, str, list[str]]:
    """``(verdict, method, why, golds with the one compared first)`` for a reading that commits to an answer."""
    assert reading.answer is not None
    readings = separator_readings(reading.answer, response) or (reading.answer,)
    decided = [_decide(replace(reading, answer=answer), golds, policy, timeout) for answer in readings]
    verdict, method, why, golds = decided[0]
    if any(d[0] != verdict for d in decided):
        verdict, method = UNDECIDED, "ambiguous separator"
        why = f"{reading.answer!r} reads as {' or '.join(readings)} here, and only one is the gold"
    # Either way: an unread word left "correct" would pay any number with a word attached that happens
    # to match, and "wrong" would refuse "3 lakh" for 300000.
    unread = unconsumed_words(reading.answer, response, golds[0]) if verdict != UNDECIDED and method in _NUMBER_JUDGES else None
    if unread:
        verdict, method, why = UNDECIDED, "unreadable answer", f"unreadable answer: {unread}"
    unknowns = undetermined_symbols(response, reading.answer, golds[0]) if verdict != WRONG else ()
    if unknowns:
        verdict, method = WRONG, "undetermined symbol"
        why = f"the answer depends on {', '.join(unknowns)}, which the response never determines"
    return verdict, method, why, golds


def _decide(reading: Reading, golds: list[str], policy: GradingPolicy,
            timeout: float) -> tuple[str, str, str, list[str]]:
    """``(verdict, method, why, golds with the one compared first)`` for a committed answer."""
    answer = reading.answer
    assert answer is not None
    judged = Verdict(False, "no answer")
    undecided = None  # a comparison the verifier could not decide, when no gold matched
    for i, gold in enumerate(golds):
        judged = compare(answer, gold, policy, timeout=timeout)
        if judged.correct or judged.method in _UNREADABLE_GOLD:
            golds = [gold, *golds[:i], *golds[i + 1 :]]
            break
        if judged.verdict == UNDECIDED and undecided is None:
            undecided = judged
    if judged.method in _UNREADABLE_GOLD:
        return UNDECIDED, judged.method, f"the gold {golds[0]!r} cannot be read", golds
    if judged.correct:
        differing = [o for o in reading.others if not compare(o, answer, policy, timeout=timeout).correct]
        if differing:
            return UNDECIDED, "several answers", _several(answer, differing, "one is the gold"), golds
        return CORRECT, judged.method, f"the committed answer equals the gold ({judged.method})", golds
    # Wrong as read: undecided only when another value the response offers beside it is the gold.
    offered = (alternatives(answer) if judged.method == "hedge" else []) + list(reading.others)
    for value in offered:
        for i, gold in enumerate(golds):
            if compare(value, gold, policy, timeout=timeout).correct:
                method = "hedge" if judged.method == "hedge" else "several answers"
                return UNDECIDED, method, _several(answer, reading.others, "one is the gold", method), \
                    [gold, *golds[:i], *golds[i + 1 :]]
    if reading.others:
        return WRONG, "several answers", _several(answer, reading.others, "none is the gold"), golds
    if undecided is not None:
        return UNDECIDED, undecided.method, undecided.why, golds
    return WRONG, judged.method, f"the committed answer differs from the gold ({judged.method})", golds


def _several(answer: str, others: Any, verdict_note: str, method: str = "several answers") -> str:
    values = "; ".join([answer, *others])[:200]
    if method == "hedge" and not others:
        return f"a hedge between alternatives ({values}): {verdict_note}"
    return f"several different answers committed ({values}): {verdict_note}"
