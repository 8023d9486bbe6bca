"""A step's reward call beside the passes that do not need it, under the step's budget, profiled.

:meth:`PendingReward.open` starts a step's reward call and :meth:`PendingReward.submit`
begins scoring responses as soon as they exist: on a background thread when the rewards
overlap (``reward_model.launch_reward_fn_async``), inline otherwise. A batch generated in
chunks (``actor_rollout_ref.rollout.stream_chunks``) hands each chunk over as it is
generated, so its scoring runs while the next chunk generates; with ``stream_requests`` the rollout
hands over each prompt group as soon as its samples have ended, in the order they end, while the
same engine call generates the rest. The trainer runs the old-policy, reference and value passes
meanwhile and calls :meth:`PendingReward.join` just before the advantages.
Overlap changes when the scores are computed, never what they are.
"""
from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from rewardsmith.core.dynamic_sampling import select_reward
from rewardsmith.core.reward_chunks import concat_chunks
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.executors import SerialExecutor
from rewardsmith.plugins.reward_step import RewardStep, count_over_budget, reward_step

# Rewards below this share of a step are not worth overlapping (when the choice is the default's), and the
# console names the slowest scorer when the step waited on rewards for more than this share of it.
SLOW_REWARD_SHARE = 0.1


def overlaps_by_default(manager: Any) -> bool:
    """Whether ``reward_model.launch_reward_fn_async: null`` overlaps for ``manager``.

    Yes when its work happens outside the trainer's thread: rule scorers on a
    pool of processes or threads (parallel, prime, dapo with workers, sandbox,
    batch), or only model scorers over HTTP (judge, remote reward model). No
    for scorers in this thread (naive, dapo without workers) or a local
    reward model: their Python holds the GIL the torch passes need, so
    overlapping them gains nothing and costs a thread switch per bytecode slice.
    """
    from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel

    if any(isinstance(m, LocalRewardModel) for m in manager.plan.models.values()):
        return False
    return not isinstance(manager.executor, SerialExecutor) or bool(manager.plan.models)


def worth_overlapping(timing: dict[str, float]) -> bool:
    """Whether a step's rewards (``timing['reward_total']``) took at least ``SLOW_REWARD_SHARE`` of it
    (``timing['step']``). Cheaper ones cost more than overlapping them hides: the reward thread's Python
    (decoding, handing samples to workers, reading their scores) takes the GIL that generation and the
    passes need, which on a GPU, where a kernel-launching loop is bound by Python, slowed a step by 40%."""
    return timing.get("reward_total", 0.0) >= SLOW_REWARD_SHARE * timing.get("step", 0.0)


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def profile_metrics(step: RewardStep) -> dict[str, float]:
    """``reward/<scorer>/calls``, ``latency_p50_ms`` and ``latency_p99_ms`` per scorer of ``step``."""
    out: dict[str, float] = {}
    for scorer, seconds in sorted(step.latencies.items()):
        out[f"reward/{scorer}/calls"] = float(len(seconds))
        out[f"reward/{scorer}/latency_p50_ms"] = 1000 * percentile(seconds, 50)
        out[f"reward/{scorer}/latency_p99_ms"] = 1000 * percentile(seconds, 99)
    return out


@dataclass
class PendingReward:
    """A step's reward calls: one per chunk of responses, in flight on one background thread (scored
    in the order they came) or done inline; :meth:`join` gives their outputs as one, in that order."""

    step: RewardStep
    manager: Any = None
    overlap: bool = False
    thread: Optional[threading.Thread] = None
    chunks: "queue.Queue[Any]" = field(default_factory=queue.Queue)
    # One output per call (the thread scores the chunks queued meanwhile as one call), and one per chunk.
    results: list[Any] = field(default_factory=list)
    chunk_results: list[Any] = field(default_factory=list)
    submitted: bool = False
    busy_s: float = 0.0
    last_end: float = 0.0
    error: Optional[BaseException] = None
    metrics: dict[str, float] = field(default_factory=dict)
    # Where the chunks came in another order than the rollout returns their samples: the rows of the scored
    # samples, in the rollout's order (join gives the scores so).
    order: Optional[list[int]] = None

    @classmethod
    def open(cls, manager: Any, overlap: bool, budget_s: Optional[float]) -> "PendingReward":
        """A reward call for chunks to come (:meth:`submit`), under one budget from the first chunk on;
        ``manager`` None (another rank) scores nothing."""
        pending = cls(RewardStep(budget_s), manager, overlap)
        if manager is not None and overlap:
            # A daemon: an interrupted run exits without waiting for it (closing the manager stops its workers).
            pending.thread = threading.Thread(target=pending._drain, daemon=True, name="rewards")
            pending.thread.start()
        return pending

    def submit(self, batch: Any) -> None:
        """Score ``batch`` (a RewardBatch), after the chunks submitted before it."""
        if self.manager is None:
            return
        if not self.submitted:
            # The step's scoring, and its budget, start with its first responses, not with the generation before them.
            self.submitted = True
            if self.step.budget_s is not None:
                self.step.deadline = time.perf_counter() + self.step.budget_s
        if self.thread is not None:
            self.chunks.put((batch, time.perf_counter()))
        elif self.error is None:
            self._score([batch], time.perf_counter())

    def scored(self) -> list[Any]:
        """One output per chunk scored so far, in submission order, with its samples' values (the metrics
        are those of the call that scored it, which may have held later chunks too)."""
        return list(self.chunk_results)

    def _drain(self) -> None:
        ended = False
        while not ended and (item := self.chunks.get()) is not None:
            items = [item]
            # The chunks handed over while the last call ran go as one call: a judge or a pool of workers then
            # has all their samples in flight at once, where a call per prompt group would queue them behind
            # each other (a 200 ms judge, 8 requests in flight: 8 groups of 4 samples took 8 x 200 ms).
            while not ended:
                try:
                    more = self.chunks.get_nowait()
                except queue.Empty:
                    break
                ended = more is None
                if not ended:
                    items.append(more)
            if self.error is None:
                self._score([batch for batch, _ in items], min(at for _, at in items))

    def _score(self, batches: list[Any], handed_over: float) -> None:
        # A call is in flight from its first chunk's hand-over, or from the end of the call before it (the
        # thread's wake-up counts).
        begun = max(handed_over, self.last_end)
        try:
            with reward_step(self.step):
                result = self.manager(batches[0] if len(batches) == 1 else RewardBatch.concat(batches))
            self.results.append(result)
            start = 0
            for batch in batches:
                self.chunk_results.append(result if len(batches) == 1 else
                                          select_reward(result, list(range(start, start + len(batch)))))
                start += len(batch)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the trainer's thread by join()
            self.error = exc
        self.last_end = time.perf_counter()
        self.busy_s += self.last_end - begun

    def cancel(self, wait_s: float = 5.0) -> None:
        """Stop scoring (an interrupted step): pool workers are killed, queued calls never start;
        waits up to ``wait_s`` for the reward thread to let go of the manager."""
        self.step.cancel()
        if self.thread is not None:
            self.chunks.put(None)
            self.thread.join(wait_s)

    def join(self, timing: dict[str, float]) -> Any:
        """The manager's output for every chunk as one (None on a rank that does not score); adds
        ``timing['reward_wait']`` (the time this thread waited for it, or scored inline) and
        ``timing['reward_total']`` (the time spent scoring the chunks)."""
        waited_from = time.perf_counter()
        if self.thread is not None:
            self.chunks.put(None)
            self.thread.join()
            timing["reward_wait"] = timing.get("reward_wait", 0.0) + time.perf_counter() - waited_from
        else:
            timing["reward_wait"] = timing.get("reward_wait", 0.0) + self.busy_s
        timing["reward_total"] = timing.get("reward_total", 0.0) + self.busy_s
        if self.error is not None:
            raise self.error
        if not self.results:
            return None
        result = self.results[0] if len(self.results) == 1 else concat_chunks(self.results)
        if self.order is not None:
            result = select_reward(result, self.order)
        self.metrics = profile_metrics(self.step)
        if self.step.budget_s is not None:
            self.metrics["reward/over_budget"] = float(count_over_budget(result.extra_info))
        return result


def slow_reward_line(metrics: dict[str, float]) -> Optional[str]:
    """One console line when the step waited on rewards for more than a tenth of it, naming the slowest scorer."""
    step, wait = metrics.get("timing_s/step", 0.0), metrics.get("timing_s/reward_wait", 0.0)
    if step <= 0 or wait <= SLOW_REWARD_SHARE * step:
        return None
    p99 = {k[len("reward/"):-len("/latency_p99_ms")]: v for k, v in metrics.items() if k.endswith("/latency_p99_ms")}
    slowest = f"; slowest scorer: {max(p99, key=p99.get)} (p99 {max(p99.values()):.0f} ms)" if p99 else ""
    total = metrics.get("timing_s/reward_total", wait)
    return (f"[rewards] step waited {wait:.2f}s of {step:.2f}s on rewards ({total:.2f}s in all, "
            f"{max(0.0, total - wait):.2f}s hidden){slowest}")
