"""The demo's report (the before/after table and the reward plot), and a shortened run of its
pipeline (slow; the full run is in test_train_learning.py)."""
import io

import pytest

from rewardsmith.demo import before_after, format_table, plot_rewards, read_metrics, run_demo

RECORDS = [
    {"step": 0, "val/reward/mean": 0.1, "val/reward/openai/gsm8k/mean": 0.2, "val/reward/math_dapo/mean": -0.5},
    {"step": 1, "critic/score/mean": 0.3},
    {"step": 2, "critic/score/mean": 0.6, "val/reward/mean": 0.9, "val/reward/openai/gsm8k/mean": 1.0, "val/reward/math_dapo/mean": 0.8,
     # the reward managers' own means: not rows of the table
     "val/reward/gsm8k/mean": 1.0, "val/reward/source/math_dapo/mean": 0.8},
]


def test_before_after_table():
    before, after = before_after(RECORDS)
    table = format_table(before, after, {"openai/gsm8k": 3, "math_dapo": 2}).splitlines()
    assert table[0].split() == ["data_source", "rows", "before", "after"]
    assert table[1].split() == ["math_dapo", "2", "-0.500", "0.800"]
    assert table[2].split() == ["openai/gsm8k", "3", "0.200", "1.000"]
    assert table[3].split() == ["all", "5", "0.100", "0.900"]
    assert len(table) == 4


def test_reward_plot_is_a_png(tmp_path):
    path = plot_rewards(RECORDS, tmp_path / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_a_shortened_demo_runs_end_to_end_with_the_users_overrides(tmp_path):
    # The full demo (and its 0.8 target) is the slow test in test_train_learning.py;
    # this runs the same pipeline for two steps, with the user's overrides winning.
    small = "{model_type: qwen2, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 2, max_position_embeddings: 128, tie_word_embeddings: true}"
    result = run_demo([
        f"trainer.default_local_dir={tmp_path / 'demo'}", "trainer.total_training_steps=2", "trainer.test_freq=-1",
        "trainer.save_freq=-1", "trainer.progress_bar=false", "trainer.logger=[jsonl]", "trainer.cpu_threads=1",
        f"actor_rollout_ref.model.config={small}", "sft.total_epochs=1", "data.max_response_length=3",
        "data.train_batch_size=4", "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    ], stream=io.StringIO())
    assert result["out_dir"] == tmp_path / "demo"
    records = read_metrics(result["metrics"])
    assert [r["step"] for r in records] == [0, 1, 2]  # validation before training, two steps (the last validates)
    assert all(r["response_length/max"] <= 3 for r in records[1:])
    assert records[1]["perf/total_num_tokens"] > 0 and "actor/pg_loss" in records[1]
    lines = result["table"].splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["lighteval/MATH", "math_dapo", "openai/gsm8k", "all"]
    assert lines[-1].split()[1] == "128"  # every held-out row
    assert result["after"]["val/reward/mean"] == records[-1]["val/reward/mean"]
    assert (tmp_path / "demo" / "sft_model" / "config.json").is_file()
    assert result["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
