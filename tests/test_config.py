"""Config: YAML + key=value overrides, and errors that name the key."""
from __future__ import annotations

import pytest

from rewardsmith.common.errors import ConfigError
from rewardsmith.common.config import apply_override, describe, load_config
from rewardsmith.core.schema import Config


def test_defaults_use_verl_key_names():
    cfg = load_config(Config)
    assert cfg.data.reward_fn_key == "data_source"
    assert cfg.custom_reward_function.name == "compute_score"
    assert cfg.reward_model.reward_manager == "naive"
    assert cfg.reward_model.sandbox_fusion.url is None


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("reward_model:\n  reward_manager: parallel\n  num_workers: 3\n")
    cfg = load_config(Config, path, ["reward_model.num_workers=2", "+reward_model.timeout=1.5",
                                     "custom_reward_function.reward_kwargs.alpha=0.5"])
    assert cfg.reward_model.reward_manager == "parallel"
    assert cfg.reward_model.num_workers == 2
    assert cfg.reward_model.timeout == 1.5
    assert cfg.custom_reward_function.reward_kwargs == {"alpha": 0.5}


def test_unknown_key_names_key_and_allowed():
    with pytest.raises(ConfigError, match=r"unknown config key 'reward_model\.num_worker'.*num_workers"):
        load_config(Config, None, ["reward_model.num_worker=2"])


def test_unknown_section_in_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rewrd_model: {}\n")
    with pytest.raises(ConfigError, match="unknown config key 'rewrd_model'"):
        load_config(Config, path)


@pytest.mark.parametrize("override, message", [
    ("reward_model.num_workers=many", r"reward_model\.num_workers: .*'many'"),
    ("reward_model.num_workers=0", r"reward_model\.num_workers must be >= 1"),
    ("reward_model.timeout=-1", r"reward_model\.timeout must be > 0"),
    ("reward_model.overlong_buffer.enable=true", r"reward_model\.overlong_buffer\.len must be > 0"),
    ("reward_model.sandbox_fusion.max_concurrent=0", r"reward_model\.sandbox_fusion\.max_concurrent must be >= 1"),
    ("data.reward_fn_key=[1]", r"data\.reward_fn_key: expected a string"),
    ("algorithm.reward_mask_ratio=1.5", r"algorithm\.reward_mask_ratio must be in"),
    ("algorithm.lam=2", r"algorithm\.lam must be in \[0, 1\]"),
    ("actor_rollout_ref.actor.clip_ratio_c=1.0", r"actor_rollout_ref\.actor\.clip_ratio_c must be > 1"),
    ("actor_rollout_ref.actor.loss_agg_mode=mean", r"actor_rollout_ref\.actor\.loss_agg_mode: invalid value 'mean'"),
    ("algorithm.reward_source=model", r"algorithm\.reward_source: invalid value"),
    ("trainer.resume_mode=resume_path", r"trainer\.resume_from_path must be set"),
    ("actor_rollout_ref.model.config={hidden_size: 8}", r"actor_rollout_ref\.model\.config must name a model_type"),
    ("actor_rollout_ref.rollout.n=0", r"actor_rollout_ref\.rollout\.n must be > 0"),
    ("actor_rollout_ref.rollout.val_kwargs.do_sample=true", r"actor_rollout_ref\.rollout\.val_kwargs\.temperature must be > 0 when do_sample"),
    ("actor_rollout_ref.actor.optim.betas=[0.9]", r"actor_rollout_ref\.actor\.optim\.betas must be two numbers"),
    ("critic.optim.lr=0", r"critic\.optim\.lr must be > 0"),
    ("critic.bogus=1", r"unknown config key 'critic\.bogus'"),
])
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(Config, None, [override])


def test_malformed_override():
    with pytest.raises(ConfigError, match="not of the form key=value"):
        apply_override({}, "reward_model.timeout")


def test_describe_lists_every_leaf_with_default():
    rows = {key: default for key, _type, default, _help in describe(Config)}
    assert rows["reward_model.overlong_buffer.len"] == 0
    assert rows["custom_reward_function.name"] == "compute_score"


def test_exponent_without_dot_is_a_number():
    # PyYAML (YAML 1.1) reads 3e-3 as a string
    assert load_config(Config, None, ["reward_model.timeout=3e-3"]).reward_model.timeout == 0.003
