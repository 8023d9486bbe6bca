"""``math_answer``: rewardsmith's own math verifier, for any data_source.

1. Find the final answer in the convention of the row's data_source
   (``####`` for GSM8K, ``Answer:`` for DAPO/AIME, ``\\boxed{}`` otherwise),
   falling back to the other conventions, an "the answer is" phrase, then the
   final sentence (:mod:`answer_extraction`). The gold is read the same way
   (after ``####``, inside a box, or as is).
2. Judge equivalence (:mod:`math_equivalence`): hedges are wrong; numbers are
   compared exactly (a decimal approximation of an exact value and a bare
   decimal for a percentage are wrong unless the grading options below allow
   them); words, choices, equations, then math-verify and sympy.

3. Refuse what a careful grader refuses: a response that commits to several
   different answers (every other marked answer after the last correction
   must be equivalent to the final one); a response that is mostly the same
   text repeated (filler around an answer); for DAPO data sources, whose prompt
   asks for an ``Answer:`` line, a response with no marked answer at all.

Judgements that need no symbolic algebra are made in-process. The rest run
under a hard process-level timeout (``timeout`` seconds) in a guard
subprocess that is killed when it overruns, because math-verify's own
``signal.alarm`` timeout fails outside the main thread and cannot stop C-level
work; an overrun raises ``TimeoutError`` so the reward manager records a
timeout for that sample.

Grading options (keyword arguments, e.g. ``reward_kwargs``): see
:class:`~rewardsmith.reward_fns.math_equivalence.GradingPolicy`
(``accept_decimal_approximation``, ``approximation_rel_tol``,
``accept_decimal_for_percent``); all are off by default.

Returns ``{"score": 1.0 | 0.0, "pred": str, "gold": str, "method": str}``;
``method`` names the judge that decided (or ``no answer``).
"""
from __future__ import annotations

import fnmatch
import zlib
from typing import Any

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.answer_extraction import convention_for, find_final_answer, gold_answer
from rewardsmith.reward_fns.math_verifier.judges import GradingPolicy, Verdict, quick_judge
from rewardsmith.reward_fns.scorer_inputs import require_text

DEFAULT_TIMEOUT_S = 10.0
# Real reasoning compresses to about a third of its length; kilobytes of repeated filler to
# a few percent. Below this ratio, and past this length, a response is filler, not an answer.
DEGENERATE_MIN_CHARS = 4000
DEGENERATE_RATIO = 0.1
# Data sources whose prompt demands a marked answer: an unmarked final sentence is no answer.
_MARKED_ONLY = ("*dapo*",)
_UNMARKED_RULES = ("answer is", "final sentence")


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
    **kwargs: Any,
) -> dict[str, Any]:
    """Score ``solution_str`` against ``ground_truth`` (see the module docstring).

    ``ground_truth`` may also be a list of accepted answers; any match counts.
    """
    policy = GradingPolicy(accept_decimal_approximation, approximation_rel_tol, accept_decimal_for_percent)
    golds = _golds(ground_truth)
    response = require_text("math_answer", "solution_str", solution_str)
    if _is_degenerate(response):
        return {"score": 0.0, "pred": "", "gold": golds[0], "method": "repeated filler"}
    found = find_final_answer(response, convention_for(data_source))
    if found is None or (found.rule in _UNMARKED_RULES
                         and any(fnmatch.fnmatchcase(str(data_source).lower(), p) for p in _MARKED_ONLY)):
        return {"score": 0.0, "pred": "" if found is None else found.text, "gold": golds[0], "method": "no answer"}
    verdict = Verdict(False, "no answer")
    for gold in golds:
        verdict = _judge(found.text, gold, policy, timeout)
        if verdict.correct:
            break
    if verdict.correct:
        for other in found.others:
            if not _judge(other, found.text, policy, timeout).correct:
                verdict = Verdict(False, "several answers")
                break
    return {"score": 1.0 if verdict.correct else 0.0, "pred": found.text, "gold": gold, "method": verdict.method}


def _judge(pred: str, gold: str, policy: GradingPolicy, timeout: float) -> Verdict:
    verdict = quick_judge(pred, gold, policy)
    if verdict is None:
        # Imported only when needed: it brings in math-verify and sympy.
        from rewardsmith.reward_fns.math_verifier.symbolic import judge

        verdict = run_with_hard_timeout(judge, (pred, gold, policy), timeout)
    return verdict


def _is_degenerate(response: str) -> bool:
    """Whether ``response`` is long and mostly the same text repeated (it compresses to almost nothing)."""
    if len(response) < DEGENERATE_MIN_CHARS:
        return False
    data = response.encode("utf-8", "surrogatepass")
    return len(zlib.compress(data)) < DEGENERATE_RATIO * len(data)
