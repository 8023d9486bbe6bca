"""verl's ``trainer.balance_batch``: reorder a step's samples so that every data-parallel rank gets a like workload.

verl 0.9.1 (``RayPPOTrainer._balance_batch``, ``verl.utils.seqlen_balancing``)
estimates each sample's cost from its attended tokens (:func:`workloads`),
splits the batch into one equal-size group per rank with the Karmarkar-Karp
differencing method (:func:`balanced_partitions`), orders each group with its
lightest samples at both ends (:func:`zigzag`) and gives rank ``r`` group ``r``.
verl does this on one rank too, where it only reorders the batch: that changes
which samples share a mini-batch, so the updates differ from the unbalanced
order's, and this module reorders the same way to keep verl's results.

verl's ranks each take a contiguous share of the batch and cut it into
mini-batches; here each mini-batch is cut from the batch first and then shared
out (core/data_parallel.py). :func:`dispatch_order` lays the groups out so that
rank ``r`` receives, mini-batch by mini-batch, the very samples verl's rank
``r`` would.
"""
from __future__ import annotations

import heapq
from typing import Optional, Sequence

import torch

from rewardsmith.core.batch import Batch
from rewardsmith.core.dynamic_sampling import select_reward
from rewardsmith.plugins.batch import RewardOutput

METRIC_PREFIX = "global_seqlen"


def workloads(seqlens: Sequence[int]) -> list[int]:
    """Each sample's estimated cost from its token count (verl's ``calculate_workload``: a 7B model's
    ``24576 * n + n**2``, the dense layers' linear term and attention's quadratic one)."""
    return [24576 * n + n * n for n in seqlens]


def _part_key(part: list[tuple[int, int]]) -> tuple[int, int, list[tuple[int, int]]]:
    # A group's rank among groups: total, then size, then its (index, value) items -- verl's tie-breaking.
    return sum(value for _, value in part), len(part), part


class _Partial:
    """A partial solution: ``k`` groups of (index, value), heaviest first; ordered for a min-heap so that the
    one with the largest spread (then the heaviest first group) comes out first, as in verl."""

    def __init__(self, parts: list[list[tuple[int, int]]]) -> None:
        self.parts = sorted(parts, key=_part_key, reverse=True)
        self.spread = _part_key(self.parts[0])[0] - _part_key(self.parts[-1])[0]

    def __lt__(self, other: "_Partial") -> bool:
        if self.spread != other.spread:
            return self.spread > other.spread
        return _part_key(self.parts[0]) > _part_key(other.parts[0])

    def absorb(self, other: "_Partial") -> "_Partial":
        """The heaviest of ``self``'s groups joined with the lightest of ``other``'s, and so on."""
        return _Partial([mine + theirs for mine, theirs in zip(self.parts, reversed(other.parts))])


def balanced_partitions(values: Sequence[int], k: int) -> list[list[int]]:
    """``k`` groups of ``len(values) / k`` indices each whose sums of ``values`` are close (the
    Karmarkar-Karp largest-differencing method with equal sizes, verl's ``get_seqlen_balanced_partitions(...,
    equal_size=True)`` index for index); each group's indices ascending."""
    if k < 1 or len(values) % k:
        raise ValueError(f"cannot split {len(values)} samples into {k} equal groups")
    ranked = sorted((value, index) for index, value in enumerate(values))
    # Each run of k neighbours in value order starts as one partial solution, one sample per group.
    heap = [_Partial([[(index, value)] for value, index in ranked[start:start + k]])
            for start in range(0, len(ranked), k)]
    heapq.heapify(heap)
    while len(heap) > 1:
        first, second = heapq.heappop(heap), heapq.heappop(heap)
        heapq.heappush(heap, first.absorb(second))
    return [sorted(index for index, _ in part) for part in heap[0].parts]


def zigzag(group: Sequence[int], values: Sequence[int]) -> list[int]:
    """``group`` by rising value (then index), every other one out and the rest back: light samples at both
    ends, heavy ones in the middle (verl's order within a rank, against pipeline bubbles)."""
    rising = sorted(group, key=lambda i: (values[i], i))
    return rising[::2] + rising[1::2][::-1]


def rank_shares(seqlens: Sequence[int], ranks: int) -> list[list[int]]:
    """Each rank's samples (indices into ``seqlens``) in the order verl's ``_balance_batch`` gives them."""
    load = workloads(seqlens)
    return [zigzag(group, load) for group in balanced_partitions(load, ranks)]


def dispatch_order(shares: list[list[int]], mini_batch_size: int) -> list[int]:
    """The batch order under which cutting mini-batches of ``mini_batch_size`` and sharing each out over
    the ranks hands rank ``r`` the samples of ``shares[r]`` in order (verl's layout: a rank's contiguous
    share, cut into mini-batches of ``mini_batch_size / ranks``)."""
    ranks = len(shares)
    per_rank = max(1, mini_batch_size // ranks)
    return [index for start in range(0, len(shares[0]), per_rank) for share in shares
            for index in share[start:start + per_rank]]


def balance_metrics(seqlens: Sequence[int], shares: list[list[int]], prefix: str = METRIC_PREFIX) -> dict[str, float]:
    """verl's ``log_seqlen_unbalance``: the ranks' token totals before (contiguous shares of the unbalanced
    order) and after balancing."""
    size = len(seqlens) // len(shares)
    before = [sum(seqlens[start:start + size]) for start in range(0, len(seqlens), size)]
    after = [sum(seqlens[i] for i in share) for share in shares]
    return {f"{prefix}/min": float(min(before)), f"{prefix}/max": float(max(before)),
            f"{prefix}/minmax_diff": float(max(before) - min(before)), f"{prefix}/balanced_min": float(min(after)),
            f"{prefix}/balanced_max": float(max(after)), f"{prefix}/mean": sum(before) / len(shares)}


def balance_order(batch: Batch, ranks: int, mini_batch_size: int) -> tuple[list[int], dict[str, float]]:
    """The order ``trainer.balance_batch`` puts ``batch``'s samples in, with verl's balance metrics.
    The sample count must be a multiple of ``ranks`` (verl asserts the same)."""
    if len(batch) % ranks:
        raise ValueError(f"trainer.balance_batch: a batch of {len(batch)} samples cannot be split evenly over {ranks} "
                         "data-parallel ranks; make data.train_batch_size * rollout.n a multiple of the rank count, or "
                         "set trainer.balance_batch=false")
    seqlens = [int(n) for n in batch["attention_mask"].sum(-1).tolist()]
    shares = rank_shares(seqlens, ranks)
    return dispatch_order(shares, mini_batch_size), balance_metrics(seqlens, shares)


def balance_batch(batch: Batch, reward: Optional[RewardOutput], ranks: int,
                  mini_batch_size: int) -> tuple[Batch, Optional[RewardOutput], dict[str, float]]:
    """``batch`` (and its ``reward``, when already scored) reordered by :func:`balance_order`, with its metrics."""
    order, metrics = balance_order(batch, ranks, mini_batch_size)
    return batch.select(order), None if reward is None else select_reward(reward, order), metrics
