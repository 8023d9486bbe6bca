"""The reward options of seed document 004 inside real (tiny) training steps."""
import json

import pytest
import torch

from core_helpers import tiny_config

from rewardsmith.core.tensor_ops import masked_whiten
from rewardsmith.core.reward_masking import last_valid_values
from rewardsmith.core.trainer import PPOTrainer


def experience(tmp_path, *overrides):
    trainer = PPOTrainer(tiny_config(tmp_path, *overrides))
    trainer.global_step = 1
    batch, metrics = trainer.make_experience(next(iter(trainer.loader)))
    return trainer, batch, metrics


def test_reward_source_critic_uses_the_critic_value_at_the_last_token(tmp_path):
    trainer, batch, metrics = experience(tmp_path, "algorithm.reward_source=critic", "algorithm.adv_estimator=grpo")
    try:
        assert trainer.critic is not None  # enabled because reward_source needs it
        mask = batch["response_mask"].float()
        values = batch["values"]
        v_last = last_valid_values(values, batch["response_mask"])
        assert torch.allclose(batch["token_level_scores"].sum(-1), v_last)
        assert not torch.equal(v_last, torch.zeros_like(v_last))
        raw = (v_last.unsqueeze(-1) - values) * mask  # V(last) - V(t), then whitened
        assert torch.allclose(batch["advantages"], masked_whiten(raw, mask) * mask, atol=1e-5)
        # returns = whitened advantages + values, so the critic does not regress onto its own V(last)
        assert torch.allclose(batch["returns"], (batch["advantages"] + values) * mask, atol=1e-6)
        assert not torch.allclose(batch["returns"], v_last.unsqueeze(-1) * mask, atol=1e-3)
        # the rule-based scores are still computed and logged
        assert "reward/mean" in metrics
    finally:
        trainer.close()


def test_reward_mask_ratio_one_masks_every_trajectory(tmp_path):
    trainer, batch, metrics = experience(tmp_path, "algorithm.reward_mask_ratio=1.0", "algorithm.adv_estimator=grpo")
    try:
        assert metrics["reward_mask/num_masked"] == len(batch) == 8
        assert metrics["reward_mask/mask_ratio_actual"] == 1.0
        assert batch["reward_masked"].all()
        assert torch.count_nonzero(batch["token_level_rewards"]) == 0
        assert torch.count_nonzero(batch["token_level_scores"]) > 0  # the scores were not zero to begin with
    finally:
        trainer.close()


def test_reward_mask_ratio_half_logs_the_actual_ratio(tmp_path):
    trainer, batch, metrics = experience(tmp_path, "algorithm.reward_mask_ratio=0.5", "algorithm.adv_estimator=grpo")
    try:
        masked = batch["reward_masked"]
        assert metrics["reward_mask/num_masked"] == float(masked.sum())
        assert metrics["reward_mask/mask_ratio_actual"] == float(masked.sum()) / len(batch)
        rewards, scores = batch["token_level_rewards"], batch["token_level_scores"]
        assert torch.equal(rewards[masked], torch.zeros_like(rewards[masked]))
        assert torch.equal(rewards[~masked], scores[~masked])
    finally:
        trainer.close()


def test_flip_negates_masked_advantages_only(tmp_path):
    common = ("algorithm.reward_mask_ratio=0.5", "algorithm.adv_estimator=gae", "critic.freeze=true")
    flipped_trainer, flipped, _ = experience(tmp_path / "a", *common)
    plain_trainer, plain, _ = experience(tmp_path / "b", *common, "algorithm.reward_mask_flip_adv_when_masked=false")
    try:
        masked = flipped["reward_masked"]
        assert torch.equal(masked, plain["reward_masked"])  # same seed, same draws
        assert masked.any() and (~masked).any()
        assert torch.allclose(flipped["advantages"][masked], -plain["advantages"][masked])
        assert torch.allclose(flipped["advantages"][~masked], plain["advantages"][~masked])
    finally:
        flipped_trainer.close()
        plain_trainer.close()


def test_flip_does_not_apply_to_critic_rewards(tmp_path):
    trainer, batch, _ = experience(tmp_path, "algorithm.reward_source=critic", "algorithm.reward_mask_ratio=1.0")
    try:
        mask = batch["response_mask"].float()
        # every reward row zeroed: A = 0 - V(t), whitened, and not multiplied by -1
        expected = masked_whiten(-batch["values"] * mask, mask) * mask
        assert torch.allclose(batch["advantages"], expected, atol=1e-5)
    finally:
        trainer.close()


def test_frozen_critic_is_never_updated_but_gives_values(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=gae", "critic.freeze=true"))
    try:
        critic_before = {k: v.clone() for k, v in trainer.critic.model.state_dict().items()}
        actor_before = {k: v.clone() for k, v in trainer.actor.model.state_dict().items()}
        assert trainer.critic.optimizer is None
        last = trainer.fit()
        assert last["critic/frozen"] == 1.0
        assert "critic/vf_loss" not in last and "critic/values/mean" in last
        for k, v in trainer.critic.model.state_dict().items():
            assert torch.equal(v, critic_before[k]), k
        assert any(not torch.equal(v, actor_before[k]) for k, v in trainer.actor.model.state_dict().items())
    finally:
        trainer.close()


def test_unfrozen_critic_learns(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=gae"))
    try:
        before = {k: v.clone() for k, v in trainer.critic.model.state_dict().items()}
        last = trainer.fit()
        assert "critic/frozen" not in last and last["critic/vf_loss"] >= 0
        assert any(not torch.equal(v, before[k]) for k, v in trainer.critic.model.state_dict().items())
    finally:
        trainer.close()


def fit_metrics(config) -> dict[int, dict]:
    """Train to the end; every record of metrics.jsonl by step."""
    trainer = PPOTrainer(config)
    try:
        trainer.fit()
    finally:
        trainer.close()
    return {r["step"]: r for r in map(json.loads, (trainer.out_dir / "metrics.jsonl").read_text().splitlines())}


def test_dapo_overlong_penalty_applies_in_validation_as_in_training(tmp_path):
    """Validation passes response lengths to the reward managers: with the dapo manager it used to
    stop at the first validation ("train with a response mask")."""
    common = ("trainer.val_before_train=true", "trainer.test_freq=1", "trainer.total_training_steps=1",
              "algorithm.adv_estimator=grpo")
    # buffer as long as max_resp_len: the penalty is exactly -length / 8 (factor 1), so it can be checked from the mean length
    dapo = fit_metrics(tiny_config(tmp_path / "dapo", *common, "reward_model.reward_manager=dapo",
                                   "reward_model.overlong_buffer.enable=true", "reward_model.overlong_buffer.len=8"))
    naive = fit_metrics(tiny_config(tmp_path / "naive", *common))
    assert sorted(dapo) == [0, 1] and "val/reward/mean" in dapo[0] and "val/reward/mean" in dapo[1]
    # step 0: the same policy generated the same responses; only the penalty differs
    assert dapo[0]["val/response_length/mean"] == naive[0]["val/response_length/mean"] > 0
    assert dapo[0]["val/reward/mean"] == pytest.approx(naive[0]["val/reward/mean"] - dapo[0]["val/response_length/mean"] / 8, abs=1e-6)
