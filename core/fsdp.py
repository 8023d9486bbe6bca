"""FSDP2: a worker's model sharded across the data-parallel ranks (``strategy: fsdp2``).

Each transformer block (the model's ``_no_split_modules`` classes) and then
the whole model are ``fully_shard``-ed with a mixed-precision policy and,
optionally, CPU offload, on verl's device mesh for ``fsdp_size``: every rank
(plain FSDP), or groups of ``fsdp_size`` ranks that each hold a full sharded
copy (HSDP: FSDP2 reduce-scatters gradients within a group and all-reduces
them across the groups). Every rank is a data-parallel rank either way, with
its own share of each batch. Gradients are summed across ranks, not averaged: the
losses already divide by the global token count of the mini-batch, so the
sum is the gradient of one process on the whole mini-batch. Clipping uses the
global gradient norm. Checkpoints are ``torch.distributed.checkpoint``
shards (resumable on the same world size) plus a Hugging Face export of the
full weights that ``from_pretrained`` loads.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard
from torch.distributed.tensor import DTensor
from transformers import PreTrainedModel

from rewardsmith.core.distributed import ensure_process_group
from rewardsmith.core.fsdp_mesh import fsdp_mesh_shape
from rewardsmith.core.lora import has_adapters, merged_state_dict
from rewardsmith.core.models import DTYPES

SHARDS_DIR = "dcp"
SCHEDULER_FILE = "scheduler.pt"


def device_mesh(fsdp_cfg: Any, device: torch.device) -> DeviceMesh:
    """verl's FSDP mesh over the process group: 1-D ``("fsdp",)``, or 2-D ``("ddp", "fsdp")`` for HSDP."""
    shape = fsdp_mesh_shape("fsdp_config.fsdp_size", fsdp_cfg.fsdp_size, dist.get_world_size())
    return init_device_mesh(device.type, shape, mesh_dim_names=("ddp", "fsdp")[-len(shape):])


def shard_model(model: PreTrainedModel, fsdp_cfg: Any, device: torch.device) -> PreTrainedModel:
    """``fully_shard`` each transformer block, then the root, with ``fsdp_cfg``'s mesh and policies."""
    block_names = set(getattr(model, "_no_split_modules", None) or ())
    blocks = [m for m in model.modules() if type(m).__name__ in block_names]
    if not blocks:
        raise ValueError(f"{type(model).__name__} names no transformer block class (_no_split_modules) to shard by")
    # verl's param/optimizer offload keep both in CPU memory between uses: FSDP2's CPU offload does that on a GPU.
    offload = fsdp_cfg.offload_policy or (device.type == "cuda" and (fsdp_cfg.param_offload or fsdp_cfg.optimizer_offload))
    if not offload:
        model = model.to(device)
    options = {
        "mesh": device_mesh(fsdp_cfg, device),
        "mp_policy": MixedPrecisionPolicy(param_dtype=DTYPES[fsdp_cfg.mixed_precision.param_dtype],
                                          reduce_dtype=DTYPES[fsdp_cfg.mixed_precision.reduce_dtype]),
        "offload_policy": CPUOffloadPolicy(pin_memory=device.type == "cuda") if offload else OffloadPolicy(),
        "reshard_after_forward": fsdp_cfg.reshard_after_forward,
    }
    for block in blocks:
        fully_shard(block, **options)
    fully_shard(model, **options)
    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            # A plain SUM (gloo has no pre-multiplied sum; a factor of 1 needs none).
            module.set_force_sum_reduction_for_comms(True)
    return model


def clip_grad_norm(model: torch.nn.Module, max_norm: float) -> torch.Tensor:
    """Clip to the global gradient norm (over every rank's shards); returns that norm."""
    params = [p for p in model.parameters() if p.grad is not None]
    total = torch.nn.utils.get_total_norm([p.grad for p in params], norm_type=2.0)
    if isinstance(total, DTensor):
        total = total.full_tensor()
    torch.nn.utils.clip_grads_with_norm_(params, max_norm, total)
    return total


class FSDP2Strategy:
    """A model sharded over the ranks of the default process group (all of them, or groups of ``fsdp_size``)."""

    def __init__(self, device: torch.device, fsdp_cfg: Any) -> None:
        self.device = device
        self.fsdp_cfg = fsdp_cfg

    def wrap(self, model: PreTrainedModel) -> PreTrainedModel:
        ensure_process_group(self.device)
        self.architectures = [type(model).__name__]
        return shard_model(model, self.fsdp_cfg, self.device)

    def clip_grad_norm(self, model: PreTrainedModel, max_norm: float) -> torch.Tensor:
        return clip_grad_norm(model, max_norm)

    def full_weights(self, model: PreTrainedModel) -> Iterator[tuple[str, torch.Tensor]]:
        # Collective: every rank must iterate to the end.
        for name, value in model.state_dict().items():
            yield name, value.full_tensor() if isinstance(value, DTensor) else value

    def save(self, path: Path, model: PreTrainedModel, optimizer: Optional[torch.optim.Optimizer] = None,
             scheduler: Any = None) -> None:
        """Every rank writes its shards to ``path/dcp``; rank 0 exports the full model (and the LR schedule)."""
        state = {"model": get_model_state_dict(model)}
        if optimizer is not None:
            state["optimizer"] = get_optimizer_state_dict(model, optimizer)
        dcp.save(state, checkpoint_id=str(path / SHARDS_DIR))
        full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if dist.get_rank() == 0:
            # save_pretrained would name the FSDP wrapper class as the architecture.
            model.save_pretrained(path, state_dict=merged_state_dict(full) if has_adapters(model) else full)
            config = model.config.__class__.from_pretrained(path)
            config.architectures = self.architectures
            config.save_pretrained(path)
            if scheduler is not None:
                torch.save(scheduler.state_dict(), path / SCHEDULER_FILE)
        dist.barrier()

    def load(self, path: Path, model: PreTrainedModel, optimizer: Optional[torch.optim.Optimizer] = None,
             scheduler: Any = None) -> None:
        state = {"model": get_model_state_dict(model)}
        if optimizer is not None:
            state["optimizer"] = get_optimizer_state_dict(model, optimizer)
        dcp.load(state, checkpoint_id=str(path / SHARDS_DIR))
        set_model_state_dict(model, state["model"])
        if optimizer is not None:
            set_optimizer_state_dict(model, optimizer, state["optimizer"])
            scheduler.load_state_dict(torch.load(path / SCHEDULER_FILE, weights_only=False))
