"""The Ray backend (``trainer.backend=ray``): worker groups of Ray actors, one torch.distributed rank each.

One controller (the trainer, in the driver process) runs the same loop as in
a single process; each role (actor with its rollout engine, reference,
critic) is a :class:`RayWorkerGroup` of ``trainer.nnodes *
trainer.n_gpus_per_node`` ranks. The group's dispatch (pad, split, gather) is
:class:`~rewardsmith.core.data_parallel.WorkerGroup`'s, the same as under
``torchrun``. Ranks are placed with a placement group: one bundle per rank
(a GPU each on GPU machines, a CPU each otherwise). With
``trainer.ray.colocate`` (the default) the roles share the bundles, rank ``r``
of every role on bundle ``r``; otherwise each role gets its own.
"""
from __future__ import annotations

import os
import socket
from typing import Any, Optional

from rewardsmith.common.ray_cluster import ensure_ray
from rewardsmith.core.data_parallel import WorkerGroup


class RankHost:
    """The body of one rank's Ray actor: it joins its group's process group and hosts the worker."""

    def address(self) -> tuple[str, int]:
        """This node's address and a free port: rank 0's become the group's rendezvous."""
        import ray

        with socket.socket() as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        return ray.util.get_node_ip_address(), port

    def start(self, rank: int, world_size: int, master: tuple[str, int], cpu_threads: Optional[int],
              worker_cls: type, args: tuple) -> None:
        """Set the rank's environment as ``torchrun`` would, then build the worker (it joins the group)."""
        import torch

        os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": "0",
                           "MASTER_ADDR": master[0], "MASTER_PORT": str(master[1])})
        torch.set_num_threads(cpu_threads or 1)
        self.worker = worker_cls(*args)

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self.worker, method)(*args)

    def rng_state(self) -> dict:
        from rewardsmith.core.checkpoint import rng_state

        return rng_state()

    def set_rng_state(self, state: dict) -> None:
        from rewardsmith.core.checkpoint import set_rng_state

        set_rng_state(state)


class RayWorkerGroup(WorkerGroup):
    """``worker_cls(*args)`` on ``len(bundles)`` Ray actors; a dead rank is reported by role and rank."""

    def __init__(self, role: str, worker_cls: type, args: tuple, placement_group: Any, bundles: list[int],
                 cpus_per_rank: float, gpus_per_rank: float, cpu_threads: Optional[int]) -> None:
        import ray
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.role = role
        self.world_size = len(bundles)
        host = ray.remote(RankHost)
        self.actors = [
            host.options(num_cpus=cpus_per_rank, num_gpus=gpus_per_rank, name=None,
                         scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group, bundle)).remote()
            for bundle in bundles
        ]
        try:
            master = self._get([self.actors[0].address.remote()])[0]
            # All at once: each rank's worker blocks in init_process_group until every rank has joined.
            self._get([a.start.remote(rank, self.world_size, master, cpu_threads, worker_cls, args)
                       for rank, a in enumerate(self.actors)])
        except BaseException:
            self.shutdown()  # a rank that failed to start leaves no actor of the group behind
            raise

    def _get(self, refs: list[Any]) -> list[Any]:
        import ray

        try:
            return ray.get(refs)
        except ray.exceptions.RayActorError as exc:
            dead = next((r for r, a in enumerate(self.actors) if not _alive(a)), None)
            where = f"rank {dead}" if dead is not None else "a rank"
            raise RuntimeError(f"the {self.role} worker group's {where} died: {exc}") from None

    def _run(self, method: str, per_rank: list[tuple]) -> list[Any]:
        return self._get([a.call.remote(method, *args) for a, args in zip(self.actors, per_rank)])

    def _each(self, method: str, *args: Any) -> list[Any]:
        return self._run(method, [args] * self.world_size)

    def rng_states(self) -> list[dict]:
        """Each rank's random state (its sampling stream), for checkpoints."""
        return self._get([a.rng_state.remote() for a in self.actors])

    def set_rng_states(self, states: list[dict]) -> None:
        self._get([a.set_rng_state.remote(s) for a, s in zip(self.actors, states)])

    def shutdown(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def _alive(actor: Any) -> bool:
    import ray

    try:
        ray.get(actor.address.remote(), timeout=5)
        return True
    except Exception:  # noqa: BLE001 - any failure to answer means the rank is gone
        return False


class RayBackend:
    """The placement of a run's worker groups on the Ray cluster (joined or started by :func:`ensure_ray`)."""

    def __init__(self, trainer_cfg: Any, roles: list[str]) -> None:
        import ray
        import torch
        from ray.util.placement_group import placement_group

        ensure_ray()
        self.cfg = trainer_cfg
        self.world_size = trainer_cfg.nnodes * trainer_cfg.n_gpus_per_node
        self.gpus = 1.0 if trainer_cfg.device != "cpu" and torch.cuda.is_available() else 0.0
        colocated = trainer_cfg.ray.colocate
        share = 1.0 / len(roles) if colocated else 1.0
        bundle = {"CPU": trainer_cfg.ray.cpus_per_rank, **({"GPU": 1.0} if self.gpus else {})}
        self.placement_groups = {}
        self.groups: list[RayWorkerGroup] = []
        for role in ([roles[0]] if colocated else roles):
            pg = placement_group([bundle] * self.world_size, strategy="PACK")
            self.placement_groups[role] = pg
            try:
                ray.get(pg.ready(), timeout=trainer_cfg.ray.placement_timeout)
            except ray.exceptions.GetTimeoutError:
                self.shutdown()  # the groups placed (or asked for) so far are freed
                raise RuntimeError(
                    f"the Ray cluster cannot place {self.world_size} ranks of {bundle} for '{role}' "
                    f"(trainer.nnodes * trainer.n_gpus_per_node; colocate={colocated}); available: "
                    f"{ray.available_resources()}") from None
        self._colocated = colocated
        self._share = share

    def group(self, role: str, worker_cls: type, args: tuple) -> RayWorkerGroup:
        """``worker_cls(*args)`` as a group of ``world_size`` ranks for ``role``."""
        pg = next(iter(self.placement_groups.values())) if self._colocated else self.placement_groups[role]
        group = RayWorkerGroup(role, worker_cls, args, pg, list(range(self.world_size)),
                               cpus_per_rank=self.cfg.ray.cpus_per_rank * self._share, gpus_per_rank=self.gpus * self._share,
                               cpu_threads=self.cfg.cpu_threads)
        self.groups.append(group)
        return group

    def shutdown(self) -> None:
        """Stop every rank and free the placement groups (the cluster itself stays up)."""
        from ray.util.placement_group import remove_placement_group

        for group in self.groups:
            group.shutdown()
        for pg in self.placement_groups.values():
            remove_placement_group(pg)
        self.groups, self.placement_groups = [], {}
