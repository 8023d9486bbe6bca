"""Which scorers judge a row, with what weight and keyword arguments."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional

from rewardkit.plugins.config import RewardSettings
from rewardkit.plugins.custom import PER_SAMPLE, load_custom_function
from rewardkit.common.errors import NotRegistered
from rewardkit.plugins.registry import Registry


@dataclass(frozen=True)
class WeightedScorer:
    """A scorer, its weight in the sample's reward, and the keyword arguments it gets."""

    name: str
    fn: Callable[..., Any]
    weight: float
    kwargs: dict


class ScoringPlan:
    """Resolves a data_source to its scorers, in this order of precedence:

    1. ``reward_model.scorer`` (or ``rewardkit score --scorer``): one scorer for every row;
    2. ``custom_reward_function.path``: the user's function for every row, as in verl;
    3. ``reward_model.scorer_weights``: several weighted scorers for matching data sources;
    4. the data_source routes that plugins registered.
    """

    def __init__(self, registry: Registry, settings: RewardSettings, call: str = PER_SAMPLE) -> None:
        self.registry = registry
        rm, custom = settings.reward_model, settings.custom_reward_function
        self._weights = rm.scorer_weights
        self._service_kwargs = {
            "sandbox_fusion_url": rm.sandbox_fusion.url,
            "memory_limit_mb": rm.sandbox_fusion.memory_limit_mb,
            "sandbox_max_concurrent": rm.sandbox_fusion.max_concurrent,
            "sandbox_retry_backoff": rm.sandbox_fusion.retry_backoff,
            "float_tolerance": rm.sandbox_fusion.float_tolerance or None,
        }
        self._fixed: Optional[list[WeightedScorer]] = None
        if rm.scorer is not None:
            self._fixed = [self._weighted(rm.scorer, registry.scorer(rm.scorer), 1.0)]
        elif custom.path:
            fn = load_custom_function(custom.path, custom.name, call, custom.reward_kwargs)
            self._fixed = [WeightedScorer(custom.name, fn, 1.0, dict(custom.reward_kwargs))]
        else:
            for pattern, weights in self._weights.items():
                for name in weights:
                    registry.scorer(name)  # fail at start-up on a typo, not mid-run
        self._cache: dict[str, list[WeightedScorer]] = {}

    def _weighted(self, name: str, fn: Callable[..., Any], weight: float) -> WeightedScorer:
        return WeightedScorer(name, fn, weight, self._accepted(fn, self._service_kwargs))

    @staticmethod
    def _accepted(fn: Callable[..., Any], offered: dict[str, Any]) -> dict[str, Any]:
        # Service settings (sandbox URL, ...) go only to scorers that take them,
        # so plain verl-style scorers without **kwargs keep working.
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return {}
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return {k: v for k, v in offered.items() if v is not None}
        return {k: v for k, v in offered.items() if k in params and v is not None}

    def scorers_for(self, data_source: str) -> list[WeightedScorer]:
        """The weighted scorers for ``data_source``; raises :class:`NotRegistered` listing the known ones."""
        if self._fixed is not None:
            return self._fixed
        cached = self._cache.get(data_source)
        if cached is None:
            key = Registry.match_key(data_source, list(self._weights))
            if key is not None:
                cached = [self._weighted(n, self.registry.scorer(n), w) for n, w in self._weights[key].items()]
            else:
                name, fn = self.registry.route(data_source)
                cached = [self._weighted(name, fn, 1.0)]
            self._cache[data_source] = cached
        return cached

    def check(self, data_sources: list[str]) -> None:
        """Fail now, naming the data_source, if any of ``data_sources`` has no scorer."""
        for source in dict.fromkeys(data_sources):
            try:
                self.scorers_for(source)
            except NotRegistered as exc:
                raise NotRegistered(f"dataset row data_source '{source}': {exc}") from None
