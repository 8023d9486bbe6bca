"""``sandbox``: code rewards with many sandbox requests in flight."""
from __future__ import annotations

from rewardsmith.plugins.executors import Executor, ThreadExecutor
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.sandbox.client import shared_client


class SandboxRewardManager(RewardManager):
    """Scores on threads, as many samples in flight as the sandbox client's cap on
    requests (``reward_model.sandbox_fusion.max_concurrent``) allows now.

    Code scorers spend their time waiting on the sandbox, so threads (not
    processes) keep requests in flight and a batch is bounded by the
    sandbox's throughput, not the client's. The client shares its cap with the
    code scorer; against a plain SandboxFusion the cap adapts to the server,
    and fewer samples start, so no sample waits out its timeout in a queue.
    Each sample gets at most ``reward_model.timeout`` seconds; an unreachable
    sandbox marks the sample ``unavailable``, never wrong.
    """

    name = "sandbox"

    def make_executor(self) -> Executor:
        rm = self.settings.reward_model
        sandbox = rm.sandbox_fusion
        if not sandbox.url:
            return ThreadExecutor(sandbox.max_concurrent, rm.timeout)
        client = shared_client(sandbox.url, max_concurrency=sandbox.max_concurrent, backoff_s=sandbox.retry_backoff)

        def samples_in_flight() -> int:
            client.batch_supported()  # the capability check, before the first samples start
            return client.limit.current

        return ThreadExecutor(samples_in_flight, rm.timeout)
