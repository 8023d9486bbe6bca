"""``naive``: score every sample one after another (verl's default), each within ``reward_model.timeout``."""
from __future__ import annotations

from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.executors import Executor, ProcessExecutor, SerialExecutor
from rewardsmith.plugins.managers.base import RewardManager


def serial_executor(settings: RewardSettings) -> Executor:
    """One sample at a time: in one worker process under the hard per-sample ``reward_model.timeout``
    (a hang costs that sample, and the worker is replaced), or in this process when it is null."""
    timeout = settings.reward_model.timeout
    return SerialExecutor() if timeout is None else ProcessExecutor(1, timeout)


class NaiveRewardManager(RewardManager):
    """Serial: each sample in one long-lived worker process with the hard per-sample timeout
    ``reward_model.timeout``; with ``reward_model.timeout=null`` in this process (simplest to
    debug, and a hanging scorer blocks the run), as verl's ``naive``."""

    name = "naive"

    def make_executor(self) -> Executor:
        return serial_executor(self.settings)
