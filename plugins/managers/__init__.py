"""Built-in reward managers, registered through the same hook as third-party ones."""
from __future__ import annotations

from rewardkit.common.hooks import hookimpl
from rewardkit.plugins.managers.base import RewardManager
from rewardkit.plugins.managers.batch import BatchRewardManager
from rewardkit.plugins.managers.dapo import DapoRewardManager
from rewardkit.plugins.managers.naive import NaiveRewardManager
from rewardkit.plugins.managers.parallel import ParallelRewardManager

__all__ = ["RewardManager"]


@hookimpl
def register_reward_managers(register):
    register("naive", NaiveRewardManager)
    register("parallel", ParallelRewardManager)
    register("dapo", DapoRewardManager)
    register("batch", BatchRewardManager)
    from rewardkit.plugins.managers.sandbox import SandboxRewardManager

    register("sandbox", SandboxRewardManager)
