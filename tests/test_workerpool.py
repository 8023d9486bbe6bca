"""The process pool behind `parallel`: hard timeouts, crash replacement, and the guard for single calls."""
from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time

import pytest

from rewardsmith.common.function_refs import FunctionRef
from rewardsmith.common.hard_timeout_pool import Task, WorkerPool, run_with_hard_timeout

SLEEP = FunctionRef("time", "sleep")
EXIT = FunctionRef("os", "_exit")
SQRT = FunctionRef("math", "sqrt")


def test_timeouts_crashes_and_errors_cost_one_task_each():
    with WorkerPool(2) as pool:
        tasks = [Task(SQRT, (4,))] * 6 + [Task(SLEEP, (30,)), Task(EXIT, (3,)), Task(SQRT, (-1,))] + [Task(SQRT, (9,))] * 6
        start = time.perf_counter()
        results = pool.map(tasks, timeout=1.0)
        assert time.perf_counter() - start < 20
        assert [r.status for r in results] == ["ok"] * 6 + ["timeout", "crash", "error"] + ["ok"] * 6
        assert [r.value for r in results[-6:]] == [3.0] * 6
        assert "exit code 3" in results[7].error
        assert results[8].error == "ValueError: math domain error"
        assert pool.replaced == 2
        # the replacements serve the next call
        assert [r.value for r in pool.map([Task(SQRT, (16,))] * 4)] == [4.0] * 4


def test_a_task_sent_to_a_worker_that_just_died_runs_elsewhere():
    # The worker runs EXIT right after answering task 0; the parent, held up in
    # on_done, only then sends it the next task, into a dead socket. That task
    # never ran: it must run on the replacement, not be reported as an error.
    with WorkerPool(1) as pool:
        tasks = [Task(SQRT, (4,)), Task(EXIT, (3,)), Task(SQRT, (9,)), Task(SQRT, (16,))]
        results = pool.map(tasks, timeout=10.0, on_done=lambda i, r: time.sleep(0.5) if i == 0 else None)
    assert [r.status for r in results] == ["ok", "crash", "ok", "ok"], [r.error for r in results]
    assert [r.value for r in results[2:]] == [3.0, 4.0]
    assert pool.replaced == 1


def test_progress_callback_sees_every_task():
    seen = []
    with WorkerPool(2) as pool:
        pool.map([Task(SQRT, (i,)) for i in range(10)], on_done=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(10))


def test_run_with_hard_timeout():
    assert run_with_hard_timeout(math.sqrt, (25,), 5) == 5.0
    with pytest.raises(TimeoutError, match="timed out after 0.5s"):
        run_with_hard_timeout(time.sleep, (30,), 0.5)
    with pytest.raises(ValueError, match="math domain error"):
        run_with_hard_timeout(math.sqrt, (-1,), 5)


def test_script_without_main_guard_can_use_the_pool(tmp_path):
    # multiprocessing's spawn/forkserver would re-run this script in every worker.
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        from rewardsmith.common.function_refs import FunctionRef
        from rewardsmith.common.hard_timeout_pool import Task, WorkerPool
        pool = WorkerPool(2)
        print(sum(r.value for r in pool.map([Task(FunctionRef("math", "sqrt"), (4,))] * 4)))
        pool.close()
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "8.0"


def test_function_that_cannot_be_reimported_is_rejected():
    with pytest.raises(ValueError, match="cannot be re-imported"):
        FunctionRef.of(lambda: 0)


def test_a_map_stopped_by_an_exception_leaves_no_reply_for_the_next_map():
    # The first map stops (its on_done raises) while tasks are still queued at
    # the worker; their late replies must not be read as the next map's.
    class Stop(Exception):
        pass

    def stop(index, result):
        raise Stop

    with WorkerPool(1) as pool:
        with pytest.raises(Stop):
            pool.map([Task(SQRT, (4,)), Task(SLEEP, (0.3,)), Task(SQRT, (100,))], on_done=stop)
        seen = []
        results = pool.map([Task(SQRT, (9,))], timeout=10.0, on_done=lambda i, r: seen.append((i, r.value)))
    assert [(r.status, r.value) for r in results] == [("ok", 3.0)]
    assert seen == [(0, 3.0)]
