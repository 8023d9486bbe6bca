"""``sandbox``: code rewards with many sandbox requests in flight."""
from __future__ import annotations

from rewardkit.plugins.executors import Executor, ThreadExecutor
from rewardkit.plugins.managers.base import RewardManager


class SandboxRewardManager(RewardManager):
    """Scores on ``reward_model.sandbox_fusion.max_concurrent`` threads.

    Code scorers spend their time waiting on the sandbox, so threads (not
    processes) keep that many requests in flight and a batch is bounded by
    the sandbox's throughput, not the client's. Each sample still gets at most
    ``reward_model.timeout`` seconds; an unreachable sandbox marks the sample
    ``unavailable``, never wrong.
    """

    name = "sandbox"

    def make_executor(self) -> Executor:
        rm = self.settings.reward_model
        return ThreadExecutor(rm.sandbox_fusion.max_concurrent, rm.timeout)
