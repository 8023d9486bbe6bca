"""An episode's own rewards: what its tools and its interaction said, and where each turn's reward sits.

At the end of an episode (:func:`settle_episode_rewards`) each tool the row
offered through ``extra_info.tools_kwargs`` but the model never called is
asked for its ``calc_reward`` on a fresh instance (a called tool's was asked
after its last call), and the interaction for its ``calculate_score``, as
verl's sglang rollout asked them. :func:`rollout_reward_scores` gives them to
the scorer in verl's shape, ``extra_info["rollout_reward_scores"]`` =
``{tool name: reward, ..., "user_turn_rewards": [turn scores]}``; the reward
components ``tool_reward``, ``tool_step_rewards`` and ``interaction_score``
read them (docs/environments.md#rewards-of-an-episode).

With ``multi_turn.turn_rewards_on_tokens`` each assistant turn's rewards (its
calls' step rewards and the interaction's score of the reply to it) are added
on the last token the model generated in that turn (:func:`place_turn_rewards`).
"""
from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import torch

from rewardsmith.reward_fns.tools import unused_tool_reward

if TYPE_CHECKING:
    from rewardsmith.core.multi_turn import Episode

log = logging.getLogger(__name__)

# verl's key for the interaction's turn scores inside rollout_reward_scores.
USER_TURN_REWARDS = "user_turn_rewards"


async def settle_episode_rewards(episode: "Episode", tools: Mapping[str, Any], timeout_s: Optional[float]) -> None:
    """Ask the tools the row names (``tools_kwargs``) and offers (``tools``) but the episode never called for
    their reward, and the interaction for its score."""
    called = {call["name"] for call in episode.tool_calls}
    unused = [name for name in episode.create_kwargs if name in tools and name not in called]
    rewards = await asyncio.gather(*(unused_tool_reward(
        tools[name], name, create_kwargs=episode.create_kwargs[name], calc_reward_kwargs=episode.calc_reward_kwargs.get(name),
        timeout_s=timeout_s, stats=episode.tool_stats) for name in unused))
    for name, reward in zip(unused, rewards):
        if reward is not None:
            episode.tool_scores[name] = reward
    session = episode.interaction
    if session is None:
        return
    try:
        score = await asyncio.wait_for(session.interaction.calculate_score(session.instance_id), timeout_s)
        episode.interaction_score = float(score) if score is not None and math.isfinite(float(score)) else None
    except Exception as exc:  # noqa: BLE001 - a broken score costs this episode's interaction score, never the step
        log.warning("interaction %r failed to calculate its score: %s: %s", session.kwargs.get("name"),
                    type(exc).__name__, exc)
        episode.interaction_score_failed = True


def rollout_reward_scores(episode: "Episode") -> dict[str, Any]:
    """verl's ``rollout_reward_scores``: each tool's reward (its ``calc_reward``) and the interaction's turn scores."""
    return {**episode.tool_scores, USER_TURN_REWARDS: list(episode.turn_scores)}


def place_turn_rewards(token_level_scores: torch.Tensor, episodes: Sequence[Mapping[str, Any]]) -> torch.Tensor:
    """``token_level_scores`` plus each episode's turn rewards, each on the last token its turn generated.

    ``episodes`` are the samples' ``multi_turn`` meta: ``turn_rewards`` (one per
    assistant turn) and ``turn_ends`` (the response position of each turn's last
    generated token, recorded by the rollout: a later mask, e.g. rollout
    correction's, may hide it). A turn that generated nothing carries no reward.
    """
    out = token_level_scores.clone()
    for i, episode in enumerate(episodes):
        for position, reward in zip(episode["turn_ends"], episode["turn_rewards"]):
            if position is not None:
                out[i, position] += reward
    return out
