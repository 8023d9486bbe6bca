"""KL estimators between the policy and the reference, and the KL coefficient controllers."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from rewardsmith.core.tensor_ops import masked_mean

# verl's names first; k1/k2/k3 are the names of Schulman's note on KL estimators.
KL_ALIASES = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}

# A log-ratio is clamped to [-20, 20] before ``exp`` (verl's bound): exp(20) is
# ~5e8, far from float32 overflow, and no real update moves a token that far.
LOG_RATIO_LIMIT = 20.0


def kl_penalty(logprob: torch.Tensor, ref_logprob: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token KL estimate from log-probs of the sampled tokens, ``d = logp - ref_logp``.

    - ``kl`` (k1): ``d``
    - ``abs``: ``|d|``
    - ``mse`` (k2): ``d^2 / 2``
    - ``low_var_kl`` (k3): ``exp(-d') + d' - 1`` with ``d' = clamp(d, -20, 20)``, then
      clamped to [-10, 10]. Clamping ``d`` before ``exp`` keeps the gradient finite
      (zero where a clamp acts), as in verl: ``exp(-d)`` of a large ``-d``
      overflows, and ``0 * inf`` in the backward pass is NaN.
    """
    kind = KL_ALIASES.get(kind, kind)
    diff = logprob.float() - ref_logprob.float()
    if kind == "kl":
        return diff
    if kind == "abs":
        return diff.abs()
    if kind == "mse":
        return 0.5 * diff.square()
    if kind == "low_var_kl":
        diff = diff.clamp(min=-LOG_RATIO_LIMIT, max=LOG_RATIO_LIMIT)
        return (torch.exp(-diff) + diff - 1).clamp(min=-10, max=10)
    raise ValueError(f"unknown KL estimator {kind!r}; allowed: kl (k1), abs, mse (k2), low_var_kl (k3)")


@dataclass
class KLController:
    """The KL coefficient beta; ``adaptive`` moves it toward ``target_kl`` (Ziegler et al. 2019).

    Adaptive update after a batch of ``n_steps`` samples with mean KL ``kl``:
    ``e = clip(kl / target_kl - 1, -0.2, 0.2)``, ``beta <- beta * (1 + e * n_steps / horizon)``.
    ``fixed`` never changes beta.
    """

    value: float
    kind: str = "fixed"
    target_kl: float = 0.1
    horizon: int = 10000

    def update(self, current_kl: float, n_steps: int) -> None:
        if self.kind == "fixed":
            return
        error = min(max(current_kl / self.target_kl - 1.0, -0.2), 0.2)
        self.value *= 1.0 + error * n_steps / self.horizon

    def state_dict(self) -> dict:
        return {"value": self.value}

    def load_state_dict(self, state: dict) -> None:
        self.value = float(state["value"])


def apply_kl_penalty(
    token_level_scores: torch.Tensor,
    logprob: torch.Tensor,
    ref_logprob: torch.Tensor,
    response_mask: torch.Tensor,
    beta: float,
    kind: str,
) -> tuple[torch.Tensor, float]:
    """KL in the reward: ``r_t = score_t - beta * kl_t`` on valid tokens.

    Returns the rewards and the batch KL, the mean over samples of each
    sample's token-mean KL (what the adaptive controller tracks).
    """
    mask = response_mask.float()
    kld = kl_penalty(logprob, ref_logprob, kind) * mask
    rewards = token_level_scores.float() - beta * kld
    current_kl = masked_mean(kld, mask, dim=-1).mean().item()
    return rewards, current_kl
