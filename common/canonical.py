"""The one canonical text of a value, for identity keys and content hashes.

Two values get the same text exactly when they hold the same data: arrays
become lists (all of their elements, whatever ``repr`` would shorten), numpy
scalars become Python numbers, tuples become lists, mappings are sorted by
key, sets are sorted. A type with no canonical form (an object whose
``repr`` may hide or vary what it holds) is refused by name rather than
guessed at, so two different inputs can never share a key.
"""
from __future__ import annotations

import json
import math
from typing import Any

# Tags mark the forms that JSON cannot tell apart from plain lists and strings.
_BYTES, _SET, _FLOAT, _PAIRS = "__bytes__", "__set__", "__float__", "__pairs__"


class NotCanonical(TypeError):
    """A value holds a type with no canonical form."""


def canonical(value: Any, where: str = "value") -> Any:
    """``value`` as plain JSON data (dicts with string keys, lists, str, int, float, bool, None).

    ``where`` names the value in the error for a type that has no canonical
    form (raised as :class:`NotCanonical`, naming the type and the path inside ``value``).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        # NaN and the infinities are not JSON; a tagged string keeps them distinct from text.
        return float(value) if math.isfinite(value) else {_FLOAT: repr(float(value))}
    if isinstance(value, (bytes, bytearray)):
        return {_BYTES: bytes(value).hex()}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: canonical(v, f"{where}[{k!r}]") for k, v in sorted(value.items())}
        pairs = [[canonical(k, f"{where} key"), canonical(v, f"{where}[{k!r}]")] for k, v in value.items()]
        return {_PAIRS: sorted(pairs, key=canonical_json)}
    if isinstance(value, (list, tuple)):
        return [canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return {_SET: sorted((canonical(v, f"{where} member") for v in value), key=canonical_json)}
    numpy = _numpy_form(value, where)
    if numpy is not _NO:
        return numpy
    raise NotCanonical(f"{where} holds a {type(value).__module__}.{type(value).__qualname__}, which has no canonical "
                       "form (supported: None, bool, int, float, str, bytes, dict, list, tuple, set, numpy arrays and scalars)")


_NO = object()


def _numpy_form(value: Any, where: str) -> Any:
    """The canonical form of a numpy array or scalar, or ``_NO`` for anything else (numpy is imported only if loaded)."""
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        return _NO
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [canonical(v, f"{where}[{i}]") for i, v in enumerate(value.tolist())]
        return canonical(value.tolist(), where)
    if isinstance(value, np.generic):
        return canonical(value.item(), where)
    return _NO


def canonical_json(value: Any, where: str = "value") -> str:
    """The canonical text of ``value``: :func:`canonical` as JSON with sorted keys (``json.dumps``'
    default separators and ASCII escapes, so plain JSON data hashes as it always did)."""
    return json.dumps(canonical(value, where), sort_keys=True)
