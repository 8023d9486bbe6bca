"""verl's reward.* layout and its older reward_model.* layout load onto one schema."""
from __future__ import annotations

import pytest

from rewardsmith.common.config import load_config
from rewardsmith.common.errors import ConfigError
from rewardsmith.core.schema import Config
from rewardsmith.plugins.verl_layout import map_reward_layout


def test_new_layout_maps_onto_the_schema(tmp_path):
    (tmp_path / "c.yaml").write_text(
        "reward:\n  num_workers: 3\n  reward_manager: {_target_: x.RewardManagerConfig, name: parallel}\n"
        "  reward_model: {enable: true, model_path: /models/rm}\n"
        "  custom_reward_function: {path: f.py, name: judge, reward_kwargs: {k: 1}}\n")
    cfg = load_config(Config, tmp_path / "c.yaml", ["reward.sandbox_fusion.url=http://x/run_code"])
    rm = cfg.reward_model
    assert (rm.num_workers, rm.reward_manager, rm.enable, rm.model.path) == (3, "parallel", True, "/models/rm")
    assert (cfg.custom_reward_function.path, cfg.custom_reward_function.name) == ("f.py", "judge")
    assert cfg.custom_reward_function.reward_kwargs == {"k": 1}
    assert rm.sandbox_fusion.url == "http://x/run_code"


def test_old_layout_still_loads_and_agreeing_layouts_mix():
    cfg = load_config(Config, None, ["reward_model.enable=true", "reward_model.model.path=/m", "reward.reward_model.enable=true"])
    assert cfg.reward_model.enable and cfg.reward_model.model.path == "/m"


def test_unknown_and_conflicting_keys_are_named():
    with pytest.raises(ConfigError, match=r"reward.reward_model.rollout.free_cache_engine: set it in verl's older layout, "
                                          r"reward_model.rollout.free_cache_engine"):
        load_config(Config, None, ["reward.reward_model.rollout.free_cache_engine=true"])
    cfg = load_config(Config, None, ["reward.reward_model.rollout.name=vllm", "reward.reward_model.rollout.prompt_length=30",
                                     "reward.reward_model.rollout.response_length=20"])
    assert cfg.reward_model.rollout.name == "vllm" and cfg.reward_model.model.max_length == 50
    with pytest.raises(ConfigError, match=r"'reward.num_workers' \(4\) and 'reward_model.num_workers' \(2\) are both set and disagree"):
        load_config(Config, None, ["reward_model.num_workers=2", "reward.num_workers=4"])
    assert map_reward_layout({"data": {}}) == {"data": {}}


def test_route_by_style_is_accepted_in_both_layouts(tmp_path):
    """rewardsmith's per-row routing (`reward_model.route_by_style`) has a home in the reward.* layout too."""
    (tmp_path / "c.yaml").write_text("reward:\n  reward_model: {enable: true, model_path: /m, route_by_style: true}\n")
    new = load_config(Config, tmp_path / "c.yaml", [])
    old = load_config(Config, None, ["reward_model.enable=true", "reward_model.model.path=/m", "reward_model.route_by_style=true"])
    assert new.reward_model.route_by_style is True and new.reward_model == old.reward_model
    assert load_config(Config, None, ["reward.reward_model.route_by_style=false"]).reward_model.route_by_style is False
    with pytest.raises(ConfigError, match=r"'reward.reward_model.route_by_style' \(True\) and 'reward_model.route_by_style' \(False\)"):
        load_config(Config, None, ["reward_model.route_by_style=false", "reward.reward_model.route_by_style=true"])
