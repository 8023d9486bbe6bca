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

from typing import Any

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.answer_extraction import convention_for, find_final_answer, gold_answer
from rewardsmith.reward_fns.math_equivalence import GradingPolicy, Verdict, quick_judge
from rewardsmith.reward_fns.scorer_inputs import require_text

DEFAULT_TIMEOUT_S = 10.0


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
    found = find_final_answer(require_text("math_answer", "solution_str", solution_str), convention_for(data_source))
    if found is None:
        return {"score": 0.0, "pred": "", "gold": golds[0], "method": "no answer"}
    verdict = Verdict(False, "no answer")
    for gold in golds:
        verdict = quick_judge(found.text, gold, policy)
        if verdict is None:
            # Imported only when needed: it brings in math-verify and sympy.
            from rewardsmith.reward_fns.math_symbolic import judge

            verdict = run_with_hard_timeout(judge, (found.text, gold, policy), timeout)
        if verdict.correct:
            break
    return {"score": 1.0 if verdict.correct else 0.0, "pred": found.text, "gold": gold, "method": verdict.method}
