"""Advantage estimators, registered through the ``register_advantage_estimators`` hook.

Every estimator is a pure function called with keyword arguments only::

    fn(*, token_level_rewards, response_mask, index, values=None,
       gamma=1.0, lam=1.0, norm_adv_by_std_in_grpo=True, **kwargs)
        -> (advantages, returns)          # both (B, T) float tensors

- ``token_level_rewards`` (B, T): rewards per response token (the score on the
  last valid token, minus the KL penalty when it is in the reward).
- ``response_mask`` (B, T): 1 on valid response tokens.
- ``index``: a list of B hashable group ids; the ``n`` samples of one prompt
  share an id (GRPO, RLOO and REINFORCE++-baseline group by it).
- ``values`` (B, T) or None: the critic's values. An estimator that needs them
  sets the attribute ``requires_values = True`` on the function, and the
  trainer then runs a critic.
- ``scored`` (B,) bool or None (None: all True): False for samples no reward
  component could score. Their placeholder reward is not a reward: leave them
  out of every statistic (group means, standard deviations, baselines,
  whitening) and return zero advantages and returns for them, so that the
  other samples get exactly what they would get if it had never been sampled.
- ``reward_baselines`` (B,): for an estimator with the attribute
  ``requires_greedy_baseline = True`` (ReMax), the reward of a greedy response
  to each sample's prompt, which the trainer samples and scores for it. Where
  that greedy response is unscored there is no baseline: the trainer marks
  the prompt's samples unscored (``scored`` False) instead of comparing them
  with a placeholder.
- ``reward_extra_info``: the reward's extra info, key -> one value per sample
  (``None`` where a sample had no such key), for estimators that read reward
  components (GDPO); ``gdpo_reward_keys`` / ``gdpo_reward_weights``: the
  ``algorithm.*`` keys of that name.
- ``old_log_probs``, ``sum_pi_squared`` (B, T): the actor's log-probs of the
  sampled tokens and ``sum_v pi(v)^2`` per token (with
  ``actor.calculate_sum_pi_squared``; None otherwise); ``rollout_is_weights``
  (B, T) or None: rollout correction's IS weights (OTB reads these).
- ``**kwargs``: further options may be passed in later versions; accept and
  ignore what you do not use.

Advantages and returns must be zero outside ``response_mask`` and for
unscored samples. A plugin adds
an estimator with::

    @hookimpl
    def register_advantage_estimators(register):
        register("my_estimator", my_estimator)

and selects it with ``algorithm.adv_estimator=my_estimator``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Hashable, Optional, Sequence

import torch

from rewardsmith.core.tensor_ops import masked_whiten
from rewardsmith.common.hooks import hookimpl

AdvantageResult = tuple[torch.Tensor, torch.Tensor]


def scored_mask(scored: Optional[torch.Tensor], batch: int) -> torch.Tensor:
    """(B,) bool: ``scored`` checked against the batch size, or all True when None."""
    if scored is None:
        return torch.ones(batch, dtype=torch.bool)
    if scored.shape != (batch,):
        raise ValueError(f"`scored` must have shape ({batch},), got {tuple(scored.shape)}")
    return scored.bool().cpu()


def _valid_tokens(response_mask: torch.Tensor, scored: Optional[torch.Tensor]) -> torch.Tensor:
    """``m_i,t * scored_i``: the tokens that enter batch statistics and carry advantages."""
    keep = scored_mask(scored, response_mask.shape[0]).to(response_mask.device)
    return response_mask.float() * keep.float().unsqueeze(-1)


def compute_gae_advantage_return(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    values: Optional[torch.Tensor],
    gamma: float = 1.0,
    lam: float = 1.0,
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """Generalised advantage estimation over valid tokens.

    ``delta_t = r_t + gamma * V_{t+1} - V_t``, ``A_t = delta_t + gamma * lam * A_{t+1}``
    where ``t+1`` is the next *valid* token (padding is skipped, and past the
    last valid token ``V = 0``, ``A = 0``). ``returns = A + V`` (before
    whitening); the advantages returned are whitened over the valid tokens of
    the scored samples. Unscored samples get ``A = 0`` and ``returns = 0``.
    """
    if values is None:
        raise ValueError("the gae advantage estimator needs critic values (critic.enable must not be false)")
    mask = _valid_tokens(response_mask, scored)
    rewards = token_level_rewards.float()
    values = values.float() * mask
    next_values = torch.zeros_like(values[:, 0])
    last_gae = torch.zeros_like(values[:, 0])
    reversed_adv = []
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * next_values - values[:, t]
        gae = delta + gamma * lam * last_gae
        m = mask[:, t]
        next_values = values[:, t] * m + (1 - m) * next_values
        last_gae = gae * m + (1 - m) * last_gae
        reversed_adv.append(last_gae * m)
    advantages = torch.stack(reversed_adv[::-1], dim=1)
    returns = (advantages + values) * mask
    advantages = masked_whiten(advantages, mask) * mask
    return advantages, returns


compute_gae_advantage_return.requires_values = True  # type: ignore[attr-defined]


def _group_stats(
    scores: torch.Tensor, index: Sequence[Hashable], scored: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-sample group mean, unbiased group std and group size over the group's *scored* members.

    A group with one scored member has mean 0, std 1 and size 1, like a
    singleton group; unscored samples get mean 0, std 1, size 1 (their
    advantages are zeroed by the caller).
    """
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for i, key in enumerate(index):
        if scored[i]:
            groups[key].append(i)
    mean = torch.zeros_like(scores)
    std = torch.ones_like(scores)
    size = torch.ones_like(scores)
    for members in groups.values():
        rows = torch.tensor(members)
        group = scores[rows]
        size[rows] = float(len(members))
        if len(members) > 1:
            mean[rows] = group.mean()
            std[rows] = group.std()
    return mean, std, size


def _check_index(index: Sequence[Hashable], batch: int, name: str) -> None:
    if index is None or len(index) != batch:
        raise ValueError(f"the {name} advantage estimator needs `index` with one group id per sample ({batch})")


def compute_grpo_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    norm_adv_by_std_in_grpo: bool = True,
    epsilon: float = 1e-6,
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """GRPO: each sample's outcome ``s_i = sum_t r_{i,t}`` against its group.

    With ``g`` the scored members of ``i``'s group,
    ``A_i = (s_i - mean_g) / (std_g + epsilon)`` (unbiased std), or
    ``A_i = s_i - mean_g`` when ``norm_adv_by_std_in_grpo`` is false; a group
    of one has mean 0 and std 1. ``A_i`` is broadcast over the valid tokens,
    0 for unscored samples; returns equal advantages.
    """
    _check_index(index, token_level_rewards.shape[0], "grpo")
    keep = scored_mask(scored, token_level_rewards.shape[0])
    scores = token_level_rewards.float().sum(-1)
    mean, std, _size = _group_stats(scores, index, keep)
    adv = (scores - mean) / (std + epsilon) if norm_adv_by_std_in_grpo else scores - mean
    advantages = adv.unsqueeze(-1) * _valid_tokens(response_mask, keep)
    return advantages, advantages


def compute_rloo_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """RLOO: leave-one-out baseline over the ``n`` scored members ``g`` of the group,
    ``A_i = s_i - mean_{j in g, j != i} s_j = n/(n-1) * (s_i - mean_g)``.

    A group of one keeps ``A_i = s_i``. Broadcast over valid tokens, 0 for
    unscored samples; returns equal advantages.
    """
    _check_index(index, token_level_rewards.shape[0], "rloo")
    keep = scored_mask(scored, token_level_rewards.shape[0])
    scores = token_level_rewards.float().sum(-1)
    mean, _std, size = _group_stats(scores, index, keep)
    multi = size > 1
    adv = torch.where(multi, (scores - mean) * size / (size - 1).clamp(min=1), scores)
    advantages = adv.unsqueeze(-1) * _valid_tokens(response_mask, keep)
    return advantages, advantages


def compute_reinforce_plus_plus_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    gamma: float = 1.0,
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """REINFORCE++: discounted return ``G_t = r_t + gamma * G_{t+1}`` (reset past the last valid token),
    advantages ``A = whiten(G)`` over the valid tokens of the scored samples; returns are ``G``.
    Unscored samples get ``A = 0`` and ``G = 0``."""
    mask = _valid_tokens(response_mask, scored)
    rewards = token_level_rewards.float()
    returns = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        returns[:, t] = running
        running = running * mask[:, t]
    returns = returns * mask
    advantages = masked_whiten(returns, mask) * mask
    return advantages, returns


def compute_reinforce_plus_plus_baseline_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """REINFORCE++ with a group baseline: ``a_i = s_i - mean_g`` over the scored members ``g``
    of the group, broadcast over valid tokens, then whitened over the valid tokens of every
    scored sample in the batch; 0 for unscored samples; returns equal advantages."""
    _check_index(index, token_level_rewards.shape[0], "reinforce_plus_plus_baseline")
    keep = scored_mask(scored, token_level_rewards.shape[0])
    mask = _valid_tokens(response_mask, keep)
    scores = token_level_rewards.float().sum(-1)
    mean, _std, _size = _group_stats(scores, index, keep)
    centred = (scores - mean).unsqueeze(-1) * mask
    advantages = masked_whiten(centred, mask) * mask
    return advantages, advantages


def compute_gpg_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    f_norm: float = 1.0,
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """GPG (Group Policy Gradient): ``A_i = alpha * (s_i - mean_g) / f_norm`` with ``alpha = B / #{i: s_i != 0}``
    over the ``B`` scored samples of the batch (the share of samples with a signal rescales the gradient), and
    ``mean_g`` the scored members' group mean (0 for a group of one). Not whitened; broadcast over valid tokens,
    0 for unscored samples; returns equal advantages."""
    _check_index(index, token_level_rewards.shape[0], "gpg")
    keep = scored_mask(scored, token_level_rewards.shape[0])
    scores = token_level_rewards.float().sum(-1)
    mean, _std, _size = _group_stats(scores, index, keep)
    alpha = keep.sum() / torch.count_nonzero(scores * keep).clamp(min=1)
    advantages = (alpha * (scores - mean) / f_norm).unsqueeze(-1) * _valid_tokens(response_mask, keep)
    return advantages, advantages


def compute_remax_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    reward_baselines: Optional[torch.Tensor] = None,
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """ReMax: the undiscounted return ``G_t = sum_{t' >= t} r_t'`` minus ``b``, the reward of the greedy
    response to the same prompt (``reward_baselines``, (B,)): ``A_t = G_t - b`` on valid tokens; returns
    are ``G``. 0 for unscored samples. The trainer samples and scores the greedy responses for an estimator
    with ``requires_greedy_baseline``."""
    if reward_baselines is None:
        raise ValueError("the remax advantage estimator needs reward_baselines (the greedy responses' rewards)")
    mask = _valid_tokens(response_mask, scored)
    returns = (token_level_rewards.float() * mask).flip(-1).cumsum(-1).flip(-1)
    advantages = returns - reward_baselines.float().unsqueeze(-1) * mask
    return advantages, returns


compute_remax_outcome_advantage.requires_greedy_baseline = True  # type: ignore[attr-defined]


def _component_scores(key: str, reward_extra_info: Optional[dict[str, list]], keep: torch.Tensor) -> torch.Tensor:
    """(B,) the reward component ``key`` from the reward's extra info; an unscored sample's entry may be missing."""
    available = sorted(reward_extra_info or {})
    if key not in available:
        raise KeyError(f"algorithm.gdpo_reward_keys: {key!r} is not a key the reward function returned (its extra info has "
                       f"{', '.join(available) or 'no key'}); return a dict with it beside 'score'")
    values = reward_extra_info[key]
    missing = [i for i, value in enumerate(values) if keep[i] and value is None]
    if missing:
        raise ValueError(f"algorithm.gdpo_reward_keys: the reward function returned no {key!r} for sample {missing[0]} "
                         f"({len(missing)} scored sample(s) without it)")
    return torch.tensor([float(v) if v is not None else 0.0 for v in values], dtype=torch.float32)


def compute_gdpo_outcome_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    norm_adv_by_std_in_grpo: bool = True,
    epsilon: float = 1e-6,
    scored: Optional[torch.Tensor] = None,
    reward_extra_info: Optional[dict[str, list]] = None,
    gdpo_reward_keys: Optional[Sequence[str]] = None,
    gdpo_reward_weights: Optional[Sequence[float]] = None,
    **_: Any,
) -> AdvantageResult:
    """GDPO (arXiv 2601.05242, verl 0.9.1): each reward component normalised in its group before they are added.

    For each component ``k`` of ``gdpo_reward_keys`` (a per-sample value the reward function returned in its
    dict, ``reward_extra_info[k]``), ``A_k`` is GRPO's advantage of that component alone
    (:func:`compute_grpo_outcome_advantage`, with ``norm_adv_by_std_in_grpo`` and ``epsilon``);
    ``A = whiten(sum_k w_k A_k)`` over the valid tokens of the scored samples, ``w_k`` from
    ``gdpo_reward_weights`` (default 1). With no keys the one component is the total score ``s_i``
    (GRPO, then whitened). 0 for unscored samples; returns equal advantages.
    """
    _check_index(index, token_level_rewards.shape[0], "gdpo")
    keep = scored_mask(scored, token_level_rewards.shape[0])
    if gdpo_reward_keys:
        components = [_component_scores(key, reward_extra_info, keep).unsqueeze(-1).to(token_level_rewards.device)
                      for key in gdpo_reward_keys]
    else:
        components = [token_level_rewards]
    weights = list(gdpo_reward_weights) if gdpo_reward_weights is not None else [1.0] * len(components)
    if len(weights) != len(components):
        raise ValueError(f"algorithm.gdpo_reward_weights has {len(weights)} weights for {len(components)} gdpo_reward_keys")
    total = torch.zeros(response_mask.shape, dtype=torch.float32, device=response_mask.device)
    for weight, component in zip(weights, components):
        advantage, _ = compute_grpo_outcome_advantage(
            token_level_rewards=component, response_mask=response_mask, index=index,
            norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo, epsilon=epsilon, scored=keep)
        total = total + weight * advantage
    mask = _valid_tokens(response_mask, keep)
    advantages = masked_whiten(total, mask) * mask
    return advantages, advantages


def compute_optimal_token_baseline_advantage(
    *,
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    old_log_probs: Optional[torch.Tensor] = None,
    sum_pi_squared: Optional[torch.Tensor] = None,
    rollout_is_weights: Optional[torch.Tensor] = None,
    handle_zero_tail: bool = True,
    epsilon: float = 1e-8,
    scored: Optional[torch.Tensor] = None,
    **_: Any,
) -> AdvantageResult:
    """Optimal token baseline (OTB, verl 0.9.1): a baseline per time step, weighted by each path's variance so far.

    With the return-to-go ``G_t = sum_{t' >= t} r_t'``, ``pi_t = exp(old_logp_t)`` and ``S_t = sum_v pi(v)^2``
    (``sum_pi_squared``), a token's score-norm proxy is ``w_t = 1 - 2 pi_t + S_t`` (times ``rho_t^2`` with rollout
    correction's IS weights) and ``W_t = sum_{j <= t} w_j`` over valid tokens. In each group of scored samples
    ``b_t = sum_i G_it W_it m_it / (sum_i W_it m_it + epsilon)`` and ``A_t = (G_t - b_t) m_t``; a group of one has
    no baseline. With ``handle_zero_tail`` the baseline is 0 where the group's single longest response runs past
    the second longest (no other sample informs it there). Returns are ``G``; 0 for unscored samples.
    """
    if old_log_probs is None or sum_pi_squared is None:
        raise ValueError("the optimal_token_baseline advantage estimator needs old_log_probs and sum_pi_squared "
                         "(set actor_rollout_ref.actor.calculate_sum_pi_squared=true)")
    _check_index(index, token_level_rewards.shape[0], "optimal_token_baseline")
    keep = scored_mask(scored, token_level_rewards.shape[0])
    mask = _valid_tokens(response_mask, keep)
    returns = (token_level_rewards.float() * mask).flip(-1).cumsum(-1).flip(-1)
    w = 1 - 2 * torch.exp(old_log_probs.float()) + sum_pi_squared.float()
    if rollout_is_weights is not None:
        w = w * rollout_is_weights ** 2
    path_weight = (w * mask).cumsum(-1)
    baselines = torch.zeros_like(returns)
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for i, key in enumerate(index):
        if keep[i]:
            groups[key].append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        rows = torch.tensor(members, device=returns.device)
        g_mask, g_weight = mask[rows], path_weight[rows]
        baseline = (returns[rows] * g_weight * g_mask).sum(0) / ((g_weight * g_mask).sum(0) + epsilon)
        baselines[rows] = baseline
        lengths = g_mask.sum(-1)
        longest, second = torch.sort(lengths).values[-2:].tolist()[::-1]
        if handle_zero_tail and int((lengths == longest).sum()) == 1 and longest > second:
            baselines[members[int(torch.argmax(lengths))], int(second):] = 0.0
    advantages = (returns - baselines) * mask
    return advantages, returns


compute_optimal_token_baseline_advantage.requires_sum_pi_squared = True  # type: ignore[attr-defined]


BUILTIN_ESTIMATORS = {
    "gae": compute_gae_advantage_return,
    "grpo": compute_grpo_outcome_advantage,
    "rloo": compute_rloo_outcome_advantage,
    "reinforce_plus_plus": compute_reinforce_plus_plus_outcome_advantage,
    "reinforce_plus_plus_baseline": compute_reinforce_plus_plus_baseline_outcome_advantage,
    "gpg": compute_gpg_outcome_advantage,
    "remax": compute_remax_outcome_advantage,
    "gdpo": compute_gdpo_outcome_advantage,
    "optimal_token_baseline": compute_optimal_token_baseline_advantage,
}


@hookimpl
def register_advantage_estimators(register):
    """Register the built-in estimators through the same hook plugins use."""
    for name, fn in BUILTIN_ESTIMATORS.items():
        register(name, fn)
