"""Building the configured reward manager."""
from __future__ import annotations

from typing import Any

from rewardkit.plugins.managers.base import RewardManager
from rewardkit.plugins.plan import ScoringPlan
from rewardkit.plugins.plugins import get_registry


def build_reward_manager(config: Any) -> RewardManager:
    """The manager named by ``reward_model.reward_manager``, with its scoring plan."""
    registry = get_registry(config.plugins)
    cls = registry.reward_manager(config.reward_model.reward_manager)
    plan = ScoringPlan(registry, config)
    return cls(plan, config, **config.reward_model.reward_kwargs)
