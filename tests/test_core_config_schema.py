"""The training config schema: verl key names, validation, the shipped configs and docs/config.md."""
import importlib.util
from pathlib import Path

import pytest

from rewardsmith.common.errors import ConfigError
from rewardsmith.common.config import describe, load_config
from rewardsmith.config_doc import render
from rewardsmith.core.schema import Config

ROOT = Path(__file__).resolve().parents[1]


def test_docs_config_md_is_up_to_date():
    assert (ROOT / "docs" / "config.md").read_text() == render(), "run: python -m rewardsmith.config_doc docs/config.md"


def test_every_key_has_a_help_text():
    missing = [key for key, _type, _default, help_text in describe(Config) if not help_text]
    assert not missing


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "configs").glob("arith_*.yaml")), ids=lambda p: p.name)
def test_example_configs_load(path):
    config = load_config(Config, path)
    assert config.data.max_prompt_length == 96


def test_verl_style_overrides():
    config = load_config(Config, None, [
        "algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.use_kl_loss=true",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "algorithm.kl_ctrl.type=adaptive", "critic.cliprange_value=0.2",
        "trainer.save_freq=5", "trainer.resume_mode=disable", "data.train_files=[a.jsonl,b.parquet]",
    ])
    assert config.actor_rollout_ref.rollout.n == 8 and config.algorithm.kl_ctrl.type == "adaptive"
    assert config.data.train_files == ["a.jsonl", "b.parquet"]


def test_critic_reward_source_needs_a_critic():
    with pytest.raises(ConfigError, match="algorithm.reward_source is critic, which needs a critic, but critic.enable is false"):
        load_config(Config, None, ["algorithm.reward_source=critic", "critic.enable=false"])


def test_rollout_max_model_len_defaults_to_prompt_plus_response_and_must_hold_them():
    config = load_config(Config, None, ["data.max_prompt_length=100", "data.max_response_length=28"])
    assert config.actor_rollout_ref.rollout.max_model_len == 128
    with pytest.raises(ConfigError, match="max_model_len"):
        load_config(Config, None, ["data.max_prompt_length=100", "data.max_response_length=28",
                                   "actor_rollout_ref.rollout.max_model_len=64"])


def test_rollout_name_admits_hf_vllm_and_verls_sglang_only():
    # vllm (and sglang, which samples on vLLM) is accepted where vLLM is installed, else refused at once
    # (tests/test_verl_keys.py).
    if importlib.util.find_spec("vllm") is not None:
        for name in ("vllm", "sglang"):
            rollout = load_config(Config, None, [f"actor_rollout_ref.rollout.name={name}"]).actor_rollout_ref.rollout
            assert (rollout.name, rollout.engine) == (name, "vllm")
    with pytest.raises(ConfigError, match="actor_rollout_ref.rollout.name"):
        load_config(Config, None, ["actor_rollout_ref.rollout.name=trtllm"])
