"""``parallel``: a process pool with a hard per-sample timeout."""
from __future__ import annotations

import os

from rewardkit.plugins.executors import Executor, ProcessExecutor
from rewardkit.plugins.managers.base import RewardManager


def pool_size(settings) -> int:
    """``reward_model.num_workers``, or the CPU count when it is null."""
    return settings.reward_model.num_workers or os.cpu_count() or 1


class ParallelRewardManager(RewardManager):
    """Scores in ``reward_model.num_workers`` processes; each sample gets at most
    ``reward_model.timeout`` seconds, and a hung or crashed worker is replaced."""

    name = "parallel"

    def make_executor(self) -> Executor:
        return ProcessExecutor(pool_size(self.settings), self.settings.reward_model.timeout)
