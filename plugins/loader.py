"""Loading plugins: the built-ins and every installed ``rewardsmith`` entry point.

Built-in modules are registered through exactly the hooks third-party plugins
use. A plugin that fails to import or to register is recorded with its error
and the rest keep working; only a run that needs what it would have provided
fails, and that error mentions the broken plugin.
"""
from __future__ import annotations

import importlib.metadata
import threading
from typing import Any, Optional

import pluggy

from rewardsmith.plugins import hookspecs
from rewardsmith.plugins.registry import PluginInfo, Registry

ENTRY_POINT_GROUP = "rewardsmith"
# Entry points of this distribution are the built-ins: a third-party claim
# overrides theirs instead of clashing with it.
OWN_DISTRIBUTION = "rewardsmith"

_HOOKS = (
    ("register_scorers", "add_scorer"),
    ("register_reward_managers", "add_reward_manager"),
    ("register_advantage_estimators", "add_advantage_estimator"),
    ("register_policy_losses", "add_policy_loss"),
    ("register_attacks", "add_attack"),
    ("register_tools", "add_tool"),
    ("register_interactions", "add_interaction"),
)


def load_registry(disable: tuple[str, ...] = (), prefer: Optional[dict[str, str]] = None) -> Registry:
    """Import every plugin (minus ``disable``) and collect what it registers."""
    pm = pluggy.PluginManager("rewardsmith")
    pm.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    modules: dict[str, Any] = {}
    # Built-ins first, so that `rewardsmith plugins` lists them first.
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                     key=lambda e: (_dist_name(e) != OWN_DISTRIBUTION, e.name)):
        dist = _dist_name(ep)
        info = PluginInfo(ep.name, dist, ep.dist.version if ep.dist else None, builtin=dist == OWN_DISTRIBUTION)
        infos.append(info)
        if ep.name not in disable:
            _import_into(pm, info, ep.load, modules)

    registry = Registry(infos, prefer)
    for info in infos:
        plugin = modules.get(info.name)
        if plugin is None:
            continue
        for hook_name, method in _HOOKS:
            for impl in getattr(pm.hook, hook_name).get_hookimpls():
                if impl.plugin is not plugin:
                    continue
                register = _register_for(registry, method, info)
                try:
                    impl.function(register=register)
                except Exception as exc:  # noqa: BLE001 - reported, never fatal
                    info.error = f"{hook_name} failed: {type(exc).__name__}: {exc}"
    return registry


def _dist_name(ep: importlib.metadata.EntryPoint) -> Optional[str]:
    return ep.dist.name if ep.dist else None


def _import_into(pm: pluggy.PluginManager, info: PluginInfo, load: Any, modules: dict[str, Any]) -> None:
    try:
        plugin = load()
        pm.register(plugin, name=info.name)
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the host down
        info.error = f"failed to load: {type(exc).__name__}: {exc}"
        return
    modules[info.name] = plugin


def _register_for(registry: Registry, method: str, info: PluginInfo) -> Any:
    add = getattr(registry, method)

    def register(name: str, obj: Any, **kwargs: Any) -> None:
        add(info, name, obj, **kwargs)

    return register


_cache: dict[tuple, Registry] = {}
_lock = threading.Lock()


def get_registry(plugins_config: Any = None) -> Registry:
    """The registry for a ``plugins`` config section (cached; ``None`` = defaults)."""
    disable = tuple(getattr(plugins_config, "disable", ()) or ())
    prefer = dict(getattr(plugins_config, "prefer", {}) or {})
    key = (disable, tuple(sorted(prefer.items())))
    with _lock:
        if key not in _cache:
            _cache[key] = load_registry(disable, prefer)
        return _cache[key]
