"""Scoring a batch of finished responses offline, through the same managers as training."""
from __future__ import annotations

from typing import Any, Optional

from rewardsmith.plugins.batch import RewardBatch, RewardOutput
from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.factory import build_reward_manager


def score_batch(settings: RewardSettings, batch: RewardBatch, progress: Optional[Any] = None) -> RewardOutput:
    """Build the configured manager, check the batch's data sources and rows against it
    (errors name the row), score the batch once and shut the manager down."""
    with build_reward_manager(settings) as manager:
        manager.check_rows(batch)
        manager.check_data_sources(sorted(set(batch.data_sources)))
        return manager(batch, progress=progress)
