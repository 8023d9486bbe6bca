"""verl's ``tool_config_path`` and ``interaction_config_path`` files, loaded unchanged.

::

    tools:                                   interaction:
      - class_name: <class>                    - name: gsm8k          # optional
        config: {type: native, ...}              class_name: <class>
        tool_schema: {type: function, ...}       config: {...}

``class_name`` is resolved in this order: verl's own built-in classes
(``verl.tools.gsm8k_tool.Gsm8kTool``, ``verl.tools.sandbox_fusion_tools.SandboxFusionTool``,
``verl.tools.search_tool.SearchTool``, ``verl.interactions.gsm8k_interaction.Gsm8kInteraction``)
are the registered tools ``gsm8k``, ``code_interpreter``, ``search`` and the
interaction ``gsm8k`` (always, whether verl is installed or not: one
behaviour, with no Ray); a name without dots is a registered tool or
interaction (``register_tools`` / ``register_interactions``); anything else is
imported as ``module.Class`` (a user's class, on rewardsmith's or verl's base
classes). Every error names the file, the entry and the key.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import yaml

from rewardsmith.common.errors import ConfigError, NotRegistered
from rewardsmith.plugins.registry import Registry
from rewardsmith.reward_fns.tools.schemas import OpenAIFunctionToolSchema

VERL_TOOL_CLASSES = {
    "verl.tools.gsm8k_tool.Gsm8kTool": "gsm8k",
    "verl.tools.sandbox_fusion_tools.SandboxFusionTool": "code_interpreter",
    "verl.tools.search_tool.SearchTool": "search",
}
VERL_INTERACTION_CLASSES = {
    "verl.interactions.gsm8k_interaction.Gsm8kInteraction": "gsm8k",
}


def load_tools(path: str | Path, registry: Optional[Registry] = None) -> dict[str, Any]:
    """The tools a verl ``tool_config_path`` file declares, by tool name (their schema's function name)."""
    registry = registry or _default_registry()
    entries = _entries(path, "tools")
    tools: dict[str, Any] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: tools[{index}]"
        cls = _resolve(entry, where, registry.tool, VERL_TOOL_CLASSES)
        config = _mapping(entry, "config", where)
        kind = config.get("type", "native")
        if kind != "native":
            raise ConfigError(f"{where}.config.type: {kind!r} is not supported; only 'native' tools are "
                              f"(verl 0.9.1 removed MCP tools too)")
        schema = _schema(entry.get("tool_schema"), cls, f"{where}.tool_schema")
        tool = _construct(where, entry["class_name"], lambda: cls(config=config, tool_schema=schema))
        if tool.name in tools:
            raise ConfigError(f"{where}: a second tool named '{tool.name}' (tool_schema.function.name); "
                              f"each tool name must be unique")
        tools[tool.name] = tool
    return tools


def load_interactions(path: str | Path, registry: Optional[Registry] = None) -> dict[str, Any]:
    """The interactions a verl ``interaction_config_path`` file declares, by name."""
    registry = registry or _default_registry()
    interactions: dict[str, Any] = {}
    for index, entry in enumerate(_entries(path, "interaction")):
        where = f"{path}: interaction[{index}]"
        cls = _resolve(entry, where, registry.interaction, VERL_INTERACTION_CLASSES)
        name = entry.get("name") or _default_name(entry["class_name"])
        if not isinstance(name, str):
            raise ConfigError(f"{where}.name must be a string, got {name!r}")
        if name in interactions:
            raise ConfigError(f"{where}.name: duplicate interaction name '{name}'; each must be unique")
        config = {**_mapping(entry, "config", where), "name": name}
        interactions[name] = _construct(where, entry["class_name"], lambda: cls(config))
    return interactions


def _default_registry() -> Registry:
    from rewardsmith.plugins.loader import get_registry

    return get_registry()


def _entries(path: str | Path, key: str) -> list[dict[str, Any]]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or key not in data:
        raise ConfigError(f"{path}: expected a top-level '{key}:' list")
    entries = data[key] or []
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: '{key}' must be a list, got {type(entries).__name__}")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: {key}[{index}] must be a mapping, got {entry!r}")
        if not isinstance(entry.get("class_name"), str) or not entry["class_name"]:
            raise ConfigError(f"{path}: {key}[{index}].class_name is missing")
        _refuse_interpolation(entry, f"{path}: {key}[{index}]")
    return entries


def _refuse_interpolation(value: Any, where: str) -> None:
    # verl resolves OmegaConf's ${...}; passing the literal on would silently differ from verl.
    if isinstance(value, str) and "${" in value:
        raise ConfigError(f"{where}: OmegaConf interpolation {value!r} is not supported here; write the value itself")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        _refuse_interpolation(item, f"{where}.{key}" if isinstance(value, dict) else f"{where}[{key}]")


def _mapping(entry: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}.{key} must be a mapping, got {type(value).__name__}")
    return dict(value)


def _resolve(entry: Mapping[str, Any], where: str, lookup: Callable[[str], type],
             verl_classes: Mapping[str, str]) -> type:
    class_name = entry["class_name"]
    registered = verl_classes.get(class_name) or (class_name if "." not in class_name else None)
    if registered is not None:
        try:
            return lookup(registered)
        except NotRegistered as exc:
            raise ConfigError(f"{where}.class_name: {exc}") from exc
    module_name, _, attr = class_name.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the config's problem to report
        raise ConfigError(f"{where}.class_name: cannot import module '{module_name}' of '{class_name}': "
                          f"{type(exc).__name__}: {exc}") from exc
    cls = getattr(module, attr, None)
    if not isinstance(cls, type):
        raise ConfigError(f"{where}.class_name: module '{module_name}' has no class '{attr}'")
    return cls


def _schema(raw: Any, cls: type, where: str) -> Any:
    if raw is None:
        return None
    model = _schema_model_for(cls)
    try:
        return model.model_validate(raw)
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError, named with its key
        raise ConfigError(f"{where}: not a valid OpenAI function-tool schema: {exc}") from exc


def _schema_model_for(cls: type) -> Any:
    # A class written against verl's BaseTool gets verl's schema class, as under verl.
    if any(base.__module__.startswith("verl.") for base in cls.__mro__):
        from verl.tools.schemas import OpenAIFunctionToolSchema as VerlSchema

        return VerlSchema
    return OpenAIFunctionToolSchema


def _construct(where: str, class_name: str, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - a constructor's complaint, with where it came from
        raise ConfigError(f"{where} ({class_name}): {type(exc).__name__}: {exc}") from exc


def _default_name(class_name: str) -> str:
    # verl's rule: the class's own name, lower-cased, without an "Interaction" suffix.
    simple = class_name.rsplit(".", 1)[-1]
    return (simple[: -len("Interaction")] if simple.endswith("Interaction") else simple).lower()
