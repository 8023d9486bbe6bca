"""Low-rank adapters (LoRA) on the actor: verl's ``model.lora_rank``, ``lora_alpha``, ``target_modules``.

Each targeted ``nn.Linear`` keeps its frozen weight ``W`` and gains a
low-rank path::

    y = x Wᵀ + s · (x Aᵀ) Bᵀ,   s = lora_alpha / lora_rank,

with ``A ∈ R^{r×in}`` Kaiming-uniform and ``B ∈ R^{out×r}`` zero, as peft
initialises them, so training starts from the base model and only ``A`` and
``B`` learn. The adapters live in one ``ModuleDict`` on the model
(:data:`ADAPTERS`), so every strategy shards, reduces and checkpoints them
with the model, and the base weights keep their Hugging Face names.

Wherever weights leave the worker as a plain model (the rollout engine's copy,
the exported checkpoint) they are merged, ``W + s · B A``
(:func:`merged_weight`): what runs there is the policy being trained. The
reference needs no copy of its own logic: the base weights never change, so
a reference built from the same weights is the actor with its adapters off,
which is what verl computes.
"""
from __future__ import annotations

import math
import re
from functools import partial
from pathlib import Path
from typing import Iterable, Iterator, Optional, Union

import torch
from torch import nn
from torch.distributed.tensor import DTensor
from transformers import PreTrainedModel

ADAPTERS = "lora_adapters"
ADAPTERS_FILE = "lora_adapters.pt"  # beside a checkpoint's merged export: what a resume restores
ALL_LINEAR = "all-linear"


class LoRAAdapter(nn.Module):
    """The low-rank path ``s · (x Aᵀ) Bᵀ`` of one linear layer."""

    def __init__(self, linear: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        weight = linear.weight
        self.A = nn.Parameter(torch.empty(rank, linear.in_features, dtype=weight.dtype, device=weight.device))
        self.B = nn.Parameter(torch.zeros(linear.out_features, rank, dtype=weight.dtype, device=weight.device))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        # A buffer, so a state dict alone can be merged (checkpoint export) without the config.
        self.register_buffer("scale", torch.tensor(alpha / rank, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(nn.functional.linear(x, self.A), self.B) * self.scale.to(x.dtype)


def _key(module_name: str) -> str:
    return module_name.replace(".", "__")  # ModuleDict keys cannot hold dots


def _matches(name: str, patterns: Union[str, list[str]]) -> bool:
    """peft's rule: a string is a regular expression matched against the whole name; a list matches name suffixes."""
    if isinstance(patterns, str):
        return re.fullmatch(patterns, name) is not None
    return any(name == p or name.endswith("." + p) for p in patterns)


def target_linears(model: PreTrainedModel, target_modules: Union[str, list[str]],
                   exclude_modules: Optional[Union[str, list[str]]] = None) -> list[tuple[str, nn.Linear]]:
    """The linear layers ``target_modules`` names (``all-linear``: every one but the output head), minus ``exclude_modules``."""
    head = model.get_output_embeddings()
    found = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        wanted = module is not head if target_modules == ALL_LINEAR else _matches(name, target_modules)
        if wanted and not (exclude_modules and _matches(name, exclude_modules)):
            found.append((name, module))
    if not found:
        raise ValueError(f"actor_rollout_ref.model.target_modules={target_modules!r} names no linear layer of "
                         f"{type(model).__name__}; use all-linear or names such as [q_proj, v_proj]")
    return found


def _add_low_rank(adapter: LoRAAdapter, module: nn.Module, inputs: tuple, output: torch.Tensor) -> torch.Tensor:
    return output + adapter(inputs[0])


def add_lora(model: PreTrainedModel, rank: int, alpha: float, target_modules: Union[str, list[str]] = ALL_LINEAR,
             exclude_modules: Optional[Union[str, list[str]]] = None) -> PreTrainedModel:
    """Freeze ``model`` and give its targeted linear layers trainable adapters (in place; returns ``model``)."""
    model.requires_grad_(False)
    adapters = nn.ModuleDict()
    for name, linear in target_linears(model, target_modules, exclude_modules):
        adapter = adapters[_key(name)] = LoRAAdapter(linear, rank, alpha)
        linear.register_forward_hook(partial(_add_low_rank, adapter))
    model.add_module(ADAPTERS, adapters)
    return model


def has_adapters(model: nn.Module) -> bool:
    """Whether :func:`add_lora` gave ``model`` adapters."""
    return hasattr(model, ADAPTERS)


def merged_weight(weight: torch.Tensor, A: torch.Tensor, B: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``W + s · B A`` in ``W``'s dtype (computed in float32)."""
    return (weight.float() + scale.float() * (B.float() @ A.float())).to(weight.dtype)


def _full(value: torch.Tensor) -> torch.Tensor:
    return value.full_tensor() if isinstance(value, DTensor) else value


def merged_weights(model: nn.Module, weights: Iterable[tuple[str, torch.Tensor]]) -> Iterator[tuple[str, torch.Tensor]]:
    """``weights`` (the model's full state, in order) with every adapter merged into its layer and the adapters dropped.

    Streams: each adapted weight is merged as it passes, from the adapter on
    ``model``. Under FSDP2 gathering an adapter is a collective, so, like the
    strategy's ``full_weights``, every rank must iterate to the end.
    """
    adapters = getattr(model, ADAPTERS)
    prefix = ADAPTERS + "."
    for name, value in weights:
        if name.startswith(prefix):
            continue
        key = _key(name.removesuffix(".weight"))
        if name.endswith(".weight") and key in adapters:
            adapter = adapters[key]
            value = merged_weight(value, _full(adapter.A.data), _full(adapter.B.data), adapter.scale)
        yield name, value


def merged_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A full state dict (adapters included) as the plain model's: adapters merged into their layers, then dropped."""
    merged = {name: value for name, value in state.items() if not name.startswith(ADAPTERS + ".")}
    for key in {name.split(".")[1] for name in state if name.startswith(ADAPTERS + ".")}:
        stem = f"{ADAPTERS}.{key}."
        weight = key.replace("__", ".") + ".weight"
        merged[weight] = merged_weight(merged[weight], state[stem + "A"], state[stem + "B"], state[stem + "scale"])
    return merged


def save_adapters(model: nn.Module, path: Path) -> None:
    """Write the adapters (the only weights LoRA trains) for :func:`load_adapters`."""
    torch.save({k: v.detach().cpu() for k, v in getattr(model, ADAPTERS).state_dict().items()}, path / ADAPTERS_FILE)


def load_adapters(model: nn.Module, path: Path) -> None:
    """Restore the adapters :func:`save_adapters` wrote; the frozen base weights are the model's own already."""
    getattr(model, ADAPTERS).load_state_dict(torch.load(path / ADAPTERS_FILE, weights_only=True))
