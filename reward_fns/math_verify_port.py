"""verl's ``math_verify`` scorer, ported: ``math_verify.compute_score``, verdict for verdict.

(Registered as ``math_verify``; the module is named ``math_verify_port`` so that
it never shadows the ``math_verify`` package. The math-verify library itself is
called through :mod:`math_verify_lib`.)

The ground truth is wrapped as ``\\boxed{<ground_truth>}`` and parsed with
math-verify's LaTeX extraction; the whole response is parsed with expression
and LaTeX extraction (math-verify finds the answer: boxed, "final answer is",
the last expression, ...). 1.0 when any parsed prediction verifies against any
parsed gold, else 0.0 (also 0.0 when either side parses to nothing).

math-verify's own ``signal.alarm`` timeouts are off (they fail outside the main
thread and cannot stop C-level work); instead the whole check runs under a hard
process-level timeout (``timeout`` seconds, verl's default 30) and scores
``timeout_score`` when it runs out, as verl's does.
"""
from __future__ import annotations

from typing import Any

from rewardsmith.common.hard_timeout_pool import run_with_hard_timeout
from rewardsmith.reward_fns.scorer_inputs import require_text


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    timeout_score: float = 0.0,
    timeout: float = 30.0,
    **kwargs: Any,
) -> float:
    """Score ``solution_str`` against ``ground_truth`` with math-verify (see the module docstring)."""
    gold = "\\boxed{" + require_text("math_verify", "ground_truth", ground_truth) + "}"
    output = require_text("math_verify", "solution_str", solution_str)
    # Imported here: math-verify takes ~1 s to import, which `rewardsmith plugins` should not pay.
    from rewardsmith.reward_fns.math_verify_lib import verify_boxed_gold

    try:
        return float(run_with_hard_timeout(verify_boxed_gold, (gold, output), timeout))
    except TimeoutError:
        return float(timeout_score)
