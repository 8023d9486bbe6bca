"""Rewards beside the log-prob passes (reward_model.launch_reward_fn_async), the step's reward
budget (reward_model.step_budget_s) and the live reward profile, on a tiny real model."""
from __future__ import annotations

import io
import json
import os
import time
import zlib

import pytest
import torch

from rewardsmith.core.trainer import PPOTrainer
from core_helpers import tiny_config, two_steps, write_reward

GRPO = ("algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.ppo_epochs=2")

# The digits reward, slowed down so that scoring outlasts the passes it overlaps.
SLOW_DIGITS = '''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    time.sleep(0.2)
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
'''

# Hangs (30 s) on about half of the responses, after writing its process id where the test can find it.
HANGING = '''
import os, time, zlib

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if zlib.crc32(solution_str.encode()) % 2 == 0:
        with open(os.path.join(PID_DIR, str(os.getpid())), "w"):
            pass
        time.sleep(30)
    return 1.0
'''


def hangs(text: str) -> bool:
    return zlib.crc32(text.encode()) % 2 == 0


def test_overlap_on_and_off_give_the_same_rewards_advantages_and_losses(tmp_path):
    reward = write_reward(tmp_path, SLOW_DIGITS)
    runs = {}
    for overlap in (True, False):
        cfg = tiny_config(tmp_path / str(overlap), reward, *GRPO, "reward_model.reward_manager=parallel",
                          "reward_model.num_workers=2", f"reward_model.launch_reward_fn_async={overlap}")
        trainer = PPOTrainer(cfg)
        try:
            assert trainer.overlap_rewards is overlap
            runs[overlap] = two_steps(trainer)
        finally:
            trainer.close()
    for on, off in zip(runs[True], runs[False]):
        torch.testing.assert_close(on["scores"], off["scores"])
        torch.testing.assert_close(on["advantages"], off["advantages"])
        torch.testing.assert_close(on["old_log_probs"], off["old_log_probs"])
        for key in ("actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "reward/mean"):
            assert on["metrics"][key] == pytest.approx(off["metrics"][key], rel=1e-5, abs=1e-7), key
        assert on["scores"].abs().sum() > 0  # the reward really scored something
        # Overlapped, the passes ran while the rewards were scored: that time is hidden, not waited.
        # (All of the reward time when the scoring ended first, else the passes' time.)
        passes, total = on["timing"]["old_log_prob"] + on["timing"]["ref"], on["timing"]["reward_total"]
        # The join's wake-up counts as waiting: allow it 10 ms (the tiny passes here take ~3 ms on a loaded host).
        assert total - on["timing"]["reward_wait"] >= 0.9 * min(passes, total) - 0.01 and min(passes, total) > 0
        # Sequential, the step waits for all of it.
        assert off["timing"]["reward_wait"] == pytest.approx(off["timing"]["reward_total"])


@pytest.mark.parametrize("manager, extra, expected", [
    ("naive", (), True),  # one worker process, under reward_model.timeout
    ("naive", ("reward_model.timeout=null",), False),  # in the trainer's process
    ("parallel", (), True),
    ("prime", (), True),
    ("dapo", ("reward_model.num_workers=2",), True),
    ("dapo", (), True),
    ("dapo", ("reward_model.timeout=null",), False),
    ("sandbox", (), True),
    ("parallel", ("reward_model.launch_reward_fn_async=false",), False),
    ("naive", ("reward_model.launch_reward_fn_async=true",), True),
])
def test_overlap_default_follows_where_the_manager_scores(tmp_path, manager, extra, expected):
    trainer = PPOTrainer(tiny_config(tmp_path, f"reward_model.reward_manager={manager}", *extra))
    try:
        assert trainer.overlap_rewards is expected
    finally:
        trainer.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed worker may linger as a zombie of this process until reaped; that is not running.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("overlap", [True, False])
def test_budget_runs_out_mid_step_in_the_process_pool(tmp_path, overlap):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    reward = write_reward(tmp_path, f"PID_DIR = {str(pid_dir)!r}\n" + HANGING)
    cfg = tiny_config(tmp_path, reward, *GRPO, "reward_model.reward_manager=parallel", "reward_model.num_workers=2",
                      "reward_model.timeout=60", "reward_model.step_budget_s=3", "data.train_batch_size=8",
                      "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                      f"reward_model.launch_reward_fn_async={overlap}")
    trainer = PPOTrainer(cfg)
    try:
        trainer.global_step = 1
        timing: dict[str, float] = {}
        start = time.perf_counter()
        batch, metrics = trainer.make_experience(next(trainer.prompt_batches), timing)
        assert time.perf_counter() - start < 20  # the budget, not the 30 s hangs, ended the step
        slow = torch.tensor([hangs(t) for t in trainer.decode_responses(batch)])
        assert slow.any() and not slow.all(), "the seed must give hanging and quick responses"
        # Every hanging sample is over budget and unscored; the quick ones that ran scored. Two workers,
        # each stuck on a hanging sample, stop the queue behind them: those quick samples are over budget too.
        assert batch["unscored"][slow].all()
        assert metrics["reward/over_budget"] == float(batch["unscored"].sum())
        assert metrics["reward/unscored"] == float(batch["unscored"].sum())
        assert torch.count_nonzero(batch["advantages"][batch["unscored"]]) == 0
        assert timing["reward_total"] == pytest.approx(3, abs=1.5)
        pids = [int(p.name) for p in pid_dir.iterdir()]
        assert pids, "a hanging scorer must have started"
        deadline = time.time() + 5
        while any(alive(p) for p in pids) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(alive(p) for p in pids), "the workers stuck past the budget must be killed"
        # The pool is whole again for the next step.
        trainer.global_step = 2
        batch, metrics = trainer.make_experience(next(trainer.prompt_batches), {})
        assert metrics["reward/over_budget"] == float(batch["unscored"].sum())
    finally:
        trainer.close()


def test_profile_is_in_every_sink_and_the_console_names_the_slow_scorer(tmp_path):
    reward = write_reward(tmp_path, SLOW_DIGITS)
    stream = io.StringIO()
    cfg = tiny_config(tmp_path, reward, *GRPO, "reward_model.launch_reward_fn_async=false", "trainer.logger=[jsonl,console]")
    trainer = PPOTrainer(cfg, stream=stream)
    try:
        last = trainer.fit()
    finally:
        trainer.close()
    latency = [k for k in last if k.endswith("/latency_p99_ms")]
    assert len(latency) == 1, latency
    scorer = latency[0][len("reward/"):-len("/latency_p99_ms")]
    assert last[f"reward/{scorer}/calls"] >= 1
    assert 200 <= last[f"reward/{scorer}/latency_p50_ms"] <= last[f"reward/{scorer}/latency_p99_ms"] < 2000
    assert last["timing_s/reward_wait"] == pytest.approx(last["timing_s/reward_total"])
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    for row in rows:
        for key in ("timing_s/reward_wait", "timing_s/reward_total", f"reward/{scorer}/latency_p99_ms"):
            assert key in json.dumps(row), key
    console = stream.getvalue()
    assert f"slowest scorer: {scorer}" in console
    assert "timing_s/reward_wait=" in console


def test_chunks_handed_over_while_a_call_runs_are_scored_as_one_call_with_their_requests_in_flight_together(make_config):
    """Streamed prompt groups that queue behind a running judge call go out together: 8 requests in flight
    (reward_model.judge.max_concurrent), not one group's 4 at a time; per sample, the scores of one call."""
    import threading

    from model_scoring_helpers import ScriptedServer

    from rewardsmith.core.reward_overlap import PendingReward
    from rewardsmith.plugins.batch import RewardBatch
    from rewardsmith.plugins.factory import build_reward_manager

    cond, release = threading.Condition(), threading.Event()
    in_flight, peak, seen = [0], [0], [0]

    def reply(path, body, headers):
        with cond:
            seen[0] += 1
            first_call = seen[0] <= 4
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            cond.notify_all()
            if first_call:  # the first group's call holds until every group was handed over
                cond.wait_for(release.is_set, timeout=10)
            else:  # later requests hold until 8 are in flight: one group's call alone never gets there
                cond.wait_for(lambda: peak[0] >= 8, timeout=3)
            in_flight[0] -= 1
        text = body["messages"][-1]["content"].split("Response:\n", 1)[-1]
        return 200, {"choices": [{"message": {"role": "assistant", "content": f"Score: {len(text) % 10}"}}]}

    def group(g: int) -> RewardBatch:
        texts = [f"answer {g}-{i}" + "x" * (g + i) for i in range(4)]
        return RewardBatch(["chat"] * 4, texts, [None] * 4, styles=["model"] * 4, prompts=[f"question {g}"] * 4)

    with ScriptedServer(reply) as server:
        cfg = make_config("reward_model.enable=true", f"reward_model.judge.base_url={server.url}/v1",
                          "reward_model.judge.model=j", "reward_model.judge.scale=[0, 10]",
                          "reward_model.judge.max_concurrent=8", "reward_model.judge.cache_size=0")
        with build_reward_manager(cfg.reward_settings()) as manager:
            pending = PendingReward.open(manager, overlap=True, budget_s=None)
            pending.submit(group(0))
            with cond:
                assert cond.wait_for(lambda: in_flight[0] == 4, timeout=10)
            for g in range(1, 8):
                pending.submit(group(g))
            with cond:
                release.set()
                cond.notify_all()
            streamed = pending.join({})
            whole = manager(RewardBatch.concat([group(g) for g in range(8)]))
    # The first group's call ran alone; the seven groups queued behind it went as one call.
    assert [len(r.scores) for r in pending.results] == [4, 28]
    assert peak[0] == 8
    assert streamed.scores.tolist() == whole.scores.tolist()
    assert [len(r.scores) for r in pending.scored()] == [4] * 8
    assert torch.cat([r.scores for r in pending.scored()]).tolist() == whole.scores.tolist()


def test_the_default_stops_overlapping_after_a_step_whose_rewards_were_cheap_and_resumes_when_they_are_not(tmp_path):
    """launch_reward_fn_async: null overlaps a worker-process manager only while its rewards take at least a
    tenth of the step (the reward thread's Python costs the passes more than it hides otherwise)."""
    flag = tmp_path / "slow"
    reward = write_reward(tmp_path, f"import os, time\nFLAG = {str(flag)!r}\n" + '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if os.path.exists(FLAG):
        time.sleep(0.1)
    return float(len(solution_str) % 2)
''')
    trainer = PPOTrainer(tiny_config(tmp_path, reward, *GRPO, "reward_model.reward_manager=naive"))
    model = trainer.actor.rollout.model
    forward = model.forward

    def slow_forward(*args, **kwargs):
        # The tiny model steps in about a millisecond, so the reward call's fixed cost (handing samples to the
        # worker process) came to 10-11% of a step on loaded cores: a real model's forward keeps cheap rewards
        # well under a tenth.
        time.sleep(0.02)
        return forward(*args, **kwargs)

    model.forward = slow_forward
    overlapped: list[bool] = []
    open_scoring = trainer.open_scoring

    def recorded(overlap):
        overlapped.append(overlap)
        return open_scoring(overlap)

    trainer.open_scoring = recorded
    shares = []
    try:
        batches = iter(trainer.loader)
        for step in range(1, 6):
            if step == 5:
                flag.touch()  # each sample now costs 100 ms: far more than a tenth of a tiny step
            trainer.global_step = step
            metrics = trainer.train_step(next(batches))
            shares.append(metrics["timing_s/reward_total"] / metrics["timing_s/step"])
        trainer.global_step = 6
        trainer.train_step(next(batches))
    finally:
        trainer.close()
    # The first step overlaps (no step before it); each later one does when the step before it spent at least
    # a tenth of its time on rewards.
    assert overlapped == [True] + [share >= 0.1 for share in shares], (overlapped, shares)
    # Cheap rewards (once the worker process runs) stopped the overlap; the slow step brought it back.
    assert False in overlapped[2:5] and overlapped[5] is True, (overlapped, shares)
