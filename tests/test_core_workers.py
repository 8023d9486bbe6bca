"""Workers: they build their own models, gradient accumulation and the on-policy shortcut change
nothing, data-parallel shares with global counts add up to the whole update, and the
trainer drives the rollout engine's weight sync and sleep/wake."""
import pytest
import torch

from core_helpers import tiny_config

from rewardsmith.core.batch import MiniBatch
from rewardsmith.core.trainer import PPOTrainer
from rewardsmith.core.workers import ActorRolloutWorker, CriticWorker, ReferenceWorker


def one_update(tmp_path, *overrides, recompute_old=False):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", *overrides))
    trainer.global_step = 1
    batch, _ = trainer.make_experience(next(iter(trainer.loader)))
    if recompute_old:
        batch["old_log_probs"] = trainer.actor.compute_log_prob(batch)
    metrics = trainer.actor.update(trainer.actor_mini_batches(batch))
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
    minis = trainer.actor_mini_batches(batch)
    assert [m.samples for m in minis] == [4, 4]
    metrics = trainer.actor.update(minis)
    assert metrics["actor/ppo_kl"] != 0.0  # the second mini-batch sees a policy that already moved
    trainer.close()


def test_workers_build_their_models_from_config_alone(tmp_path):
    config = tiny_config(tmp_path, "algorithm.adv_estimator=gae", "actor_rollout_ref.actor.use_kl_loss=true")
    actor = ActorRolloutWorker(config, total_steps=2)
    torch.manual_seed(123)  # whatever happened before in this process
    ref = ReferenceWorker(config)
    critic_after_actor = CriticWorker(config, total_steps=2)
    critic_alone = CriticWorker(config, total_steps=2)
    # the reference is the actor's initial policy, built by itself (not a copy of the module)
    assert ref.model is not actor.model
    for key, value in actor.model.state_dict().items():
        assert torch.equal(value, ref.model.state_dict()[key]), key
    assert not any(p.requires_grad for p in ref.model.parameters())
    for key, value in critic_alone.model.state_dict().items():
        assert torch.equal(value, critic_after_actor.model.state_dict()[key]), key
    # the rollout engine samples from the actor's weights
    assert actor.rollout.model is actor.model


# gradients() skips the optimizer step on purpose, so the LR schedule steps alone.
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_data_parallel_shares_with_global_counts_give_the_whole_update(tmp_path):
    # What a worker group does: each rank runs its equal share of every
    # mini-batch, dividing by the mini-batch's global counts; the ranks'
    # gradients add up. Here the "ranks" run one after the other on one model.
    for mode in ("token-mean", "seq-mean-token-sum"):
        trainer = PPOTrainer(tiny_config(tmp_path / mode, "algorithm.adv_estimator=grpo",
                                         f"actor_rollout_ref.actor.loss_agg_mode={mode}"))
        trainer.global_step = 1
        batch, _ = trainer.make_experience(next(iter(trainer.loader)))
        whole = trainer.actor_mini_batches(batch)[0]
        whole_grads = gradients(trainer.actor, [whole])
        shares = whole.split(3)  # 4 samples -> 3 shares of 2, the last padded with masked-out samples
        assert [len(s.batch) for s in shares] == [2, 2, 2] and all(s.tokens == whole.tokens for s in shares)
        assert shares[-1].batch["response_mask"][1].sum() == 0
        share_grads = [gradients(trainer.actor, [share]) for share in shares]
        for key, grad in whole_grads.items():
            assert torch.allclose(sum(g[key] for g in share_grads), grad, atol=1e-6), (mode, key)
        trainer.close()


def gradients(actor, minis: list[MiniBatch]) -> dict[str, torch.Tensor]:
    """The gradient one optimizer step of ``actor.update`` would apply (captured, not applied)."""
    captured = {}

    def capture(model, max_norm):
        captured.update({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        return torch.tensor(float("nan"))  # a non-finite norm skips the step

    real, actor.strategy.clip_grad_norm = actor.strategy.clip_grad_norm, capture
    try:
        actor.update(minis)
    finally:
        actor.strategy.clip_grad_norm = real
    return captured


class RecordingEngine:
    """Wraps the real engine and records the calls the trainer makes."""

    def __init__(self, engine, calls):
        self.engine, self.calls = engine, calls

    def generate(self, prompts, params):
        self.calls.append("generate")
        return self.engine.generate(prompts, params)

    def update_weights(self, weights):
        names = [name for name, _ in weights]
        self.calls.append(("update_weights", len(names)))

    def sleep(self):
        self.calls.append("sleep")

    def wake(self):
        self.calls.append("wake")

    def shutdown(self):
        self.calls.append("shutdown")


def test_trainer_syncs_weights_after_each_actor_update_and_wakes_the_engine_to_generate(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", "trainer.critic_warmup=1",
                                     "trainer.total_training_steps=2"))
    calls = []
    trainer.actor.rollout = RecordingEngine(trainer.actor.rollout, calls)
    try:
        trainer.fit()
    finally:
        trainer.close()
    n_weights = len(trainer.actor.model.state_dict())
    cycle = ["wake", "generate", "sleep"]
    # step 1 is critic warm-up (no actor update, no sync); step 2 updates and syncs; then validation; close stops it
    assert calls == cycle + cycle + [("update_weights", n_weights)] + ["wake", "generate", "sleep", "shutdown"]
