"""rewardkit: plugin-based rewards and a lean PPO engine for language models.

The public face: ``hookimpl`` for plugin authors, ``compute_score`` for scoring
one sample from Python (a drop-in for verl's ``default_compute_score``) and
``trl_reward_func`` for TRL's ``reward_funcs``.
"""
from __future__ import annotations

from typing import Any

from rewardkit.plugins.hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["compute_score", "hookimpl", "trl_reward_func", "__version__"]


def __getattr__(name: str) -> Any:
    # Imported on first use: plugins import `hookimpl` from here and must not pay for torch.
    if name == "compute_score":
        from rewardkit.plugins.api import compute_score

        return compute_score
    if name == "trl_reward_func":
        from rewardkit.plugins.trl import trl_reward_func

        return trl_reward_func
    raise AttributeError(f"module 'rewardkit' has no attribute {name!r}")
