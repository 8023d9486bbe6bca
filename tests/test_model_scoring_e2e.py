"""The proof: a tiny reward model trained on the spot, loaded by path, and GRPO on rows that mix
arithmetic (rules) and open-ended prompts (the reward model); both kinds' rewards rise."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reward_model_mix" / "run.py"


@pytest.mark.slow
def test_mixed_rule_and_reward_model_rows_both_rise(tmp_path):
    spec = importlib.util.spec_from_file_location("reward_model_mix", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.run(tmp_path, ["trainer.total_training_steps=30"])
    assert result["rm_accuracy"] >= 0.9
    before, after, counts = result["before"], result["after"], result["counts"]
    rule_sources = [s for s in counts if s != "open/chat"]

    def rule_mean(means):
        return sum(means[f"val/reward/{s}/mean"] * counts[s] for s in rule_sources) / sum(counts[s] for s in rule_sources)

    assert rule_mean(after) > rule_mean(before), (before, after)
    assert after["val/reward/open/chat/mean"] > before["val/reward/open/chat/mean"] + 1.0, (before, after)
    # training metrics show each kind separately, and the reward model's rises too
    train = [r for r in result["records"] if "reward/local_rm/mean" in r and r["step"] > 0]
    early = sum(r["reward/local_rm/mean"] for r in train[:5]) / 5
    late = sum(r["reward/local_rm/mean"] for r in train[-5:]) / 5
    assert late > early, (early, late)
    assert all("reward/source/open/chat/local_rm/mean" in r and "reward/local_rm/missing_prompt" in r for r in train)
    assert any(k.startswith("reward/source/openai/gsm8k/") for k in train[0])
    json.dumps(result["before"])
