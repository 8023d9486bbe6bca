"""The reward options of seed document 004: reward masking, flipped advantages and critic rewards.

- ``algorithm.reward_mask_ratio``: each trajectory loses its whole reward row
  with probability ``ratio`` (:func:`sample_reward_mask`, :func:`apply_reward_mask`).
- ``algorithm.reward_mask_flip_adv_when_masked``: masked trajectories' advantages
  are multiplied by -1 (:func:`flip_masked_advantages`; rule-based rewards only).
- Unscored trajectories (no reward component could score them) leave the
  advantage, the loss and its token count (:func:`drop_unscored`,
  :func:`loss_tokens`, :func:`affected_groups`); the estimators leave them out of
  their statistics themselves.
- ``algorithm.reward_source=critic``: a trajectory's reward is the critic's value
  at its last valid token (:func:`critic_token_level_scores`) and its advantage is
  that reward minus ``V(t)``, whitened; returns are the whitened advantages plus
  ``V(t)`` (:func:`critic_source_advantage`).
"""
from __future__ import annotations

from typing import Hashable, Sequence

import torch

from rewardsmith.core.tensor_ops import masked_whiten
from rewardsmith.plugins.batch import token_level_scores


def sample_reward_mask(batch_size: int, ratio: float, generator: torch.Generator) -> torch.Tensor:
    """A (B,) bool tensor, True for trajectories whose reward is masked; each is masked
    independently with probability ``ratio`` (``u_i < ratio``, ``u_i ~ U[0, 1)``)."""
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"algorithm.reward_mask_ratio must be in [0, 1], got {ratio}")
    return torch.rand(batch_size, generator=generator) < ratio


def apply_reward_mask(token_level_rewards: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Zero the whole reward row of each masked trajectory: ``r_i,t <- r_i,t * (1 - masked_i)``."""
    return token_level_rewards * (~masked).to(token_level_rewards.dtype).unsqueeze(-1)


def flip_masked_advantages(advantages: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """``A_i,t <- -A_i,t`` for masked trajectories, unchanged otherwise."""
    sign = 1.0 - 2.0 * masked.to(advantages.dtype)
    return advantages * sign.unsqueeze(-1)


def drop_unscored(advantages: torch.Tensor, unscored: torch.Tensor) -> torch.Tensor:
    """``A_i,t <- 0`` for trajectories no reward component could score (every one
    abstained or failed under ``abstain``): they teach the policy nothing.

    The built-in estimators already leave them out of their statistics and
    return 0 for them (their ``scored`` argument); this also holds the rule for
    a plugin estimator that ignores ``scored``, and after a flip."""
    return advantages * (~unscored).to(advantages.dtype).unsqueeze(-1)


def loss_tokens(response_mask: torch.Tensor, unscored: torch.Tensor) -> torch.Tensor:
    """``m_i,t * (1 - unscored_i)``: the tokens the actor and critic losses sum and count.

    An unscored trajectory adds nothing to a loss and nothing to its token (or
    sequence) count, so it does not dilute the others' gradient either."""
    return response_mask * (~unscored).to(response_mask.dtype).unsqueeze(-1)


def affected_groups(index: Sequence[Hashable], unscored: torch.Tensor) -> int:
    """How many groups (distinct ``index`` ids) hold at least one unscored trajectory."""
    return len({key for key, bad in zip(index, unscored.tolist()) if bad})


def last_valid_values(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """(B,) the value at each trajectory's last valid response token (0 for an empty response)."""
    mask = response_mask.long()
    positions = torch.arange(mask.shape[1]).expand_as(mask)
    last = (positions * mask).max(-1).values
    picked = values.float().gather(1, last.unsqueeze(-1)).squeeze(-1)
    return picked * (mask.sum(-1) > 0).float()


def critic_token_level_scores(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Token-level scores for ``reward_source=critic``: ``V(last_i)`` on the last valid token, zeros elsewhere."""
    return token_level_scores(last_valid_values(values, response_mask), response_mask)


def critic_source_advantage(
    token_level_rewards: torch.Tensor, values: torch.Tensor, response_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages for ``reward_source=critic``, replacing GAE.

    Seed option 004's definition, in its order: with the trajectory reward
    ``R_i = sum_t r_i,t`` (``= V_i(last)`` unless it was masked or
    KL-penalised), ``A_i,t = whiten(R_i - V_i,t)`` over the batch's valid
    tokens, then ``returns = A + V`` from the whitened ``A``. (Returns taken
    before whitening would be ``R_i`` itself, which for an unmasked
    trajectory is the critic's own ``V(last)``: a target the critic only
    chases.)
    """
    mask = response_mask.float()
    values = values.float() * mask
    reward = token_level_rewards.float().sum(-1, keepdim=True)
    advantages = masked_whiten((reward - values) * mask, mask) * mask
    returns = (advantages + values) * mask
    return advantages, returns
