"""Scoring on a Ray cluster: reward workers spread over its nodes.

Each worker is a Ray actor that runs its jobs in a one-process
:class:`~rewardsmith.common.hard_timeout_pool.WorkerPool`, so a scorer that
hangs, raises or segfaults costs one sample (``timeout`` / ``error`` /
``crash``) exactly as with the local ``parallel`` manager; the actor itself
survives. An actor that dies (its node lost) is reported by rank, its jobs
count as crashed, and it is replaced.

Custom ``compute_score`` files travel with the job: the Python files of the
directory holding them (with its sub-packages) are sent to every actor, which
writes them to a private directory; a worker that does not see a file's
absolute path (another node) loads the shipped copy.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

from rewardsmith.common.function_refs import FILE_PREFIX, FunctionRef
from rewardsmith.common.ray_cluster import ensure_ray
from rewardsmith.common.hard_timeout_pool import Task, TaskResult, WorkerPool
from rewardsmith.plugins.executors import Progress, ScoreJob, outcome_of, preload_modules, score_task
from rewardsmith.plugins.scoring import ScoreOutcome
# Jobs sent to an actor per call: small enough to balance load, large enough
# that Ray's per-call overhead (~1 ms) stays small against a scorer call.
CHUNK = 16
# Calls queued on each actor: the next chunk waits in the actor's queue while
# one runs, so a worker never idles for a round trip to the driver.
IN_FLIGHT = 2


# Shipping a custom file's directory is for its sibling modules, not for a
# whole repository that happens to hold it.
MAX_SHIPPED_BYTES = 16 << 20


def snapshot_python_files(root: str) -> dict[str, bytes]:
    """The ``*.py`` files under ``root`` (hidden and virtual-env folders skipped), by relative path."""
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(Path(root).rglob("*.py")):
        rel = path.relative_to(root)
        if any(part.startswith(".") or part in ("site-packages", "__pycache__") for part in rel.parts[:-1]):
            continue
        data = path.read_bytes()
        total += len(data)
        if total > MAX_SHIPPED_BYTES:
            raise ValueError(f"the custom reward files' directory {root} holds over {MAX_SHIPPED_BYTES >> 20} MiB "
                             "of Python files: move the reward file into a directory of its own to ship it to Ray workers")
        files[str(rel)] = data
    return files


class RewardWorker:
    """The body of one reward actor: a one-process hard-timeout pool."""

    def __init__(self, preload: list[str], shipped_dir: Optional[str], files: dict[str, bytes]) -> None:
        self.shipped_dir = shipped_dir
        self.local_dir = tempfile.mkdtemp(prefix="rewardsmith-job-")
        for rel, data in files.items():
            target = Path(self.local_dir, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self.pool = WorkerPool(1, preload=preload)

    def run(self, tasks: list[Task], timeout: Optional[float]) -> list[TaskResult]:
        """Run ``tasks`` one after another, each under ``timeout`` seconds."""
        return self.pool.map([self._localize(t) for t in tasks], timeout=timeout)

    def _localize(self, task: Task) -> Task:
        # A file scorer's absolute path exists only where the job was launched;
        # elsewhere the copy shipped in the working directory stands in for it.
        ref = task.args[0]
        path = ref.module[len(FILE_PREFIX):] if ref.module.startswith(FILE_PREFIX) else None
        if path is None or os.path.exists(path) or self.shipped_dir is None:
            return task
        local = Path(self.local_dir) / Path(path).relative_to(self.shipped_dir)
        return replace(task, args=(FunctionRef(FILE_PREFIX + str(local), ref.name), *task.args[1:]))

    def close(self) -> None:
        self.pool.close()
        shutil.rmtree(self.local_dir, ignore_errors=True)


class RayExecutor:
    """Scores on ``num_workers`` Ray actors (one CPU each, spread over the nodes)."""

    def __init__(self, num_workers: int, timeout: Optional[float]) -> None:
        self.num_workers = num_workers
        self.timeout = timeout
        self._actors: list[Any] = []
        self._options: dict[str, Any] = {}
        self.replaced = 0

    def _start(self, tasks: list[Task]) -> None:
        import ray

        ensure_ray()
        refs = [t.args[0] for t in tasks]
        files = sorted({r.module[len(FILE_PREFIX):] for r in refs if r.module.startswith(FILE_PREFIX)})
        shipped = os.path.commonpath([str(Path(f).parent) for f in files]) if files else None
        preload = preload_modules(tasks)
        files = snapshot_python_files(shipped) if shipped is not None else {}
        self._options = {"options": {"num_cpus": 1, "scheduling_strategy": "SPREAD"},
                         "args": (preload, shipped, ray.put(files))}
        self._actors = [self._new_actor() for _ in range(self.num_workers)]

    def _new_actor(self) -> Any:
        import ray

        cls = ray.remote(RewardWorker).options(**self._options["options"])
        return cls.remote(*self._options["args"])

    def run(self, jobs: Sequence[ScoreJob], progress: Optional[Progress] = None) -> list[ScoreOutcome]:
        import ray

        tasks = [score_task(j) for j in jobs]
        if not self._actors:
            self._start(tasks)
        pending = deque(list(range(i, min(i + CHUNK, len(tasks)))) for i in range(0, len(tasks), CHUNK))
        outcomes: list[Optional[ScoreOutcome]] = [None] * len(tasks)
        running: dict[Any, tuple[int, Any, list[int]]] = {}
        while pending or running:
            for rank, actor in enumerate(self._actors):
                queued = sum(1 for _, sent_to, _ in running.values() if sent_to is actor)
                for _ in range(min(IN_FLIGHT - queued, len(pending))):
                    chunk = pending.popleft()
                    running[actor.run.remote([tasks[i] for i in chunk], self.timeout)] = (rank, actor, chunk)
            (ready,), _ = ray.wait(list(running), num_returns=1)
            rank, actor, chunk = running.pop(ready)
            try:
                results = ray.get(ready)
            except ray.exceptions.RayActorError as exc:
                # Every chunk sent to the dead actor fails; it is replaced once.
                error = f"reward worker rank {rank} died: {type(exc).__name__}"
                results = [TaskResult("crash", error=error) for _ in chunk]
                if self._actors[rank] is actor:
                    self._actors[rank] = self._new_actor()
                    self.replaced += 1
            for i, result in zip(chunk, results):
                outcomes[i] = outcome_of(result)
            if progress is not None:
                progress.update(len(chunk))
        return outcomes  # type: ignore[return-value]

    def close(self) -> None:
        import ray

        for actor in self._actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a dead actor has nothing left to close
                pass
            ray.kill(actor)
        self._actors = []

