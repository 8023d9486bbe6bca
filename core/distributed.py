"""The process group of a data-parallel run: set-up, this rank's device, and object collectives.

A run is data-parallel when it is launched with more than one rank (``torchrun
--nproc-per-node N``, or the Ray backend's rank actors, which set ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK`` and the rendezvous address). The world size must equal ``trainer.nnodes *
trainer.n_gpus_per_node``. Ranks talk over NCCL on GPUs and gloo on CPUs.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from rewardsmith.core.strategy import pick_device

T = TypeVar("T")

# Whether this process made the process group (ensure_process_group), and so must take it down.
_OWNED_GROUP = False


@dataclass(frozen=True)
class Topology:
    """Where this process stands: ``rank`` of ``world_size``, on ``device``."""

    rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Rank 0 writes logs, metrics and the trainer's own checkpoint files."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def launched_world_size() -> int:
    """The world size the launcher (torchrun) set, 1 without one."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def init_distributed(trainer_cfg: Any) -> Topology:
    """Join the launcher's process group (once per process) and pick this rank's device.

    Raises naming ``trainer.nnodes`` / ``trainer.n_gpus_per_node`` when they
    disagree with how the process was launched.
    """
    expected = trainer_cfg.nnodes * trainer_cfg.n_gpus_per_node
    world = launched_world_size()
    if trainer_cfg.backend == "ray" and "RANK" not in os.environ:
        # The Ray controller: one process; the ranks live in the worker groups' actors.
        return Topology(0, 1, pick_device(trainer_cfg.device))
    if world != expected:
        how = ("launch it with torchrun --nnodes {0} --nproc-per-node {1}".format(trainer_cfg.nnodes, trainer_cfg.n_gpus_per_node)
               if world == 1 else f"it was launched with {world} ranks")
        raise ValueError(f"trainer.nnodes * trainer.n_gpus_per_node = {expected} ranks, but {how}")
    device = pick_device(trainer_cfg.device)
    if world == 1:
        return Topology(0, 1, device)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    ensure_process_group(device)
    return Topology(dist.get_rank(), dist.get_world_size(), device)


def ensure_process_group(device: torch.device) -> None:
    """Join the launcher's process group, or, in a process nobody launched, make a group of one.

    FSDP2 shards over a process group even with a single rank (which still
    gains mixed precision and CPU offload).
    """
    global _OWNED_GROUP
    if dist.is_initialized():
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if "MASTER_ADDR" in os.environ:
        dist.init_process_group(backend)
    else:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    _OWNED_GROUP = True


def release_process_group() -> None:
    """Take down the process group :func:`ensure_process_group` made (a group the caller made stays).

    Left to the interpreter's teardown, the group's native threads (gloo's
    run loops, NCCL's watchdog) are stopped in whatever order finalization
    reaches them, which now and then aborts the process ("terminate called
    without an active exception") after its work is done; NCCL also warns of
    pending work. Local: no rank waits for another.
    """
    global _OWNED_GROUP
    if _OWNED_GROUP and dist.is_initialized():
        dist.destroy_process_group()
    _OWNED_GROUP = False


def all_gather_objects(obj: T, topology: Topology) -> list[T]:
    """Every rank's ``obj``, in rank order (pickled; CPU tensors inside are fine)."""
    if not topology.distributed:
        return [obj]
    out: list[Any] = [None] * topology.world_size
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj: T, topology: Topology, src: int = 0) -> T:
    """Rank ``src``'s ``obj`` on every rank."""
    if not topology.distributed:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def barrier(topology: Topology) -> None:
    if topology.distributed:
        dist.barrier()
