"""Executors in isolation: async scorers, and the thread executor's timeout."""
from __future__ import annotations

import asyncio
import io
import time

from tqdm import tqdm

from rewardsmith.plugins.executors import ScoreJob, SerialExecutor, ThreadExecutor


async def async_scorer(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(0.01)
    return {"score": float(solution_str == ground_truth), "checked": True}


def slow_scorer(data_source, solution_str, ground_truth, extra_info=None):
    time.sleep(float(solution_str))
    return 1.0


def job(fn, solution, truth="1"):
    return ScoreJob("s", fn, "src", solution, truth, None, {})


def test_async_scorers_are_awaited():
    out = SerialExecutor().run([job(async_scorer, "1"), job(async_scorer, "2")])
    assert [(o.status, o.score, o.extras) for o in out] == [("ok", 1.0, {"checked": True}), ("ok", 0.0, {"checked": True})]


def test_thread_executor_abandons_hung_calls():
    executor = ThreadExecutor(max_workers=8, timeout=1.0)
    with tqdm(file=io.StringIO()) as bar:
        out = executor.run([job(slow_scorer, "0.3") for _ in range(8)] + [job(slow_scorer, "30")], bar)
        assert bar.n == 9
    assert [o.status for o in out] == ["ok"] * 8 + ["timeout"]
    assert "timed out after 1s" in out[-1].error


def test_thread_executor_runs_async_scorers():
    out = ThreadExecutor(max_workers=4, timeout=5).run([job(async_scorer, "1")] * 4)
    assert [o.score for o in out] == [1.0] * 4


def guarded_scorer(data_source, solution_str, ground_truth, extra_info=None):
    raise TimeoutError("judge ran past 1s")


def test_a_scorers_own_timeout_counts_as_timeout():
    (out,) = SerialExecutor().run([job(guarded_scorer, "x")])
    assert out.status == "timeout" and "judge ran past 1s" in out.error
