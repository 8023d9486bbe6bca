"""Built-in reward managers, registered through the same hook as third-party ones."""
from __future__ import annotations

from rewardsmith.common.hooks import hookimpl
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.plugins.managers.batch import BatchRewardManager
from rewardsmith.plugins.managers.dapo import DapoRewardManager
from rewardsmith.plugins.managers.naive import NaiveRewardManager
from rewardsmith.plugins.managers.parallel import ParallelRewardManager
from rewardsmith.plugins.managers.prime import PrimeRewardManager

__all__ = ["RewardManager"]


@hookimpl
def register_reward_managers(register):
    register("naive", NaiveRewardManager)
    register("parallel", ParallelRewardManager)
    register("dapo", DapoRewardManager)
    register("batch", BatchRewardManager)
    register("prime", PrimeRewardManager)
    from rewardsmith.plugins.managers.sandbox import SandboxRewardManager

    register("sandbox", SandboxRewardManager)
