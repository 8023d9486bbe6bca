"""``naive``: score every sample in this process, one after another (verl's default)."""
from __future__ import annotations

from rewardsmith.plugins.managers.base import RewardManager


class NaiveRewardManager(RewardManager):
    """Serial and in-process: simplest to debug; a hanging scorer blocks it (use ``parallel``)."""

    name = "naive"
