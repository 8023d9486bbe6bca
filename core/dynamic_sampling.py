"""DAPO dynamic sampling (``algorithm.filter_groups``), as verl's DAPO trainer does it.

A step keeps generating batches of ``data.gen_batch_size`` prompts, each
sampled ``rollout.n`` times and scored, and keeps only the groups (the
samples of one prompt) whose ``filter_groups.metric`` varies: a group where
every sample scored the same carries no GRPO signal. Once the kept groups
reach ``data.train_batch_size`` prompts, the first ``train_batch_size``
groups are the step's batch; after ``max_num_gen_batches`` generation batches
(0 = no limit) without enough groups the run stops with an error.

The metric is a per-sample value: ``seq_reward`` / ``seq_final_reward`` (the
sample's reward; the same here, since the KL-in-reward penalty is refused
with filtering), ``score``, or any key of the reward's extra info
(``acc`` from math_dapo, ...). A group is kept when the standard deviation of
its metric is > 0, or when it holds one sample (``rollout.n=1``), as in verl.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from rewardsmith.core.batch import Batch
from rewardsmith.core.reward_chunks import concat_samples
from rewardsmith.plugins.batch import RewardOutput

SEQ_METRICS = ("seq_reward", "seq_final_reward")


class GenerationBudgetExhausted(ValueError):
    """``max_num_gen_batches`` generation batches did not yield enough varied groups (a ValueError, as in verl)."""


def metric_values(metric: str, reward: RewardOutput) -> list[Any]:
    """Each sample's value of ``metric`` (see the module docstring), None for an unscored sample
    (its score is a placeholder); raises naming what exists."""
    if metric in SEQ_METRICS:
        # The sum of the sample's token-level scores, as verl computes it.
        seq = reward.scores if reward.token_level_scores is None else reward.token_level_scores.sum(-1)
        values = seq.tolist()
    elif metric in reward.extra_info:
        values = list(reward.extra_info[metric])
    else:
        raise KeyError(f"algorithm.filter_groups.metric={metric!r} is neither seq_reward, seq_final_reward nor a key of "
                       f"the reward's extra info ({', '.join(sorted(reward.extra_info)) or 'none'})")
    unscored = reward.unscored.tolist() if reward.unscored is not None else [False] * len(values)
    return [None if bad else value for value, bad in zip(values, unscored)]


def varied_groups(uids: Sequence[str], values: Sequence[Any]) -> list[str]:
    """The uids, in first-seen order, whose group's values have a nonzero (population) std, or one sample."""
    groups: dict[str, list[float]] = defaultdict(list)
    for uid, value in zip(uids, values):
        # A sample no component scored has no value; it neither varies a group nor keeps it uniform.
        groups[uid].append(float("nan") if value is None else float(value))
    kept = []
    for uid, vals in groups.items():
        numbers = torch.tensor([v for v in vals if v == v], dtype=torch.float64)
        if len(vals) == 1 or (numbers.numel() > 1 and numbers.std(unbiased=False).item() > 0):
            kept.append(uid)
    return kept


def select_reward(reward: RewardOutput, rows: list[int]) -> RewardOutput:
    """The reward of the samples at ``rows``, in that order."""
    index = torch.as_tensor(rows, dtype=torch.long)
    return RewardOutput(
        scores=reward.scores[index],
        extra_info={k: [v[i] for i in rows] for k, v in reward.extra_info.items()},
        metrics=dict(reward.metrics),
        token_level_scores=None if reward.token_level_scores is None else reward.token_level_scores[index],
        unscored=None if reward.unscored is None else reward.unscored[index],
    )


def concat_rewards(rewards: list[RewardOutput]) -> RewardOutput:
    """One reward for the concatenated samples; metrics are averaged over the generation batches, as in verl."""
    metric_keys = {k for r in rewards for k in r.metrics}
    return concat_samples(rewards, {k: sum(r.metrics[k] for r in rewards if k in r.metrics) / sum(k in r.metrics for r in rewards)
                                    for k in metric_keys})


def concat_generated(batches: list[Batch], pad_token_id: int) -> Batch:
    """Concatenate generated batches whose prompts were padded to different widths.

    Responses are always ``max_response_length`` wide, so a tensor whose width
    differs between batches holds the left-padded prompt: it is padded further
    on the left (``pad_token_id`` for token ids, 0 for masks).
    """
    widths = {k: max(b[k].shape[1] for b in batches) for k in batches[0].tensors if batches[0][k].dim() > 1}
    padded = []
    for b in batches:
        tensors = {}
        for k, v in b.tensors.items():
            missing = widths.get(k, 0) - (v.shape[1] if v.dim() > 1 else 0)
            value = pad_token_id if k in ("prompts", "input_ids") else 0
            tensors[k] = F.pad(v, (missing, 0), value=value) if missing > 0 else v
        padded.append(Batch(tensors, b.meta))
    return Batch.concat(padded)


def keep_varied(batch: Batch, reward: RewardOutput, metric: str) -> tuple[Batch, RewardOutput, int]:
    """The samples of ``batch`` whose group varies in ``metric``; returns them, their reward and the group count."""
    uids = batch.meta["uid"]
    kept = set(varied_groups(uids, metric_values(metric, reward)))
    rows = [i for i, uid in enumerate(uids) if uid in kept]
    return batch.select(rows), select_reward(reward, rows), len(kept)


def leading_varied_groups(parts: Sequence[tuple[Sequence[int], Batch]], rewards: Sequence[RewardOutput], metric: str) -> int:
    """How many groups vary in ``metric`` among the first prompts of the batch, up to the first one not yet scored.

    ``parts`` are the generated parts (each: its prompts' indices in the batch, their samples), scored
    in order by ``rewards`` (fewer while scoring runs). Only that leading run counts: with it, the groups
    :func:`first_groups` keeps are those it would keep from the whole batch, whatever order the parts came in.
    """
    varies: dict[int, bool] = {}
    for (prompts, samples), reward in zip(parts, rewards):
        groups = list(dict.fromkeys(samples.meta["uid"]))  # a part's groups, in its prompts' order
        kept = set(varied_groups(samples.meta["uid"], metric_values(metric, reward)))
        varies.update((p, uid in kept) for p, uid in zip(prompts, groups))
    leading = 0
    while leading in varies:
        leading += 1
    return sum(varies[p] for p in range(leading))


def first_groups(batch: Batch, reward: RewardOutput, n_groups: int) -> tuple[Batch, RewardOutput]:
    """The samples of the first ``n_groups`` groups (verl: ``batch[:train_batch_size * n]``)."""
    seen: list[str] = []
    rows: list[int] = []
    for i, uid in enumerate(batch.meta["uid"]):
        if uid not in seen:
            if len(seen) == n_groups:
                break
            seen.append(uid)
        rows.append(i)
    return batch.select(rows), select_reward(reward, rows)


def budget_message(num_gen_batches: int, max_num_gen_batches: int, kept: int, wanted: int, metric: str) -> str:
    """The error for a step that ran out of generation batches."""
    return (f"algorithm.filter_groups: {num_gen_batches} generation batches (max_num_gen_batches={max_num_gen_batches}) "
            f"yielded {kept} groups whose {metric} varies, fewer than data.train_batch_size={wanted}. The data may be "
            "too easy or too hard for the model; raise max_num_gen_batches, or set it to 0 to keep generating")
