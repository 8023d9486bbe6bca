"""One reward output from several: the chunks of a streamed batch, or DAPO's generation batches.

Per-sample values (scores, extra info, token-level scores, unscored marks)
are concatenated in order. A streamed batch's metrics are those of one call
on the whole batch (:func:`chunk_metrics`); DAPO's generation batches keep
verl's average of per-batch metrics (:func:`rewardsmith.core.dynamic_sampling.concat_rewards`).
"""
from __future__ import annotations

from typing import Sequence

import torch

from rewardsmith.plugins.batch import RewardOutput

# What a component's scope counts beside its scored samples (plugins/managers/base.py).
_NOT_SCORED = ("failed", "timeouts", "abstained", "gated")
_RATE_SUFFIXES = ("_ratio", "_rate")
_SOURCE = "reward/source/"


def concat_samples(rewards: Sequence[RewardOutput], metrics: dict[str, float]) -> RewardOutput:
    """The samples of ``rewards`` in order, with ``metrics``."""
    keys = {k for r in rewards for k in r.extra_info}
    return RewardOutput(
        scores=torch.cat([r.scores for r in rewards]),
        extra_info={k: [v for r in rewards for v in r.extra_info.get(k, [None] * len(r.scores))] for k in sorted(keys)},
        metrics=metrics,
        token_level_scores=None if rewards[0].token_level_scores is None else torch.cat([r.token_level_scores for r in rewards]),
        unscored=None if rewards[0].unscored is None else torch.cat([r.unscored for r in rewards]),
    )


def _scored(metrics: dict[str, float], scope: str, size: int) -> float:
    """How many samples a chunk's ``<scope>/mean`` is the mean of."""
    if scope == "reward":
        return size - metrics.get("reward/unscored", 0.0)
    if f"{scope}/count" not in metrics:
        return float(size)
    count = metrics[f"{scope}/count"]
    if f"{scope}/unscored" in metrics:  # a data_source's scope
        return count - metrics[f"{scope}/unscored"]
    return count - sum(metrics.get(f"{scope}/{k}", 0.0) for k in _NOT_SCORED)  # a component's


def _sources(metrics: dict[str, float]) -> list[str]:
    """The data_sources of a chunk (only a data_source's scope counts unscored samples; a name may hold a slash)."""
    return [k[len(_SOURCE):-len("/unscored")] for k in metrics if k.startswith(_SOURCE) and k.endswith("/unscored")]


def _per_source(metrics: dict[str, float], sources: set[str]) -> dict[str, float]:
    """A chunk's metrics with its components' per-data_source scopes, which a manager leaves out when a call
    holds one data_source (they would repeat ``reward/<component>/*``) but a call on several gives."""
    own = _sources(metrics)
    if len(sources) < 2 or len(own) != 1:
        return metrics
    components = [k[len("reward/"):-len("/count")] for k in metrics
                  if k.endswith("/count") and not k.startswith(_SOURCE)]
    out = dict(metrics)
    for c in components:
        for key, value in metrics.items():
            if key.startswith(f"reward/{c}/"):
                out.setdefault(f"{_SOURCE}{own[0]}/{c}/{key[len(f'reward/{c}/'):]}", value)
    return out


def chunk_metrics(rewards: Sequence[RewardOutput]) -> dict[str, float]:
    """The reward managers' metrics of the chunks as one call's: a ``/mean`` is weighted by the samples
    it averages, a ratio or rate by the chunks' sizes, and every other metric (a count) is summed."""
    sizes = [len(r.scores) for r in rewards]
    sources = {s for r in rewards for s in _sources(r.metrics)}
    chunks = [_per_source(r.metrics, sources) for r in rewards]
    out: dict[str, float] = {}
    for key in sorted({k for m in chunks for k in m}):
        present = [(m, size) for m, size in zip(chunks, sizes) if key in m]
        if key.endswith("/mean"):
            weights = [_scored(m, key[: -len("/mean")], size) for m, size in present]
        elif key.endswith(_RATE_SUFFIXES):
            weights = [float(size) for _, size in present]
        else:
            out[key] = sum(m[key] for m, _ in present)
            continue
        if sum(weights) > 0:
            out[key] = sum(w * m[key] for w, (m, _) in zip(weights, present)) / sum(weights)
    return out


def concat_chunks(rewards: Sequence[RewardOutput]) -> RewardOutput:
    """The chunks' outputs as the output of one call on all their samples."""
    return concat_samples(rewards, chunk_metrics(rewards))
