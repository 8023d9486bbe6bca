"""A worker as a data-parallel group: the same methods, each rank working on its share.

The controller (the trainer) calls a group as it would call one worker. A
batch is padded to a multiple of the world size and cut into equal shares
with :meth:`Batch.split`; each rank runs its share and the results come back
together with :meth:`Batch.concat`. An update gives each rank its share of
every mini-batch with the mini-batch's global token and sample counts
(:meth:`MiniBatch.split`); the sharded model sums the ranks' gradients, so the
step equals one process's on the whole mini-batch.

Two groups share that dispatch: :class:`DataParallelWorker` under ``torchrun``
(every rank runs the same controller and wraps its own worker; results are
exchanged with collectives), and ``RayWorkerGroup`` (one controller, ranks in
Ray actors; see :mod:`rewardsmith.core.ray_workers`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from rewardsmith.core.batch import Batch, MiniBatch
from rewardsmith.core.distributed import Topology, all_gather_objects
from rewardsmith.core.rollout import HandOver, SamplingParams, draw_seed, hand_over_at_once


class WorkerGroup(ABC):
    """The data-parallel methods of the workers, over ``world_size`` ranks.

    Subclasses say how a call reaches the ranks: :meth:`_run` gives rank ``r``
    the arguments ``per_rank[r]`` and returns every rank's result in rank
    order; :meth:`_each` calls every rank with the same arguments.
    """

    world_size: int

    @abstractmethod
    def _run(self, method: str, per_rank: list[tuple]) -> list[Any]:
        """Rank ``r`` calls ``method(*per_rank[r])``; every rank's result, in rank order."""

    @abstractmethod
    def _each(self, method: str, *args: Any) -> list[Any]:
        """Every rank calls ``method(*args)``."""

    def _shares(self, batch: Batch) -> tuple[list[Batch], int]:
        padded, added = batch.pad_to_multiple(self.world_size)
        return padded.split(self.world_size), added

    def _per_sample(self, method: str, batch: Batch) -> torch.Tensor:
        shares, added = self._shares(batch)
        out = torch.cat(self._run(method, [(s,) for s in shares]))
        return out[: len(out) - added]

    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        shares, added = self._shares(prompts)
        # Each rank's prompts keep their place in the whole batch, and so their seeds (SamplingParams).
        seed = draw_seed() if params.seed is None and params.do_sample else params.seed
        firsts = [params.first_prompt + sum(len(s) for s in shares[:r]) for r in range(len(shares))]
        out = Batch.concat(self._run("generate", [(s, replace(params, seed=seed, first_prompt=first))
                                                  for s, first in zip(shares, firsts)]))
        return out.select(range(len(out) - added * params.n))

    def generate_stream(self, prompts: Batch, params: SamplingParams, take: HandOver) -> bool:
        """The ranks' samples handed to ``take`` at once: each rank's engine runs its own share, so none streams
        to the controller."""
        return hand_over_at_once(self.generate, prompts, params, take)

    def compute_log_prob(self, batch: Batch) -> torch.Tensor:
        return self._per_sample("compute_log_prob", batch)

    def compute_log_prob_and_sum_pi_squared(self, batch: Batch) -> torch.Tensor:
        return self._per_sample("compute_log_prob_and_sum_pi_squared", batch)

    def compute_values(self, batch: Batch) -> torch.Tensor:
        return self._per_sample("compute_values", batch)

    def update(self, minis: list[MiniBatch], *args: Any) -> dict[str, float]:
        """Each rank's share of each mini-batch (``args`` go to every rank as they are); metrics are the mean over
        ranks (equal shares)."""
        per_mini = [mini.split(self.world_size) for mini in minis]
        per_rank = self._run("update", [([shares[r] for shares in per_mini], *args) for r in range(self.world_size)])
        return {key: sum(m[key] for m in per_rank) / len(per_rank) for key in per_rank[0]}

    def sync_rollout_weights(self) -> None:
        self._each("sync_rollout_weights")

    def sleep_rollout(self) -> None:
        self._each("sleep_rollout")

    def wake_rollout(self) -> None:
        self._each("wake_rollout")

    def close(self) -> None:
        self._each("close")

    def save_checkpoint(self, path: Path) -> None:
        self._each("save_checkpoint", path)

    def load_checkpoint(self, path: Path) -> None:
        self._each("load_checkpoint", path)


class DataParallelWorker(WorkerGroup):
    """This rank's ``worker`` in a ``torchrun`` group: it runs its own share, collectives bring the rest."""

    def __init__(self, worker: Any, topology: Topology) -> None:
        self.worker = worker
        self.topology = topology
        self.world_size = topology.world_size

    def _run(self, method: str, per_rank: list[tuple]) -> list[Any]:
        return all_gather_objects(getattr(self.worker, method)(*per_rank[self.topology.rank]), self.topology)

    def _each(self, method: str, *args: Any) -> list[Any]:
        # Every rank's controller makes the same call on its own worker.
        return [getattr(self.worker, method)(*args)]


def data_parallel(worker: Any, topology: Topology) -> Any:
    """``worker`` itself in a single-process run, else its data-parallel group."""
    return DataParallelWorker(worker, topology) if topology.distributed else worker
