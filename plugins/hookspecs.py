"""The hooks a rewardsmith plugin can implement.

Each hook receives a ``register`` callback, in the style of datasette and llm.
Built-in scorers, reward managers, advantage estimators, policy losses, tools and
interactions are registered
through these very hooks, so third-party plugins and built-ins share one path.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("rewardsmith")


@hookspec
def register_scorers(register):
    """Register scorers: ``register(name, fn, data_sources=(...))``.

    ``fn`` follows verl's contract
    ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)
    -> float | dict | None``; ``data_sources`` holds exact names and glob
    patterns (``"aime*"``) this scorer answers for.
    """


@hookspec
def register_reward_managers(register):
    """Register reward managers: ``register(name, cls)``.

    ``cls`` subclasses :class:`rewardsmith.RewardManager`.
    """


@hookspec
def register_advantage_estimators(register):
    """Register advantage estimators: ``register(name, fn)``.

    ``fn`` is a pure function on tensors; see ``rewardsmith.core.advantages``.
    """


@hookspec
def register_policy_losses(register):
    """Register policy-loss modes: ``register(name, fn)``; see ``rewardsmith.core.policy_losses``."""


@hookspec
def register_attacks(register):
    """Register attack families for ``rewardsmith stress``: ``register(name, fn, data_sources=("*",))``.

    ``fn(target)`` returns :class:`rewardsmith.reward_fns.attacks.Probe` s for one row (docs/scorers.md).
    """



@hookspec
def register_tools(register):
    """Register tool classes (on ``rewardsmith.reward_fns.tools.BaseTool`` or verl's): ``register(name, cls)``."""


@hookspec
def register_interactions(register):
    """Register interaction classes (on our or verl's ``BaseInteraction``): ``register(name, cls)``."""
