"""The proof: a tiny reward model trained on the spot, loaded by path, and GRPO on rows that mix
arithmetic (rules) and open-ended prompts (the reward model); both kinds' rewards rise. And a short
GRPO run whose open-ended rows are scored by `rewardsmith rm serve` and an LLM judge on loopback."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import requests
from core_helpers import tiny_overrides, write_inputs
from model_scoring_helpers import ScriptedServer, rm_serve, save_random_rm

from rewardsmith.common.config import load_config
from rewardsmith.common.rows import read_rows, write_rows
from rewardsmith.demo import read_metrics
from rewardsmith.demo.preferences import OPEN_PROMPTS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reward_model_mix" / "run.py"


def load_example():
    spec = importlib.util.spec_from_file_location("reward_model_mix", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.mark.slow
def test_mixed_rule_and_reward_model_rows_both_rise(tmp_path):
    result = load_example().run(tmp_path, ["trainer.total_training_steps=30"])
    assert result["rm_accuracy"] >= 0.9
    before, after, counts = result["before"], result["after"], result["counts"]
    rule_sources = [s for s in counts if s != "open/chat"]
    assert len(rule_sources) == 3
    for source in rule_sources:  # each rule source, not only their mean (gsm8k once fell to 0 while the others rose)
        assert after[f"val/reward/{source}/mean"] > before[f"val/reward/{source}/mean"], (source, before, after)
    assert after["val/reward/open/chat/mean"] > before["val/reward/open/chat/mean"] + 1.0, (before, after)
    # training metrics show each kind separately, and the reward model's rises too
    train = [r for r in result["records"] if "reward/local_rm/mean" in r and r["step"] > 0]
    early = sum(r["reward/local_rm/mean"] for r in train[:5]) / 5
    late = sum(r["reward/local_rm/mean"] for r in train[-5:]) / 5
    assert late > early, (early, late)
    assert all("reward/source/open/chat/local_rm/mean" in r and "reward/local_rm/missing_prompt" in r for r in train)
    assert any(k.startswith("reward/source/openai/gsm8k/") for k in train[0])
    json.dumps(result["before"])


def failing_judge(path, body, headers):
    """The judge by the row's prompt: 'Say something.' -> HTTP 500, 'Write a word.' -> no verdict,
    otherwise 'Score: N' with N the response's length mod 10."""
    text = body["messages"][-1]["content"]
    if OPEN_PROMPTS[0] in text:
        return 500, {"error": "overloaded"}
    if OPEN_PROMPTS[1] in text:
        return 200, {"choices": [{"message": {"role": "assistant", "content": "I would rather not say."}}]}
    response = text.split("Response:\n", 1)[1].rsplit("\n\nAnswer with", 1)[0]
    return 200, {"choices": [{"message": {"role": "assistant", "content": f"Score: {len(response) % 10}"}}]}


@pytest.mark.slow
def test_training_with_a_remote_reward_model_and_a_judge(tmp_path, monkeypatch):
    """GRPO steps on rule rows and open-ended rows; each open row is scored by `rewardsmith rm serve` (in its own
    process) and by a judge that fails on some rows: the failures are counted and training goes on."""
    from rewardsmith.core.schema import Config
    from rewardsmith.core.trainer import PPOTrainer

    paths = write_inputs(tmp_path, n_train=4, n_val=4)
    open_rows = load_example().open_rows
    rule_sources = {}
    for split in ("train", "val"):  # 4 rule rows + 4 open rows, one of each prompt the judge treats differently
        rule_rows = read_rows(paths[split])[:4]
        rule_sources[split] = {row["data_source"] for row in rule_rows}
        write_rows(paths[split], rule_rows + open_rows(4, split))
    rm_path = save_random_rm(tmp_path / "rm")
    monkeypatch.setenv("RK_TEST_RM_TOKEN", "s3cret")
    with rm_serve(rm_path, token="s3cret") as address, ScriptedServer(failing_judge) as judge:
        overrides = [
            *tiny_overrides(tmp_path, paths, custom_reward=False),
            "data.train_batch_size=8", "trainer.total_training_steps=2", "trainer.val_before_train=true", "trainer.test_freq=2",
            "reward_model.enable=true", "reward_model.route_by_style=true",  # the rule rows keep their rules
            f"reward_model.remote.urls=[http://{address}/get_reward]", f"reward_model.remote.tokenizer={rm_path}",
            "reward_model.remote.token_env=RK_TEST_RM_TOKEN",
            f"reward_model.judge.base_url={judge.url}/v1", "reward_model.judge.model=tiny-judge", "reward_model.judge.scale=[0, 10]",
            "reward_model.judge.max_retries=1", "reward_model.judge.backoff=0",
            "reward_model.components={'open/*': {rm: {kind: remote_rm, weight: 1}, judge: {kind: judge, weight: 1, on_failure: abstain}}}",
        ]
        trainer = PPOTrainer(load_config(Config, None, overrides))
        try:
            trainer.fit()
        finally:
            trainer.close()
        batches = requests.get(f"http://{address}/health", timeout=10).json()["batches"]
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    train = [r for r in records if "reward/mean" in r]
    val = [r for r in records if "val/reward/mean" in r]
    assert trainer.global_step == 2 and [r["step"] for r in train] == [1, 2] and [r["step"] for r in val] == [0, 2]
    for r in train:
        # 4 open rows x 2 samples: the reward model scores all; the judge fails on two prompts' samples
        # (HTTP 500, retried once; an unparsable verdict), counted per component and data_source
        assert r["reward/rm/count"] == 8.0 and r["reward/rm/failed"] == 0.0 and "reward/rm/mean" in r
        assert r["reward/judge/count"] == 8.0 and r["reward/judge/failed"] == 4.0 and 0.0 <= r["reward/judge/mean"] <= 0.9
        assert r["reward/source/open/chat/judge/failed"] == 4.0 and r["reward/unavailable"] == 2.0
        assert r["reward/judge/retries"] == 2.0 and r["reward/unscored"] == 0.0
        assert sum(r[f"reward/source/{s}/count"] for s in rule_sources["train"]) == 8.0  # the rule rows' samples, by their rules
    for r in val:
        assert "val/reward/rm/mean" in r and "val/reward/judge/mean" in r and r["val/reward/judge/failed"] == 2.0
        assert all(f"val/reward/{s}/mean" in r for s in ("open/chat", *rule_sources["val"]))
    assert batches == 4  # one request per reward call: two validations, two training steps
    asked = [b["messages"][-1]["content"] for _, b, _ in judge.requests]
    assert all(any(p in a for a in asked) for p in OPEN_PROMPTS[:4])
    assert "s3cret" not in json.dumps(records)
