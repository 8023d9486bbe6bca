"""rewardsmith and TRL both ways: distinct reward-function names in a real GRPOTrainer,
and TRL reward functions registered as rewardsmith scorers."""
from __future__ import annotations

import inspect

import pytest
import torch

import rewardsmith
from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager

from core_helpers import TINY_MODEL

# TRL's own shapes (trl.rewards): conversational completions, `solution` column, None = cannot judge.
TRL_PLUGIN = '''
import re
from rewardsmith import hookimpl, scorer_from_trl

def accuracy_reward(completions, solution, **kwargs):
    contents = [completion[0]["content"] for completion in completions]
    rewards = []
    for content, sol in zip(contents, solution):
        if not sol.strip():
            rewards.append(None)
            continue
        found = re.findall(r"\\\\boxed\\{([^}]*)\\}", content)
        rewards.append(float(bool(found) and found[-1].strip() == sol.strip()))
    return rewards

def think_format_reward(completions, **kwargs):
    pattern = r"^<think>(?!.*<think>)(.*?)</think>.*$"
    return [1.0 if re.match(pattern, c[0]["content"], re.DOTALL) else 0.0 for c in completions]

def reward_len(completions, **kwargs):
    return [-abs(5 - len(c)) for c in completions]

@hookimpl
def register_scorers(register):
    register("trl_accuracy", scorer_from_trl(accuracy_reward), data_sources=["trl/math"])
    register("trl_think", scorer_from_trl(think_format_reward), data_sources=["trl/think"])
    register("trl_len", scorer_from_trl(reward_len, conversational=False), data_sources=["trl/len"])
'''


@pytest.mark.parametrize("manager", ["naive", pytest.param("parallel", marks=pytest.mark.slow)])
def test_trl_reward_functions_run_as_scorers(installed_plugins, manager):
    installed_plugins({"fakeplug-trl": ("fakeplug_trl", TRL_PLUGIN)})
    settings = load_config(Config, None, [f"reward_model.reward_manager={manager}", "reward_model.num_workers=2"])
    batch = RewardBatch(
        ["trl/math", "trl/math", "trl/math", "trl/think", "trl/think", "trl/len"],
        ["so \\boxed{4}", "\\boxed{5}", "\\boxed{4}", "<think>hm</think> 4", "4", "abcdefg"],
        ["4", "4", " ", None, None, None],
    )
    with build_reward_manager(settings.reward_settings()) as m:
        out = m(batch)
    assert out.scores.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, -2.0]
    assert out.extra_info["reward_status"] == ["ok", "ok", "abstain", "ok", "ok", "ok"]
    assert out.metrics["reward/trl_accuracy/mean"] == 0.5 and out.metrics["reward/trl_think/mean"] == 0.5


def test_trl_reward_funcs_get_distinct_descriptive_names(tmp_path):
    path = tmp_path / "digits.py"
    path.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n")
    funcs = [rewardsmith.trl_reward_func(), rewardsmith.trl_reward_func(), rewardsmith.trl_reward_func("gsm8k"),
             rewardsmith.trl_reward_func(overrides=[f"custom_reward_function.path={path}"]),
             rewardsmith.trl_reward_func(data_source="openai/gsm8k", name="my_gsm8k")]
    try:
        names = [f.__name__ for f in funcs]
        assert len(set(names)) == len(names)
        assert names[0].startswith("rewardsmith") and names[1].startswith("rewardsmith")
        assert names[2].startswith("gsm8k") and names[3].startswith("digits.compute_score")
        assert names[4].startswith("my_gsm8k")
    finally:
        for f in funcs:
            f.close()


def _tiny_model(tmp_path):
    from rewardsmith.core.models import build_causal_lm
    from rewardsmith.demo.char_tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    torch.manual_seed(0)
    model_cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={TINY_MODEL}"]).actor_rollout_ref.model
    model = build_causal_lm(model_cfg, tokenizer)
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    return str(tmp_path / "model")


@pytest.mark.slow
def test_two_adapters_in_one_grpo_trainer_log_two_metric_lines(tmp_path):
    trl = pytest.importorskip("trl", reason="trl is not installed (`pip install -e '.[test]'` installs it)")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback

    from rewardsmith.core.models import load_tokenizer

    torch.set_num_threads(1)
    digits = tmp_path / "digits.py"
    digits.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return sum(c.isdigit() for c in solution_str) / max(1, len(solution_str))\n")
    first = rewardsmith.trl_reward_func()  # routes by the data_source column
    second = rewardsmith.trl_reward_func(overrides=[f"custom_reward_function.path={digits}"])
    assert first.__name__ != second.__name__
    rows = [{"prompt": [{"role": "user", "content": f"{a}+{a}="}], "data_source": "openai/gsm8k",
             "reward_model": {"ground_truth": str(2 * a)}} for a in range(4)]
    logs: list[dict] = []

    class Capture(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            seen.append(dict(logs or {}))

    seen = logs
    options = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2,
                   max_completion_length=8, max_steps=1, learning_rate=1e-4, beta=0.0, use_cpu=True, bf16=False,
                   report_to=[], save_strategy="no", logging_steps=1, dataloader_num_workers=0, seed=0)
    accepted = inspect.signature(trl.GRPOConfig).parameters
    model_dir = _tiny_model(tmp_path)
    trainer = trl.GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir), reward_funcs=[first, second],
        args=trl.GRPOConfig(**{k: v for k, v in options.items() if k in accepted}),
        train_dataset=Dataset.from_list(rows), processing_class=load_tokenizer(model_dir), callbacks=[Capture()],
    )
    try:
        trainer.train()
    finally:
        first.close()
        second.close()
    keys = {k for entry in logs for k in entry}
    assert f"rewards/{first.__name__}/mean" in keys and f"rewards/{second.__name__}/mean" in keys
