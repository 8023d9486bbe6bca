"""PPO losses: clipped policy loss with dual clip, clipped value loss, and loss aggregation."""
from __future__ import annotations

from typing import Optional

import torch

from rewardsmith.core.kl import LOG_RATIO_LIMIT
from rewardsmith.core.tensor_ops import masked_mean


def agg_loss(loss_mat: torch.Tensor, mask: torch.Tensor, mode: str, weight: float = 1.0) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar.

    - ``token-mean``: ``sum(L * m) / sum(m)``
    - ``seq-mean-token-sum``: ``mean_i sum_t L_it m_it``
    - ``seq-mean-token-mean``: ``mean_i (sum_t L_it m_it / sum_t m_it)``

    ``weight`` rescales the result; gradient accumulation passes this
    micro-batch's share of the mini-batch (its tokens for ``token-mean``, its
    sequences otherwise) so that the summed micro losses equal the mini-batch loss.
    """
    mask = mask.float()
    if mode == "token-mean":
        loss = masked_mean(loss_mat, mask)
    elif mode == "seq-mean-token-sum":
        loss = (loss_mat * mask).sum(-1).mean()
    elif mode == "seq-mean-token-mean":
        loss = ((loss_mat * mask).sum(-1) / mask.sum(-1).clamp(min=1)).mean()
    else:
        raise ValueError(f"unknown loss_agg_mode {mode!r}; allowed: token-mean, seq-mean-token-sum, seq-mean-token-mean")
    return loss * weight


def micro_batch_weight(mask: torch.Tensor, mini_batch_mask_sum: float, mini_batch_size: int, mode: str) -> float:
    """The share of the mini-batch a micro-batch holds, for :func:`agg_loss`'s ``weight``."""
    if mode == "token-mean":
        return float(mask.sum()) / max(mini_batch_mask_sum, 1.0)
    return mask.shape[0] / max(mini_batch_size, 1)


def policy_loss(
    logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.2,
    clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean",
    weight: float = 1.0,
    is_weights: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate with dual clip (Ye et al. 2020).

    ``rho = exp(d)`` with ``d = clamp(logp - old_logp, -20, 20)`` (the clamp keeps the
    gradient finite where a padded or far-off token has an extreme log-ratio);
    ``L = max(-A * rho, -A * clip(rho, 1 - clip_ratio_low, 1 + clip_ratio_high))``;
    for ``A < 0`` the dual clip bounds it: ``L = min(L, -A * clip_ratio_c)``.
    Returns the aggregated loss and stats: ``clipfrac`` (share of tokens where
    the clipped term is the larger), ``clipfrac_lower`` (share where the dual
    clip acts) and ``ppo_kl`` (``mean(old_logp - logp)``). ``is_weights`` (rollout correction's importance
    weights, no gradient) multiply each token's ``L`` before aggregation.
    """
    if clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c must be > 1 for the dual clip, got {clip_ratio_c}")
    mask = response_mask.float()
    log_ratio = (logprob - old_logprob).clamp(min=-LOG_RATIO_LIMIT, max=LOG_RATIO_LIMIT)
    ratio = torch.exp(log_ratio)
    losses1 = -advantages * ratio
    losses2 = -advantages * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    clipped = torch.maximum(losses1, losses2)
    losses3 = -advantages * clip_ratio_c
    dual = torch.minimum(losses3, clipped)
    losses = torch.where(advantages < 0, dual, clipped)
    stats = {
        "clipfrac": masked_mean((losses2 > losses1).float(), mask).detach(),
        "clipfrac_lower": masked_mean(((clipped > losses3) & (advantages < 0)).float(), mask).detach(),
        "ppo_kl": masked_mean(-log_ratio, mask).detach(),
    }
    if is_weights is not None:
        losses = losses * is_weights
    return agg_loss(losses, mask, loss_agg_mode, weight), stats


def value_loss(
    vpreds: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    response_mask: torch.Tensor,
    cliprange_value: float = 0.5,
    loss_agg_mode: str = "token-mean",
    weight: float = 1.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped value loss: ``V' = clip(V, V_old - c, V_old + c)``,
    ``L = 1/2 * agg(max((V - R)^2, (V' - R)^2))``; stat ``vf_clipfrac``."""
    mask = response_mask.float()
    clipped_preds = old_values + torch.clamp(vpreds - old_values, -cliprange_value, cliprange_value)
    losses1 = (vpreds - returns) ** 2
    losses2 = (clipped_preds - returns) ** 2
    losses = torch.maximum(losses1, losses2)
    stats = {"vf_clipfrac": masked_mean((losses2 > losses1).float(), mask).detach()}
    return 0.5 * agg_loss(losses, mask, loss_agg_mode, weight), stats
