"""Every rewardkit scorer and plugin as a TRL ``reward_funcs`` callable."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from rewardkit.plugins.batch import RewardBatch


def _text(completion: Any) -> str:
    # TRL passes plain strings, or for conversational data a list of messages.
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"cannot read a completion of type {type(completion).__name__}: {completion!r}")


def trl_reward_func(scorer: Optional[str] = None, *, data_source: Optional[str] = None,
                    overrides: Sequence[str] = ()) -> Callable[..., list[float]]:
    """A TRL reward function backed by rewardkit's reward managers.

    TRL calls ``f(prompts=..., completions=..., **dataset_columns)``. The
    ground truth comes from a ``reward_model`` column (verl's schema) or a
    ``ground_truth`` / ``solution`` / ``answer`` column; the data_source from
    a ``data_source`` column, else ``data_source`` given here. ``scorer``
    names one scorer for every row; ``overrides`` are config ``key=value``
    strings (e.g. ``reward_model.reward_manager=parallel``). Failures cost the
    sample its fallback score, exactly as in training.
    """
    from rewardkit.common.config import load_config
    from rewardkit.core.schema import Config
    from rewardkit.plugins.factory import build_reward_manager

    items = list(overrides) + ([f"reward_model.scorer={scorer}"] if scorer else [])
    manager = build_reward_manager(load_config(Config, None, items).reward_settings())

    def reward(prompts: Sequence[Any] = (), completions: Sequence[Any] = (), **columns: Any) -> list[float]:
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
        return manager(batch).scores.tolist()

    reward.__name__ = scorer or "rewardkit"
    reward.close = manager.close  # type: ignore[attr-defined]
    return reward
