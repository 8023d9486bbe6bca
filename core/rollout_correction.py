"""Rollout correction (verl's ``algorithm.rollout_correction``, decoupled mode): importance-sampling weights and
rejection by the ratio of the training policy's probability to the rollout engine's.

The engine samples with its own numerics (vLLM's kernels, another dtype), so the tokens come from ``pi_rollout``
while the loss treats them as drawn from ``pi_old``, the actor's recomputed log-probs. With
``d = log pi_old - log pi_rollout`` per valid token:

- **IS weights** (``rollout_is``): ``token``: ``w_t = exp(clamp(d_t, ±20))``; ``sequence``:
  ``w_i = exp(clamp(sum_t d_t, ±20))`` on every token of the sequence. ``rollout_is_threshold`` ``u`` truncates
  (TIS: ``min(w, u)``); ``"l_u"`` zeroes the weights outside ``[l, u]`` (IcePop). ``rollout_is_batch_normalize``
  divides by the batch mean (over tokens, or over sequences). The weights carry no gradient and multiply each
  token's policy loss.
- **Rejection** (``rollout_rs``, comma-separated options, all must pass): per token ``k1 = -d``,
  ``k2 = d^2 / 2``, ``k3 = exp(d) - 1 - d`` (``d`` clamped to ±20), taken per token (``token_k*``) or as a
  sequence's sum, mean or max (``seq_sum_k*``, ``seq_mean_k*``, ``seq_max_k2/k3``). A ``k1`` statistic must lie
  in ``[log l, log u]`` (``rollout_rs_threshold`` ``"l_u"``; a single ``u`` means ``l = 1/u``), the others at
  most ``u``. Rejected tokens (whole sequences for ``seq_*``) leave the response mask, so they leave the
  advantages and the losses. ``rollout_rs_threshold`` holds one threshold per option, or one for all.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from rewardsmith.core.kl import LOG_RATIO_LIMIT
from rewardsmith.core.rollout_correction_options import Threshold, parse_bounds, rejection_options
from rewardsmith.core.tensor_ops import masked_mean

def is_weights(log_ratio: torch.Tensor, mask: torch.Tensor, level: str, threshold: Threshold,
               batch_normalize: bool = False) -> torch.Tensor:
    """(B, T) importance-sampling weights ``pi_old / pi_rollout`` at ``level`` (token, sequence), truncated
    (TIS) or, with a ``"lower_upper"`` threshold, zeroed outside it (IcePop); 0 on padding; no gradient."""
    mask = mask.float()
    low, high = parse_bounds(threshold, "rollout_is_threshold", two_sided=True)
    if level == "token":
        raw = torch.exp(log_ratio.clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT))
    elif level == "sequence":
        total = (log_ratio * mask).sum(-1, keepdim=True)
        raw = torch.exp(total.clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)).expand_as(log_ratio)
    else:
        raise ValueError(f"algorithm.rollout_correction.rollout_is: {level!r}; allowed: token, sequence, null")
    raw = raw * mask
    if low is None:
        weights = raw.clamp(max=high)
    else:
        weights = torch.where((raw >= low) & (raw <= high), raw, torch.zeros_like(raw))
    weights = weights.detach()
    if batch_normalize:
        if level == "token":
            mean = masked_mean(weights, mask)
        else:
            rows = mask.sum(-1) > 0
            per_sequence = (weights * mask).sum(-1) / (mask.sum(-1) + 1e-8)
            mean = per_sequence[rows].sum() / rows.sum().clamp(min=1)
        if mean > 1e-8:
            weights = weights / mean
    return weights


def _statistic(option: str, log_ratio: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The option's divergence per token, or per sequence broadcast over its tokens."""
    d = log_ratio.clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    kind = option[-2:]
    token = -d if kind == "k1" else 0.5 * d ** 2 if kind == "k2" else torch.exp(d) - 1.0 - d
    if option.startswith("token"):
        return token
    if option.startswith("seq_sum"):
        seq = (token * mask).sum(-1)
    elif option.startswith("seq_mean"):
        seq = (token * mask).sum(-1) / (mask.sum(-1) + 1e-8)
    else:
        seq = token.masked_fill(mask == 0, -torch.inf).max(-1).values
        seq = torch.where(torch.isinf(seq), torch.zeros_like(seq), seq)
    return seq.unsqueeze(-1).expand_as(token)


def rejection_mask(log_ratio: torch.Tensor, mask: torch.Tensor, rollout_rs: str,
                   rollout_rs_threshold: Threshold) -> torch.Tensor:
    """``mask`` with the tokens (whole sequences for ``seq_*`` options) that fail any option set to 0."""
    keep = torch.ones_like(log_ratio)
    for option, (low, high) in rejection_options(rollout_rs, rollout_rs_threshold).items():
        stat = _statistic(option, log_ratio, mask.float())
        if low is None:
            passed = stat <= high
        else:
            passed = (stat >= math.log(low)) & (stat <= math.log(high))
        keep = keep * passed.to(keep.dtype)
    return (mask * keep).to(mask.dtype)


def rollout_correction(old_log_probs: torch.Tensor, rollout_log_probs: torch.Tensor, mask: torch.Tensor, cfg
                       ) -> tuple[Optional[torch.Tensor], torch.Tensor, dict[str, float]]:
    """IS weights (None without ``cfg.rollout_is``), the response mask after rejection, and metrics
    (verl's names, under ``rollout_corr/``) for the ``algorithm.rollout_correction`` section ``cfg``."""
    if old_log_probs.shape != rollout_log_probs.shape or old_log_probs.shape != mask.shape:
        raise ValueError(f"rollout correction: old log-probs {tuple(old_log_probs.shape)}, rollout log-probs "
                         f"{tuple(rollout_log_probs.shape)} and response mask {tuple(mask.shape)} differ in shape")
    log_ratio = old_log_probs - rollout_log_probs
    metrics: dict[str, float] = {}
    weights = None
    if cfg.rollout_is is not None and cfg.rollout_is_threshold is not None:
        weights = is_weights(log_ratio, mask, cfg.rollout_is, cfg.rollout_is_threshold, cfg.rollout_is_batch_normalize)
        metrics["rollout_corr/rollout_is_mean"] = masked_mean(weights, mask.float()).item()
    kept = mask
    if cfg.rollout_rs is not None:
        kept = rejection_mask(log_ratio, mask, cfg.rollout_rs, cfg.rollout_rs_threshold)
        metrics["rollout_corr/rollout_rs_masked_fraction"] = masked_mean(1.0 - kept.float(), mask.float()).item()
    if mask.any():
        metrics["rollout_corr/kl"] = masked_mean(-log_ratio, mask.float()).item()  # KL(rollout || old), k1 estimate
    return weights, kept, metrics
