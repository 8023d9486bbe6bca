"""What the loaded plugins registered, and how clashes between them are settled.

Each name (a scorer, a data_source route, a reward manager, an advantage
estimator) collects every plugin's claim. A third-party claim overrides a
built-in one (logged); two third-party claims are an error naming both
distributions, unless ``plugins.prefer`` picks one.
"""
from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from rewardsmith.common.errors import PluginConflict, NotRegistered
from rewardsmith.plugins.install_hints import install_hint

log = logging.getLogger("rewardsmith.plugins")


@dataclass
class PluginInfo:
    """One plugin as ``rewardsmith plugins`` shows it."""

    name: str
    distribution: Optional[str]
    version: Optional[str]
    builtin: bool
    scorers: list[str] = field(default_factory=list)
    reward_managers: list[str] = field(default_factory=list)
    advantage_estimators: list[str] = field(default_factory=list)
    policy_losses: list[str] = field(default_factory=list)
    attacks: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    interactions: list[str] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def label(self) -> str:
        origin = "built-in" if self.builtin else f"{self.distribution} {self.version}"
        return f"plugin '{self.name}' ({origin})"


@dataclass
class Claim:
    """One plugin's registration of ``obj`` under a name."""

    name: str
    obj: Any
    plugin: PluginInfo
    data_sources: tuple[str, ...] = ()


class Registry:
    """Scorers, data_source routes, reward managers, advantage estimators, tools and interactions of all loaded plugins."""

    def __init__(self, plugins: Sequence[PluginInfo], prefer: Optional[dict[str, str]] = None) -> None:
        self.plugins = list(plugins)
        self.prefer = dict(prefer or {})
        self._scorers: dict[str, list[Claim]] = {}
        self._routes: dict[str, list[Claim]] = {}
        self._managers: dict[str, list[Claim]] = {}
        self._estimators: dict[str, list[Claim]] = {}
        self._attacks: dict[str, list[Claim]] = {}
        self._policy_losses: dict[str, list[Claim]] = {}
        self._tools: dict[str, list[Claim]] = {}
        self._interactions: dict[str, list[Claim]] = {}

    # -- registration (called through the hooks' register callbacks) -------
    def add_scorer(self, plugin: PluginInfo, name: str, fn: Callable[..., Any], data_sources: Sequence[str] = ()) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"scorer name must be a non-empty string, got {name!r}")
        if not callable(fn):
            raise TypeError(f"scorer '{name}' is not callable: {fn!r}")
        if isinstance(data_sources, str):
            data_sources = (data_sources,)
        claim = Claim(name, fn, plugin, tuple(data_sources))
        self._claim(self._scorers, "scorer", name, claim)
        for source in claim.data_sources:
            self._claim(self._routes, "data_source", source, claim)
        plugin.scorers.append(name)

    def add_reward_manager(self, plugin: PluginInfo, name: str, cls: type) -> None:
        self._claim(self._managers, "reward manager", name, Claim(name, cls, plugin))
        plugin.reward_managers.append(name)

    def add_advantage_estimator(self, plugin: PluginInfo, name: str, fn: Callable[..., Any]) -> None:
        self._claim(self._estimators, "advantage estimator", name, Claim(name, fn, plugin))
        plugin.advantage_estimators.append(name)

    def add_policy_loss(self, plugin: PluginInfo, name: str, fn: Callable[..., Any]) -> None:
        self._claim(self._policy_losses, "policy loss", name, Claim(name, fn, plugin))
        plugin.policy_losses.append(name)

    def add_attack(self, plugin: PluginInfo, name: str, fn: Callable[..., Any], data_sources: Sequence[str] = ("*",)) -> None:
        patterns = (data_sources,) if isinstance(data_sources, str) else tuple(data_sources)
        self._claim(self._attacks, "attack family", name, Claim(name, fn, plugin, patterns))
        plugin.attacks.append(name)

    def add_tool(self, plugin: PluginInfo, name: str, cls: type) -> None:
        self._claim(self._tools, "tool", name, Claim(name, cls, plugin))
        plugin.tools.append(name)

    def add_interaction(self, plugin: PluginInfo, name: str, cls: type) -> None:
        self._claim(self._interactions, "interaction", name, Claim(name, cls, plugin))
        plugin.interactions.append(name)

    def _claim(self, table: dict[str, list[Claim]], kind: str, key: str, claim: Claim) -> None:
        claims = table.setdefault(key, [])
        if any(c.plugin.builtin for c in claims) and not claim.plugin.builtin:
            builtin = next(c for c in claims if c.plugin.builtin)
            log.warning("%s overrides the built-in %s '%s' of %s", claim.plugin.label, kind, key, builtin.plugin.label)
        claims.append(claim)

    # -- lookup --------------------------------------------------------------
    def _resolve(self, table: dict[str, list[Claim]], kind: str, key: str) -> Claim:
        claims = table[key]
        third_party = [c for c in claims if not c.plugin.builtin]
        candidates = third_party or claims
        if len(candidates) == 1:
            return candidates[0]
        preferred = self.prefer.get(key)
        if preferred is not None:
            for c in candidates:
                if preferred in (c.plugin.name, c.plugin.distribution):
                    return c
        names = " and ".join(c.plugin.label for c in candidates)
        raise PluginConflict(
            f"{kind} '{key}' is registered by both {names}; choose one with "
            f"plugins.prefer.{key}=<plugin name> (or uninstall one)"
        )

    def scorer(self, name: str) -> Callable[..., Any]:
        """The scorer registered as ``name``."""
        return self._lookup(self._scorers, "scorer", name, "")

    def scorer_data_sources(self, name: str) -> tuple[str, ...]:
        """The data sources (names and globs) the scorer registered as ``name`` answers for."""
        self.scorer(name)  # unknown or conflicting names raise, naming them
        return self._resolve(self._scorers, "scorer", name).data_sources

    def route(self, data_source: str) -> tuple[str, Callable[..., Any]]:
        """``(scorer name, fn)`` for ``data_source``: an exact route wins over a glob; the longest glob wins."""
        key = self._match(data_source, self._routes)
        if key is None:
            raise NotRegistered(
                f"no scorer for data_source '{data_source}'; known data sources: "
                f"{', '.join(self.known_data_sources()) or 'none'}{self._load_errors()}. {install_hint(data_source)}"
            )
        claim = self._resolve(self._routes, "data_source", key)
        return claim.name, claim.obj

    def known_data_sources(self) -> list[str]:
        """Every exact data_source and glob pattern some scorer answers for."""
        return sorted(self._routes)

    def attacks_for(self, data_source: str) -> list[tuple[str, Callable[..., Any]]]:
        """``(name, fn)`` of every attack family whose data_sources match ``data_source``."""
        claims = [self._resolve(self._attacks, "attack family", name) for name in sorted(self._attacks)]
        return [(c.name, c.obj) for c in claims if any(fnmatch.fnmatchcase(data_source, p) for p in c.data_sources)]

    def reward_manager(self, name: str) -> type:
        """The reward manager class registered as ``name``."""
        return self._lookup(self._managers, "reward manager", name, " (reward_model.reward_manager)")

    def claimant(self, obj: Any) -> Optional[PluginInfo]:
        """The plugin that registered ``obj`` (a scorer function or a manager class); None if none did."""
        claims = (c for table in (self._scorers, self._managers) for cs in table.values() for c in cs)
        return next((c.plugin for c in claims if c.obj is obj), None)

    def advantage_estimator(self, name: str) -> Callable[..., Any]:
        """The advantage estimator registered as ``name``."""
        return self._lookup(self._estimators, "advantage estimator", name, " (algorithm.adv_estimator)")

    def policy_loss(self, name: str) -> Callable[..., Any]:
        """The policy-loss mode registered as ``name``."""
        return self._lookup(self._policy_losses, "policy loss", name, " (actor_rollout_ref.actor.policy_loss.loss_mode)")

    def tool(self, name: str) -> type:
        """The tool class registered as ``name``."""
        return self._lookup(self._tools, "tool", name, "")

    def interaction(self, name: str) -> type:
        """The interaction class registered as ``name``."""
        return self._lookup(self._interactions, "interaction", name, "")

    def _lookup(self, table: dict[str, list[Claim]], kind: str, name: str, where: str) -> Any:
        if name not in table:
            known = ", ".join(sorted(table)) or "none"
            raise NotRegistered(f"unknown {kind} '{name}'{where}; known: {known}{self._load_errors()}")
        return self._resolve(table, kind, name).obj

    def _load_errors(self) -> str:
        broken = [p for p in self.plugins if p.error]
        if not broken:
            return ""
        return "; note: " + "; ".join(f"{p.label} failed to load and may have provided it: {p.error}" for p in broken)

    @staticmethod
    def _match(name: str, table: dict[str, list[Claim]]) -> Optional[str]:
        if name in table:
            return name
        patterns = [p for p in table if any(ch in p for ch in "*?[") and fnmatch.fnmatchcase(name, p)]
        return max(patterns, key=len) if patterns else None

    @staticmethod
    def match_key(name: str, keys: Sequence[str]) -> Optional[str]:
        """The key of ``keys`` (exact names and globs) that ``name`` matches: exact first, then the longest glob."""
        return Registry._match(name, {k: [] for k in keys})
