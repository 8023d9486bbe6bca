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

Verdicts are cached by ``(pred, gold, policy)``: the samples of a group share
their gold and often commit to the same answer string, and a judgement
depends on nothing else. A timeout raises and is never cached.
"""
from __future__ import annotations

from functools import lru_cache

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.math_verifier.judges import STRICT, VERDICTS, GradingPolicy, Verdict, quick_judge

__all__ = ["STRICT", "VERDICTS", "GradingPolicy", "Verdict", "compare"]


def compare(pred: str, gold: str, policy: GradingPolicy = STRICT, *, timeout: float) -> Verdict:
    """The verdict on answer ``pred`` against ``gold`` (see the module docstring).

    Raises ``TimeoutError`` when the symbolic judgement overruns ``timeout`` seconds.
    """
    return _cached_compare(pred, gold, policy, timeout)


@lru_cache(maxsize=4096)
def _cached_compare(pred: str, gold: str, policy: GradingPolicy, timeout: float) -> Verdict:
    verdict = quick_judge(pred, gold, policy)
    if verdict is None:
        # Imported only when needed: it brings in math-verify and sympy.
        from rewardsmith.reward_fns.math_verifier.symbolic import judge

        verdict = run_with_hard_timeout(judge, (pred, gold, policy), timeout)
    return verdict
