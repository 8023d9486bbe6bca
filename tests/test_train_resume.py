"""A run stopped and resumed from its checkpoint gives the same metrics as one that was not stopped."""
import json

import pytest

from core_helpers import tiny_config

from rewardsmith.core.trainer import PPOTrainer, measures_machine

# Everything a checkpoint must carry: critic and actor optimizers, the adaptive
# KL controller, the reward-mask generator, gradient accumulation, data position.
OPTIONS = (
    "trainer.total_training_steps=4",
    "trainer.save_freq=1",
    "trainer.test_freq=2",
    "algorithm.adv_estimator=gae",
    "algorithm.use_kl_in_reward=true",
    "algorithm.kl_ctrl.type=adaptive",
    "algorithm.kl_ctrl.horizon=10",
    "algorithm.kl_ctrl.kl_coef=0.05",
    "algorithm.reward_mask_ratio=0.3",
    "actor_rollout_ref.actor.ppo_micro_batch_size=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "actor_rollout_ref.actor.ppo_epochs=2",
    "actor_rollout_ref.actor.shuffle=true",
    "actor_rollout_ref.actor.use_kl_loss=true",
    "actor_rollout_ref.actor.optim.warmup_style=cosine",
    "actor_rollout_ref.actor.optim.lr_warmup_steps=1",
    "data.train_batch_size=4",
    "actor_rollout_ref.rollout.n=2",
)


class Interrupted(Exception):
    pass


def run_metrics(config) -> dict[int, dict]:
    trainer = PPOTrainer(config)
    try:
        trainer.fit()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (trainer.out_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: {k: v for k, v in r.items() if not measures_machine(k)} for r in records}


def test_resumed_run_matches_uninterrupted_run(tmp_path, monkeypatch):
    straight = run_metrics(tiny_config(tmp_path / "straight", *OPTIONS))
    assert sorted(straight) == [1, 2, 3, 4]

    config = tiny_config(tmp_path / "stopped", *OPTIONS)
    real_step = PPOTrainer.train_step

    def crash_at_step_3(self, prompts):
        if self.global_step == 3:
            raise Interrupted("simulated crash during step 3")
        return real_step(self, prompts)

    monkeypatch.setattr(PPOTrainer, "train_step", crash_at_step_3)
    with pytest.raises(Interrupted):
        run_metrics(config)
    monkeypatch.setattr(PPOTrainer, "train_step", real_step)

    resumed = run_metrics(config)  # resume_mode=auto finds global_step_2
    assert sorted(resumed) == [1, 2, 3, 4]
    for step in (3, 4):
        assert resumed[step].keys() == straight[step].keys()
        for key, value in straight[step].items():
            assert resumed[step][key] == value, f"step {step}: {key}"
    # the options under test really acted
    assert straight[4]["actor/reward_kl_penalty_coeff"] != 0.05
    assert "critic/vf_loss" in straight[4] and "val/reward/mean" in straight[4]


def test_resume_path_must_be_a_checkpoint(tmp_path):
    config = tiny_config(tmp_path, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={tmp_path}")
    trainer = PPOTrainer(config)
    try:
        with pytest.raises(ValueError, match="global_step"):
            trainer.fit()
    finally:
        trainer.close()


def test_max_ckpt_to_keep_and_latest_marker(tmp_path):
    config = tiny_config(tmp_path, "trainer.total_training_steps=3", "trainer.save_freq=1", "trainer.max_ckpt_to_keep=2",
                         "algorithm.adv_estimator=grpo")
    trainer = PPOTrainer(config)
    try:
        trainer.fit()
    finally:
        trainer.close()
    out = trainer.out_dir
    assert sorted(p.name for p in out.glob("global_step_*")) == ["global_step_2", "global_step_3"]
    assert (out / "latest_checkpointed_iteration.txt").read_text() == "3"
    assert (out / "global_step_3" / "actor" / "tokenizer.json").is_file()
