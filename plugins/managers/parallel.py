"""``parallel``: a process pool (or Ray reward workers) with a hard per-sample timeout."""
from __future__ import annotations

import os
from typing import Optional

from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.executors import Executor, ProcessExecutor
from rewardsmith.plugins.managers.base import RewardManager


_FROM_SETTINGS = object()


def pool_executor(settings: RewardSettings, workers: int, timeout: Optional[float] = _FROM_SETTINGS) -> Executor:  # type: ignore[assignment]
    """``workers`` hard-timeout workers: local processes, or Ray actors across the cluster
    when the run's backend is ``ray``. ``timeout`` (per sample) defaults to ``reward_model.timeout``."""
    if timeout is _FROM_SETTINGS:
        timeout = settings.reward_model.timeout
    if settings.backend == "ray":
        from rewardsmith.plugins.ray_executor import RayExecutor

        return RayExecutor(workers, timeout)
    return ProcessExecutor(workers, timeout)


class ParallelRewardManager(RewardManager):
    """Scores in ``reward_model.num_workers`` workers (null: the CPU count); each sample
    gets at most ``reward_model.timeout`` seconds, and a hung or crashed worker is replaced."""

    name = "parallel"

    def make_executor(self) -> Executor:
        return pool_executor(self.settings, self.settings.reward_model.num_workers or os.cpu_count() or 1)
