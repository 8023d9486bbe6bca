"""Policy-loss modes (core/policy_losses.py): each equals verl 0.9.1's own function on random batches, a plugin can
register one, an unknown mode is named, and a run trains with each."""
import importlib.util
import os
import sys
import types

import pytest
import torch

from core_helpers import fit_and_assert_trained, tiny_config

from rewardsmith.core.policy_losses import BUILTIN_POLICY_LOSSES, LossContext
from rewardsmith.core.trainer import PPOTrainer
from rewardsmith.plugins.registry import NotRegistered

torch.set_num_threads(1)


def verl_core_algos():
    """verl's core_algos, imported without running verl/__init__.py (which needs verl's whole runtime)."""
    if "verl" not in sys.modules:
        spec = importlib.util.find_spec("verl")
        if spec is None:
            pytest.skip("verl is not installed (`make test` installs verl 0.9.1 --no-deps)")
        package = types.ModuleType("verl")
        package.__path__ = [os.path.dirname(spec.origin)]
        sys.modules["verl"] = package
    try:
        import verl.trainer.ppo.core_algos as core_algos
        from verl.workers.config import ActorConfig, PolicyLossConfig
    except ImportError as exc:
        pytest.skip(f"verl's core_algos needs {exc.name} (`make test` installs omegaconf, tensordict, ...)")
    return core_algos, ActorConfig, PolicyLossConfig


def _batch(seed: int, rows: int = 6, width: int = 9):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(rows, width, generator=g) * 3
    old = logp + torch.randn(rows, width, generator=g) * 0.3
    # Sequence-level advantages, as the outcome estimators give (GMPO assumes them).
    adv = torch.randn(rows, 1, generator=g).expand(rows, width).clone()
    mask = torch.ones(rows, width)
    for i in range(rows):
        mask[i, 1 + int(torch.randint(width - 1, (1,), generator=g)):] = 0
    return logp.requires_grad_(), old, adv, mask


OPTIONS = types.SimpleNamespace(clip_cov_ratio=0.2, clip_cov_lb=-5.0, clip_cov_ub=5.0, kl_cov_ratio=0.2, ppo_kl_coef=1.0,
                                dro_beta=0.3)


@pytest.mark.parametrize("mode", sorted(BUILTIN_POLICY_LOSSES))
@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
@pytest.mark.parametrize("with_is_weights", [False, True])
def test_each_mode_equals_verls_function(mode, agg, with_is_weights):
    """Also with rollout correction's importance weights, which verl passes each mode as rollout_is_weights
    (bypass_mode takes its own, from its rollout_correction section: with_is_weights picks the reinforce loss
    with token weights and rejection there)."""
    from verl.trainer.config.algorithm import RolloutCorrectionConfig as VerlCorrection

    from rewardsmith.core.schema import RolloutCorrectionConfig

    core_algos, ActorConfig, PolicyLossConfig = verl_core_algos()
    correction = dict(loss_type="reinforce", rollout_is="token", rollout_is_threshold=1.5, rollout_rs="token_k1",
                      rollout_rs_threshold="0.7_1.3") if with_is_weights else dict(rollout_rs="seq_mean_k3",
                                                                                   rollout_rs_threshold=0.2)
    verl_config = ActorConfig(strategy="fsdp", clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28, rollout_n=1,
                              ppo_mini_batch_size=4, ppo_micro_batch_size_per_gpu=1, tau_pos=0.9, tau_neg=1.3,
                              policy_loss=PolicyLossConfig(loss_mode=mode, **vars(OPTIONS),
                                                           rollout_correction=VerlCorrection(**correction)))
    # verl's trainer passes the mini-batch's counts before a loss's own rejection (here: one micro-batch).
    verl_config.global_batch_info.update(dp_size=1, global_batch_size=6, batch_num_tokens=None)
    ours_correction = RolloutCorrectionConfig(**correction)
    if mode == "bypass_mode":
        with_is_weights = False  # bypass_mode computes its weights itself
    for seed in range(3):
        logp, old, adv, mask = _batch(seed)
        weights = (torch.rand(mask.shape, generator=torch.Generator().manual_seed(seed)) * 2 * mask
                   if with_is_weights else None)
        ctx = LossContext(0.2, 0.28, 3.0, agg, 1.0, 1.0, OPTIONS, tau_pos=0.9, tau_neg=1.3, is_weights=weights,
                          rollout_correction=ours_correction)
        torch.manual_seed(seed)  # clip_cov picks its tokens at random
        ours, ours_stats = BUILTIN_POLICY_LOSSES[mode](logp, old, adv, mask, ctx)
        (grad_ours,) = torch.autograd.grad(ours, logp)
        verl_config.global_batch_info["batch_num_tokens"] = mask.sum()
        torch.manual_seed(seed)
        theirs, theirs_stats = core_algos.get_policy_loss_fn(mode)(old, logp, adv, mask, agg, verl_config,
                                                                  rollout_is_weights=weights)
        (grad_theirs,) = torch.autograd.grad(theirs, logp)
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(grad_ours, grad_theirs, atol=1e-6, rtol=1e-5)
        for name, value in ours_stats.items():
            key = name if "/" in name else f"actor/{'pg_' if name.startswith('clipfrac') else ''}{name}"
            assert value.item() == pytest.approx(theirs_stats[key], abs=1e-6), (mode, key)


def test_an_unknown_mode_is_named_with_the_registered_ones(tmp_path):
    with pytest.raises(NotRegistered, match=r"unknown policy loss 'ppo2' \(actor_rollout_ref.actor.policy_loss.loss_mode\); "
                                            r"known: bypass_mode, cispo, clip_cov, dppo_kl, dppo_tv, dro, geo_mean, gpg, gspo, kl_cov, sapo, vanilla"):
        PPOTrainer(tiny_config(tmp_path, "actor_rollout_ref.actor.policy_loss.loss_mode=ppo2"))


@pytest.mark.parametrize("mode", ["gspo", "cispo", "geo_mean", "clip_cov", "sapo", "dppo_tv", "dppo_kl", "dro"])
def test_a_run_trains_with_the_mode(tmp_path, mode):
    extra = ["actor_rollout_ref.actor.policy_loss.dro_beta=0.1"] if mode == "dro" else []
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", f"actor_rollout_ref.actor.policy_loss.loss_mode={mode}",
                                     *extra))
    try:
        fit_and_assert_trained(trainer)
    finally:
        trainer.close()


def test_a_plugin_registers_a_policy_loss(tmp_path, monkeypatch):
    plugin = tmp_path / "halved_loss_plugin.py"
    plugin.write_text(
        "from rewardsmith import hookimpl\n"
        "from rewardsmith.core.policy_losses import vanilla\n"
        "def halved(logprob, old_logprob, advantages, mask, ctx):\n"
        "    loss, stats = vanilla(logprob, old_logprob, advantages, mask, ctx)\n"
        "    return loss / 2, stats\n"
        "@hookimpl\n"
        "def register_policy_losses(register):\n"
        "    register('halved', halved)\n")
    dist = tmp_path / "halved_loss_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: halved-loss-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rewardsmith]\nhalved = halved_loss_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from rewardsmith.plugins.loader import load_registry

    fn = load_registry().policy_loss("halved")
    logp, old, adv, mask = _batch(0)
    ctx = LossContext(0.2, 0.2, 3.0, "token-mean", 1.0, 1.0, OPTIONS)
    torch.testing.assert_close(fn(logp, old, adv, mask, ctx)[0], BUILTIN_POLICY_LOSSES["vanilla"](logp, old, adv, mask, ctx)[0] / 2)


@pytest.mark.parametrize("name", ["gpg", "remax"])
def test_verls_estimators_for_its_loss_modes_equal_verls(name):
    """The estimators verl's GPG and ReMax scripts select, against verl's functions."""
    import numpy as np

    from rewardsmith.core.advantages import BUILTIN_ESTIMATORS

    core_algos, _, _ = verl_core_algos()
    g = torch.Generator().manual_seed(3)
    index = ["a"] * 4 + ["b"] * 4 + ["c"]
    mask = (torch.arange(7).expand(9, 7) < torch.randint(1, 8, (9, 1), generator=g)).float()
    rewards = torch.zeros(9, 7)
    rewards[torch.arange(9), mask.sum(-1).long() - 1] = torch.randint(0, 3, (9,), generator=g).float()
    baselines = torch.rand(9, generator=g)
    ours = BUILTIN_ESTIMATORS[name](token_level_rewards=rewards, response_mask=mask, index=index, reward_baselines=baselines)
    theirs = core_algos.get_adv_estimator_fn(name)(token_level_rewards=rewards.clone(), response_mask=mask,
                                                  index=np.array(index, dtype=object), reward_baselines=baselines)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b.float(), atol=1e-6, rtol=1e-5)


def test_remax_trains_against_the_greedy_responses_reward(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=remax"))
    try:
        trainer.global_step = 1
        prompts = next(iter(trainer.loader))
        timing: dict[str, float] = {}
        batch, _ = trainer.make_experience(prompts, timing)
        baselines, no_baseline = trainer.greedy_baselines(prompts, batch.meta["uid"], {})
    finally:
        trainer.close()
    assert "gen_baseline" in "".join(timing) and not no_baseline.any()
    # A = G - b on valid tokens, with b the greedy response's reward for the sample's own prompt (greedy: repeatable).
    returns = (batch["token_level_rewards"] * batch["response_mask"]).flip(-1).cumsum(-1).flip(-1)
    expected = returns - baselines.unsqueeze(-1) * batch["response_mask"]
    torch.testing.assert_close(batch["advantages"], expected, atol=1e-6, rtol=1e-6)
    assert len(set(batch.meta["uid"])) < len(batch)  # several samples share a prompt, and so its baseline
