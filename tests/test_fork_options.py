"""Options of verl forks (core/fork_options.py): each as its fork computes it, and wired through the trainer."""
from collections import defaultdict

import numpy as np
import pytest
import torch

from core_helpers import tiny_config

from rewardsmith.common.config import ConfigError, describe
from rewardsmith.core.advantages import compute_grpo_outcome_advantage
from rewardsmith.core.fork_options import (EntropyControl, mask_truncated_advantages, rejection_rows, sampled_entropy,
                                           truncated)
from rewardsmith.core.reward_masking import loss_tokens
from rewardsmith.core.schema import Config
from rewardsmith.core.trainer import PPOTrainer
from rewardsmith.core.verl_fork_keys import FORK_KEYS
from rewardsmith.core.verl_keys import MOVED, key_statuses, notices
from rewardsmith.core.verl_refusals import refusal

torch.set_num_threads(1)


def rllm_grpo(token_level_rewards, eos_mask, index, epsilon=1e-6):
    """rllm's (DeepScaleR's) compute_grpo_outcome_advantage with mask_truncated_samples=True, transcribed from
    agentica-project/rllm verl/verl/trainer/ppo/core_algos.py (groups of more than one sample)."""
    response_length = token_level_rewards.shape[-1]
    scores = token_level_rewards.sum(dim=-1)
    id2score, id2mean, id2std = defaultdict(list), {}, {}
    for i in range(scores.shape[0]):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        id2mean[idx] = torch.mean(torch.tensor(id2score[idx]))
        id2std[idx] = torch.std(torch.tensor([id2score[idx]]))
    for i in range(scores.shape[0]):
        if scores[i] == 0 and eos_mask[i].sum() == response_length:
            scores[i] = 0
        else:
            scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon)
    return scores.unsqueeze(-1).tile([1, response_length]) * eos_mask


def test_mask_truncated_samples_is_rllms_grpo_rule():
    gen = torch.Generator().manual_seed(0)
    width, groups, n = 6, 8, 4
    lengths = torch.randint(1, width + 1, (groups * n,), generator=gen)
    lengths[::3] = width  # plenty of truncated responses
    mask = (torch.arange(width) < lengths.unsqueeze(-1)).float()
    scores = torch.randint(0, 2, (groups * n,), generator=gen).float() * torch.rand(groups * n, generator=gen)
    rewards = torch.zeros(groups * n, width)
    rewards[torch.arange(groups * n), lengths - 1] = scores
    index = [f"p{i // n}" for i in range(groups * n)]
    plain, _ = compute_grpo_outcome_advantage(token_level_rewards=rewards, response_mask=mask, index=index)
    cut = truncated(mask, width)
    ours = mask_truncated_advantages(plain, rewards.sum(-1), cut)
    theirs = rllm_grpo(rewards.clone(), mask, index)
    assert torch.allclose(ours, theirs, atol=1e-5)
    masked = cut & (scores == 0)
    assert masked.any() and (plain[masked] != 0).any()  # the option changed something
    assert torch.equal(ours[~masked], plain[~masked])


class SkyworkEntController:
    """Skywork-OR1's EntController, transcribed from SkyworkAI/Skywork-OR1 verl/trainer/ppo/core_algos.py."""

    def __init__(self, init_ent_coef, max_ent_coef, min_ent_coef, delta_ent_coef, target_ent):
        self.value, self.max_value, self.min_value = init_ent_coef, max_ent_coef, min_ent_coef
        self.delta_ent_coef, self.target_ent, self.entropy_loss_enabled = delta_ent_coef, target_ent, 1

    def update(self, current_ent):
        if current_ent < self.target_ent:
            self.value += self.delta_ent_coef
        else:
            self.value -= self.delta_ent_coef
        self.value = float(np.clip(self.value, self.min_value, self.max_value))
        self.entropy_loss_enabled = int(current_ent < self.target_ent)


def test_entropy_control_is_skyworks_ent_controller():
    theirs = SkyworkEntController(0.003, 0.005, 0.0, 0.001, 0.2)
    ours = EntropyControl(0.003)
    rng = np.random.default_rng(0)
    for entropy in rng.uniform(0.0, 0.4, 40):
        assert ours.realized == pytest.approx(theirs.value * theirs.entropy_loss_enabled)
        theirs.update(float(entropy))
        ours = ours.next(float(entropy), 0.2, 0.001, 0.0, 0.005)
    assert ours.coeff == pytest.approx(theirs.value)


def test_sampled_entropy_is_the_mean_negative_log_prob_of_the_response_tokens():
    logp = torch.tensor([[-1.0, -2.0, -9.0], [-3.0, -9.0, -9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert sampled_entropy(logp, mask) == pytest.approx(2.0)


def _experience(tmp_path, *overrides):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", *overrides))
    trainer.global_step = 1
    batch, metrics = trainer.make_experience(next(iter(trainer.loader)))
    return trainer, batch, metrics


def test_mask_truncated_samples_zeroes_the_advantage_of_truncated_zero_score_samples(tmp_path):
    # A seed whose rollouts have a truncated, zero-scored sample in a group whose rewards vary (checked below).
    masked_trainer, masked, metrics = _experience(tmp_path / "a", "trainer.seed=0", "algorithm.mask_truncated_samples=true")
    plain_trainer, plain, _ = _experience(tmp_path / "b", "trainer.seed=0")
    try:
        assert torch.equal(masked["responses"], plain["responses"])  # same seed, same rollouts
        cut = truncated(masked["response_mask"], 8) & (masked["token_level_scores"].sum(-1) == 0)
        assert metrics["train/truncated_zero_advantage"] == float(cut.sum())
        assert cut.any() and (plain["advantages"][cut] != 0).any()
        assert torch.count_nonzero(masked["advantages"][cut]) == 0
        assert torch.equal(masked["advantages"][~cut], plain["advantages"][~cut])
    finally:
        masked_trainer.close()
        plain_trainer.close()


def _updated_weights(trainer, batch):
    trainer.update(batch)
    return {k: v.clone() for k, v in trainer.actor.model.state_dict().items()}


def test_remove_clip_updates_as_if_the_truncated_samples_were_not_in_the_loss(tmp_path):
    common = ("actor_rollout_ref.actor.ppo_mini_batch_size=4",)
    removing, batch, _ = _experience(tmp_path / "a", *common, "trainer.remove_clip=true")
    by_hand, same, _ = _experience(tmp_path / "b", *common)
    plain, again, _ = _experience(tmp_path / "c", *common)
    try:
        # The tiny random model never samples its end token in 8 tokens: two responses are made to end after 5.
        for b in (batch, same, again):
            b["response_mask"] = b["response_mask"].clone()
            b["response_mask"][[0, 3], 5:] = 0
        cut = truncated(batch["response_mask"], 8)
        assert cut.any() and not cut.all()
        ours = _updated_weights(removing, batch)
        same["response_mask"] = loss_tokens(same["response_mask"], cut)
        expected = _updated_weights(by_hand, same)
        unmasked = _updated_weights(plain, again)
        assert all(torch.equal(ours[k], expected[k]) for k in ours)
        assert any(not torch.equal(ours[k], unmasked[k]) for k in ours)
    finally:
        for trainer in (removing, by_hand, plain):
            trainer.close()


def test_the_actor_update_takes_the_adaptive_coefficient(tmp_path):
    common = ("actor_rollout_ref.actor.ppo_mini_batch_size=4",)
    given, batch, _ = _experience(tmp_path / "a", *common)
    configured, same, _ = _experience(tmp_path / "b", *common, "actor_rollout_ref.actor.entropy_coeff=0.5")
    try:
        given.actor.update(given.actor_mini_batches(batch), 0.5)
        configured.actor.update(configured.actor_mini_batches(same))
        ours, theirs = given.actor.model.state_dict(), configured.actor.model.state_dict()
        assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    finally:
        given.close()
        configured.close()


@pytest.mark.parametrize("target, realized", [(100.0, [0.01, 0.011, 0.012]), (-1.0, [0.01, 0.0, 0.0])])
def test_adaptive_entropy_trains_with_skyworks_coefficients(tmp_path, target, realized):
    trainer = PPOTrainer(tiny_config(
        tmp_path, "algorithm.adv_estimator=grpo", "trainer.total_training_steps=3", "trainer.save_freq=3",
        "actor_rollout_ref.actor.entropy_coeff=0.01", "actor_rollout_ref.actor.adaptive_entropy.enabled=true",
        f"actor_rollout_ref.actor.adaptive_entropy.target_entropy={target}",
        "actor_rollout_ref.actor.adaptive_entropy.delta_ent_coef=0.001"))
    steps = []
    original = trainer.update
    trainer.update = lambda batch, timing=None: steps.append(original(batch, timing)) or steps[-1]
    try:
        trainer.fit()
        assert [s["actor/entropy_coeff"] for s in steps] == pytest.approx(realized)
        assert all(s["actor/sampled_entropy"] > 0 for s in steps)
        saved = trainer.entropy_ctrl
    finally:
        trainer.close()
    resumed = PPOTrainer(tiny_config(
        tmp_path, "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.adaptive_entropy.enabled=true"))
    try:
        resumed.maybe_resume()
        assert resumed.entropy_ctrl == saved
    finally:
        resumed.close()


def _config(tmp_path, *overrides):
    return tiny_config(tmp_path, *overrides)


@pytest.mark.parametrize("override, says", [
    ("algorithm.clip_advantages=true", "rllm's advantage clamping"),
    ("algorithm.mask_truncated_samples=true", "only with adv_estimator=grpo, not gae"),
    ("rllm.mask_truncated_samples=true", "rllm's own trainer"),
    ("trainer.stats_path=/tmp/x", "Skywork-OR1's per-step statistics"),
])
def test_fork_options_that_are_not_done_here_are_refused_naming_the_project(tmp_path, override, says):
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, "algorithm.adv_estimator=gae", override)
    assert override.split("=")[0].split(".")[-1] in str(err.value) and says in str(err.value)


def test_fork_defaults_as_their_scripts_pass_them_are_accepted(tmp_path):
    config = _config(tmp_path, "trainer.rejection_sample=False", "trainer.rejection_sample_multiplier=3",
                     "algorithm.clip_advantages=False", "algorithm.mask_truncated_samples=False",
                     "trainer.remove_clip=False")
    assert not config.trainer.rejection_sample and not config.trainer.remove_clip


def test_remove_previous_ckpt_keeps_one_checkpoint_with_a_notice(tmp_path):
    config = _config(tmp_path, "trainer.remove_previous_ckpt=true")
    assert config.trainer.max_ckpt_to_keep == 1
    assert any("trainer.remove_previous_ckpt=True is an older spelling of trainer.max_ckpt_to_keep=1" in line
               for line in notices(config))
    assert _config(tmp_path, "trainer.remove_previous_ckpt_in_save=true").trainer.max_ckpt_to_keep == 1
    assert _config(tmp_path, "trainer.remove_previous_ckpt=false").trainer.max_ckpt_to_keep is None
    with pytest.raises(ConfigError, match="remove_previous_ckpt"):
        _config(tmp_path, "trainer.remove_previous_ckpt=true", "trainer.max_ckpt_to_keep=3")


def test_every_fork_key_has_the_status_its_record_says():
    schema_keys = {key for key, *_ in describe(Config)}
    statuses = dict(key_statuses(schema_keys))
    moved = {m.key for m in MOVED}
    for fork in FORK_KEYS:
        assert fork.key in statuses
        if fork.why.startswith("refused"):
            assert refusal(fork.key) is not None, fork.key
        else:
            assert fork.key in schema_keys and refusal(fork.key) is None, fork.key
        if fork.why.startswith("accepted as"):
            assert fork.key in moved


def rllm_rejection(uids, rewards, world_size):
    """rllm's (and Skywork-OR1's) rejection sampling in its ray_trainer, transcribed: the kept row indices."""
    uids = np.array(uids, dtype=object)
    valid_mask = torch.ones(len(uids), dtype=torch.bool)
    solve_none = solve_all = 0
    for uid in np.unique(uids):
        uid_mask = uids == uid
        uid_rewards = rewards[torch.as_tensor(uid_mask)]
        if (uid_rewards == 0).all():
            valid_mask[uid_mask] = False
            solve_none += 1
        elif (uid_rewards == 1).all():
            valid_mask[uid_mask] = False
            solve_all += 1
    rows = torch.arange(len(uids))[valid_mask]
    return rows[: (len(rows) // world_size) * world_size].tolist(), solve_all, solve_none


@pytest.mark.parametrize("world_size", [1, 4])
def test_rejection_rows_are_rllms_and_skyworks(world_size):
    gen = torch.Generator().manual_seed(3)
    n, groups = 4, 12
    rewards = torch.randint(0, 2, (groups * n,), generator=gen).float()
    rewards[:n] = 0  # a group solved by none
    rewards[n:2 * n] = 1  # one solved by all
    rewards[2 * n:3 * n] = torch.tensor([0.5, 0.5, 0.5, 0.5])  # uniform but neither 0 nor 1: kept, as there
    uids = [f"u{(i // n):02d}" for i in range(groups * n)]
    kept = rejection_rows(uids, rewards.tolist(), world_size)
    rows, solve_all, solve_none = rllm_rejection(uids, rewards, world_size)
    assert (kept.rows, kept.solve_all, kept.solve_none) == (rows, solve_all, solve_none)
    assert kept.solve_all >= 1 and kept.solve_none >= 1 and set(range(2 * n, 3 * n)) <= set(kept.rows)


def test_rejection_sample_trains_on_the_groups_not_all_0_or_all_1(tmp_path):
    trainer, batch, metrics = _experience(tmp_path, "trainer.rejection_sample=true",
                                          "trainer.rejection_sample_multiplier=2")
    try:
        assert trainer.loader.batch_size == 8  # train_batch_size 4 x 2 prompts, 2 samples each
        scores = batch["token_level_scores"].sum(-1)
        by_group = defaultdict(list)
        for uid, score in zip(batch.meta["uid"], scores.tolist()):
            by_group[uid].append(score)
        assert by_group and all(not (all(v == 0 for v in vals) or all(v == 1 for v in vals)) for vals in by_group.values())
        assert metrics["batch/solve_none"] >= 1  # the digits reward leaves some groups at 0: the option dropped them
        assert metrics["batch/solve_none"] + metrics["batch/solve_all"] + metrics["batch/solve_partial"] == 8
        assert metrics["batch/kept_samples"] == len(batch) == 2 * metrics["batch/solve_partial"]
        trainer.update(batch)  # a batch smaller than train_batch_size * n trains as it is
    finally:
        trainer.close()
    fitted = PPOTrainer(tiny_config(tmp_path / "fit", "algorithm.adv_estimator=grpo", "trainer.rejection_sample=true"))
    try:
        last = fitted.fit()
        assert fitted.global_step == 2 and "batch/kept_samples" in last
    finally:
        fitted.close()


def test_rejection_sample_does_not_combine_with_dapos_filter(tmp_path):
    with pytest.raises(ValueError, match="rejection_sample"):
        PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", "trainer.rejection_sample=true",
                               "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=score"))
