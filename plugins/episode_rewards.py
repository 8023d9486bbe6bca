"""Rewards an environment gave a multi-turn episode, read as reward components; episodes it failed.

The multi-turn rollout writes into each sample's ``extra_info`` what its tools
and its interaction said (docs/environments.md#rewards-of-an-episode). Three
component kinds read it, beside the row's scorer, with the same weights, gates
and failure policies as any component:

- ``tool_reward``: a tool's own reward (its ``calc_reward``, verl's
  ``rollout_reward_scores[<tool>]``) of the tool named by ``tool``, or with
  ``tool`` null the sum over the episode's tools;
- ``tool_step_rewards``: the sum of the step rewards its calls' ``execute``
  returned (verl's ``tool_rewards``; 0 for an episode without calls);
- ``interaction_score``: the interaction's ``calculate_score`` at the end.

A sample without that reward (a single-turn row, an episode whose tool gave no
number) has no value from the component: it abstains, and the others decide.

An episode whose tool could not be reached or did not answer in time
(``unavailable`` or ``timeout`` calls) was not the model's doing: the sample
is unscored, whatever its components (:func:`unavailable_tools`).
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Optional

from rewardsmith.plugins.config import ENVIRONMENT_KINDS
from rewardsmith.plugins.scoring import ABSTAIN, OK, ScoreOutcome
from rewardsmith.reward_fns.tools.execution import TIMEOUT, UNAVAILABLE

TOOL_REWARD, TOOL_STEP_REWARDS, INTERACTION_SCORE = ENVIRONMENT_KINDS

# A call that ended so was the environment's failure, not the model's.
_ENVIRONMENT_FAILURES = (UNAVAILABLE, TIMEOUT)
# verl's key for the interaction's turn scores inside rollout_reward_scores; not a tool.
_USER_TURN_REWARDS = "user_turn_rewards"


def environment_outcome(kind: str, tool: Optional[str], extra_info: Optional[dict]) -> ScoreOutcome:
    """The value of an environment component (``kind``, ``tool``) for one sample, from its ``extra_info``."""
    value = _environment_value(kind, tool, extra_info or {})
    return ScoreOutcome(ABSTAIN) if value is None else ScoreOutcome(OK, value)


def _environment_value(kind: str, tool: Optional[str], info: dict) -> Optional[float]:
    if kind == TOOL_STEP_REWARDS:
        rewards = info.get("tool_rewards")
        return float(sum(rewards)) if isinstance(rewards, list) and "tool_calls" in info else None
    if kind == INTERACTION_SCORE:
        return _number(info.get("interaction_score"))
    if kind != TOOL_REWARD:
        raise ValueError(f"not an environment component kind: {kind!r}; known: {', '.join(ENVIRONMENT_KINDS)}")
    scores = info.get("rollout_reward_scores")
    if not isinstance(scores, dict):
        return None
    if tool is not None:
        return _number(scores.get(tool))
    values = [_number(v) for k, v in scores.items() if k != _USER_TURN_REWARDS]
    values = [v for v in values if v is not None]
    return float(sum(values)) if values else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, numbers.Real) and math.isfinite(value) else None


def unavailable_tools(extra_info: Optional[dict]) -> list[str]:
    """The tools of an episode that could not be reached or did not answer in time (none for other rows)."""
    calls = (extra_info or {}).get("tool_calls")
    if not isinstance(calls, list):
        return []
    names = [c.get("name") for c in calls if isinstance(c, dict) and c.get("status") in _ENVIRONMENT_FAILURES]
    return sorted(set(map(str, names)))
