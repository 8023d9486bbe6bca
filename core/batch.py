"""A batch of samples (named tensors sharing their first dimension, plus per-sample Python
values), and the mini-batches an update is cut into."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch


@dataclass
class Batch:
    """``tensors[k]`` has shape (B, ...); ``meta[k]`` is a list of B Python values."""

    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    meta: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        for value in self.tensors.values():
            return value.shape[0]
        for items in self.meta.values():
            return len(items)
        return 0

    def __getitem__(self, key: str) -> torch.Tensor:
        return self.tensors[key]

    def __setitem__(self, key: str, value: torch.Tensor) -> None:
        if len(self) and value.shape[0] != len(self):
            raise ValueError(f"batch tensor {key!r} has {value.shape[0]} rows, the batch has {len(self)}")
        self.tensors[key] = value

    def __contains__(self, key: str) -> bool:
        return key in self.tensors

    def select(self, rows: Sequence[int] | torch.Tensor) -> "Batch":
        """The samples at ``rows``, in that order."""
        index = torch.as_tensor(rows, dtype=torch.long)
        listed = index.tolist()
        return Batch(
            {k: v[index.to(v.device)] for k, v in self.tensors.items()},
            {k: [items[i] for i in listed] for k, items in self.meta.items()},
        )

    def chunks(self, size: int) -> Iterator["Batch"]:
        """Consecutive sub-batches of ``size`` samples (the last may be smaller)."""
        for start in range(0, len(self), size):
            yield self.select(range(start, min(start + size, len(self))))

    def to(self, device: torch.device | str) -> "Batch":
        return Batch({k: v.to(device) for k, v in self.tensors.items()}, dict(self.meta))

    @staticmethod
    def concat(batches: Sequence["Batch"]) -> "Batch":
        """The samples of ``batches``, one after the other (all must hold the same keys)."""
        if not batches:
            raise ValueError("Batch.concat needs at least one batch")
        first = batches[0]
        for other in batches[1:]:
            if other.tensors.keys() != first.tensors.keys() or other.meta.keys() != first.meta.keys():
                raise ValueError(
                    f"Batch.concat: batches hold different keys ({sorted(first.tensors) + sorted(first.meta)} "
                    f"vs {sorted(other.tensors) + sorted(other.meta)})"
                )
        return Batch(
            {k: torch.cat([b.tensors[k] for b in batches]) for k in first.tensors},
            {k: [item for b in batches for item in b.meta[k]] for k in first.meta},
        )

    def split(self, parts: int) -> list["Batch"]:
        """``parts`` consecutive sub-batches of equal size (pad first with :meth:`pad_to_multiple`)."""
        if parts < 1 or len(self) % parts:
            raise ValueError(f"cannot split a batch of {len(self)} samples into {parts} equal parts")
        return list(self.chunks(len(self) // parts)) if len(self) else [self] * parts

    def pad_to_multiple(self, multiple: int, zero: Sequence[str] = ()) -> tuple["Batch", int]:
        """This batch grown to a multiple of ``multiple`` samples, and how many were added.

        The added samples repeat the first ones (so that a model can run on
        them); the tensors named in ``zero`` are zeroed in the added rows, so a
        ``response_mask`` listed there keeps them out of every loss.
        """
        pad = -len(self) % multiple
        if pad == 0:
            return self, 0
        if len(self) == 0:
            raise ValueError("cannot pad an empty batch")
        extra = self.select([i % len(self) for i in range(pad)])
        for key in zero:
            extra.tensors[key] = torch.zeros_like(extra.tensors[key])
        return Batch.concat([self, extra]), pad


@dataclass
class MiniBatch:
    """One optimizer step's samples and the size of the whole mini-batch.

    Losses divide by ``tokens`` (token-mean) or ``samples`` (the seq-mean
    modes). With data parallelism ``batch`` is one rank's share while both
    counts stay global, so the ranks' losses add up to the loss of one
    process on the whole mini-batch.
    """

    batch: Batch
    tokens: float
    samples: int

    def split(self, parts: int) -> list["MiniBatch"]:
        """``parts`` equal shares (padded with masked-out samples), each keeping the global counts."""
        padded, _ = self.batch.pad_to_multiple(parts, zero=("response_mask",))
        return [MiniBatch(part, self.tokens, self.samples) for part in padded.split(parts)]


def mini_batches(batch: Batch, size: int, epochs: int, shuffle: bool, generator: torch.Generator) -> list[MiniBatch]:
    """``epochs`` passes over ``batch`` in mini-batches of ``size`` samples (the last may be smaller).

    Each pass draws a fresh order from ``generator`` when ``shuffle``, else
    keeps the batch's order. ``tokens`` counts ``response_mask``; ``samples``
    counts the samples with at least one token in it (a sample whose mask is
    all zero, such as an unscored one, adds nothing to a loss and is not
    counted in its mean).
    """
    out = []
    for _epoch in range(epochs):
        order = torch.randperm(len(batch), generator=generator) if shuffle else torch.arange(len(batch))
        for mini in batch.select(order).chunks(size):
            mask = mini["response_mask"]
            out.append(MiniBatch(mini, float(mask.sum()), int((mask.sum(-1) > 0).sum())))
    return out


def chunk_ranges(size: int, parts: int) -> list[range]:
    """``min(parts, size)`` consecutive ranges covering ``range(size)``, their lengths differing by at most one."""
    parts = max(1, min(parts, size))
    bounds = [size * i // parts for i in range(parts + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


def prompt_order(parts: Sequence[Sequence[int]], n: int) -> list[int]:
    """The rows that put in prompt order the samples of ``parts``, each holding the ``n`` samples of each of
    its prompts (``parts`` gives the prompts' indices) in turn, one part after the other."""
    prompts = [p for part in parts for p in part]
    return [g * n + k for g in sorted(range(len(prompts)), key=prompts.__getitem__) for k in range(n)]
