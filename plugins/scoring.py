"""Calling one scorer on one sample, safely, and reading what it returned."""
from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from rewardkit.common.errors import ScorerInfrastructureError
from rewardkit.common.function_refs import FunctionRef

# Statuses a sample's score can have; all but ok/abstain count as failures in metrics.
OK, ABSTAIN, ERROR, INVALID, TIMEOUT, CRASH, UNAVAILABLE = "ok", "abstain", "error", "invalid", "timeout", "crash", "unavailable"


@dataclass
class ScoreOutcome:
    """One scorer's verdict on one sample. ``score`` is None unless ``status`` is ``ok``."""

    status: str
    score: Optional[float] = None
    extras: dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None
    seconds: float = 0.0


class InvalidScore(ValueError):
    """A scorer returned something that is not a finite number, a dict with one, or None."""


def call_scorer(fn: Callable[..., Any], data_source: str, solution_str: str, ground_truth: Any,
                extra_info: Optional[dict], kwargs: dict[str, Any]) -> Any:
    """Call ``fn`` with verl's keyword arguments; an ``async def`` scorer is run to completion."""
    result = fn(data_source=data_source, solution_str=solution_str, ground_truth=ground_truth,
                extra_info=extra_info, **kwargs)
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def interpret(raw: Any) -> tuple[Optional[float], dict[str, Any]]:
    """Read a scorer's return value as ``(score, extras)``; ``score`` None means abstain.

    Accepts a real number (bools included), or a dict whose ``score`` is one,
    the other keys being extras. Raises :class:`InvalidScore` otherwise.
    """
    extras: dict[str, Any] = {}
    value = raw
    if isinstance(raw, dict):
        if "score" not in raw:
            raise InvalidScore(f"returned a dict without a 'score' key (keys: {sorted(raw)})")
        value = raw["score"]
        extras = {k: v for k, v in raw.items() if k != "score"}
    if value is None:
        return None, extras
    if not isinstance(value, numbers.Real):
        raise InvalidScore(f"returned {type(value).__name__} {value!r}, expected a number, a dict with 'score', or None")
    value = float(value)
    if not math.isfinite(value):
        raise InvalidScore(f"returned a non-finite score ({value})")
    return value, extras


def score_sample(fn: Callable[..., Any], data_source: str, solution_str: str, ground_truth: Any,
                 extra_info: Optional[dict], kwargs: dict[str, Any]) -> ScoreOutcome:
    """Score one sample in this process; any exception becomes a failed outcome, never a crash."""
    start = time.perf_counter()
    try:
        score, extras = interpret(call_scorer(fn, data_source, solution_str, ground_truth, extra_info, kwargs))
    except InvalidScore as exc:
        return ScoreOutcome(INVALID, error=str(exc), seconds=time.perf_counter() - start)
    except ScorerInfrastructureError as exc:
        return ScoreOutcome(UNAVAILABLE, error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
    except TimeoutError as exc:  # a scorer's own guard (e.g. math_answer's hard timeout) gave up
        return ScoreOutcome(TIMEOUT, error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a scorer's bug costs one sample
        return ScoreOutcome(ERROR, error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
    status = ABSTAIN if score is None else OK
    return ScoreOutcome(status, score, extras, seconds=time.perf_counter() - start)


def score_by_ref(ref: FunctionRef, data_source: str, solution_str: str, ground_truth: Any,
                 extra_info: Optional[dict], kwargs: dict[str, Any]) -> ScoreOutcome:
    """:func:`score_sample` for a worker process, which re-imports the scorer by reference."""
    return score_sample(_load(ref), data_source, solution_str, ground_truth, extra_info, kwargs)


_loaded: dict[FunctionRef, Callable[..., Any]] = {}


def _load(ref: FunctionRef) -> Callable[..., Any]:
    fn = _loaded.get(ref)
    if fn is None:
        fn = _loaded[ref] = ref.load()
    return fn
