"""Actor and critic workers: gradient accumulation and the on-policy shortcut change nothing."""
import torch

from core_helpers import tiny_config

from rewardkit.core.trainer import PPOTrainer


def one_update(tmp_path, *overrides, recompute_old=False):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", *overrides))
    trainer.global_step = 1
    batch, _ = trainer.make_experience(next(iter(trainer.loader)))
    if recompute_old:
        batch["old_log_probs"] = trainer.actor.compute_log_prob(batch)
    metrics = trainer.actor.update(batch)
    trainer.close()
    return batch, metrics, {k: v.clone() for k, v in trainer.actor.model.state_dict().items()}


def assert_same_params(a, b):
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6), key


def test_single_update_skips_old_log_probs_exactly(tmp_path):
    batch, metrics, skipped = one_update(tmp_path / "a", "actor_rollout_ref.actor.ppo_mini_batch_size=4")
    assert "old_log_probs" not in batch
    assert metrics["actor/ppo_kl"] == 0.0 and metrics["actor/pg_clipfrac"] == 0.0
    _, _, recomputed = one_update(tmp_path / "b", "actor_rollout_ref.actor.ppo_mini_batch_size=4", recompute_old=True)
    assert_same_params(skipped, recomputed)


def test_micro_batches_accumulate_to_the_mini_batch_gradient(tmp_path):
    for mode in ("token-mean", "seq-mean-token-mean"):
        common = ("actor_rollout_ref.actor.ppo_mini_batch_size=4", f"actor_rollout_ref.actor.loss_agg_mode={mode}")
        _, _, whole = one_update(tmp_path / f"{mode}-whole", *common)
        _, _, micro = one_update(tmp_path / f"{mode}-micro", *common, "actor_rollout_ref.actor.ppo_micro_batch_size=3")
        assert_same_params(whole, micro)


def test_several_mini_batches_need_old_log_probs(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.ppo_mini_batch_size=2"))
    trainer.global_step = 1
    batch, _ = trainer.make_experience(next(iter(trainer.loader)))
    assert "old_log_probs" in batch  # 8 samples, mini-batches of 2 prompts x 2 samples: two optimizer steps
    metrics = trainer.actor.update(batch)
    assert metrics["actor/ppo_kl"] != 0.0  # the second mini-batch sees a policy that already moved
    trainer.close()
