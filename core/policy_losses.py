"""Policy-loss modes (``actor_rollout_ref.actor.policy_loss.loss_mode``), registered through the
``register_policy_losses`` hook, with verl's names and formulas.

Every mode is a pure function on one micro-batch::

    fn(logprob, old_logprob, advantages, response_mask, ctx: LossContext)
        -> (loss, stats)     # a scalar; stats: clipfrac, clipfrac_lower, ppo_kl (tensors) where they apply,
                             # and named ones (rollout_corr/...) logged under their own name

All tensors are (B, T). ``ctx`` carries the clip ranges, the mode's options
(``policy_loss.*``) and how to aggregate: :meth:`LossContext.agg` reduces a
per-token loss with ``loss_agg_mode`` and this micro-batch's share of the
mini-batch, so the summed micro-batch losses are the mini-batch's loss. A
plugin adds a mode with::

    @hookimpl
    def register_policy_losses(register):
        register("my_loss", my_loss)

and selects it with ``actor_rollout_ref.actor.policy_loss.loss_mode=my_loss``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from rewardsmith.common.hooks import hookimpl
from rewardsmith.core.kl import LOG_RATIO_LIMIT
from rewardsmith.core.losses import agg_loss, policy_loss
from rewardsmith.core.rollout_correction import rollout_correction
from rewardsmith.core.tensor_ops import masked_mean

Stats = dict[str, torch.Tensor]


@dataclass(frozen=True)
class LossContext:
    """What a mode needs besides the tensors: clip ranges, its options, and the micro-batch's share."""

    clip_ratio_low: float
    clip_ratio_high: float
    clip_ratio_c: float
    loss_agg_mode: str
    token_share: float  # the micro-batch's share for loss_agg_mode (see core.losses.micro_batch_weight)
    sequence_share: float  # its share of the mini-batch's sequences
    options: Any  # the policy_loss section: clip_cov_ratio, kl_cov_ratio, ppo_kl_coef, ...
    tau_pos: float = 1.0  # sapo's gate temperatures (verl keeps them on the actor: actor.tau_pos / tau_neg)
    tau_neg: float = 1.05
    # Rollout correction's importance weights (B, T), no gradient; None without algorithm.rollout_correction.rollout_is.
    is_weights: Optional[torch.Tensor] = None
    rollout_correction: Any = None  # the algorithm.rollout_correction section (bypass_mode reads it)

    def agg(self, loss_mat: torch.Tensor, mask: torch.Tensor, mode: Optional[str] = None) -> torch.Tensor:
        """``loss_mat`` times the IS weights (where there are any), reduced with ``loss_agg_mode`` (or ``mode``, a
        mode's own fixed aggregation: a sequence mean) and weighted by the micro-batch's share."""
        if self.is_weights is not None:
            loss_mat = loss_mat * self.is_weights
        if mode is None or mode == self.loss_agg_mode:
            return agg_loss(loss_mat, mask, self.loss_agg_mode, self.token_share)
        if mode == "token-mean":
            raise ValueError("a mode's own aggregation must be a sequence mean (its share is the sequence share)")
        return agg_loss(loss_mat, mask, mode, self.sequence_share)


def vanilla(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
            ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """PPO's clipped surrogate with the dual clip (:func:`rewardsmith.core.losses.policy_loss`)."""
    return policy_loss(logprob, old_logprob, advantages, mask, ctx.clip_ratio_low, ctx.clip_ratio_high,
                       ctx.clip_ratio_c, ctx.loss_agg_mode, ctx.token_share, ctx.is_weights)


def gspo(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
         ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """GSPO (arXiv 2507.18071): the sequence-level ratio ``s_i = exp(mean_t (logp - old_logp))``, carried to each
    token as ``s_it = sg[s_i] · p_it / sg[p_it]`` (log clamped at 10);
    ``L = max(-A s_it, -A clip(s_it, 1 - low, 1 + high))``."""
    mask = mask.float()
    log_ratio = logprob - old_logprob
    seq_log_ratio = (log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    log_s = (logprob - logprob.detach() + seq_log_ratio.detach().unsqueeze(-1)).clamp(max=10.0)
    s = torch.exp(log_s)
    losses1 = -advantages * s
    losses2 = -advantages * torch.clamp(s, 1 - ctx.clip_ratio_low, 1 + ctx.clip_ratio_high)
    stats = {"clipfrac": masked_mean((losses2 > losses1).float(), mask).detach(),
             "ppo_kl": masked_mean(-log_ratio, mask).detach()}
    return ctx.agg(torch.maximum(losses1, losses2), mask), stats


def gpg(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
        ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """GPG (Group Policy Gradient): plain REINFORCE on the advantage, ``L = -A · logp``, no ratio, no clip."""
    return ctx.agg(-logprob * advantages, mask.float()), {}


def cispo(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
          ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """CISPO (arXiv 2506.13585): the clipped importance weight without gradient times REINFORCE,
    ``L = -sg[clip(rho, 1 - low, 1 + high)] · A · logp`` with ``rho = exp(clamp(logp - old_logp, ±20))``."""
    mask = mask.float()
    log_ratio = (logprob - old_logprob).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    ratio = torch.exp(log_ratio)
    clipped = torch.clamp(ratio, 1 - ctx.clip_ratio_low, 1 + ctx.clip_ratio_high)
    stats = {"clipfrac": masked_mean((ratio != clipped).float(), mask).detach(),
             "ppo_kl": masked_mean(-log_ratio, mask).detach()}
    return ctx.agg(-clipped.detach() * advantages * logprob, mask), stats


def clip_cov(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
             ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """Clip-Cov (arXiv 2505.22617): PPO's clipped loss (no dual clip), with the gradient cut on a random
    ``clip_cov_ratio`` share of the tokens (at least one) whose centred covariance
    ``(A - mean A)(logp - mean logp)`` lies in (clip_cov_lb, clip_cov_ub) and that PPO's clip left alone."""
    opts = ctx.options
    valid = mask > 0
    log_ratio = logprob - old_logprob
    ratio = torch.exp(log_ratio)
    losses1 = -advantages * ratio
    losses2 = -advantages * torch.clamp(ratio, 1 - ctx.clip_ratio_low, 1 + ctx.clip_ratio_high)
    clipped_by_ppo = (losses2 > losses1) & valid
    cov = (advantages - masked_mean(advantages, mask)) * (logprob - masked_mean(logprob.detach(), mask))
    cov = cov.masked_fill(~valid | clipped_by_ppo, -torch.inf)
    candidates = torch.nonzero((cov < opts.clip_cov_ub) & (cov > opts.clip_cov_lb) & valid)
    count = max(int(opts.clip_cov_ratio * mask.sum().item()), 1)
    chosen = candidates[torch.randperm(len(candidates))[:count]]
    keep = torch.ones_like(advantages)
    keep[chosen[:, 0], chosen[:, 1]] = 0
    stats = {"clipfrac": masked_mean((keep == 0).float(), mask.float()).detach(),
             "ppo_kl": masked_mean(-log_ratio, mask.float()).detach()}
    return ctx.agg(torch.maximum(losses1, losses2) * keep, mask.float()), stats


def kl_cov(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
           ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """KL-Cov (arXiv 2505.22617): ``L = -A rho``, plus ``ppo_kl_coef · |logp - old_logp|`` on the
    ``kl_cov_ratio`` share of valid tokens (at least one) with the largest covariance
    ``(A - mean A)(logp - mean logp)`` (means over the valid tokens)."""
    opts = ctx.options
    log_ratio = logprob - old_logprob
    ratio = torch.exp(log_ratio)
    losses = -advantages * ratio
    with_kl = losses + opts.ppo_kl_coef * log_ratio.abs()
    valid = torch.nonzero(mask.reshape(-1) > 0, as_tuple=True)[0]
    adv = advantages.reshape(-1)[valid].detach()
    logp = logprob.reshape(-1)[valid].detach()
    if len(valid):
        cov = (adv - adv.mean()) * (logp - logp.mean())
        top = valid[torch.topk(cov, max(1, int(len(cov) * opts.kl_cov_ratio))).indices]
        rows, cols = top // advantages.shape[1], top % advantages.shape[1]
        losses = losses.clone()
        losses[rows, cols] = with_kl[rows, cols]
    return ctx.agg(losses, mask.float()), {"ppo_kl": masked_mean(log_ratio.abs(), mask.float()).detach()}


def geo_mean(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
             ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """GMPO (arXiv 2507.20673): the geometric mean of token ratios clipped in log space by the advantage's sign,
    ``r_i = exp(mean_t sgn(A)·min(sgn(A)·d_t, sgn(A)·clip(d_t, -low, high)))`` with ``d = logp - old_logp``;
    ``L = mean_i(-mean_t(A_it) · r_i)`` over sequences, whatever loss_agg_mode (as verl)."""
    mask = mask.float()
    log_ratio = logprob - old_logprob
    sign = torch.sign(advantages)
    clamped = torch.clamp(log_ratio, -ctx.clip_ratio_low, ctx.clip_ratio_high)
    bounded = sign * torch.minimum(sign * log_ratio, sign * clamped)
    lengths = mask.sum(-1)
    ratio = torch.exp((bounded * mask).sum(-1) / (lengths + 1e-8))
    advantage = (advantages * mask).sum(-1) / (lengths + 1e-8)
    losses = -advantage * ratio
    if ctx.is_weights is not None:
        # One weight per sequence: the geometric mean of its tokens' weights, as the ratio is one.
        losses = losses * torch.exp((torch.log(ctx.is_weights + 1e-10) * mask).sum(-1) / (lengths + 1e-8))
    loss = losses.mean() * ctx.sequence_share
    clipped = log_ratio != clamped
    stats = {"clipfrac": masked_mean((clipped & (advantages > 0)).float(), mask).detach(),
             "clipfrac_lower": masked_mean((clipped & (advantages < 0)).float(), mask).detach(),
             "ppo_kl": masked_mean(-log_ratio, mask).detach()}
    return loss, stats


def sapo(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
         ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """SAPO (arXiv 2511.20347): a soft sigmoid gate on the token ratio instead of a hard clip,
    ``L = -A · (4/tau) · sigmoid(tau (rho - 1))`` with ``rho = exp(clamp(logp - old_logp, ±20))`` and
    ``tau = tau_pos`` where ``A > 0``, else ``tau_neg``. At ``rho = 1`` its gradient is the plain policy gradient;
    it fades smoothly as ``rho`` leaves 1. Always aggregated ``seq-mean-token-mean``, whatever loss_agg_mode (as verl)."""
    mask = mask.float()
    log_ratio = (logprob - old_logprob).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    tau = torch.where(advantages > 0, torch.as_tensor(ctx.tau_pos, dtype=advantages.dtype, device=advantages.device),
                      torch.as_tensor(ctx.tau_neg, dtype=advantages.dtype, device=advantages.device))
    gate = torch.sigmoid(tau * (torch.exp(log_ratio) - 1.0)) * (4.0 / tau)
    loss = ctx.agg(-gate * advantages, mask, mode="seq-mean-token-mean")
    return loss, {"ppo_kl": masked_mean(-log_ratio, mask).detach()}


def _dppo(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
          ctx: LossContext, inside: torch.Tensor) -> tuple[torch.Tensor, Stats]:
    """DPPO's shared form: ``L = -A · sg[min(rho, clip_ratio_c)] · logp`` on the tokens ``inside`` the trust region
    (0 elsewhere, no gradient through the region)."""
    mask = mask.float()
    log_ratio = (logprob - old_logprob).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    ratio = torch.exp(log_ratio)
    keep = inside.detach().float()
    loss = ctx.agg(-advantages * ratio.clamp(max=ctx.clip_ratio_c).detach() * logprob * keep, mask)
    stats = {"clipfrac": masked_mean(1.0 - keep, mask).detach(),
             "clipfrac_lower": masked_mean((ratio > ctx.clip_ratio_c).float() * keep, mask).detach(),
             "ppo_kl": masked_mean(-log_ratio, mask).detach()}
    return loss, stats


def dppo_tv(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
            ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """DPPO-Binary-TV (arXiv 2602.04879, verl 0.9.1): a trust region on the token probability itself, not the ratio:
    with ``p = exp(logp)``, ``q = exp(old_logp)``, a token counts where ``p - q <= high`` (``A > 0``) or
    ``p - q >= -low`` (``A <= 0``); ``L = -A · sg[min(rho, clip_ratio_c)] · logp`` there, 0 elsewhere."""
    delta = torch.exp(logprob) - torch.exp(old_logprob)
    inside = torch.where(advantages > 0, delta <= ctx.clip_ratio_high, delta >= -ctx.clip_ratio_low)
    return _dppo(logprob, old_logprob, advantages, mask, ctx, inside)


def dppo_kl(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
            ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """DPPO-Binary-KL (arXiv 2602.04879, verl 0.9.1): as :func:`dppo_tv` with the binary KL
    ``D = q log(q/p) + (1-q) log((1-q+1e-8)/(1-p+1e-8))`` as the region: a token counts where ``D <= high`` or ``p <= q``
    (``A > 0``), ``D <= low`` or ``p >= q`` (``A <= 0``)."""
    p, q = torch.exp(logprob), torch.exp(old_logprob)
    divergence = q * (old_logprob - logprob) + (1 - q) * torch.log((1.0 - q + 1e-8) / (1.0 - p + 1e-8))
    inside = torch.where(advantages > 0, (divergence <= ctx.clip_ratio_high) | (p <= q),
                         (divergence <= ctx.clip_ratio_low) | (p >= q))
    return _dppo(logprob, old_logprob, advantages, mask, ctx, inside)


def dro(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
        ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """DRO (verl 0.9.1): REINFORCE with a quadratic penalty on the log-ratio,
    ``L = -(A · logp - beta/2 · (logp - old_logp)^2)``, ``beta`` = ``policy_loss.dro_beta`` (> 0)."""
    beta = ctx.options.dro_beta
    if beta is None or beta <= 0:
        raise ValueError(f"actor_rollout_ref.actor.policy_loss.dro_beta must be > 0 for loss_mode=dro, got {beta}")
    log_ratio = logprob - old_logprob
    loss = ctx.agg(-(logprob * advantages - 0.5 * beta * log_ratio ** 2), mask.float())
    return loss, {"ppo_kl": masked_mean(-log_ratio, mask.float()).detach()}


def bypass_mode(logprob: torch.Tensor, old_logprob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                ctx: LossContext) -> tuple[torch.Tensor, Stats]:
    """verl's bypass mode (``algorithm.rollout_correction.bypass_mode=true``): the rollout's log-probs are the old
    ones (``old_logprob`` here), so no old-log-prob pass runs. Rollout correction's IS weights and rejection
    (:mod:`rewardsmith.core.rollout_correction`) are taken between the current policy (no gradient) and the
    rollout in each micro-batch; rejected tokens leave the mask. ``loss_type=ppo_clip``: :func:`vanilla` against the
    rollout without the weights (its ratio is already ``pi / pi_rollout``); ``reinforce``: ``L = -w A logp``."""
    cfg = ctx.rollout_correction
    with torch.no_grad():
        weights, kept, metrics = rollout_correction(logprob.detach(), old_logprob, mask, cfg)
    if cfg.loss_type == "reinforce":
        loss_mat = -advantages * logprob * (weights if weights is not None else 1.0)
        loss = agg_loss(loss_mat, kept, ctx.loss_agg_mode, ctx.token_share)
        stats = {"ppo_kl": masked_mean(old_logprob - logprob, kept.float()).detach()}
    else:
        loss, stats = vanilla(logprob, old_logprob, advantages, kept, ctx)
    if ctx.loss_agg_mode == "token-mean":
        # The rejection happens inside the loss, so verl still divides by the mini-batch's tokens before it.
        loss = loss * kept.float().sum() / mask.float().sum().clamp(min=1)
    stats.update({name: torch.tensor(value) for name, value in metrics.items()})
    return loss, stats


BUILTIN_POLICY_LOSSES = {
    "vanilla": vanilla,
    "gspo": gspo,
    "gpg": gpg,
    "cispo": cispo,
    "clip_cov": clip_cov,
    "kl_cov": kl_cov,
    "geo_mean": geo_mean,
    "sapo": sapo,
    "bypass_mode": bypass_mode,
    "dppo_tv": dppo_tv,
    "dppo_kl": dppo_kl,
    "dro": dro,
}


@hookimpl
def register_policy_losses(register):
    """Register the built-in policy-loss modes through the same hook plugins use."""
    for name, fn in BUILTIN_POLICY_LOSSES.items():
        register(name, fn)
