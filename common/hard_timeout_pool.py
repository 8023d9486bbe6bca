"""A process pool with a hard per-task timeout.

Unlike ``concurrent.futures``, a task that hangs (even in C code, where
signal-based timeouts never fire) or kills its process costs only that task:
the worker is killed or reaped and a fresh one takes its place.

Workers are plain ``python -c`` subprocesses talking over a socket pair, not
``multiprocessing`` children: those re-import the caller's ``__main__``, which
breaks every user script without an ``if __name__ == "__main__"`` guard.
"""
from __future__ import annotations

import os
import signal
import socket
from collections import deque
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Iterable, Optional, Sequence

from rewardsmith.common.function_refs import FunctionRef

_READY = "ready"  # a worker's first message: imports done, the task clock may start

# Tasks queued ahead at each worker (hides the parent round trip between tasks).
PIPELINE = 2

# With a deadline that may move (a cancelled step), the pool looks at it this often.
DEADLINE_POLL_S = 0.2

# True inside a pool worker whose current task runs under a hard timeout, so
# nested guards (run_with_hard_timeout) can run inline instead of forking again.
_GUARDED = False


@dataclass(frozen=True)
class Task:
    """One call ``ref(*args, **kwargs)`` to run in a worker."""

    ref: FunctionRef
    args: tuple = ()
    kwargs: Optional[dict] = None


@dataclass
class TaskResult:
    """What became of a task: ``status`` is ``ok``, ``error``, ``timeout``, ``crash`` or ``cancelled``
    (not finished by the map's ``deadline``)."""

    status: str
    value: Any = None
    error: Optional[str] = None
    exception: Optional[BaseException] = None
    seconds: float = 0.0


def _worker_entry(fd: int, preload: list[str], path: Optional[list[str]] = None) -> None:
    """Body of a worker subprocess: take the parent's ``sys.path``, import ``preload``, then serve tasks on ``fd``."""
    import importlib

    if path is not None:
        sys.path[:] = path + [p for p in sys.path if p not in path]
    conn = Connection(fd)
    for module in preload:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - the task that needs it reports the error
            pass
    try:
        conn.send(_READY)
    except OSError:  # the parent went away while we were importing
        return
    _serve(conn)


def _serve(conn: Connection) -> None:
    global _GUARDED
    cache: dict[FunctionRef, Callable[..., Any]] = {}
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        task_id, task, guarded = msg
        _GUARDED = guarded
        try:
            fn = cache.get(task.ref)
            if fn is None:
                fn = cache[task.ref] = task.ref.load()
            reply = (task_id, True, fn(*task.args, **(task.kwargs or {})), None)
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            summary = f"{type(exc).__name__}: {exc}"
            tb = traceback.format_exc(limit=-3)
            reply = (task_id, False, (summary, tb), exc)
        try:
            conn.send(reply)
        except Exception as exc:  # unpicklable value or exception
            conn.send((task_id, False, (f"result of {task.ref.module}:{task.ref.name} cannot be sent back: {exc}", ""), None))


class _Worker:
    def __init__(self, preload: list[str]) -> None:
        parent, child = socket.socketpair()
        # Workers import as the parent does (its launch directory, a test's site dir, ...).
        path = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
        code = (
            "import sys; from rewardsmith.common.hard_timeout_pool import _worker_entry; "
            f"_worker_entry({child.fileno()}, {preload!r}, {path!r})"
        )
        # A process group of its own: a Ctrl-C at the terminal reaches the parent, which stops
        # its workers, not the workers themselves (a KeyboardInterrupt traceback from each).
        self.proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=[child.fileno()], stdin=subprocess.DEVNULL,
                                     process_group=0)
        child.close()
        self.conn = Connection(parent.detach())
        self.inflight: deque[int] = deque()  # task indices sent, oldest (running) first
        self.started = 0.0  # when the head of `inflight` started running
        self.ready = False  # start-up imports can take seconds: not counted against a task

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            # The whole group: what a hung scorer started (a subprocess) goes with it.
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
            self.proc.wait(2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


class WorkerPool:
    """``size`` long-lived worker processes running :class:`Task` s with a hard timeout."""

    def __init__(self, size: int, preload: Iterable[str] = ()) -> None:
        if size < 1:
            raise ValueError(f"WorkerPool size must be >= 1, got {size}")
        self._preload = list(preload)
        self.size = size
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self.replaced = 0

    def _spawn(self) -> _Worker:
        return _Worker(self._preload)

    def map(
        self,
        tasks: Sequence[Task],
        timeout: Optional[float] = None,
        on_done: Optional[Callable[[int, TaskResult], None]] = None,
        deadline: Optional[Callable[[], Optional[float]]] = None,
    ) -> list[TaskResult]:
        """Run ``tasks``; each gets at most ``timeout`` seconds of wall clock (None: no limit).

        ``on_done(index, result)`` is called in the parent as each task ends.
        ``deadline()`` gives a ``time.perf_counter()`` time (or None) and is read
        at least every ``DEADLINE_POLL_S``, so it may be brought forward while the
        map runs. At that time the tasks not finished are ``cancelled``: queued
        ones never start, and the workers running one are killed (fresh ones
        replace them at the next map).
        """
        with self._lock:
            return self._map(tasks, timeout, on_done, deadline)

    def _map(self, tasks, timeout, on_done, deadline=None) -> list[TaskResult]:
        def expired() -> bool:
            at = deadline() if deadline is not None else None
            return at is not None and time.perf_counter() >= at

        if expired():
            return [TaskResult("cancelled", error="cancelled at the deadline") for _ in tasks]
        results: list[Optional[TaskResult]] = [None] * len(tasks)
        # A worker may have died while idle (OOM killer, kill -9 from outside), or
        # still hold tasks of a call that an exception (Ctrl-C, a raising on_done)
        # stopped: their late replies would be read as this call's.
        for i, worker in enumerate(self._workers):
            if not worker.alive() or worker.inflight:
                worker.kill()
                self._workers[i] = self._spawn()
        while len(self._workers) < min(self.size, max(len(tasks), 1)):
            self._workers.append(self._spawn())
        pending = deque(range(len(tasks)))

        def finish(index: int, result: TaskResult) -> None:
            results[index] = result
            if on_done is not None:
                on_done(index, result)

        def feed(worker: _Worker) -> None:
            # Keep PIPELINE tasks queued at each worker so it never idles waiting
            # for the parent; the head of the queue is the task running now.
            while pending and len(worker.inflight) < PIPELINE:
                index = pending.popleft()
                try:
                    message = ForkingPickler.dumps((index, tasks[index], timeout is not None))
                except Exception as exc:  # the task itself cannot be pickled: its own error
                    finish(index, TaskResult("error", error=f"task cannot be sent to a worker: {exc}"))
                    continue
                try:
                    worker.conn.send_bytes(message)
                except OSError:
                    # The worker died before we saw its EOF, so this task never
                    # reached it. With a task running, the EOF (read below)
                    # charges that task; with none, nothing will, so it is
                    # replaced now. One that died starting up costs this task,
                    # so a worker that cannot start is not respawned forever.
                    if worker.ready or worker.inflight:
                        pending.appendleft(index)
                    else:
                        finish(index, TaskResult(
                            "crash", error=f"worker process exited while starting (exit code {worker.proc.wait()})"))
                    if not worker.inflight:
                        replace(worker)
                    return
                if not worker.inflight:
                    worker.started = time.perf_counter()
                worker.inflight.append(index)

        def replace(worker: _Worker) -> None:
            worker.kill()
            self._workers[self._workers.index(worker)] = fresh = self._spawn()
            self.replaced += 1
            feed(fresh)

        def fail_head(worker: _Worker, status: str, error: str) -> None:
            # The running task failed and took the worker with it; the tasks
            # queued behind it never started, so they go back to the queue.
            head = worker.inflight.popleft()
            finish(head, TaskResult(status, error=error, seconds=time.perf_counter() - worker.started))
            pending.extendleft(reversed(worker.inflight))
            replace(worker)

        def cancel_rest() -> None:
            now = time.perf_counter()
            for worker in self._workers:
                if worker.inflight:
                    worker.kill()  # its late result is never read
                    head = worker.inflight.popleft()
                    finish(head, TaskResult("cancelled", error="cancelled at the deadline", seconds=now - worker.started))
                    pending.extendleft(reversed(worker.inflight))
                    worker.inflight.clear()
            while pending:
                finish(pending.popleft(), TaskResult("cancelled", error="cancelled at the deadline"))

        for worker in self._workers:
            feed(worker)
        while any(w.inflight for w in self._workers):
            if expired():
                cancel_rest()
                break
            busy = {w.conn: w for w in self._workers if w.inflight}
            running = [w.started for w in busy.values() if w.ready]
            limits = [min(running) + timeout] if timeout is not None and running else []
            limits += [time.perf_counter() + DEADLINE_POLL_S] if deadline is not None else []
            wait_for = max(0.0, min(limits) - time.perf_counter()) if limits else None
            # A dead worker's socket reads EOF, so the connections alone tell us of crashes.
            ready = wait(list(busy), timeout=wait_for)
            for conn, worker in busy.items():
                if conn in ready:
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        fail_head(worker, "crash", f"worker process died (exit code {worker.proc.wait()})")
                        continue
                    now = time.perf_counter()
                    if msg == _READY:
                        worker.ready, worker.started = True, now
                        continue
                    task_id, ok, payload, exc = msg
                    elapsed = now - worker.started
                    worker.inflight.popleft()
                    worker.started = now
                    if ok:
                        finish(task_id, TaskResult("ok", value=payload, seconds=elapsed))
                    else:
                        finish(task_id, TaskResult("error", error=payload[0], exception=exc, seconds=elapsed))
                    feed(worker)
                elif worker.ready and timeout is not None and time.perf_counter() - worker.started >= timeout:
                    fail_head(worker, "timeout", f"timed out after {timeout:g}s")
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Stop every worker."""
        with self._lock:
            for worker in self._workers:
                if worker.inflight:  # still running a task of a map stopped by Ctrl-C: not waited for
                    worker.kill()
                else:
                    worker.stop()
            self._workers.clear()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_guard: Optional[tuple[int, WorkerPool]] = None  # (owning pid, pool): a forked child needs its own
_guard_lock = threading.Lock()


def run_with_hard_timeout(fn: Callable[..., Any], args: tuple, timeout: float) -> Any:
    """Run module-level ``fn(*args)`` in a guard subprocess that is killed after ``timeout`` seconds.

    Raises ``TimeoutError`` on timeout and re-raises the function's own
    exception. Inside a pool worker that already runs under a hard timeout the
    call runs inline, since the outer guard will stop it.
    """
    global _guard
    if _GUARDED:
        return fn(*args)
    ref = FunctionRef.of(fn)
    with _guard_lock:
        if _guard is None or _guard[0] != os.getpid():
            _guard = (os.getpid(), WorkerPool(1, preload=[ref.module]))
        pool = _guard[1]
    result = pool.map([Task(ref, args)], timeout=timeout)[0]
    if result.status == "ok":
        return result.value
    if result.status == "timeout":
        raise TimeoutError(f"{ref.module}:{ref.name} {result.error}")
    if result.exception is not None:
        raise result.exception
    raise RuntimeError(f"{ref.module}:{ref.name}: {result.error}")

