"""The demo's report: the before/after table and the reward plot (the full run is a slow test)."""
from rewardkit.demo import DEMO_OVERRIDES, before_after, demo_config, format_table, plot_rewards

RECORDS = [
    {"step": 0, "val/reward/mean": 0.1, "val/reward/openai/gsm8k/mean": 0.2, "val/reward/math_dapo/mean": -0.5},
    {"step": 1, "critic/score/mean": 0.3},
    {"step": 2, "critic/score/mean": 0.6, "val/reward/mean": 0.9, "val/reward/openai/gsm8k/mean": 1.0, "val/reward/math_dapo/mean": 0.8},
]


def test_before_after_table():
    before, after = before_after(RECORDS)
    table = format_table(before, after, {"openai/gsm8k": 3, "math_dapo": 2}).splitlines()
    assert table[0].split() == ["data_source", "rows", "before", "after"]
    assert table[1].split() == ["math_dapo", "2", "-0.500", "0.800"]
    assert table[2].split() == ["openai/gsm8k", "3", "0.200", "1.000"]
    assert table[3].split() == ["all", "5", "0.100", "0.900"]


def test_reward_plot_is_a_png(tmp_path):
    path = plot_rewards(RECORDS, tmp_path / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_settings_and_user_overrides():
    config = demo_config(["trainer.total_training_steps=5"])
    assert config.algorithm.adv_estimator == "grpo" and config.actor_rollout_ref.rollout.n == 8
    assert config.trainer.total_training_steps == 5
    assert all("=" in item for item in DEMO_OVERRIDES)
