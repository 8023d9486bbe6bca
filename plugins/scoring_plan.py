"""Which components judge a row: scorers and models, with weights, gates and failure policies."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional
from urllib.parse import urlparse

from rewardsmith.common.errors import ConfigError, NotRegistered, RewardError
from rewardsmith.common.redaction import without_userinfo
from rewardsmith.plugins.config import ENVIRONMENT_KINDS, ComponentConfig, RewardSettings
from rewardsmith.plugins.custom import PER_SAMPLE, accepted_kwargs, load_custom_function
from rewardsmith.plugins.model_scoring.factory import SECTIONS, build_model_scorer, configured_kinds
from rewardsmith.plugins.registry import Registry


# The config key behind each service keyword a scorer may require (see ScoringPlan._check_services).
SERVICE_KEYS = {"sandbox_fusion_url": "reward_model.sandbox_fusion.url",
                "reward_router_address": "reward_model.judge.base_url"}


# Plain routing (no reward_model.components pattern): a failed scorer has no value, so a sample no
# scorer could score is unscored (out of its group, the loss and every mean), never a fallback_score reward.
PLAIN_ON_FAILURE = "abstain"


@dataclass(frozen=True)
class WeightedScorer:
    """A scorer, its weight in the sample's reward, and the keyword arguments it gets."""

    name: str
    fn: Callable[..., Any]
    weight: float
    kwargs: dict


@dataclass(frozen=True)
class Component:
    """One part of a sample's reward: a rule scorer or a model (``kind``), its weight, its gate
    and what a failed sample counts as (``on_failure``; ``fallback`` is the value for ``fallback``)."""

    name: str
    kind: str
    weight: float
    on_failure: str
    fallback: float
    scorer: Optional[WeightedScorer] = None
    gate: Optional[str] = None
    gate_threshold: float = 0.5
    gate_value: Optional[float] = None
    gate_when: str = "score_at_least"
    tool: Optional[str] = None  # tool_reward: the tool whose reward counts (None: all of the episode's)

    @property
    def stands_in(self) -> bool:
        """Whether this is a fallback for its gate (``gate_when: abstained``): it votes only where the
        gate has no value, with the gate's weight, and adds nothing to the total weight."""
        return self.gate is not None and self.gate_when == "abstained"


def router_address(base_url: Optional[str]) -> Optional[str]:
    """``host:port`` of a judge endpoint: verl's generative-judge functions post to
    ``http://{reward_router_address}/v1/chat/completions``. Without ``user:pass@``:
    the user's function would otherwise carry the credentials into its own errors and logs."""
    return without_userinfo(urlparse(base_url).netloc) or None if base_url else None


class ScoringPlan:
    """Resolves a row (its data_source and ``reward_model.style``) to its components.

    1. ``reward_model.components``: the components of the first matching data_source pattern;
    2. with ``reward_model.enable`` and not ``reward_model.route_by_style`` (verl's semantics): every
       row, whatever its style, is scored by ``custom_reward_function.path`` when set, else by the model
       (verl 0.9.1's RewardLoopWorker.compute_score: custom function, else the reward model, else rules);
    3. a ``style: model`` row: the model of ``reward_model.model_scorer`` (or the only one configured);
    4. any other row (``style: rule``, or a style such as DAPO-Math-17k's ``rule-lighteval/MATH_v2``:
       verl 0.9.1 never reads the style, so every row it does not give a model is a rule row):
       its scorers, in this order of precedence:
       ``reward_model.scorer`` (or ``rewardsmith score --scorer``) for every row;
       ``custom_reward_function.path``, the user's function for every row, as in verl;
       ``reward_model.scorer_weights``, several weighted scorers for matching data sources;
       the data_source routes that plugins registered.

    Model scorers are built here, at start-up, only when ``reward_model.enable`` is true.
    """

    def __init__(self, registry: Registry, settings: RewardSettings, call: str = PER_SAMPLE) -> None:
        self.registry = registry
        rm, custom = settings.reward_model, settings.custom_reward_function
        self._weights = rm.scorer_weights
        self._fallback = float(rm.fallback_score)
        self._components = rm.components
        self._enabled = rm.enable
        self._model_for_all = rm.enable and not rm.route_by_style
        self._service_kwargs = {
            "sandbox_fusion_url": rm.sandbox_fusion.url,
            "memory_limit_mb": rm.sandbox_fusion.memory_limit_mb,
            "sandbox_max_concurrent": rm.sandbox_fusion.max_concurrent,
            "sandbox_retry_backoff": rm.sandbox_fusion.retry_backoff,
            "float_tolerance": rm.sandbox_fusion.float_tolerance or None,
            "reward_router_address": router_address(rm.judge.base_url),
        }
        self.models: dict[str, Any] = {}
        self._default_model = self._check_models(rm)
        if not rm.enable:
            # A model that would not be used is a mistake to report, not a setting to ignore
            # (judge.base_url alone also serves verl generative-judge functions).
            unused = [k for k in configured_kinds(rm) if not (k == "judge" and custom.path)]
            if unused:
                section, field = SECTIONS[unused[0]]
                raise ConfigError(f"reward_model.{section}.{field} is set but reward_model.enable is false; "
                                  "set reward_model.enable=true to score with it, or remove it")
        if rm.judge.tokenizer:
            from rewardsmith.common.tokenizer_files import load_tokenizer_dir
            self._service_kwargs["reward_model_tokenizer"] = load_tokenizer_dir(rm.judge.tokenizer)
        self._fixed: Optional[list[WeightedScorer]] = None
        if rm.scorer is not None:
            self._fixed = [self._weighted(rm.scorer, registry.scorer(rm.scorer), 1.0)]
        elif custom.path:
            # verl hands its generative-judge functions the judge's address and tokenizer.
            judge_kwargs = {k: v for k, v in self._service_kwargs.items() if k in ("reward_router_address", "reward_model_tokenizer")}
            fn = load_custom_function(custom.path, custom.name, call, custom.reward_kwargs, judge_kwargs)
            self._fixed = [WeightedScorer(custom.name, fn, 1.0, {**accepted_kwargs(fn, judge_kwargs), **custom.reward_kwargs})]
        else:
            for pattern, weights in self._weights.items():
                for name in weights:
                    registry.scorer(name)  # fail at start-up on a typo, not mid-run
        if self._model_for_all and self._fixed is not None:
            # verl: the custom function scores every row; a model no component uses would load for nothing
            # (the judge's address still reaches the function as reward_router_address).
            used = {comp.kind for comps in rm.components.values() for comp in comps.values()} | {"judge"}
            idle = [k for k in configured_kinds(rm) if k not in used]
            if idle:
                section, field = SECTIONS[idle[0]]
                fixed = "reward_model.scorer" if rm.scorer is not None else "custom_reward_function.path"
                raise ConfigError(f"reward_model.{section}.{field} is set, but {fixed} scores every row (verl's semantics), "
                                  "so the model would score none: set reward_model.route_by_style=true to send "
                                  "`style: model` rows to it, or use it in reward_model.components")
        self._cache: dict[str, list[WeightedScorer]] = {}
        self._component_cache: dict[tuple[str, str], list[Component]] = {}
        for pattern, components in self._components.items():
            for name, comp in components.items():
                if comp.kind == "rule" and comp.scorer is not None:
                    registry.scorer(comp.scorer)
        try:
            for kind in (configured_kinds(rm) if rm.enable else []):
                self.models[kind] = build_model_scorer(kind, rm)
        except BaseException:
            self.close()
            raise

    def _check_models(self, rm: Any) -> Optional[str]:
        """Fail at start-up on model settings that cannot work; returns the model for plain model rows."""
        kinds = configured_kinds(rm)
        if rm.enable and not kinds:
            raise ConfigError("reward_model.enable is true but no model is configured: set reward_model.model.path, "
                              "reward_model.remote.urls or reward_model.judge.base_url")
        for pattern, components in rm.components.items():
            for name, comp in components.items():
                if comp.kind == "rule" or comp.kind in ENVIRONMENT_KINDS:
                    continue
                key = f"reward_model.components.{pattern}.{name}.kind"
                section, field = SECTIONS[comp.kind]
                if not rm.enable:
                    raise ConfigError(f"{key} is {comp.kind}, but reward_model.enable is false")
                if comp.kind not in kinds:
                    raise ConfigError(f"{key} is {comp.kind}, but reward_model.{section}.{field} is not set")
        if rm.model_scorer is not None:
            section, field = SECTIONS[rm.model_scorer]
            if not rm.enable:
                raise ConfigError(f"reward_model.model_scorer is {rm.model_scorer}, but reward_model.enable is false")
            if rm.model_scorer not in kinds:
                raise ConfigError(f"reward_model.model_scorer is {rm.model_scorer}, but reward_model.{section}.{field} is not set")
            return rm.model_scorer
        return kinds[0] if rm.enable and len(kinds) == 1 else None

    def close(self) -> None:
        """Release the model scorers (server connections, thread pools)."""
        for model in self.models.values():
            model.close()

    # -- components per row ---------------------------------------------------------------
    def components_for(self, data_source: str, style: str) -> list[Component]:
        """The components of a row; raises :class:`RewardError` naming what is missing.

        Only ``style == "model"`` asks for a model; every other style is a rule row, as in verl."""
        pattern = Registry.match_key(data_source, list(self._components))
        if pattern is not None:
            key = (pattern, data_source)
            if key not in self._component_cache:
                self._component_cache[key] = [self._component(name, comp, data_source)
                                              for name, comp in self._components[pattern].items()]
            return self._component_cache[key]
        # verl: a custom function (or reward_model.scorer) scores every row, else the model does.
        wants_model = self._fixed is None if self._model_for_all else style == "model"
        if wants_model:
            if not self._enabled:
                raise RewardError(f"data_source '{data_source}': reward_model.style is 'model' but reward_model.enable is false "
                                  "(enable it and configure reward_model.model.path, .remote.urls or .judge.base_url)")
            if self._default_model is None:
                why = "reward_model.style is 'model'" if style == "model" else "the model scores every row (route_by_style is false)"
                raise RewardError(f"data_source '{data_source}': {why} and several models are configured "
                                  f"({', '.join(self.models)}); choose one with reward_model.model_scorer or reward_model.components")
            kind = self._default_model
            return [Component(kind, kind, 1.0, PLAIN_ON_FAILURE, self._fallback)]
        return [Component(ws.name, "rule", ws.weight, PLAIN_ON_FAILURE, self._fallback, scorer=ws) for ws in self.scorers_for(data_source)]

    def _component(self, name: str, comp: ComponentConfig, data_source: str) -> Component:
        scorer = None
        if comp.kind == "rule":
            if comp.scorer is not None:
                scorer = self._weighted(comp.scorer, self.registry.scorer(comp.scorer), comp.weight)
            else:
                scorer = self._route(data_source)
        fallback = self._fallback if comp.fallback is None else float(comp.fallback)
        return Component(name, comp.kind, comp.weight, comp.on_failure, fallback, scorer,
                         comp.gate, comp.gate_threshold, comp.gate_value, comp.gate_when, comp.tool)

    def _route(self, data_source: str) -> WeightedScorer:
        """The one scorer of a data_source: the fixed scorer or custom function, else the registered route."""
        if self._fixed is not None:
            return self._fixed[0]
        name, fn = self.registry.route(data_source)
        return self._weighted(name, fn, 1.0)

    def _weighted(self, name: str, fn: Callable[..., Any], weight: float) -> WeightedScorer:
        return WeightedScorer(name, fn, weight, accepted_kwargs(fn, self._service_kwargs))

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
                cached = [self._route(data_source)]
            self._cache[data_source] = cached
        return cached

    def check(self, data_sources: list[str]) -> None:
        """Fail now, naming the data_source, if any of ``data_sources`` has no scorer.

        With model scoring on, a data_source without a rule scorer may hold only
        ``style: model`` rows, so only :meth:`check_rows` (which sees styles) can tell.
        """
        for source in dict.fromkeys(data_sources):
            if Registry.match_key(source, list(self._components)) is not None:
                continue
            try:
                self.scorers_for(source)
            except NotRegistered as exc:
                if self._enabled:
                    continue
                raise NotRegistered(f"dataset row data_source '{source}': {exc}") from None

    def check_rows(self, data_sources: list[str], styles: list[str]) -> None:
        """Fail now, naming the first row that has no components (no scorer, or a model row without a model)."""
        seen: set[tuple[str, str]] = set()
        for i, (source, style) in enumerate(zip(data_sources, styles)):
            if (source, style) in seen:
                continue
            seen.add((source, style))
            try:
                components = self.components_for(source, style)
            except RewardError as exc:
                raise type(exc)(f"dataset row {i}: {exc}") from None
            self._check_services(i, source, components)

    def _check_services(self, row: int, data_source: str, components: list[Component]) -> None:
        # A scorer lists the service settings it cannot score without in ``requires``
        # (the code scorer: the sandbox URL); a row that needs an unset one fails at
        # start-up, not as one unavailable sample after another.
        for comp in components:
            for setting in getattr(comp.scorer.fn, "requires", ()) if comp.scorer else ():
                if not self._service_kwargs.get(setting):
                    key = SERVICE_KEYS.get(setting, setting)
                    raise ConfigError(f"dataset row {row}: data_source '{data_source}' is scored by '{comp.scorer.name}', "
                                      f"which needs {key}: set {key}=<url> (e.g. start `rewardsmith sandbox serve`)")
