"""Scoring from Python with the same registry the trainer uses."""
from __future__ import annotations

from typing import Any, Optional

from rewardsmith.plugins.loader import get_registry
from rewardsmith.plugins.scoring import call_scorer


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[dict] = None,
                  *, scorer: Optional[str] = None, **kwargs: Any) -> Any:
    """Score one sample, routed by ``data_source`` (or by ``scorer`` name), as verl's
    ``default_compute_score`` would: returns the scorer's own float or dict.

    Exceptions propagate: here the caller is a person, not a training run.
    """
    registry = get_registry()
    fn = registry.scorer(scorer) if scorer is not None else registry.route(data_source)[1]
    return call_scorer(fn, data_source, solution_str, ground_truth, extra_info, kwargs)
