"""Keys of past verl releases and of verl forks' scripts: implemented, accepted under their new name, or noticed."""
import json
from functools import reduce
from pathlib import Path

import pytest
import torch

from core_helpers import tiny_config

from rewardsmith.common.config import ConfigError
from rewardsmith.core.trainer import PPOTrainer
from rewardsmith.core.verl_keys import notices

torch.set_num_threads(1)


def _records(config) -> list[dict]:
    return [json.loads(line) for line in (Path(config.trainer.default_local_dir) / "metrics.jsonl").read_text().splitlines()]


def _fit(config) -> dict:
    trainer = PPOTrainer(config)
    try:
        return trainer.fit()
    finally:
        trainer.close()


def test_val_only_validates_then_stops(tmp_path):
    config = tiny_config(tmp_path, "trainer.val_only=true", "trainer.val_before_train=true", "trainer.save_freq=1")
    last = _fit(config)
    assert any(key.startswith("val") for key in last)
    records = _records(config)
    assert [r["step"] for r in records] == [0]
    assert not any(key.startswith("actor/") for key in records[0])
    assert not list(Path(config.trainer.default_local_dir).glob("global_step_*"))  # no training step, no checkpoint


def test_val_only_without_val_before_train_trains_as_in_verl_with_a_notice(tmp_path):
    config = tiny_config(tmp_path, "trainer.val_only=true", "trainer.total_training_steps=1")
    assert [line for line in notices(config) if "trainer.val_only" in line] == [
        "notice: trainer.val_only=True changes nothing here: verl validates and stops only before training "
        "(trainer.val_before_train=true); without it training runs, as in verl"]


def test_val_only_needs_validation_rows(tmp_path):
    with pytest.raises(ConfigError, match="trainer.val_only validates and stops, but data.val_files is empty: set data.val_files"):
        tiny_config(tmp_path, "trainer.val_only=true", "trainer.val_before_train=true", "data.val_files=[]")


def test_default_hdfs_dir_on_a_local_path_holds_a_copy_of_each_checkpoint(tmp_path):
    copies = tmp_path / "copies"
    config = tiny_config(tmp_path, f"trainer.default_hdfs_dir={copies}", "trainer.save_freq=1",
                         "trainer.max_ckpt_to_keep=1", "data.val_files=[]")
    _fit(config)
    local = Path(config.trainer.default_local_dir)
    assert sorted(p.name for p in local.glob("global_step_*")) == ["global_step_2"]  # pruned locally
    assert sorted(p.name for p in copies.iterdir()) == ["global_step_1", "global_step_2"]  # verl never prunes the copies
    for path in (local / "global_step_2").rglob("*"):
        if path.is_file():
            assert (copies / "global_step_2" / path.relative_to(local / "global_step_2")).read_bytes() == path.read_bytes()
    # The copy is a checkpoint a run resumes from.
    resumed = tiny_config(tmp_path / "resumed", "trainer.resume_mode=resume_path",
                          f"trainer.resume_from_path={copies / 'global_step_1'}", "data.val_files=[]")
    _fit(resumed)
    assert [r["step"] for r in _records(resumed)] == [2]


def test_default_hdfs_dir_on_hdfs_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match="trainer.default_hdfs_dir is hdfs://nn/ckpt: copying checkpoints to HDFS"):
        tiny_config(tmp_path, "trainer.default_hdfs_dir=hdfs://nn/ckpt")
    assert tiny_config(tmp_path / "null", "trainer.default_hdfs_dir=null").trainer.default_hdfs_dir is None


@pytest.mark.parametrize("key", ["actor_rollout_ref.actor.fsdp_config.grad_offload", "critic.model.fsdp_config.grad_offload",
                                 "actor_rollout_ref.ref.fsdp_config.grad_offload", "critic.fsdp_config.grad_offload"])
def test_grad_offload_is_accepted_with_a_notice_that_verl_dropped_it(tmp_path, key):
    lines = notices(tiny_config(tmp_path, f"{key}=false"))
    assert lines == [f"notice: {key}=False changes nothing here: verl <= v0.2's gradient offload, dropped in verl v0.3: "
                     "a memory key, the gradients are the same wherever they are kept"]


@pytest.mark.parametrize("temperature, sampled", [("0.6", True), ("0", False)])
def test_val_temperature_and_n_val_set_val_kwargs_and_say_so(tmp_path, temperature, sampled):
    config = tiny_config(tmp_path, f"+actor_rollout_ref.rollout.val_temperature={temperature}",
                         "+actor_rollout_ref.rollout.n_val=3")
    val = config.actor_rollout_ref.rollout.val_kwargs
    assert (val.temperature, val.do_sample, val.n) == (float(temperature), sampled, 3)
    lines = notices(config)
    assert lines == [
        f"notice: actor_rollout_ref.rollout.val_temperature={float(temperature)} is an older spelling of "
        "actor_rollout_ref.rollout.val_kwargs.temperature (with val_kwargs.do_sample=true when it is above 0); "
        "applied there, use that key",
        "notice: actor_rollout_ref.rollout.n_val=3 is an older spelling of actor_rollout_ref.rollout.val_kwargs.n; "
        "applied there, use that key"]


def test_n_samples_is_refused_saying_what_to_use(tmp_path):
    with pytest.raises(ConfigError, match="data.n_samples: responses per prompt.*set actor_rollout_ref.rollout.n instead"):
        tiny_config(tmp_path, "+data.n_samples=8")


@pytest.mark.parametrize("role, prefix", [("actor", "actor_rollout_ref.actor"), ("critic", "critic")])
def test_the_engine_spelling_of_the_strategy_sets_the_role_and_says_so(tmp_path, role, prefix):
    config = tiny_config(tmp_path, f"{prefix}.fsdp_config.strategy=fsdp")
    assert reduce(getattr, f"{prefix}.strategy".split("."), config) == "fsdp"
    assert (f"notice: {prefix}.fsdp_config.strategy=fsdp is verl's engine spelling (its new-worker scripts) of "
            f"{prefix}.strategy; applied there, use that key") in notices(config)


def test_the_engine_spelling_of_the_strategy_must_agree_with_the_role(tmp_path):
    config = tiny_config(tmp_path / "a", "actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.actor.fsdp_config.strategy=fsdp")
    assert config.actor_rollout_ref.actor.strategy == "fsdp2"  # fsdp and fsdp2 are one strategy here
    with pytest.raises(ConfigError, match=r"actor_rollout_ref.actor.fsdp_config.strategy is 'local' but the role's strategy is 'fsdp'"):
        tiny_config(tmp_path / "b", "actor_rollout_ref.actor.strategy=fsdp", "actor_rollout_ref.actor.fsdp_config.strategy=local")
