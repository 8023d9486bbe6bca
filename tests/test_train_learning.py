"""Training really raises the reward: a fast run with a simple reward, and the full demo (slow)."""
import json

import pytest

from core_helpers import tiny_config

from rewardsmith.core.trainer import PPOTrainer


def mean_score(records, steps):
    return sum(records[s]["critic/score/mean"] for s in steps) / len(steps)


@pytest.mark.parametrize("estimator", ["grpo", "gae"])
def test_reward_rises_on_a_simple_reward(tmp_path, estimator):
    # The custom reward is the share of digit characters in the response; a
    # random tiny model starts near 10/107 and learns to emit digits.
    config = tiny_config(
        tmp_path, f"algorithm.adv_estimator={estimator}", "trainer.total_training_steps=30",
        "actor_rollout_ref.rollout.n=4", "data.train_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
        "actor_rollout_ref.actor.optim.lr=0.003", "critic.optim.lr=0.003", "data.val_files=[]",
    )
    trainer = PPOTrainer(config)
    try:
        trainer.fit()
    finally:
        trainer.close()
    lines = (trainer.out_dir / "metrics.jsonl").read_text().splitlines()
    records = {r["step"]: r for r in map(json.loads, lines)}
    early, late = mean_score(records, range(1, 6)), mean_score(records, range(26, 31))
    assert early < 0.3
    assert late > early + 0.3, (early, late)


@pytest.mark.slow
def test_demo_raises_held_out_reward_to_the_target(tmp_path, capsys):
    from rewardsmith.cli import main

    assert main(["demo", f"trainer.default_local_dir={tmp_path / 'demo'}"]) == 0
    out = capsys.readouterr().out
    assert "(target 0.8: reached)" in out
    for source in ("openai/gsm8k", "lighteval/MATH", "math_dapo"):
        assert source in out
    records = [json.loads(line) for line in (tmp_path / "demo" / "metrics.jsonl").read_text().splitlines()]
    vals = [r["val/reward/mean"] for r in records if "val/reward/mean" in r]
    assert vals[0] < 0.5 and vals[-1] >= 0.8
    assert (tmp_path / "demo" / "reward_curve.png").stat().st_size > 10_000
    assert (tmp_path / "demo" / "global_step_80" / "actor" / "model.safetensors").is_file()
