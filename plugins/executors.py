"""Where scorer calls run: in process, in a process pool, or on threads.

A reward manager hands an executor a list of :class:`ScoreJob` and gets one
:class:`ScoreOutcome` back per job, in order. Failures are outcomes, not
exceptions, so one bad sample never costs a batch.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence

from rewardsmith.common.canonical import canonical_json
from rewardsmith.common.errors import SystematicScorerError
from rewardsmith.common.function_refs import FILE_PREFIX, FunctionRef
from rewardsmith.common.hard_timeout_pool import DEADLINE_POLL_S, Task, TaskResult, WorkerPool
from rewardsmith.plugins.reward_step import RewardStep, current_step
from rewardsmith.plugins.scoring import CRASH, ERROR, TIMEOUT, ScoreOutcome, score_sample


class Progress(Protocol):
    """A progress bar (``tqdm`` fits): ``reset(total)`` once, then ``update(n)`` as work ends."""

    def reset(self, total: Optional[int] = None) -> None: ...

    def update(self, n: int = 1) -> Any: ...


@dataclass(frozen=True)
class ScoreJob:
    """One scorer call on one sample."""

    scorer: str
    fn: Callable[..., Any]
    data_source: str
    solution_str: str
    ground_truth: Any
    extra_info: Optional[dict]
    kwargs: dict


class Executor(Protocol):
    """Runs score jobs; ``progress.update(1)`` is called as each job ends.

    Inside a training step (:mod:`rewardsmith.plugins.reward_step`) an executor
    records each job's latency under its scorer's name, and the jobs not
    finished by the step's deadline get :meth:`RewardStep.over_budget`.
    """

    def run(self, jobs: Sequence[ScoreJob], progress: Optional[Progress] = None) -> list[ScoreOutcome]: ...

    def close(self) -> None: ...


def _call(job: ScoreJob) -> ScoreOutcome:
    return score_sample(job.fn, job.data_source, job.solution_str, job.ground_truth, job.extra_info, job.kwargs)


class SerialExecutor:
    """Scores in this process, one sample at a time (no timeout: a hang blocks the run)."""

    def run(self, jobs: Sequence[ScoreJob], progress: Optional[Progress] = None) -> list[ScoreOutcome]:
        step = current_step()
        out = []
        for job in jobs:
            # A call in this thread cannot be interrupted: the budget stops only the ones not started.
            if step.expired():
                out.append(step.over_budget())
            else:
                out.append(_call(job))
                step.record(job.scorer, out[-1].seconds)
            if progress is not None:
                progress.update(1)
        return out

    def close(self) -> None:
        pass


_SCORE_BY_REF = FunctionRef("rewardsmith.plugins.scoring", "score_by_ref")


def score_task(job: ScoreJob) -> Task:
    """``job`` as a pool task: the scorer travels by reference and is re-imported by the worker."""
    return Task(_SCORE_BY_REF, (FunctionRef.of(job.fn), job.data_source, job.solution_str, job.ground_truth,
                                job.extra_info, job.kwargs))


def outcome_of(result: TaskResult, step: Optional[RewardStep] = None) -> ScoreOutcome:
    """A pool task's result as the sample's outcome (a dead or hung worker is a crash or timeout,
    one cancelled at ``step``'s deadline is over budget)."""
    if result.status == "ok":
        return result.value
    if result.status == "cancelled" and step is not None:
        return step.over_budget()
    status = {"timeout": TIMEOUT, "crash": CRASH}.get(result.status, ERROR)
    return ScoreOutcome(status, error=result.error, seconds=result.seconds)


def preload_modules(tasks: Sequence[Task]) -> list[str]:
    """What a worker imports before its first task: the scoring entry point and every scorer's module."""
    scorers = {t.args[0].module for t in tasks if not t.args[0].module.startswith(FILE_PREFIX)}
    return [_SCORE_BY_REF.module, *sorted(scorers)]


class ProcessExecutor:
    """Scores in ``num_workers`` worker processes with a hard per-sample ``timeout``.

    Scorers travel by :class:`FunctionRef` and are re-imported by the workers.
    A hung sample's worker is killed and replaced; a crashed one is replaced.
    """

    def __init__(self, num_workers: int, timeout: Optional[float]) -> None:
        self.num_workers = num_workers
        self.timeout = timeout
        self._pool: Optional[WorkerPool] = None

    def run(self, jobs: Sequence[ScoreJob], progress: Optional[Progress] = None) -> list[ScoreOutcome]:
        tasks = [score_task(j) for j in jobs]
        if self._pool is None:
            self._pool = WorkerPool(self.num_workers, preload=preload_modules(tasks))
        on_done = (lambda i, r: progress.update(1)) if progress is not None else None
        step = current_step()
        results = self._pool.map(tasks, timeout=self.timeout, on_done=on_done, deadline=step.current_deadline)
        for job, r in zip(jobs, results):
            if r.status != "cancelled":
                step.record(job.scorer, r.seconds)
        return [outcome_of(r, step) for r in results]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class ThreadExecutor:
    """Scores on up to ``max_workers`` threads: for I/O-bound scorers (sandbox, HTTP judges).

    ``max_workers`` may be a callable, read before each start, so the number
    of samples in flight can follow a service's current capacity.

    A call past ``timeout`` is marked timed out and abandoned; its thread is a
    daemon and frees its slot, so a stuck request cannot stall the batch.
    """

    def __init__(self, max_workers: int | Callable[[], int], timeout: Optional[float]) -> None:
        self.max_workers = max_workers
        self.timeout = timeout

    def _cap(self) -> int:
        return self.max_workers() if callable(self.max_workers) else self.max_workers

    def run(self, jobs: Sequence[ScoreJob], progress: Optional[Progress] = None) -> list[ScoreOutcome]:
        results: list[Optional[ScoreOutcome]] = [None] * len(jobs)
        done: "queue.Queue[tuple[int, ScoreOutcome]]" = queue.Queue()
        started: dict[int, float] = {}
        next_job = 0
        remaining = len(jobs)
        step = current_step()

        def work(i: int) -> None:
            done.put((i, _call(jobs[i])))

        while remaining:
            if step.expired():
                # The jobs not started never start; the running ones are abandoned (daemon
                # threads, their requests bounded by their own timeouts) and their results dropped.
                for i in [*started, *range(next_job, len(jobs))]:
                    results[i] = step.over_budget()
                    if progress is not None:
                        progress.update(1)
                break
            while next_job < len(jobs) and len(started) < self._cap():
                started[next_job] = time.perf_counter()
                threading.Thread(target=work, args=(next_job,), daemon=True).start()
                next_job += 1
            limits = [min(started.values()) + self.timeout] if self.timeout is not None else []
            # The deadline is looked at often: it may be brought forward (a cancelled step).
            limits += [time.perf_counter() + DEADLINE_POLL_S]
            try:
                wait = max(0.0, min(limits) - time.perf_counter())
                i, outcome = done.get(timeout=wait)
            except queue.Empty:
                now = time.perf_counter()
                for i, t0 in list(started.items()):
                    if self.timeout is not None and now - t0 >= self.timeout:
                        del started[i]
                        results[i] = ScoreOutcome(TIMEOUT, error=f"timed out after {self.timeout:g}s", seconds=now - t0)
                        remaining -= 1
                        if progress is not None:
                            progress.update(1)
                continue
            if i not in started:  # finished after being declared timed out
                continue
            del started[i]
            step.record(jobs[i].scorer, outcome.seconds)
            results[i] = outcome
            remaining -= 1
            if progress is not None:
                progress.update(1)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        pass


_SCORE_BATCH_BY_REF = FunctionRef("rewardsmith.plugins.scoring", "score_batch_by_ref")


class BatchCallExecutor:
    """Scores every job with one call of a batched ``compute_score`` (verl's ``batch`` manager).

    The call runs in a worker process with a hard timeout of ``timeout``
    seconds per sample (``timeout * len(jobs)`` for the call); a timeout or a
    crash gives every sample that status, and the worker is replaced.
    """

    def __init__(self, timeout: Optional[float]) -> None:
        self.timeout = timeout
        self._pool: Optional[WorkerPool] = None

    def run(self, jobs: Sequence[ScoreJob], progress: Optional[Progress] = None) -> list[ScoreOutcome]:
        if not jobs:
            return []
        first = jobs[0]
        if any(j.fn is not first.fn or j.kwargs != first.kwargs for j in jobs):
            raise ValueError("a batched compute_score call needs one function and one set of keyword arguments")
        ref = FunctionRef.of(first.fn)
        task = Task(_SCORE_BATCH_BY_REF, (ref, [j.data_source for j in jobs], [j.solution_str for j in jobs],
                                          [j.ground_truth for j in jobs], [j.extra_info for j in jobs], first.kwargs))
        if self._pool is None:
            self._pool = WorkerPool(1, preload=preload_modules([task]))
        limit = None if self.timeout is None else self.timeout * len(jobs)
        step = current_step()
        (result,) = self._pool.map([task], timeout=limit, deadline=step.current_deadline)
        if result.status != "cancelled":
            step.record(first.scorer, result.seconds)
        if result.status == "ok":
            outcomes = result.value
        elif result.status == "cancelled":
            outcomes = [step.over_budget() for _ in jobs]
        else:
            failed = outcome_of(result)
            error = f"the batched call for {len(jobs)} samples failed: {failed.error}"
            outcomes = [ScoreOutcome(failed.status, error=error, seconds=failed.seconds / len(jobs)) for _ in jobs]
        if progress is not None:
            progress.update(len(jobs))
        return outcomes

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


# Distinct inputs a scorer must fail on, all with the same exception and none scored in between, before the
# run calls it broken: fewer is too little evidence (a GRPO group of identical responses, one row of a rare
# data_source, a few odd inputs) and costs only those samples their scores, counted.
MIN_DISTINCT_FAILURES = 3


@dataclass
class _Streak:
    error: str
    inputs: set
    samples: int


class BrokenScorerCheck:
    """Raises :class:`SystematicScorerError` when a scorer failed with the same exception on at least
    ``min_distinct`` distinct inputs and scored none in between (across batches, so a rare data_source's
    broken scorer is caught too).

    That is a broken scorer (a wrong signature, a missing module, a bad path),
    not hard samples: scoring on would train on all-fallback rewards. Only
    exceptions count (status ``error``); timeouts, crashes and an unreachable
    service follow their own policies. Samples are counted, not calls:
    identical samples scored once each count.
    """

    def __init__(self, min_distinct: int = MIN_DISTINCT_FAILURES) -> None:
        self.min_distinct = min_distinct
        self._streaks: dict[str, _Streak] = {}

    def check(self, jobs: Sequence[ScoreJob], outcomes: Sequence[ScoreOutcome], samples: Sequence[int]) -> None:
        """Record one batch's outcomes; job ``j`` stands for ``samples[j]`` identical samples."""
        by_scorer: dict[str, list[int]] = {}
        for i, job in enumerate(jobs):
            by_scorer.setdefault(job.scorer, []).append(i)
        for scorer, idx in by_scorer.items():
            errors = {outcomes[i].error if outcomes[i].status == ERROR else None for i in idx}
            streak = self._streaks.get(scorer)
            if len(errors) != 1 or None in errors:
                self._streaks.pop(scorer, None)
                continue
            error = errors.pop()
            if streak is None or streak.error != error:
                streak = self._streaks[scorer] = _Streak(error, set(), 0)
            for i in idx:
                if len(streak.inputs) < self.min_distinct:  # only the count matters past the minimum
                    streak.inputs.add(_input_key(jobs[i]))
                streak.samples += samples[i]
            if len(streak.inputs) >= self.min_distinct:
                raise SystematicScorerError(
                    f"scorer '{scorer}'{_where(jobs[idx[0]])} failed on every one of its {streak.samples} samples "
                    f"({len(streak.inputs)}+ distinct inputs) with the same error: {error}. This is a bug in the "
                    "function or its environment, not a hard sample; fix it, or set "
                    "reward_model.stop_when_all_fail=false to score such samples with reward_model.fallback_score"
                )


def _input_key(job: ScoreJob) -> str:
    return canonical_json([job.data_source, job.solution_str, job.ground_truth, job.extra_info], "a scorer's input")


def _where(job: ScoreJob) -> str:
    """`` (file.py:function)`` or `` (module:function)`` of a job's scorer, or nothing when it has no reference."""
    try:
        ref = FunctionRef.of(job.fn)
    except ValueError:
        return ""
    module = ref.module[len(FILE_PREFIX):] if ref.module.startswith(FILE_PREFIX) else ref.module
    return f" ({module}:{ref.name})"
