"""A batch of samples: named tensors sharing their first dimension, plus per-sample Python values."""
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
