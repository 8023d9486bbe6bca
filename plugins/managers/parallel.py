"""``parallel``: a process pool (or Ray reward workers) with a hard per-sample timeout."""
from __future__ import annotations

import os

from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.executors import Executor, ProcessExecutor
from rewardsmith.plugins.managers.base import RewardManager


def pool_executor(settings: RewardSettings, workers: int) -> Executor:
    """``workers`` hard-timeout workers: local processes, or Ray actors across the cluster
    when the run's backend is ``ray``."""
    if settings.backend == "ray":
        from rewardsmith.plugins.ray_executor import RayExecutor

        return RayExecutor(workers, settings.reward_model.timeout)
    return ProcessExecutor(workers, settings.reward_model.timeout)


class ParallelRewardManager(RewardManager):
    """Scores in ``reward_model.num_workers`` workers (null: the CPU count); each sample
    gets at most ``reward_model.timeout`` seconds, and a hung or crashed worker is replaced."""

    name = "parallel"

    def make_executor(self) -> Executor:
        return pool_executor(self.settings, self.settings.reward_model.num_workers or os.cpu_count() or 1)
