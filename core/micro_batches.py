"""How a rank cuts its samples into micro-batches: verl's per-GPU sizes and dynamic batch size.

A micro-batch holds at most ``size`` samples (``*_micro_batch_size_per_gpu``,
or a global ``*_micro_batch_size`` divided by the data-parallel world size, as
verl divides it), or, with dynamic batch size, consecutive samples while their
valid tokens (prompt + response, padding excluded) fit ``max_tokens``
(``*_max_token_len_per_gpu``). Samples keep their order, so per-sample results
concatenate back in place. An update weights each micro-batch's loss by its
share of the mini-batch's global counts (:func:`micro_batch_weight`), so the
way a mini-batch is cut never changes its gradient, only the memory it needs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from rewardsmith.core.batch import Batch


@dataclass(frozen=True)
class MicroBatching:
    """``size`` samples per micro-batch (None: all), or ``max_tokens`` valid tokens with dynamic batch size."""

    size: Optional[int] = None
    max_tokens: Optional[int] = None
    budget_key: str = ""  # the config key of max_tokens, for the error on a sample longer than it


def micro_batching(per_gpu: Optional[int], global_size: Optional[int], world_size: int, dynamic: bool,
                   max_tokens: int, budget_key: str) -> MicroBatching:
    """A role's micro-batching from its verl keys; ``global_size`` is split over ``world_size`` ranks."""
    if dynamic:
        return MicroBatching(max_tokens=max_tokens, budget_key=budget_key)
    if per_gpu is None and global_size is not None:
        per_gpu = max(1, global_size // world_size)
    return MicroBatching(size=per_gpu)


def micro_batches(batch: Batch, how: MicroBatching) -> Iterator[Batch]:
    """``batch``'s consecutive micro-batches under ``how``."""
    if how.max_tokens is None:
        yield from batch.chunks(how.size or len(batch))
        return
    lengths = batch["attention_mask"].sum(-1).tolist()
    start, tokens = 0, 0
    for i, length in enumerate(lengths):
        if length > how.max_tokens:
            raise ValueError(f"{how.budget_key}={how.max_tokens} is smaller than sample {i}'s {int(length)} tokens "
                             "(prompt + response): raise it to at least data.max_prompt_length + data.max_response_length")
        if tokens + length > how.max_tokens:
            yield batch.select(range(start, i))
            start, tokens = i, 0
        tokens += length
    if start < len(lengths):
        yield batch.select(range(start, len(lengths)))
