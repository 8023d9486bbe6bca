"""DAPO dynamic sampling (algorithm.filter_groups): the group filter, and tiny real training runs."""
from __future__ import annotations

import pytest
import torch

from core_helpers import tiny_config
from rewardsmith.common.errors import ConfigError
from rewardsmith.core.batch import Batch
from rewardsmith.core.dynamic_sampling import GenerationBudgetExhausted, concat_generated, varied_groups
from rewardsmith.core.trainer import PPOTrainer

# Rows whose gold is even score the same for every response (a uniform group, filtered
# out); the others score each response by its length's parity (groups usually vary).
PARITY_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if int(ground_truth) % 2 == 0:
        return {"score": 0.5, "acc": True}
    return {"score": float(len(solution_str) % 2), "acc": len(solution_str) % 2 == 1}
'''


def test_varied_groups_keeps_groups_whose_metric_varies_or_single_samples():
    uids = ["a", "a", "b", "b", "c", "d", "d", "e", "e"]
    values = [1.0, 0.0, 0.5, 0.5, 1.0, True, True, None, 1.0]
    # a varies; b and d are uniform; c is one sample (n=1 keeps it, as verl); e has one value left.
    assert varied_groups(uids, values) == ["a", "c"]


def test_an_unscored_placeholder_does_not_make_a_group_vary():
    from rewardsmith.core.dynamic_sampling import metric_values
    from rewardsmith.plugins.batch import RewardOutput

    # Group "a": two scored samples at 1.0 and an unscored one at the placeholder -5: uniform, filtered out.
    reward = RewardOutput(scores=torch.tensor([1.0, 1.0, -5.0, 0.0, 1.0]), extra_info={"acc": [True, True, False, False, True]},
                          unscored=torch.tensor([False, False, True, False, False]))
    uids = ["a", "a", "a", "b", "b"]
    for metric in ("seq_reward", "score", "acc"):
        if metric == "score":
            reward.extra_info["score"] = reward.scores.tolist()
        assert varied_groups(uids, metric_values(metric, reward)) == ["b"], metric


def test_concat_generated_left_pads_narrower_prompts():
    narrow = Batch({"prompts": torch.tensor([[5, 6]]), "responses": torch.tensor([[7, 8, 9]]),
                    "attention_mask": torch.tensor([[1, 1, 1, 1, 0]])}, {"uid": ["x"]})
    wide = Batch({"prompts": torch.tensor([[1, 2, 3]]), "responses": torch.tensor([[4, 0, 0]]),
                  "attention_mask": torch.tensor([[1, 1, 1, 1, 0, 0]])}, {"uid": ["y"]})
    out = concat_generated([narrow, wide], pad_token_id=0 + 99)
    assert out["prompts"].tolist() == [[99, 5, 6], [1, 2, 3]]
    assert out["responses"].tolist() == [[7, 8, 9], [4, 0, 0]]
    assert out["attention_mask"].tolist() == [[0, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]]
    assert out.meta["uid"] == ["x", "y"]


def _trainer(tmp_path, *overrides, reward_source=PARITY_REWARD):
    # Generation batches of 2 prompts for steps of 3 groups: every step concatenates several.
    config = tiny_config(tmp_path, "algorithm.adv_estimator=grpo", "data.train_batch_size=3", "data.gen_batch_size=2",
                         "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=3",
                         "data.val_files=[]", *overrides)
    reward = tmp_path / "parity.py"
    reward.write_text(reward_source)
    config.custom_reward_function.path = str(reward)
    return PPOTrainer(config)


def _record(trainer, name):
    calls = []
    original = getattr(trainer.actor, name)

    def recorded(batch, *args):
        calls.append(batch)
        return original(batch, *args)

    setattr(trainer.actor, name, recorded)
    return calls


@pytest.mark.parametrize("metric", ["acc", "seq_reward"])
def test_training_keeps_only_varied_groups(tmp_path, metric):
    trainer = _trainer(tmp_path, "algorithm.filter_groups.enable=true", f"algorithm.filter_groups.metric={metric}")
    generated = _record(trainer, "generate_stream")
    updates = _record(trainer, "update")
    last = trainer.fit()
    assert trainer.global_step == 2 and len(updates) == 2
    # Each step trained on exactly train_batch_size groups of n samples, none with an even gold.
    for minibatches in updates:
        golds = [g for mb in minibatches for g in mb.batch.meta["ground_truth"]]
        assert len(golds) == 3 * 4 * trainer.config.actor_rollout_ref.actor.ppo_epochs
        assert all(int(g) % 2 == 1 for g in golds)
        assert len(set(mb.batch.meta["uid"][0] for mb in minibatches)) >= 1
    assert len(generated) >= 4  # at least two generation batches per step
    assert all(len(b) == 2 for b in generated)  # prompts per generation batch (expanded to n inside)
    assert last["train/num_gen_batches"] >= 2 and last["train/num_kept_groups"] >= 3
    assert 0 < last["train/kept_group_ratio"] <= 1


def test_a_step_that_runs_out_of_generation_batches_stops_clearly(tmp_path):
    trainer = _trainer(tmp_path, "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=seq_reward",
                       "algorithm.filter_groups.max_num_gen_batches=3",
                       reward_source="def compute_score(*args, **kwargs):\n    return 1.0\n")  # every group uniform
    generated = _record(trainer, "generate_stream")
    with pytest.raises(GenerationBudgetExhausted, match=r"3 generation batches \(max_num_gen_batches=3\) yielded 0 groups "
                                                        r"whose seq_reward varies, fewer than data.train_batch_size=3"):
        trainer.fit()
    assert len(generated) == 3


def test_filter_groups_needs_a_metric(make_config):
    with pytest.raises(ConfigError, match="algorithm.filter_groups.metric must be set"):
        make_config("algorithm.filter_groups.enable=true")


def test_without_filtering_a_step_trains_on_one_generation_batch(tmp_path):
    # verl's loader batch is data.gen_batch_size, filtering or not.
    trainer = _trainer(tmp_path, "actor_rollout_ref.actor.ppo_mini_batch_size=2")
    updates = _record(trainer, "update")
    last = trainer.fit()
    assert [sum(len(mb.batch) for mb in minibatches) for minibatches in updates] == [2 * 4] * 2
    assert "train/num_gen_batches" not in last


def test_filtering_refuses_the_in_reward_kl_penalty(tmp_path):
    with pytest.raises(ValueError, match="cannot be combined with algorithm.use_kl_in_reward"):
        _trainer(tmp_path, "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=acc",
                 "algorithm.use_kl_in_reward=true")


def test_only_the_leading_run_of_scored_prompts_counts_its_varied_groups():
    from rewardsmith.core.batch import prompt_order
    from rewardsmith.core.dynamic_sampling import leading_varied_groups
    from rewardsmith.plugins.batch import RewardOutput

    def part(prompts: list[int], scores: list[float]) -> tuple[tuple[list[int], Batch], RewardOutput]:
        uids = [f"u{p}" for p in prompts for _ in range(2)]  # two samples per prompt
        return (prompts, Batch({"x": torch.zeros(len(uids))}, {"uid": uids})), RewardOutput(scores=torch.tensor(scores))

    # Prompts 2 and 3 come first (both vary), then prompt 0 (varies), then prompt 1 (uniform).
    parts = [part([2, 3], [0.0, 1.0, 1.0, 0.0]), part([0], [1.0, 0.0]), part([1], [1.0, 1.0])]
    batches, rewards = [p for p, _ in parts], [r for _, r in parts]
    assert leading_varied_groups(batches[:1], rewards[:1], "seq_reward") == 0  # prompt 0 not in yet
    assert leading_varied_groups(batches[:2], rewards[:2], "seq_reward") == 1  # prompt 0; prompt 1 not in yet
    assert leading_varied_groups(batches, rewards, "seq_reward") == 3  # 0, 2 and 3 vary; 1 does not
    assert leading_varied_groups(batches, rewards[:2], "seq_reward") == 1  # prompt 1 generated, not yet scored
    # The samples back in the prompts' order: prompt 0 (rows 4, 5), 1 (6, 7), 2 (0, 1), 3 (2, 3).
    assert prompt_order([rows for rows, _ in batches], 2) == [4, 5, 6, 7, 0, 1, 2, 3]
