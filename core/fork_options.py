"""Algorithm options of popular verl forks, each as its fork computes it.

- ``algorithm.mask_truncated_samples`` (rllm / DeepScaleR): a truncated
  response that scored 0 gets advantage 0 (:func:`mask_truncated_advantages`);
- ``trainer.remove_clip`` (SimpleRL-Zoo): truncated responses leave the losses
  (the trainer drops them with :func:`truncated`, as it drops unscored samples);
- ``actor_rollout_ref.actor.adaptive_entropy.*`` (Skywork-OR1): the entropy
  coefficient moves toward a target entropy step by step
  (:class:`EntropyControl`, :func:`sampled_entropy`);
- ``trainer.rejection_sample`` (rllm / DeepScaleR, Skywork-OR1): the groups
  whose rewards are all 0 or all 1 leave the step's batch (:func:`rejection_rows`).

docs/training.md ("Options of verl forks") names the projects and what differs.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Optional, Sequence

import torch


def truncated(response_mask: torch.Tensor, max_response_length: int) -> torch.Tensor:
    """(B,) bool: the responses that reached ``max_response_length`` tokens (cut at the length limit)."""
    return response_mask.sum(-1) >= max_response_length


def mask_truncated_advantages(advantages: torch.Tensor, scores: torch.Tensor, cut: torch.Tensor) -> torch.Tensor:
    """rllm's mask_truncated_samples: ``A_i = 0`` where ``cut_i`` and ``score_i == 0``, else ``A_i`` unchanged.

    ``advantages`` is (B, R), ``scores`` (B,) each sample's summed reward,
    ``cut`` (B,) from :func:`truncated`. As in rllm, the group statistics are
    those computed with every sample: only the masked samples' advantages change,
    and their tokens still count in the loss's token mean (with advantage 0).
    """
    drop = cut & (scores == 0)
    return advantages.masked_fill(drop.unsqueeze(-1), 0.0)


def sampled_entropy(old_log_probs: torch.Tensor, response_mask: torch.Tensor) -> float:
    """Skywork-OR1's entropy measure: ``-sum(mask * old_log_prob) / sum(mask)`` over the step's response tokens."""
    return float(-(old_log_probs * response_mask).sum() / response_mask.sum().clamp(min=1))


@dataclass(frozen=True)
class EntropyControl:
    """Skywork-OR1's adaptive entropy coefficient (its ``EntController``).

    A step's entropy bonus is ``coeff * enabled``. After the step, with
    ``H`` its :func:`sampled_entropy` and ``T`` the target:
    ``coeff' = clip(coeff + delta if H < T else coeff - delta, low, high)`` and
    ``enabled' = H < T``. The first step uses ``actor.entropy_coeff`` enabled.
    """

    coeff: float
    enabled: bool = True

    @property
    def realized(self) -> float:
        """The coefficient the step's loss uses."""
        return self.coeff if self.enabled else 0.0

    def next(self, entropy: float, target: float, delta: float, low: float, high: float) -> "EntropyControl":
        """The control for the next step, after a step whose entropy was ``entropy``."""
        below = entropy < target
        coeff = self.coeff + delta if below else self.coeff - delta
        return EntropyControl(min(max(coeff, low), high), below)


@dataclass(frozen=True)
class Rejection:
    """What :func:`rejection_rows` kept: the rows, and the groups all solved (all 1) and none solved (all 0)."""

    rows: list[int]
    solve_all: int
    solve_none: int


def rejection_rows(uids: Sequence[str], rewards: Sequence[Optional[float]], ranks: int) -> Rejection:
    """rllm's and Skywork-OR1's rejection sampling: the rows to train on.

    A group (the samples of one uid) whose rewards are all 0 ("solve none") or
    all 1 ("solve all") is dropped; the remaining rows, in order, are cut to a
    multiple of ``ranks`` from the end, as the forks do (a group at the end may
    lose samples). ``None`` marks an unscored sample: it neither makes a group
    uniform nor varies it. Every row kept still needs its own score.
    """
    groups: dict[str, list[float]] = defaultdict(list)
    for uid, reward in zip(uids, rewards):
        if reward is not None:
            groups[uid].append(float(reward))
    solve_none = {uid for uid, values in groups.items() if all(v == 0 for v in values)}
    solve_all = {uid for uid, values in groups.items() if uid not in solve_none and all(v == 1 for v in values)}
    rows = [i for i, uid in enumerate(uids) if uid not in solve_none and uid not in solve_all]
    return Rejection(rows[: len(rows) // ranks * ranks], len(solve_all), len(solve_none))
