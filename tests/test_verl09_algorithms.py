"""verl 0.9's estimators (core/advantages.py): each equals verl 0.9.1's own function on random batches with
padding and groups, and a run trains with it through the trainer."""
import numpy as np
import pytest
import torch

from core_helpers import fit_and_assert_trained, tiny_config
from test_policy_losses import verl_core_algos

from rewardsmith.common.errors import ConfigError
from rewardsmith.core.advantages import BUILTIN_ESTIMATORS
from rewardsmith.core.trainer import PPOTrainer

torch.set_num_threads(1)

INDEX = ["a"] * 4 + ["b"] * 3 + ["c"] + ["d"] * 2


def _padded_batch(seed: int, rows: int = len(INDEX), width: int = 7):
    """Right-padded responses (1..width valid tokens) with the score on the last valid token, as the trainer builds."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, width + 1, (rows,), generator=g)
    mask = (torch.arange(width).expand(rows, width) < lengths.unsqueeze(-1)).float()
    components = {"format_reward": torch.randint(0, 2, (rows,), generator=g).float(),
                  "accuracy_reward": torch.rand(rows, generator=g) * 3}
    rewards = torch.zeros(rows, width)
    rewards[torch.arange(rows), lengths - 1] = sum(components.values())
    return g, mask, rewards, components


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("norm_by_std", [True, False])
@pytest.mark.parametrize("weights", [None, [0.7, 2.0]])
def test_gdpo_equals_verls_function(seed, norm_by_std, weights):
    core_algos, _, _ = verl_core_algos()
    g, mask, rewards, components = _padded_batch(seed)
    keys = list(components)
    prompt = torch.ones(len(INDEX), 5, dtype=torch.long)
    verl_batch = {"prompts": prompt, "attention_mask": torch.cat([prompt, mask.long()], dim=-1)}
    config = {"gdpo_reward_keys": keys, "gdpo_reward_weights": weights}
    theirs = core_algos.get_adv_estimator_fn("gdpo")(
        token_level_rewards=rewards, response_mask=mask, index=np.array(INDEX, dtype=object),
        norm_adv_by_std_in_grpo=norm_by_std, config=config,
        non_tensor_batch={k: v.numpy() for k, v in components.items()}, batch=verl_batch)
    ours = BUILTIN_ESTIMATORS["gdpo"](
        token_level_rewards=rewards, response_mask=mask, index=INDEX, norm_adv_by_std_in_grpo=norm_by_std,
        reward_extra_info={k: v.tolist() for k, v in components.items()}, gdpo_reward_keys=keys,
        gdpo_reward_weights=weights)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_gdpo_without_components_equals_verls_fallback():
    """verl's function with no config normalises the total score alone: so does ours with no keys."""
    core_algos, _, _ = verl_core_algos()
    _, mask, rewards, _ = _padded_batch(5)
    theirs = core_algos.get_adv_estimator_fn("gdpo")(token_level_rewards=rewards, response_mask=mask,
                                                    index=np.array(INDEX, dtype=object))
    ours = BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards, response_mask=mask, index=INDEX)
    torch.testing.assert_close(ours[0], theirs[0], atol=1e-5, rtol=1e-5)


def test_gdpo_leaves_unscored_samples_out():
    """An unscored sample changes nobody's advantage: the same as the batch without it."""
    _, mask, rewards, components = _padded_batch(3)
    info = {k: v.tolist() for k, v in components.items()}
    info["format_reward"][1] = None  # an unscored sample may have returned nothing
    scored = torch.ones(len(INDEX), dtype=torch.bool)
    scored[1] = False
    kwargs = dict(gdpo_reward_keys=list(info))
    adv, _ = BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards, response_mask=mask, index=INDEX,
                                        reward_extra_info=info, scored=scored, **kwargs)
    keep = [i for i in range(len(INDEX)) if i != 1]
    alone, _ = BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards[keep], response_mask=mask[keep],
                                          index=[INDEX[i] for i in keep],
                                          reward_extra_info={k: [v[i] for i in keep] for k, v in info.items()}, **kwargs)
    assert not adv[1].any()
    torch.testing.assert_close(adv[keep], alone, atol=1e-6, rtol=1e-6)


def test_gdpo_names_a_component_the_reward_did_not_return():
    _, mask, rewards, components = _padded_batch(0)
    with pytest.raises(KeyError, match=r"'length_reward' is not a key the reward function returned .*accuracy_reward, "
                                       r"format_reward"):
        BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards, response_mask=mask, index=INDEX,
                                   reward_extra_info={k: v.tolist() for k, v in components.items()},
                                   gdpo_reward_keys=["length_reward"])


def test_gdpo_needs_its_reward_keys(tmp_path):
    with pytest.raises(ConfigError, match="gdpo_reward_keys"):
        tiny_config(tmp_path, "algorithm.adv_estimator=gdpo")


COMPONENT_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    digits = sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
    short = float(len(solution_str) < 6)
    return {"score": digits + short, "digits": digits, "short": short}
'''


def test_a_run_trains_with_gdpo(tmp_path):
    reward = tmp_path / "components.py"
    reward.write_text(COMPONENT_REWARD)
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=gdpo", f"custom_reward_function.path={reward}",
                                     "algorithm.gdpo_reward_keys=[digits,short]", "algorithm.gdpo_reward_weights=[1.0,0.5]"))
    try:
        fit_and_assert_trained(trainer)
    finally:
        trainer.close()


def verl_rollout_corr_helper():
    """verl's rollout_corr_helper, imported the way verl_core_algos imports core_algos."""
    verl_core_algos()
    try:
        import verl.trainer.ppo.rollout_corr_helper as helper
    except ImportError as exc:
        pytest.skip(f"verl's rollout_corr_helper needs {exc.name} (`make test` installs verl's light dependencies)")
    return helper


def _log_probs(seed: int, rows: int = 8, width: int = 9):
    """Old and rollout log-probs a little apart (some tokens far apart), and a right-padded mask."""
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(rows, width, generator=g) * 3
    rollout = old + torch.randn(rows, width, generator=g) * 0.15
    far = torch.rand(rows, width, generator=g) < 0.1
    rollout = torch.where(far, rollout - 1.5, rollout)
    lengths = torch.randint(1, width + 1, (rows,), generator=g)
    mask = (torch.arange(width).expand(rows, width) < lengths.unsqueeze(-1)).float()
    return old, rollout, mask


CORRECTIONS = [
    dict(rollout_is="token", rollout_is_threshold=2.0),
    dict(rollout_is="token", rollout_is_threshold="0.5_1.5"),
    dict(rollout_is="sequence", rollout_is_threshold=3.0),
    dict(rollout_is="sequence", rollout_is_threshold="0.2_5.0", rollout_is_batch_normalize=True),
    dict(rollout_is="token", rollout_is_threshold=1.2, rollout_is_batch_normalize=True),
    dict(rollout_rs="token_k1", rollout_rs_threshold="0.6_1.4"),
    dict(rollout_rs="token_k2,token_k3", rollout_rs_threshold="0.5,0.4"),
    dict(rollout_rs="seq_sum_k1,seq_sum_k2,seq_sum_k3", rollout_rs_threshold=2.0),
    dict(rollout_rs="seq_mean_k1", rollout_rs_threshold=1.3),
    dict(rollout_rs="seq_mean_k2,seq_mean_k3,seq_max_k2,seq_max_k3", rollout_rs_threshold="0.05,0.05,0.5,0.5"),
    dict(rollout_is="token", rollout_is_threshold=2.0, rollout_rs="seq_max_k3", rollout_rs_threshold=0.8),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("options", CORRECTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_rollout_correction_equals_verls_function(seed, options):
    from rewardsmith.core.rollout_correction import rollout_correction
    from rewardsmith.core.schema import RolloutCorrectionConfig

    helper = verl_rollout_corr_helper()
    old, rollout, mask = _log_probs(seed)
    weights, kept, metrics = rollout_correction(old, rollout, mask, RolloutCorrectionConfig(**options))
    verl_options = {"rollout_is": None, **options}
    theirs, verl_mask, verl_metrics = helper.compute_rollout_correction_and_rejection_mask(
        old_log_prob=old, rollout_log_prob=rollout, response_mask=mask, **verl_options)
    torch.testing.assert_close(kept, verl_mask)
    if "rollout_rs" in options:
        assert metrics["rollout_corr/rollout_rs_masked_fraction"] == pytest.approx(
            verl_metrics["rollout_corr/rollout_rs_masked_fraction"])
        assert 0 < kept.sum() < mask.sum(), "the thresholds should reject some tokens but not all"
    if "rollout_is" in options:
        torch.testing.assert_close(weights, theirs.batch["rollout_is_weights"], atol=1e-6, rtol=1e-5)
    else:
        assert weights is None and theirs is None
    assert metrics["rollout_corr/kl"] == pytest.approx(verl_metrics["rollout_corr/kl"], abs=1e-6)


@pytest.mark.parametrize("bad, message", [
    ("algorithm.rollout_correction.rollout_rs=seq_max_k1", "unknown option 'seq_max_k1'"),
    ("algorithm.rollout_correction.rollout_rs=token_k2", "rollout_rs_threshold must be set"),
    ("algorithm.rollout_correction.rollout_is=token algorithm.rollout_correction.rollout_is_threshold=2.0_1.0", "lower bound above"),
])
def test_a_bad_rollout_correction_is_named(tmp_path, bad, message):
    with pytest.raises(ConfigError, match=message):
        tiny_config(tmp_path, *bad.split())


def test_the_hf_engine_records_the_sampled_tokens_log_probs(tmp_path):
    """Same seed, same samples with and without recording; the recorded log-probs are the actor's (top-k, top-p
    off: the sampled distribution is the temperature-scaled one) up to the KV cache's float error."""
    from rewardsmith.core.rollout import SamplingParams

    trainer = PPOTrainer(tiny_config(tmp_path, "actor_rollout_ref.rollout.temperature=0.7"))
    try:
        prompts = next(iter(trainer.loader))
        params = trainer.sampling
        torch.manual_seed(0)
        plain = trainer.actor.generate(prompts, SamplingParams(**{**vars(params), "log_probs": False}))
        torch.manual_seed(0)
        recorded = trainer.actor.generate(prompts, SamplingParams(**{**vars(params), "log_probs": True}))
        actor = trainer.actor.compute_log_prob(recorded)
    finally:
        trainer.close()
    assert "rollout_log_probs" not in plain
    torch.testing.assert_close(recorded["responses"], plain["responses"])
    mask = recorded["response_mask"].bool()
    torch.testing.assert_close(recorded["rollout_log_probs"][mask], actor[mask], atol=1e-4, rtol=1e-4)
    assert not recorded["rollout_log_probs"][~mask].any()


@pytest.mark.parametrize("options", [
    ["algorithm.rollout_correction.rollout_is=token", "algorithm.rollout_correction.rollout_is_threshold=2.0"],
    ["algorithm.rollout_correction.rollout_is=sequence", "algorithm.rollout_correction.rollout_is_batch_normalize=true",
     "algorithm.rollout_correction.rollout_rs=token_k1", "algorithm.rollout_correction.rollout_rs_threshold=0.999_1.001"],
    ["algorithm.rollout_correction.bypass_mode=true"],
    ["algorithm.rollout_correction.bypass_mode=true", "algorithm.rollout_correction.loss_type=reinforce",
     "algorithm.rollout_correction.rollout_is=token", "algorithm.rollout_correction.rollout_rs=seq_max_k2",
     "algorithm.rollout_correction.rollout_rs_threshold=0.01"],
], ids=["token_is", "sequence_is_and_rejection", "bypass_ppo_clip", "bypass_reinforce"])
def test_a_run_trains_with_rollout_correction(tmp_path, options):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", *options))
    try:
        last = fit_and_assert_trained(trainer)
    finally:
        trainer.close()
    assert "rollout_corr/kl" in last
    if "bypass_mode=true" in " ".join(options):
        assert "timing_s/old_log_prob" not in last, "bypass mode takes the rollout's log-probs as the old ones"
    else:
        assert "timing_s/old_log_prob" in last


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("handle_zero_tail", [True, False])
@pytest.mark.parametrize("with_is_weights", [False, True])
def test_optimal_token_baseline_equals_verls_function(seed, handle_zero_tail, with_is_weights):
    core_algos, _, _ = verl_core_algos()
    g, mask, rewards, _ = _padded_batch(seed)
    rewards = rewards + torch.randn(rewards.shape, generator=g) * 0.1 * mask  # token rewards (a KL penalty) too
    old = -torch.rand(mask.shape, generator=g) * 2
    sum_sq = torch.rand(mask.shape, generator=g) * 0.5
    weights = torch.rand(mask.shape, generator=g) * 2 * mask if with_is_weights else None
    kwargs = dict(token_level_rewards=rewards, response_mask=mask, old_log_probs=old, sum_pi_squared=sum_sq,
                  rollout_is_weights=weights, handle_zero_tail=handle_zero_tail)
    theirs = core_algos.get_adv_estimator_fn("optimal_token_baseline")(index=np.array(INDEX, dtype=object), **kwargs)
    ours = BUILTIN_ESTIMATORS["optimal_token_baseline"](index=INDEX, **kwargs)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_sum_pi_squared_is_the_distributions_sum_of_squares():
    from rewardsmith.core.tensor_ops import sum_pi_squared_from_logits

    logits = torch.randn(3, 4, 11, generator=torch.Generator().manual_seed(0)) * 4
    torch.testing.assert_close(sum_pi_squared_from_logits(logits), (torch.softmax(logits, -1) ** 2).sum(-1))


def test_optimal_token_baseline_needs_sum_pi_squared(tmp_path):
    with pytest.raises(ValueError, match="set actor_rollout_ref.actor.calculate_sum_pi_squared=true"):
        PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=optimal_token_baseline"))


def test_a_run_trains_with_the_optimal_token_baseline(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=optimal_token_baseline",
                                     "actor_rollout_ref.actor.calculate_sum_pi_squared=true",
                                     "actor_rollout_ref.rollout.temperature=0.8"))
    try:
        trainer.global_step = 1
        batch, _ = trainer.make_experience(next(iter(trainer.loader)), {})
        # The statistic the actor computed is that of its own temperature-scaled distribution.
        from rewardsmith.core.models import response_outputs

        logits = response_outputs(trainer.actor.model, batch["input_ids"], batch["attention_mask"],
                                  batch["responses"].shape[1]).float() / 0.8
        torch.testing.assert_close(batch["sum_pi_squared"], (torch.softmax(logits, -1) ** 2).sum(-1), atol=1e-5, rtol=1e-4)
        fit_and_assert_trained(trainer)
    finally:
        trainer.close()
