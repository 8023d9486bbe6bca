"""Masked reductions and per-token quantities from logits.

All functions are pure: they take tensors and return tensors. ``mask`` is 1
for tokens that count and 0 for padding.
"""
from __future__ import annotations

from typing import Optional

import torch


def masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
    """``sum(values * mask)`` over ``dim`` (all elements when ``dim`` is None)."""
    if dim is None:
        return (values * mask).sum()
    return (values * mask).sum(dim)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
    """``sum(values * mask) / sum(mask)``; an all-zero mask gives 0, not NaN."""
    total = masked_sum(values, mask, dim)
    count = mask.sum() if dim is None else mask.sum(dim)
    return total / count.clamp(min=1)


def masked_var(values: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance of the masked elements: ``sum(mask * (x - mean)^2) / (n - 1)`` (``/ n`` when biased)."""
    mean = masked_mean(values, mask)
    var = masked_mean((values - mean) ** 2, mask)
    if unbiased:
        n = mask.sum()
        if n <= 1:
            return var
        var = var * n / (n - 1)
    return var


def masked_whiten(values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, eps: float = 1e-8) -> torch.Tensor:
    """``(x - mean) / sqrt(var + eps)`` with mean and unbiased variance over the masked elements.

    With ``shift_mean=False`` the mean is added back: ``(x - mean) / sqrt(var + eps) + mean``.
    """
    mean = masked_mean(values, mask)
    whitened = (values - mean) * torch.rsqrt(masked_var(values, mask) + eps)
    if not shift_mean:
        whitened = whitened + mean
    return whitened


def logprobs_from_logits(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``log softmax(logits)[..., label]``: the log-probability of each label token."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the categorical ``softmax(logits)``: ``logsumexp(z) - sum(softmax(z) * z)``."""
    logits = logits.float()
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(-1)


def sum_pi_squared_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """``sum_v softmax(z)_v^2 = exp(logsumexp(2z) - 2 logsumexp(z))``, without forming the probabilities."""
    logits = logits.float()
    return torch.exp(torch.logsumexp(2 * logits, dim=-1) - 2 * torch.logsumexp(logits, dim=-1))


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counting only attended tokens (left padding gets position 0)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
