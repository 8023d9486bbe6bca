"""rewardsmith: plugin-based rewards and a lean PPO engine for language models.

The public face. Plugin authors import everything they need from here:
``hookimpl`` (mark hook implementations), ``RewardManager`` (subclass it for
a manager), the executors (``SerialExecutor``, ``ProcessExecutor``,
``ThreadExecutor``), ``ScorerInfrastructureError`` (raise it when a service
your scorer needs is unreachable) and ``compute_score`` (score one sample with
any installed scorer). ``trl_reward_func`` turns scorers into TRL
``reward_funcs``; ``scorer_from_trl`` turns a TRL reward function into a scorer.
"""
from __future__ import annotations

import importlib
from typing import Any

from rewardsmith.common.errors import ScorerInfrastructureError
from rewardsmith.common.hooks import hookimpl

__version__ = "0.1.0"

# Imported on first use: a plugin imports `hookimpl` from here and must not pay for torch.
_LAZY = {
    "compute_score": "rewardsmith.compute",
    "trl_reward_func": "rewardsmith.trl",
    "scorer_from_trl": "rewardsmith.trl",
    "RewardManager": "rewardsmith.plugins.managers.base",
    "RewardBatch": "rewardsmith.plugins.batch",
    "RewardSettings": "rewardsmith.plugins.config",
    "SerialExecutor": "rewardsmith.plugins.executors",
    "ProcessExecutor": "rewardsmith.plugins.executors",
    "ThreadExecutor": "rewardsmith.plugins.executors",
}

__all__ = ["hookimpl", "ScorerInfrastructureError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rewardsmith' has no attribute {name!r}")
