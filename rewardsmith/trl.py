"""rewardsmith and TRL, both directions.

:func:`trl_reward_func` turns rewardsmith's scorers, plugins and custom files
into a TRL ``reward_funcs`` callable; :func:`scorer_from_trl` turns a TRL
reward function into a rewardsmith scorer.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Optional, Sequence

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.trl_scorer import scorer_from_trl

__all__ = ["trl_reward_func", "scorer_from_trl"]

# Names handed out so far: TRL keys its metrics (rewards/<name>/mean) by __name__.
_names: set[str] = set()
_names_lock = threading.Lock()


def _text(completion: Any) -> str:
    # TRL passes plain strings, or for conversational data a list of messages.
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"cannot read a completion of type {type(completion).__name__}: {completion!r}")


def _descriptive_name(settings: Any, data_source: Optional[str]) -> str:
    """The scorer's name, the custom function's (``file_stem.name``), the fixed data_source's, or ``rewardsmith``."""
    rm, custom = settings.reward_model, settings.custom_reward_function
    if rm.scorer:
        return rm.scorer
    if custom.path:
        stem = custom.path.split("://", 1)[-1].replace("/", ".").removesuffix(".py").rsplit(".", 1)[-1]
        return f"{stem}.{custom.name}"
    return f"rewardsmith_{data_source}" if data_source else "rewardsmith"


def _distinct(name: str) -> str:
    """``name``, or ``name_2``, ``name_3``... when an earlier reward function already has it."""
    with _names_lock:
        for candidate in itertools.chain([name], (f"{name}_{i}" for i in itertools.count(2))):
            if candidate not in _names:
                _names.add(candidate)
                return candidate
    raise AssertionError("unreachable")


def trl_reward_func(scorer: Optional[str] = None, *, data_source: Optional[str] = None,
                    overrides: Sequence[str] = (), name: Optional[str] = None) -> Callable[..., list[float]]:
    """A TRL reward function backed by rewardsmith's reward managers.

    TRL calls ``f(prompts=..., completions=..., **dataset_columns)``. The
    ground truth comes from a ``reward_model`` column (verl's schema) or a
    ``ground_truth`` / ``solution`` / ``answer`` column; the data_source from
    a ``data_source`` column, else ``data_source`` given here. ``scorer``
    names one scorer for every row; ``overrides`` are config ``key=value``
    strings (e.g. ``reward_model.reward_manager=parallel``, or ``=batch`` for a
    batched custom file). An unscored sample (its scorer failed, abstained or
    was undecided) is None, which TRL leaves out of its reward means, as
    training leaves it out; a scorer failing every sample the same way raises.

    TRL logs ``rewards/<__name__>/mean`` per reward function, so each one gets
    a distinct, descriptive ``__name__``: ``name`` if given, else the scorer's
    name, the custom function's (``file_stem.function``), or
    ``rewardsmith_<data_source>``; a name already taken in this process gets
    ``_2``, ``_3``...
    """
    from rewardsmith.common.config import load_config
    from rewardsmith.core.schema import Config
    from rewardsmith.plugins.factory import build_reward_manager

    items = list(overrides) + ([f"reward_model.scorer={scorer}"] if scorer else [])
    settings = load_config(Config, None, items).reward_settings()
    manager = build_reward_manager(settings)

    def reward(prompts: Sequence[Any] = (), completions: Sequence[Any] = (), **columns: Any) -> list[Optional[float]]:
        n = len(completions)
        sources = columns.get("data_source") or [data_source or scorer] * n
        if any(s is None for s in sources):
            raise ValueError("no data_source: add a 'data_source' column or pass data_source= to trl_reward_func")
        rm = columns.get("reward_model")
        if rm is not None:
            truths = [r.get("ground_truth") for r in rm]
        else:
            key = next((k for k in ("ground_truth", "solution", "answer") if k in columns), None)
            if key is None:
                raise ValueError(f"no ground truth column: expected one of reward_model, ground_truth, solution, answer; got {sorted(columns)}")
            truths = list(columns[key])
        extra = columns.get("extra_info") or [None] * n
        batch = RewardBatch(list(sources), [_text(c) for c in completions], truths, list(extra))
        out = manager(batch)
        unscored = out.unscored.tolist() if out.unscored is not None else [False] * n
        return [None if bad else score for score, bad in zip(out.scores.tolist(), unscored)]

    reward.__name__ = reward.__qualname__ = _distinct(name or _descriptive_name(settings, data_source))
    reward.close = manager.close  # type: ignore[attr-defined]
    return reward
