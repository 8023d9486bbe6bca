"""``naive``: score every sample one after another (verl's default), each within ``reward_model.timeout``."""
from __future__ import annotations

from rewardsmith.plugins.managers.base import RewardManager


class NaiveRewardManager(RewardManager):
    """Serial: each sample in one long-lived worker process with the hard per-sample timeout
    ``reward_model.timeout``; with ``reward_model.timeout=null`` in this process (simplest to
    debug, and a hanging scorer blocks the run), as verl's ``naive``."""

    name = "naive"
