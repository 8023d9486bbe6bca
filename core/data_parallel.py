"""A worker as a data-parallel group: the same methods, each rank working on its share.

Under ``torchrun`` every rank runs the same controller (the trainer) on the
same batches, and :class:`DataParallelWorker` wraps the rank's worker: a batch
is padded to a multiple of the world size and cut into equal shares with
:meth:`Batch.split`, the rank runs its share, and the results come back
together with :meth:`Batch.concat`. An update gives each rank its share of
every mini-batch with the mini-batch's global token and sample counts
(:meth:`MiniBatch.split`); the sharded model sums the ranks' gradients, so
the step equals one process's on the whole mini-batch.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from rewardkit.core.batch import Batch, MiniBatch
from rewardkit.core.distributed import Topology, all_gather_objects
from rewardkit.core.rollout import SamplingParams


class DataParallelWorker:
    """``worker``'s methods over every rank; anything not data-parallel passes straight through."""

    def __init__(self, worker: Any, topology: Topology) -> None:
        self.worker = worker
        self.topology = topology

    def __getattr__(self, name: str) -> Any:
        return getattr(self.worker, name)

    def _share(self, batch: Batch) -> tuple[Batch, int]:
        padded, added = batch.pad_to_multiple(self.topology.world_size)
        return padded.split(self.topology.world_size)[self.topology.rank], added

    def _gather(self, part: Any) -> list[Any]:
        return all_gather_objects(part, self.topology)

    def _per_sample(self, method: Callable[[Batch], torch.Tensor], batch: Batch) -> torch.Tensor:
        share, added = self._share(batch)
        out = torch.cat(self._gather(method(share)))
        return out[: len(out) - added]

    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        share, added = self._share(prompts)
        out = Batch.concat(self._gather(self.worker.generate(share, params)))
        return out.select(range(len(out) - added * params.n))

    def compute_log_prob(self, batch: Batch) -> torch.Tensor:
        return self._per_sample(self.worker.compute_log_prob, batch)

    def compute_values(self, batch: Batch) -> torch.Tensor:
        return self._per_sample(self.worker.compute_values, batch)

    def update(self, minis: list[MiniBatch]) -> dict[str, float]:
        """Each rank's share of each mini-batch; metrics are the mean over ranks (equal shares)."""
        shares = [mini.split(self.topology.world_size)[self.topology.rank] for mini in minis]
        per_rank = self._gather(self.worker.update(shares))
        return {key: sum(m[key] for m in per_rank) / len(per_rank) for key in per_rank[0]}


def data_parallel(worker: Any, topology: Topology) -> Any:
    """``worker`` itself in a single-process run, else its data-parallel group."""
    return DataParallelWorker(worker, topology) if topology.distributed else worker
