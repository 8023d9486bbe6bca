"""The PPO algorithms against values computed by hand on small tensors."""
import math

import pytest
import torch

from rewardsmith.core.advantages import (
    BUILTIN_ESTIMATORS,
    compute_gae_advantage_return,
    compute_grpo_outcome_advantage,
    compute_reinforce_plus_plus_baseline_outcome_advantage,
    compute_reinforce_plus_plus_outcome_advantage,
    compute_rloo_outcome_advantage,
)
from rewardsmith.core.tensor_ops import (
    entropy_from_logits,
    logprobs_from_logits,
    masked_mean,
    masked_sum,
    masked_var,
    masked_whiten,
)
from rewardsmith.core.kl import KLController, apply_kl_penalty, kl_penalty
from rewardsmith.core.losses import agg_loss, micro_batch_weight, policy_loss, value_loss
from rewardsmith.core.optim import lr_factor
from rewardsmith.core.reward_masking import (
    apply_reward_mask,
    critic_source_advantage,
    critic_token_level_scores,
    flip_masked_advantages,
    sample_reward_mask,
)

T = torch.tensor


def close(a, b, tol=1e-5):
    return torch.allclose(torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(b, dtype=torch.float32), atol=tol)


# -- masked reductions -------------------------------------------------------------
VALUES = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
MASK = T([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def test_masked_sum_mean_var():
    assert masked_sum(VALUES, MASK).item() == 7.0
    assert close(masked_mean(VALUES, MASK), 7 / 3)
    assert close(masked_mean(VALUES, MASK, dim=-1), [1.5, 4.0])
    # values 1, 2, 4: squared deviations 16/9, 1/9, 25/9 -> unbiased 21/9
    assert close(masked_var(VALUES, MASK), 21 / 9)
    assert close(masked_var(VALUES, MASK, unbiased=False), 14 / 9)
    assert masked_mean(VALUES, torch.zeros_like(MASK)).item() == 0.0


def test_masked_whiten():
    w = masked_whiten(VALUES, MASK)
    std = math.sqrt(21 / 9 + 1e-8)
    assert close(w[0, 0], (1 - 7 / 3) / std)
    assert close(w[1, 0], (4 - 7 / 3) / std)
    assert close(masked_mean(w, MASK), 0.0)
    assert close(masked_whiten(VALUES, MASK, shift_mean=False)[0, 1], (2 - 7 / 3) / std + 7 / 3)


def test_logprobs_and_entropy_from_logits():
    logits = torch.log(T([[[1.0, 2.0, 3.0]]]))  # softmax = 1/6, 2/6, 3/6
    assert close(logprobs_from_logits(logits, T([[2]])), [[math.log(0.5)]])
    assert close(logprobs_from_logits(logits, T([[0]])), [[math.log(1 / 6)]])
    p = [1 / 6, 2 / 6, 3 / 6]
    assert close(entropy_from_logits(logits), [[-sum(x * math.log(x) for x in p)]])


# -- advantage estimators ----------------------------------------------------------
def test_gae_by_hand():
    rewards, values, mask = T([[0.0, 0.0, 1.0]]), T([[0.5, 0.6, 0.7]]), torch.ones(1, 3)
    adv, ret = compute_gae_advantage_return(token_level_rewards=rewards, response_mask=mask, values=values, gamma=1.0, lam=1.0)
    # delta = (0.1, 0.1, 0.3); A = (0.5, 0.4, 0.3); returns = A + V = 1
    assert close(ret, [[1.0, 1.0, 1.0]])
    raw = T([[0.5, 0.4, 0.3]])
    assert close(adv, masked_whiten(raw, mask))

    adv, ret = compute_gae_advantage_return(token_level_rewards=rewards, response_mask=mask, values=values, gamma=0.9, lam=0.5)
    # delta2 = 0.3, A2 = 0.3; delta1 = 0.9*0.7-0.6 = 0.03, A1 = 0.03+0.45*0.3 = 0.165;
    # delta0 = 0.9*0.6-0.5 = 0.04, A0 = 0.04+0.45*0.165 = 0.11425
    assert close(ret, [[0.11425 + 0.5, 0.165 + 0.6, 0.3 + 0.7]])


def test_gae_skips_padding():
    rewards, values, mask = T([[0.0, 1.0, 0.0]]), T([[0.5, 0.6, 9.9]]), T([[1.0, 1.0, 0.0]])
    adv, ret = compute_gae_advantage_return(token_level_rewards=rewards, response_mask=mask, values=values)
    # the padded value 9.9 never enters: delta1 = 1 - 0.6, A1 = 0.4, A0 = 0.1 + 0.4
    assert close(ret, [[1.0, 1.0, 0.0]])
    assert adv[0, 2] == 0.0


def test_gae_requires_values():
    with pytest.raises(ValueError, match="critic"):
        compute_gae_advantage_return(token_level_rewards=torch.zeros(1, 2), response_mask=torch.ones(1, 2), values=None)
    assert getattr(compute_gae_advantage_return, "requires_values") is True


def outcome(scores, length=2):
    rewards = torch.zeros(len(scores), length)
    rewards[:, -1] = T(scores)
    return rewards


def test_grpo_by_hand():
    rewards, mask = outcome([1, 0, 1, 0, 1]), torch.ones(5, 2)
    index = ["a", "a", "a", "a", "b"]
    adv, ret = compute_grpo_outcome_advantage(token_level_rewards=rewards, response_mask=mask, index=index)
    std = math.sqrt(1 / 3)  # unbiased std of (1, 0, 1, 0)
    expected = [0.5 / (std + 1e-6), -0.5 / (std + 1e-6)] * 2 + [1.0 / (1 + 1e-6)]  # singleton: mean 0, std 1
    assert close(adv[:, 0], expected) and close(adv[:, 1], expected)
    assert torch.equal(adv, ret)
    adv, _ = compute_grpo_outcome_advantage(token_level_rewards=rewards, response_mask=mask, index=index, norm_adv_by_std_in_grpo=False)
    assert close(adv[:, 0], [0.5, -0.5, 0.5, -0.5, 1.0])


def test_grpo_masks_padding_and_checks_index():
    adv, _ = compute_grpo_outcome_advantage(token_level_rewards=outcome([1, 0]), response_mask=T([[1.0, 0.0], [1.0, 1.0]]), index=[0, 0])
    assert adv[0, 1] == 0.0 and adv[0, 0] > 0
    with pytest.raises(ValueError, match="index"):
        compute_grpo_outcome_advantage(token_level_rewards=outcome([1, 0]), response_mask=torch.ones(2, 2), index=[0])


def test_rloo_by_hand():
    adv, _ = compute_rloo_outcome_advantage(token_level_rewards=outcome([1, 0, 0, 5]), response_mask=torch.ones(4, 2), index=[0, 0, 0, 1])
    # 1 - mean(0, 0) = 1; 0 - mean(1, 0) = -0.5; singleton keeps its score
    assert close(adv[:, 0], [1.0, -0.5, -0.5, 5.0])


def test_reinforce_plus_plus_by_hand():
    rewards = T([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    mask = T([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    adv, ret = compute_reinforce_plus_plus_outcome_advantage(token_level_rewards=rewards, response_mask=mask, gamma=0.5)
    assert close(ret, [[0.25, 0.5, 1.0], [0.5, 1.0, 0.0]])
    assert close(adv, masked_whiten(ret, mask) * mask)


def test_reinforce_plus_plus_baseline_by_hand():
    rewards, mask = outcome([1, 0, 3]), torch.ones(3, 2)
    adv, ret = compute_reinforce_plus_plus_baseline_outcome_advantage(token_level_rewards=rewards, response_mask=mask, index=[0, 0, 1])
    centred = T([[0.5, 0.5], [-0.5, -0.5], [3.0, 3.0]])  # group 0 mean 0.5; singleton mean 0
    assert close(adv, masked_whiten(centred, mask))
    assert torch.equal(adv, ret)


def test_builtin_estimators_are_registered_through_the_hook():
    from rewardsmith.plugins.loader import get_registry

    registry = get_registry()
    for name, fn in BUILTIN_ESTIMATORS.items():
        assert registry.advantage_estimator(name) is fn
    assert set(BUILTIN_ESTIMATORS) == {"gae", "grpo", "rloo", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "gpg", "remax", "gdpo", "optimal_token_baseline"}


# -- KL ------------------------------------------------------------------------------
def test_kl_estimators_by_hand():
    logp, ref = T([math.log(0.5)]), T([math.log(0.25)])
    d = math.log(2)
    assert close(kl_penalty(logp, ref, "kl"), [d]) and close(kl_penalty(logp, ref, "k1"), [d])
    assert close(kl_penalty(ref, logp, "abs"), [d])
    assert close(kl_penalty(logp, ref, "mse"), [0.5 * d * d]) and close(kl_penalty(logp, ref, "k2"), [0.5 * d * d])
    assert close(kl_penalty(logp, ref, "low_var_kl"), [0.5 + d - 1]) and close(kl_penalty(logp, ref, "k3"), [0.5 + d - 1])
    with pytest.raises(ValueError, match="unknown KL estimator 'nope'"):
        kl_penalty(logp, ref, "nope")


@pytest.mark.parametrize("logp, ref", [(-100.0, -1.0), (-1.0, -100.0), (0.0, -100.0)])
def test_k3_extreme_log_ratios_give_the_clamped_value_and_a_finite_gradient(logp, ref):
    x = T([logp], requires_grad=True)
    value = kl_penalty(x, T([ref]), "k3")
    value.sum().backward()
    assert close(value, [10.0])  # clamped from above
    assert torch.isfinite(x.grad).all() and x.grad.item() == 0.0  # a clamp acts: no gradient, and no NaN


def test_k3_gradient_by_hand():
    # d/dlogp [exp(-d) + d - 1] = 1 - exp(-d), with d = logp - ref
    x = T([math.log(0.5)], requires_grad=True)
    kl_penalty(x, T([math.log(0.25)]), "k3").sum().backward()
    assert close(x.grad, [1 - 0.5])


def test_policy_loss_gradient_stays_finite_for_extreme_log_ratios():
    # A padded token may carry an extreme log-ratio; masked out, it must not turn the gradient into NaN.
    logp = T([[-1.0, -100.0, 50.0]], requires_grad=True)
    old = T([[-1.1, -1.0, -50.0]])
    loss, _ = policy_loss(logp, old, T([[1.0, 1.0, -1.0]]), T([[1.0, 0.0, 0.0]]))
    loss.backward()
    assert torch.isfinite(logp.grad).all()
    assert close(logp.grad, [[-math.exp(0.1), 0.0, 0.0]])  # token 0: d/dlogp of -A * rho, rho = e^0.1 inside the clip range


def test_kl_controllers():
    fixed = KLController(0.1, "fixed")
    fixed.update(5.0, 100)
    assert fixed.value == 0.1
    adaptive = KLController(0.1, "adaptive", target_kl=0.1, horizon=1000)
    adaptive.update(0.15, 100)  # error = clip(0.5, -0.2, 0.2) = 0.2 -> x (1 + 0.2 * 100 / 1000)
    assert math.isclose(adaptive.value, 0.1 * 1.02)
    adaptive.update(0.09, 100)  # error = -0.1 -> x 0.99
    assert math.isclose(adaptive.value, 0.1 * 1.02 * 0.99)


def test_kl_in_reward_by_hand():
    scores = T([[0.0, 1.0]])
    rewards, kl = apply_kl_penalty(scores, T([[0.2, 0.4]]), T([[0.0, 0.0]]), torch.ones(1, 2), beta=0.5, kind="kl")
    assert close(rewards, [[-0.1, 0.8]])
    assert math.isclose(kl, 0.3, rel_tol=1e-6)


# -- losses ----------------------------------------------------------------------------
def test_policy_loss_clip_and_dual_clip_by_hand():
    adv = T([[1.0, 1.0, -1.0, -1.0]])
    ratio = T([[1.5, 0.5, 1.5, 5.0]])
    old = torch.zeros(1, 4)
    loss, stats = policy_loss(torch.log(ratio), old, adv, torch.ones(1, 4), 0.2, 0.2, 3.0)
    # per token: max(-1.5, -1.2) = -1.2; max(-0.5, -0.8) = -0.5; 1.5; min(3, max(5, 1.2)) = 3
    assert close(loss, (-1.2 - 0.5 + 1.5 + 3.0) / 4)
    assert close(stats["clipfrac"], 0.25) and close(stats["clipfrac_lower"], 0.25)
    assert close(stats["ppo_kl"], -torch.log(ratio).mean())
    loss, _ = policy_loss(torch.log(ratio), old, adv, torch.ones(1, 4), 0.2, 0.28, 3.0)
    assert close(loss, (-1.28 - 0.5 + 1.5 + 3.0) / 4)
    with pytest.raises(ValueError, match="clip_ratio_c"):
        policy_loss(old, old, adv, torch.ones(1, 4), clip_ratio_c=1.0)


def test_loss_aggregation_modes_by_hand():
    loss = T([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = T([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert close(agg_loss(loss, mask, "token-mean"), 10 / 4)
    assert close(agg_loss(loss, mask, "seq-mean-token-sum"), (6 + 4) / 2)
    assert close(agg_loss(loss, mask, "seq-mean-token-mean"), (2 + 4) / 2)
    with pytest.raises(ValueError, match="loss_agg_mode"):
        agg_loss(loss, mask, "mean")


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_micro_batch_weights_reproduce_the_mini_batch_loss(mode):
    torch.manual_seed(0)
    loss = torch.rand(6, 5)
    mask = (torch.rand(6, 5) > 0.3).float()
    mask[:, 0] = 1
    full = agg_loss(loss, mask, mode)
    parts = sum(
        agg_loss(loss[i : i + 2], mask[i : i + 2], mode, micro_batch_weight(mask[i : i + 2], float(mask.sum()), 6, mode))
        for i in range(0, 6, 2)
    )
    assert close(parts, full)


def test_value_loss_by_hand():
    loss, stats = value_loss(T([[1.0, 2.0]]), T([[0.0, 2.0]]), T([[1.0, 0.0]]), torch.ones(1, 2), cliprange_value=0.5)
    # token 0: clipped pred 0.5 -> max(0, 0.25); token 1: max(4, 4); 0.5 * mean
    assert close(loss, 0.5 * (0.25 + 4.0) / 2)
    assert close(stats["vf_clipfrac"], 0.5)


# -- seed-004 reward options -------------------------------------------------------------
def test_reward_mask_sampling():
    g = torch.Generator().manual_seed(0)
    assert not sample_reward_mask(100, 0.0, g).any()
    assert sample_reward_mask(100, 1.0, g).all()
    share = sample_reward_mask(20000, 0.3, g).float().mean().item()
    assert 0.28 < share < 0.32
    with pytest.raises(ValueError, match="reward_mask_ratio"):
        sample_reward_mask(4, 1.5, g)


def test_apply_reward_mask_and_flip():
    rewards = T([[0.0, 1.0], [0.5, 2.0]])
    masked = T([True, False])
    assert torch.equal(apply_reward_mask(rewards, masked), T([[0.0, 0.0], [0.5, 2.0]]))
    assert torch.equal(flip_masked_advantages(T([[1.0, 2.0], [3.0, 4.0]]), masked), T([[-1.0, -2.0], [3.0, 4.0]]))


def test_critic_reward_source_by_hand():
    values = T([[0.1, 0.2, 0.3], [0.5, 0.6, 0.7]])
    mask = T([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    scores = critic_token_level_scores(values, mask)
    assert close(scores, [[0.0, 0.2, 0.0], [0.0, 0.0, 0.7]])
    adv, ret = critic_source_advantage(scores, values, mask)
    raw = T([[0.1, 0.0, 0.0], [0.2, 0.1, 0.0]])  # V(last) - V(t)
    whitened = masked_whiten(raw, mask) * mask
    assert close(adv, whitened)
    # returns come after whitening: A + V, not V(last) (the critic's own value, a target it only chases)
    assert close(ret, (whitened + values) * mask)
    assert not close(ret, [[0.2, 0.2, 0.0], [0.7, 0.7, 0.7]])


def test_lr_schedule():
    assert lr_factor(0, 4, 20, "constant", 0.0) == 0.0
    assert lr_factor(2, 4, 20, "constant", 0.0) == 0.5
    assert lr_factor(10, 4, 20, "constant", 0.0) == 1.0
    assert lr_factor(4, 4, 20, "cosine", 0.1) == pytest.approx(1.0)
    assert lr_factor(12, 4, 20, "cosine", 0.1) == pytest.approx(0.1 + 0.9 * 0.5)
    assert lr_factor(20, 4, 20, "cosine", 0.1) == pytest.approx(0.1)
