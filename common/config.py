"""Typed configuration: YAML files plus Hydra-style ``key=value`` overrides.

A section's ``__post_init__`` validates its values by raising
:class:`InvalidValue` with a key relative to the section; :func:`build`
prefixes the section's dotted path, so the message names the full key
wherever the section appears.

A schema is a tree of dataclasses whose fields carry a default and a help
text (see :func:`opt`). Loading merges, in order, the schema's defaults, a YAML
file and command-line overrides, then checks every key and value against the
schema, so an unknown key or a bad value fails early with its full dotted name.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, Optional, TypeVar, Union

import yaml

from rewardsmith.common.errors import ConfigError

T = TypeVar("T")


class InvalidValue(ValueError):
    """Raised by a section's ``__post_init__``: ``key`` (relative to the section) is invalid."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key} {reason}")
        self.key = key
        self.reason = reason


def require_positive(key: str, value: Optional[float], allow_none: bool = True) -> None:
    """Raise :class:`InvalidValue` unless ``value > 0`` (or None, when ``allow_none``)."""
    if value is None and allow_none:
        return
    if value is None or value <= 0:
        raise InvalidValue(key, f"must be > 0{' or null' if allow_none else ''}, got {value!r}")


def require_http_url(key: str, value: Optional[str]) -> None:
    """Raise :class:`InvalidValue` unless ``value`` is None or an http(s) URL with a host (and a valid port)."""
    if value is None:
        return
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0-65535
    except ValueError:
        ok = False
    if not ok:
        raise InvalidValue(key, f"must be an http(s) URL such as http://host:port/path, got {value!r}")


def exclusive(key: str, value: Any, other_key: str, other_value: Any) -> None:
    """Raise :class:`InvalidValue` when both keys are set (verl's global and per-GPU sizes, say)."""
    if value is not None and other_value is not None:
        raise InvalidValue(key, f"and {other_key} are both set: keep one")


def opt(default: Any = dataclasses.MISSING, help: str = "", **kwargs: Any) -> Any:
    """A schema field with a default and a help text (shown in ``docs/config.md``)."""
    if isinstance(default, (dict, list)):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata={"help": help}, **kwargs)
    if dataclasses.is_dataclass(default) and isinstance(default, type):
        return dataclasses.field(default_factory=default, metadata={"help": help}, **kwargs)
    return dataclasses.field(default=default, metadata={"help": help}, **kwargs)


def section(cls: type, help: str = "") -> Any:
    """A nested schema section whose defaults are those of ``cls``."""
    return dataclasses.field(default_factory=cls, metadata={"help": help})


def load_config(schema: type[T], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> T:
    """Build ``schema`` from its defaults, an optional YAML file and ``key=value`` overrides."""
    tree: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(_yaml_error(path, exc)) from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level, got {type(loaded).__name__}")
        tree = loaded
    for item in overrides:
        apply_override(tree, item)
    return build(schema, tree)


def _yaml_error(path: Path, exc: Exception) -> str:
    """One line naming the file and line of a YAML syntax error (PyYAML's marks count from 0)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{where}: not valid YAML: {problem}"


def apply_override(tree: dict[str, Any], item: str) -> None:
    """Apply one ``a.b.c=value`` override to a nested dict (value parsed as YAML).

    Hydra's ``+key=value`` (add) is accepted as a plain override, since every
    key must exist in the schema anyway.
    """
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form key=value")
    key, raw = item.split("=", 1)
    key = key.strip().lstrip("+")
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {item!r} has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {key}: cannot parse value {raw!r}: {exc}") from None
    node = tree
    parts = key.split(".")
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key}: '{'.'.join(parts[: i + 1])}' is a value, not a section")
        node = child
    node[parts[-1]] = value


def build(schema: type[T], data: Any, prefix: str = "") -> T:
    """Construct dataclass ``schema`` from a nested mapping, validating keys and types."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"'{prefix.rstrip('.') or '<root>'}' must be a mapping, got {data!r}")
    # A schema may accept another layout of its keys (verl's reward.*) by rewriting the tree first.
    normalize = getattr(schema, "normalize_tree", None)
    if normalize is not None:
        data = normalize(data)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = prefix.rstrip(".") or "the top level"
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}'; allowed keys under {where}: {', '.join(sorted(fields))}"
        )
    hints = typing.get_type_hints(schema)
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _check(hints[name], value, f"{prefix}{name}")
    try:
        return schema(**kwargs)
    except ConfigError:
        raise
    except InvalidValue as exc:
        raise ConfigError(f"{prefix}{exc.key} {exc.reason}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: {exc}") from None


def _check(tp: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        return build(tp, value, key + ".")
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _check(arg, value, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{key}: invalid value {value!r} ({'; '.join(errors)})")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{key}: invalid value {value!r}; allowed: {', '.join(map(repr, args))}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):
            # YAML 1.1 reads `3e-3` (no dot) as a string; accept what float() reads.
            try:
                return float(value)
            except ValueError:
                raise ConfigError(f"{key}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        vt = args[1] if args else Any
        return {k: _check(vt, v, f"{key}.{k}") for k, v in value.items()}
    if origin is list or tp is list:
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        vt = args[0] if args else Any
        return [_check(vt, v, f"{key}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"unsupported config type {tp!r} for {key}")


def to_dict(config: Any) -> dict[str, Any]:
    """The config as plain nested dicts (for saving next to a run's outputs)."""
    return dataclasses.asdict(config)


def describe(schema: type, prefix: str = "") -> list[tuple[str, str, Any, str]]:
    """Every leaf key of ``schema`` as ``(dotted key, type, default, help)``, in declaration order."""
    rows: list[tuple[str, str, Any, str]] = []
    hints = typing.get_type_hints(schema)
    defaults = schema()
    for f in dataclasses.fields(schema):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            rows.extend(describe(tp, f"{prefix}{f.name}."))
        else:
            rows.append((prefix + f.name, _type_name(tp), getattr(defaults, f.name), f.metadata.get("help", "")))
    return rows


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if origin is not None:
        return repr(tp).replace("typing.", "")
    return getattr(tp, "__name__", repr(tp))
