"""The training config schema: verl key names, validation, the shipped configs and docs/config.md."""
from pathlib import Path

import pytest

from rewardkit.core.config import ConfigError, describe, load_config
from rewardkit.core.config_doc import render
from rewardkit.core.schema import Config

ROOT = Path(__file__).resolve().parents[1]


def test_docs_config_md_is_up_to_date():
    assert (ROOT / "docs" / "config.md").read_text() == render(), "run: python -m rewardkit.core.config_doc docs/config.md"


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


@pytest.mark.parametrize("override, message", [
    ("algorithm.reward_mask_ratio=1.5", "algorithm.reward_mask_ratio must be in"),
    ("actor_rollout_ref.actor.clip_ratio_c=1.0", "clip_ratio_c must be > 1"),
    ("actor_rollout_ref.actor.loss_agg_mode=mean", "actor_rollout_ref.actor.loss_agg_mode: invalid value 'mean'"),
    ("algorithm.reward_source=model", "algorithm.reward_source: invalid value"),
    ("trainer.resume_mode=resume_path", "trainer.resume_from_path must be set"),
    ("actor_rollout_ref.model.config={hidden_size: 8}", "must name a model_type"),
    ("actor_rollout_ref.rollout.n=0", "actor_rollout_ref.rollout.n must be > 0"),
    ("actor_rollout_ref.rollout.val_kwargs.do_sample=true", "val_kwargs.temperature must be > 0 when do_sample"),
    ("actor_rollout_ref.actor.optim.betas=[0.9]", "optim.betas"),
    ("critic.bogus=1", "unknown config key 'critic.bogus'"),
])
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_config(Config, None, [override])


def test_critic_reward_source_needs_a_critic():
    with pytest.raises(ConfigError, match="reward_source=critic requires a critic"):
        load_config(Config, None, ["algorithm.reward_source=critic", "critic.enable=false"])
