"""Building the configured reward manager."""
from __future__ import annotations

from typing import Optional

from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.custom import PER_SAMPLE
from rewardsmith.plugins.loader import get_registry
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.plugins.scoring_plan import ScoringPlan


def build_reward_manager(settings: RewardSettings, cls: Optional[type] = None) -> RewardManager:
    """The manager named by ``reward_model.reward_manager`` (or the class ``cls``), with its scoring plan."""
    registry = get_registry(settings.plugins)
    cls = cls or registry.reward_manager(settings.reward_model.reward_manager)
    plan = ScoringPlan(registry, settings, getattr(cls, "scorer_call", PER_SAMPLE))
    return cls(plan, settings, **settings.reward_model.reward_kwargs)
