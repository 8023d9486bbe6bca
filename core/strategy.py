"""Where a worker's model lives, how its gradient is clipped, and how it is checkpointed.

A worker does everything placement-specific through its strategy, so the
worker classes stay the same when the model is sharded. :class:`LocalStrategy`
keeps the whole model on one device of one process and checkpoints it as a
Hugging Face directory (``save_pretrained``; with LoRA the adapters merged, and
the adapters apart for a resume) plus ``optim.pt``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional, Protocol

import torch
from transformers import PreTrainedModel

from rewardsmith.core.lora import has_adapters, load_adapters, merged_state_dict, save_adapters

OPTIM_FILE = "optim.pt"


class Strategy(Protocol):
    device: torch.device

    def wrap(self, model: PreTrainedModel) -> PreTrainedModel:
        """Place ``model`` (move it to the device, or shard it) and return what the worker runs."""
        ...

    def clip_grad_norm(self, model: PreTrainedModel, max_norm: float) -> torch.Tensor:
        """Clip the gradient to global norm ``max_norm``; returns the norm before clipping."""
        ...

    def full_weights(self, model: PreTrainedModel) -> Iterator[tuple[str, torch.Tensor]]:
        """The full (unsharded) weights under their Hugging Face names, one tensor at a time."""
        ...

    def save(self, path: Path, model: PreTrainedModel, optimizer: Optional[torch.optim.Optimizer] = None,
             scheduler: Any = None) -> None:
        """Write the model (and optimizer and LR schedule, when given) under ``path``."""
        ...

    def load(self, path: Path, model: PreTrainedModel, optimizer: Optional[torch.optim.Optimizer] = None,
             scheduler: Any = None) -> None:
        """Restore in place what :meth:`save` wrote."""
        ...


def pick_device(name: str) -> torch.device:
    """``trainer.device``: ``auto`` is CUDA when there is a GPU, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("trainer.device=cuda but no CUDA device is available")
    return torch.device(name)


class LocalStrategy:
    """The whole model on ``device`` in this process."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def wrap(self, model: PreTrainedModel) -> PreTrainedModel:
        return model.to(self.device)

    def clip_grad_norm(self, model: PreTrainedModel, max_norm: float) -> torch.Tensor:
        return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

    def full_weights(self, model: PreTrainedModel) -> Iterator[tuple[str, torch.Tensor]]:
        yield from model.state_dict().items()

    def save(self, path: Path, model: PreTrainedModel, optimizer: Optional[torch.optim.Optimizer] = None,
             scheduler: Any = None) -> None:
        if has_adapters(model):
            # The export is the trained policy (adapters merged); a resume restores the adapters alone.
            model.save_pretrained(path, state_dict=merged_state_dict(model.state_dict()))
            save_adapters(model, path)
        else:
            model.save_pretrained(path)
        if optimizer is not None:
            torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, path / OPTIM_FILE)

    def load(self, path: Path, model: PreTrainedModel, optimizer: Optional[torch.optim.Optimizer] = None,
             scheduler: Any = None) -> None:
        if has_adapters(model):
            load_adapters(model, path)  # the frozen base weights are those the model was built with
        else:
            # Copied into the existing module, which stays where it lives and keeps
            # being the one the optimizer and the rollout engine hold.
            loaded = type(model).from_pretrained(path, dtype=next(model.parameters()).dtype)
            model.load_state_dict(loaded.state_dict())
        if optimizer is not None:
            state = torch.load(path / OPTIM_FILE, weights_only=False)
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
