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
from rewardsmith.plugins.batch import RewardOutput

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
    # The optimal token baseline's per-token inputs: the actor's log-probs and sum_v pi(v)^2.
    old_log_probs = -torch.rand(b, t, generator=g) * 2 * mask
    sum_pi_squared = torch.rand(b, t, generator=g) * 0.5 * mask
    return dict(token_level_rewards=rewards, response_mask=mask, values=values, gamma=0.9, lam=0.95,
                reward_baselines=baselines, old_log_probs=old_log_probs, sum_pi_squared=sum_pi_squared)


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


# Custom rewards that leave about a third of the responses unscored, three ways: abstaining (None),
# a verifier's third verdict (undecided, with why), and an exception (no component could score it).
PAY = "sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))"
UNSCORING_REWARDS = {
    "abstain": "return None",
    "undecided": 'return {"score": None, "verdict": "undecided", "why": "cannot read the answer"}',
    "failed": 'raise ValueError("cannot parse " + solution_str)',
}


def unscoring_reward(tmp_path, how: str, modulus: int = 3, key: str = "solution_str"):
    path = tmp_path / f"unscoring_{how}.py"
    path.write_text(f"""
import zlib

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if zlib.crc32(({key}).encode()) % {modulus} == 0:
        {UNSCORING_REWARDS[how]}
    return {PAY}
""")
    return path


@pytest.mark.parametrize("how", sorted(UNSCORING_REWARDS))
def test_training_step_leaves_unscored_samples_out(tmp_path, how):
    reward = unscoring_reward(tmp_path, how)
    overrides = (f"custom_reward_function.path={reward}", "algorithm.adv_estimator=grpo", "data.train_batch_size=8",
                 "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                 "reward_model.stop_when_all_fail=false")
    trainer = PPOTrainer(tiny_config(tmp_path, *overrides))
    try:
        trainer.global_step = 1
        batch, metrics = trainer.make_experience(next(iter(trainer.loader)))
        unscored, uid = batch["unscored"], batch.meta["uid"]
        mixed = {u for u, bad in zip(uid, unscored.tolist()) if bad} & {u for u, bad in zip(uid, unscored.tolist()) if not bad}
        assert mixed, "the seed must give a group with scored and unscored samples; change the reward's modulus"
        assert metrics["reward/unscored"] == float(unscored.sum())
        assert metrics["reward/undecided"] == (float(unscored.sum()) if how == "undecided" else 0.0)
        if how == "undecided":
            for source in set(batch.meta["data_source"]):
                rows = [i for i, src in enumerate(batch.meta["data_source"]) if src == source]
                assert metrics[f"reward/source/{source}/undecided"] == float(unscored[rows].sum())
        assert metrics["reward/unscored_groups"] == float(len({u for u, bad in zip(uid, unscored.tolist()) if bad}))
        assert torch.count_nonzero(batch["advantages"][unscored]) == 0
        keep = torch.nonzero(~unscored).squeeze(-1)
        expected, _ = BUILTIN_ESTIMATORS["grpo"](token_level_rewards=batch["token_level_rewards"][keep],
                                                 response_mask=batch["response_mask"][keep], index=[uid[i] for i in keep])
        torch.testing.assert_close(batch["advantages"][keep], expected)
        # The update on the whole batch equals the update on the scored samples alone:
        # same loss, same gradient (a twin trainer starts from the same weights).
        twin = PPOTrainer(tiny_config(tmp_path / "twin", f"custom_reward_function.path={reward}", *overrides[1:]))
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


def test_undecided_samples_are_abstentions_with_their_reason(make_config, tmp_path):
    from rewardsmith.plugins.batch import RewardBatch
    from rewardsmith.plugins.factory import build_reward_manager

    reward = unscoring_reward(tmp_path, "undecided", modulus=1)  # undecided on every response
    cfg = make_config(f"custom_reward_function.path={reward}", "reward_model.fallback_score=-5")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["a", "b"], ["x", "y"], ["1", "1"]))
    info = out.extra_info
    assert out.unscored.tolist() == [True, True] and info["unscored"] == [True, True]
    assert info["reward_status"] == ["abstain"] * 2 and info["verdict"] == ["undecided"] * 2
    assert info["why"] == ["cannot read the answer"] * 2
    assert out.metrics["reward/source/a/undecided"] == 1.0 and out.metrics["reward/undecided"] == 2.0
    # No mean of placeholders: nothing was scored, so there is no mean, only counts.
    assert "reward/mean" not in out.metrics and "reward/source/a/mean" not in out.metrics


@pytest.mark.parametrize("how", ["abstain", "failed"])
def test_reported_means_leave_unscored_samples_out(tmp_path, how):
    """Every reward mean of a step and of validation is over scored samples (all in [0, 1] here),
    however far the placeholder (-5) is; the unscored ones are counted beside them."""
    reward = unscoring_reward(tmp_path, how)
    trainer = PPOTrainer(tiny_config(tmp_path, f"custom_reward_function.path={reward}", "reward_model.fallback_score=-5",
                                     "reward_model.stop_when_all_fail=false", "data.train_batch_size=8",
                                     "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                                     # Sampled, so that validation responses differ and some are scored.
                                     "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
                                     "actor_rollout_ref.rollout.val_kwargs.temperature=1.0"))
    try:
        trainer.global_step = 1
        metrics = trainer.train_step(next(iter(trainer.loader)))
        metrics.update(trainer.validate())
    finally:
        trainer.close()
    assert metrics["reward/unscored"] > 0 and metrics["val/reward/unscored"] > 0
    means = {k: v for k, v in metrics.items() if k.endswith(("/mean", "/min", "/max"))
             and k.startswith(("reward/", "critic/score/", "critic/rewards/", "val/reward/"))}
    assert {"reward/mean", "critic/score/mean", "critic/score/min", "critic/rewards/mean", "val/reward/mean"} <= set(means)
    assert any(k.startswith("reward/source/") for k in means) and any(k.startswith("val/reward/source/") for k in means)
    assert all(0.0 <= v <= 1.0 for v in means.values()), {k: v for k, v in means.items() if not 0.0 <= v <= 1.0}


def test_remax_leaves_out_samples_whose_greedy_baseline_is_unscored(tmp_path):
    # Keyed on the ground truth too: an untrained model's greedy response is the same text for every prompt.
    reward = unscoring_reward(tmp_path, "abstain", key="solution_str + str(ground_truth)")
    overrides = (f"custom_reward_function.path={reward}", "algorithm.adv_estimator=remax", "data.train_batch_size=8",
                 "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                 "reward_model.fallback_score=-5")
    trainer = PPOTrainer(tiny_config(tmp_path, *overrides))
    try:
        trainer.global_step = 1
        prompts = next(iter(trainer.loader))
        batch, metrics = trainer.make_experience(prompts)
        uid = batch.meta["uid"]
        # Greedy decoding is deterministic: the same baselines the step used.
        baselines, no_baseline = trainer.greedy_baselines(prompts, uid, {})
    finally:
        trainer.close()
    assert no_baseline.any() and not no_baseline.all(), "the seed must give scored and unscored greedy responses"
    assert metrics["reward/unscored_baselines"] == float(len({u for u, bad in zip(uid, no_baseline.tolist()) if bad}))
    unscored = batch["unscored"]
    assert torch.equal(unscored & no_baseline, no_baseline)  # every sample without a baseline is left out
    assert torch.count_nonzero(batch["advantages"][no_baseline]) == 0
    keep = torch.nonzero(~unscored).squeeze(-1)
    expected, _ = BUILTIN_ESTIMATORS["remax"](token_level_rewards=batch["token_level_rewards"][keep],
                                              response_mask=batch["response_mask"][keep], reward_baselines=baselines[keep])
    torch.testing.assert_close(batch["advantages"][keep], expected)


def test_score_summary_mean_leaves_unscored_samples_out(tmp_path, capsys):
    from rewardsmith.cli import main
    from rewardsmith.common.rows import write_rows

    reward = tmp_path / "picky.py"
    reward.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    if solution_str == 'garbled':\n        raise ValueError('cannot parse')\n    return 1.0\n")
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "a", "prompt": "p", "reward_model": {"style": "rule", "ground_truth": "1"},
                      "response": ["fine", "also fine", "garbled"]}])
    assert main(["score", str(src), f"custom_reward_function.path={reward}", "reward_model.fallback_score=-5"]) == 0
    header, _rule, row, total = capsys.readouterr().out.splitlines()[:4]
    cells = dict(zip(header.split()[1:], total.split()[1:]))
    assert cells["samples"] == "3" and cells["mean"] == "1.000" and cells["unscored"] == "1" and cells["errors"] == "1"


def test_trl_reward_function_gives_none_for_unscored_samples(tmp_path):
    import rewardsmith

    reward = rewardsmith.trl_reward_func(overrides=[f"custom_reward_function.path={unscoring_reward(tmp_path, 'undecided', modulus=1)}",
                                                    "reward_model.fallback_score=-5"])
    try:
        assert reward(prompts=["p"] * 2, completions=["1", "2"], data_source=["a"] * 2, ground_truth=["1"] * 2) == [None, None]
    finally:
        reward.close()


def test_a_run_with_undecided_samples_logs_them_every_step(tmp_path):
    """Two steps of GRPO where a verifier is undecided on about a third of the responses: each step
    logs them (overall and per data_source), and its reward means are over the decided ones."""
    import json

    reward = unscoring_reward(tmp_path, "undecided")
    trainer = PPOTrainer(tiny_config(tmp_path, f"custom_reward_function.path={reward}", "algorithm.adv_estimator=grpo",
                                     "reward_model.fallback_score=-5", "data.train_batch_size=8",
                                     "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=8"))
    try:
        trainer.fit()
    finally:
        trainer.close()
    steps = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    train = [s for s in steps if "reward/undecided" in s and s["step"] > 0]
    assert [s["step"] for s in train] == [1, 2]
    for s in train:
        assert s["reward/undecided"] == s["reward/unscored"] > 0
        per_source = [v for k, v in s.items() if k.startswith("reward/source/") and k.endswith("/undecided")]
        assert per_source and sum(per_source) == s["reward/undecided"]
        assert 0.0 <= s["reward/mean"] <= 1.0 and 0.0 <= s["critic/score/min"] <= s["critic/score/max"] <= 1.0


def test_reward_outputs_old_field_name_masked_still_works_with_a_deprecation_warning():
    flags = torch.tensor([False, True])
    with pytest.warns(DeprecationWarning, match="RewardOutput.masked is renamed RewardOutput.unscored"):
        out = RewardOutput(scores=torch.zeros(2), masked=flags)
    assert out.unscored is flags
    with pytest.warns(DeprecationWarning, match="renamed RewardOutput.unscored"):
        assert out.masked is flags
    with pytest.raises(TypeError, match="unscored= or its deprecated name masked=, not both"):
        RewardOutput(scores=torch.zeros(2), unscored=flags, masked=flags)
    # Positional construction keeps the fields' order, the new name in the old one's place.
    assert RewardOutput(torch.zeros(2), {}, {}, None, flags).unscored is flags
