"""Unscored samples (no reward component could score them) leave the group statistics,
the advantages and the loss: the others get what they would get had it never been sampled."""
import pytest
import torch

from core_helpers import tiny_config

from rewardsmith.core.advantages import BUILTIN_ESTIMATORS
from rewardsmith.core.batch import Batch, mini_batches
from rewardsmith.core.losses import agg_loss, micro_batch_weight
from rewardsmith.core.reward_masking import affected_groups, loss_tokens
from rewardsmith.core.trainer import PPOTrainer

# Two groups of four and one of three, ragged response lengths.
INDEX = ["a"] * 4 + ["b"] * 4 + ["c"] * 3
LENGTHS = [5, 3, 6, 2, 4, 6, 1, 5, 3, 6, 4]
UNSCORED = 2  # a sample of group "a"
PLACEHOLDER = 7.0  # what the manager put in its place (reward_model.fallback_score): far from the others


def make_inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    b, t = len(INDEX), max(LENGTHS)
    mask = (torch.arange(t).expand(b, t) < torch.tensor(LENGTHS).unsqueeze(-1)).float()
    # Per-token rewards (a KL penalty) plus an outcome score on the last valid token.
    rewards = 0.05 * torch.randn(b, t, generator=g) * mask
    last = torch.tensor(LENGTHS) - 1
    rewards[torch.arange(b), last] += torch.randint(0, 2, (b,), generator=g).float()
    rewards[UNSCORED, last[UNSCORED]] = PLACEHOLDER
    values = torch.randn(b, t, generator=g) * mask
    # ReMax's baseline: each prompt's greedy-response reward.
    baselines = torch.randint(0, 2, (b,), generator=g).float()
    return dict(token_level_rewards=rewards, response_mask=mask, values=values, gamma=0.9, lam=0.95,
                reward_baselines=baselines)


def run(name, inputs, index, **extra):
    return BUILTIN_ESTIMATORS[name](**inputs, index=index, **extra)


def without(inputs, row):
    keep = [i for i in range(len(INDEX)) if i != row]
    out = {k: (v[keep] if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    return out, [INDEX[i] for i in keep], keep


@pytest.mark.parametrize("name", sorted(BUILTIN_ESTIMATORS))
@pytest.mark.parametrize("norm", [True, False])
def test_an_unscored_sample_leaves_the_group(name, norm):
    inputs = make_inputs()
    scored = torch.ones(len(INDEX), dtype=torch.bool)
    scored[UNSCORED] = False
    adv, ret = run(name, inputs, INDEX, scored=scored, norm_adv_by_std_in_grpo=norm)
    sub_inputs, sub_index, keep = without(inputs, UNSCORED)
    sub_adv, sub_ret = run(name, sub_inputs, sub_index, norm_adv_by_std_in_grpo=norm)
    # The others get exactly what the group without that sample gives them.
    torch.testing.assert_close(adv[keep], sub_adv, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ret[keep], sub_ret, rtol=1e-6, atol=1e-6)
    # The unscored sample teaches nothing and is no critic target.
    assert torch.count_nonzero(adv[UNSCORED]) == 0 and torch.count_nonzero(ret[UNSCORED]) == 0
    # And the placeholder would have moved them: the test can tell the difference
    # (ReMax compares each sample with its own baseline alone: nothing to leave).
    if name != "remax":
        blind, _ = run(name, inputs, INDEX, norm_adv_by_std_in_grpo=norm)
        assert not torch.allclose(blind[keep], sub_adv, atol=1e-3)


@pytest.mark.parametrize("name", sorted(BUILTIN_ESTIMATORS))
def test_all_scored_is_the_same_as_no_mask(name):
    inputs = make_inputs(1)
    plain = run(name, inputs, INDEX)
    masked = run(name, inputs, INDEX, scored=torch.ones(len(INDEX), dtype=torch.bool))
    for a, b in zip(plain, masked):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", ["grpo", "rloo", "reinforce_plus_plus_baseline"])
def test_a_group_left_with_one_scored_sample_is_a_group_of_one(name):
    inputs = make_inputs(2)
    scored = torch.tensor([i not in (8, 9) for i in range(len(INDEX))])  # group "c" keeps only sample 10
    adv, _ = run(name, inputs, INDEX, scored=scored)
    sub_inputs = {k: (v[[0, 1, 2, 3, 4, 5, 6, 7, 10]] if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    sub_adv, _ = run(name, sub_inputs, INDEX[:8] + ["c"])
    torch.testing.assert_close(adv[scored], sub_adv, rtol=1e-6, atol=1e-6)


def test_scored_must_match_the_batch():
    with pytest.raises(ValueError, match="scored"):
        run("grpo", make_inputs(), INDEX, scored=torch.ones(3, dtype=torch.bool))


def test_affected_groups_counts_distinct_groups():
    unscored = torch.zeros(len(INDEX), dtype=torch.bool)
    assert affected_groups(INDEX, unscored) == 0
    unscored[[0, 2, 9]] = True  # two in "a", one in "c"
    assert affected_groups(INDEX, unscored) == 2


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_unscored_samples_leave_the_loss_and_its_counts(mode):
    """A mini-batch's loss with an unscored sample equals the loss of the mini-batch without it."""
    g = torch.Generator().manual_seed(3)
    mask = make_inputs()["response_mask"]
    losses = torch.rand(mask.shape, generator=g)
    unscored = torch.zeros(len(INDEX), dtype=torch.bool)
    unscored[[UNSCORED, 9]] = True
    batch = Batch({"response_mask": loss_tokens(mask, unscored), "loss": losses})
    (mini,) = mini_batches(batch, len(INDEX), 1, False, g)
    assert mini.tokens == float(mask[~unscored].sum()) and mini.samples == len(INDEX) - 2
    got = sum(agg_loss(m["loss"], m["response_mask"], mode, micro_batch_weight(m["response_mask"], mini.tokens, mini.samples, mode))
              for m in mini.batch.chunks(3))
    expected = agg_loss(losses[~unscored], mask[~unscored], mode)
    torch.testing.assert_close(got, expected)


# A custom reward that abstains (returns None) on about a third of the responses.
ABSTAINING_REWARD = '''
import zlib

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if zlib.crc32(solution_str.encode()) % 3 == 0:
        return None
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
'''


def test_training_step_leaves_unscored_samples_out(tmp_path):
    reward = tmp_path / "abstaining.py"
    reward.write_text(ABSTAINING_REWARD)
    overrides = (f"custom_reward_function.path={reward}", "algorithm.adv_estimator=grpo", "data.train_batch_size=8",
                 "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=8")
    trainer = PPOTrainer(tiny_config(tmp_path, *overrides))
    try:
        trainer.global_step = 1
        batch, metrics = trainer.make_experience(next(iter(trainer.loader)))
        unscored, uid = batch["unscored"], batch.meta["uid"]
        mixed = {u for u, bad in zip(uid, unscored.tolist()) if bad} & {u for u, bad in zip(uid, unscored.tolist()) if not bad}
        assert mixed, "the seed must give a group with scored and unscored samples; change the reward's modulus"
        assert metrics["reward/masked"] == float(unscored.sum())
        assert metrics["reward/unscored_groups"] == float(len({u for u, bad in zip(uid, unscored.tolist()) if bad}))
        assert torch.count_nonzero(batch["advantages"][unscored]) == 0
        keep = torch.nonzero(~unscored).squeeze(-1)
        expected, _ = BUILTIN_ESTIMATORS["grpo"](token_level_rewards=batch["token_level_rewards"][keep],
                                                 response_mask=batch["response_mask"][keep], index=[uid[i] for i in keep])
        torch.testing.assert_close(batch["advantages"][keep], expected)
        # The update on the whole batch equals the update on the scored samples alone:
        # same loss, same gradient (a twin trainer starts from the same weights).
        twin = PPOTrainer(tiny_config(tmp_path / "twin", *overrides))
        try:
            twin.global_step = 1
            alone = twin.update(batch.select(keep))
        finally:
            twin.close()
        metrics = trainer.update(batch)
        for key in ("actor/pg_loss", "actor/entropy", "actor/grad_norm"):
            assert metrics[key] == pytest.approx(alone[key], rel=1e-4, abs=1e-6), key
    finally:
        trainer.close()
