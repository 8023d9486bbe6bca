"""Reward fan-out on a real local Ray cluster: the same failure semantics as the local pool."""
from __future__ import annotations

import shutil
import time

import pytest

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'rewardsmith[ray]')")

pytestmark = pytest.mark.slow

FAULTY = '''
import ctypes, time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if solution_str == "raise":
        raise ValueError("scorer bug")
    if solution_str == "hang":
        time.sleep(120)
    if solution_str == "segfault":
        ctypes.string_at(0)
    return float(solution_str == ground_truth)
'''


@pytest.fixture(scope="module")
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def batch_of(solutions):
    return RewardBatch(["src/a"] * len(solutions), list(solutions), ["42"] * len(solutions))


def test_faulty_custom_scorer_costs_one_sample_each_on_ray_workers(local_cluster, make_config, tmp_path):
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "faulty_reward.py").write_text(FAULTY)
    cfg = make_config(f"custom_reward_function.path={job_dir / 'faulty_reward.py'}", "trainer.backend=ray",
                      "reward_model.reward_manager=parallel", "reward_model.num_workers=2",
                      "reward_model.timeout=3", "reward_model.fallback_score=-1")
    with build_reward_manager(cfg.reward_settings()) as manager:
        first = manager(batch_of(["42", "7"]))
        assert first.scores.tolist() == [1.0, 0.0]
        # From here on only the copy shipped with the job exists: workers that
        # the faults below replace must load the scorer from it.
        shutil.rmtree(job_dir)
        out = manager(batch_of(["42", "raise", "hang", "segfault", "7", "42 ", "42"]))
    statuses = out.extra_info["reward_status"]
    assert statuses == ["ok", "error", "timeout", "crash", "ok", "ok", "ok"]
    assert out.scores.tolist() == [1.0, -1.0, -1.0, -1.0, 0.0, 0.0, 1.0]
    assert "scorer bug" in out.extra_info["reward_error"][1]
    assert out.metrics["reward/errors"] == 2 and out.metrics["reward/timeouts"] == 1


def _wait_until_dead(actor, timeout_s: float = 60.0) -> None:
    """``ray.kill`` only sends the kill: on loaded cores the actor may still answer the next call (a newcomer run
    saw 'ok' where 'crash' was due), so wait until a call fails as a dead actor's does."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=10)
        except ray.exceptions.RayActorError:
            return
        except ray.exceptions.GetTimeoutError:
            continue  # a slow answer is no answer yet: ask again
        time.sleep(0.1)
    raise AssertionError(f"the killed reward actor still answers after {timeout_s} s")


def test_a_dead_reward_actor_is_reported_by_rank_and_replaced(local_cluster, make_config):
    cfg = make_config("trainer.backend=ray", "reward_model.reward_manager=parallel", "reward_model.num_workers=1",
                      "reward_model.timeout=30")
    manager = build_reward_manager(cfg.reward_settings())
    try:
        source = ["openai/gsm8k"]
        good = RewardBatch(source, ["#### 4"], ["4"])
        assert manager(good).scores.tolist() == [1.0]
        executor = manager.executor
        ray.kill(executor._actors[0])
        _wait_until_dead(executor._actors[0])
        out = manager(good)
        assert out.extra_info["reward_status"] == ["crash"]
        assert "reward worker rank 0 died" in out.extra_info["reward_error"][0]
        assert executor.replaced == 1
        assert manager(good).scores.tolist() == [1.0]
    finally:
        manager.close()
