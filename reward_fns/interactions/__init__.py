"""Interactions for multi-turn episodes: the base class and the built-ins.

Built-ins are registered through ``register_interactions``, the hook any
plugin implements (docs/environments.md).
"""
from __future__ import annotations

from rewardsmith.common.hooks import hookimpl
from rewardsmith.reward_fns.interactions.base import BaseInteraction

__all__ = ["BaseInteraction"]


@hookimpl
def register_interactions(register):
    from rewardsmith.reward_fns.interactions.gsm8k import Gsm8kInteraction

    register("gsm8k", Gsm8kInteraction)
