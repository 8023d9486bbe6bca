"""AdamW with linear warmup, then a constant or cosine learning rate."""
from __future__ import annotations

import math
from typing import Any

import torch


def warmup_steps(optim_cfg: Any, total_steps: int) -> int:
    """``lr_warmup_steps`` when >= 0, else ``int(lr_warmup_steps_ratio * total_steps)``."""
    if optim_cfg.lr_warmup_steps >= 0:
        return optim_cfg.lr_warmup_steps
    return int(optim_cfg.lr_warmup_steps_ratio * total_steps)


def lr_factor(step: int, warmup: int, total: int, style: str, min_lr_ratio: float) -> float:
    """Multiplier of the base LR at scheduler step ``step``.

    Warmup: ``step / warmup``; then ``constant``: 1, or ``cosine``:
    ``m + (1 - m) * (1 + cos(pi * p)) / 2`` with ``p = (step - warmup) / (total - warmup)``.
    """
    if step < warmup:
        return step / max(1, warmup)
    if style == "constant":
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_optimizer(
    params, optim_cfg: Any, total_steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW over ``params`` and its scheduler (stepped once per training step)."""
    optimizer = torch.optim.AdamW(
        params, lr=optim_cfg.lr, betas=tuple(optim_cfg.betas), weight_decay=optim_cfg.weight_decay
    )
    warmup = warmup_steps(optim_cfg, total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, warmup, total_steps, optim_cfg.warmup_style, optim_cfg.min_lr_ratio)
    )
    return optimizer, scheduler
