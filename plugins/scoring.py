"""Calling one scorer on one sample, safely, and reading what it returned."""
from __future__ import annotations

import asyncio
import inspect
import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from rewardsmith.common.errors import ScorerInfrastructureError
from rewardsmith.common.function_refs import FunctionRef
from rewardsmith.plugins.network_errors import is_network_failure

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


# A verifier that cannot tell says so (a dict with ``"verdict": "undecided"``, its ``"why"``, and
# ``"score": None``): the sample abstains, and is counted as undecided.
UNDECIDED = "undecided"


def is_undecided(outcome: ScoreOutcome) -> bool:
    """Whether a scorer returned the verdict ``undecided`` (any scorer's dict, not only math_answer's)."""
    return outcome.extras.get("verdict") == UNDECIDED


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
    the other keys being extras (a ``verdict`` of ``undecided`` with a None
    score is a verifier abstaining, :func:`is_undecided`). Raises
    :class:`InvalidScore` otherwise.
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


# What a single-turn rollout means for the keys verl's managers add to extra_info:
# its agent loop counts the prompt and the response as two turns, and nothing
# scored the rollout on the way.
SINGLE_TURN = 2


def with_verl_keys(extra_info: Optional[dict]) -> dict:
    """A copy of ``extra_info`` with the keys verl's reward managers inject and files read.

    ``num_turns`` (2 for a single-turn rollout, as in verl's agent loop) and
    ``rollout_reward_scores`` (``{}``: no tool or interaction scored the rollout);
    values a row already carries (offline multi-turn rollouts) are kept.
    """
    info = dict(extra_info or {})
    info.setdefault("num_turns", SINGLE_TURN)
    info.setdefault("rollout_reward_scores", {})
    return info


def failure_status(exc: BaseException) -> str:
    """The status of a sample whose scorer raised ``exc``.

    ``unavailable`` for a service that could not be reached (the scorer's own
    network call, or :class:`ScorerInfrastructureError`), ``timeout`` for a
    scorer's own guard giving up (e.g. math_answer's hard timeout), ``error``
    for anything else.
    """
    if isinstance(exc, ScorerInfrastructureError) or is_network_failure(exc):
        return UNAVAILABLE
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    return ERROR


def score_sample(fn: Callable[..., Any], data_source: str, solution_str: str, ground_truth: Any,
                 extra_info: Optional[dict], kwargs: dict[str, Any]) -> ScoreOutcome:
    """Score one sample in this process; any exception becomes a failed outcome, never a crash.

    The scorer sees ``extra_info`` with verl's injected keys (:func:`with_verl_keys`).
    """
    start = time.perf_counter()
    try:
        raw = call_scorer(fn, data_source, solution_str, ground_truth, with_verl_keys(extra_info), kwargs)
        score, extras = interpret(raw)
    except InvalidScore as exc:
        return ScoreOutcome(INVALID, error=str(exc), seconds=time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - a scorer's bug costs one sample
        return ScoreOutcome(failure_status(exc), error=f"{type(exc).__name__}: {exc}",
                            seconds=time.perf_counter() - start)
    status = ABSTAIN if score is None else OK
    return ScoreOutcome(status, score, extras, seconds=time.perf_counter() - start)


def score_batch(fn: Callable[..., Any], data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                extra_infos: list[Optional[dict]], kwargs: dict[str, Any]) -> list[ScoreOutcome]:
    """Score a batch with one call of a batched ``compute_score``, as verl's ``batch`` manager does.

    The call is ``fn(data_sources=, solution_strs=, ground_truths=, extra_infos=, **kwargs)``
    and must return one float or dict per sample. An exception fails every
    sample with it; a wrong-length answer makes every sample ``invalid``; each
    item is read as :func:`interpret` reads a per-sample return.
    """
    n = len(solution_strs)
    start = time.perf_counter()
    try:
        raw = fn(data_sources=list(data_sources), solution_strs=list(solution_strs), ground_truths=list(ground_truths),
                 extra_infos=[with_verl_keys(e) for e in extra_infos], **kwargs)
        if inspect.isawaitable(raw):
            raw = asyncio.run(_await(raw))
    except Exception as exc:  # noqa: BLE001 - the batch's samples fall back, counted
        status, error = failure_status(exc), f"{type(exc).__name__}: {exc}"
        return [ScoreOutcome(status, error=error, seconds=(time.perf_counter() - start) / max(1, n)) for _ in range(n)]
    seconds = (time.perf_counter() - start) / max(1, n)
    try:
        items = list(raw)
    except TypeError:
        items = None
    if items is None or len(items) != n:
        got = f"{len(items)} items" if items is not None else type(raw).__name__
        error = f"returned {got} for a batch of {n}; a batched compute_score returns one score per sample"
        return [ScoreOutcome(INVALID, error=error, seconds=seconds) for _ in range(n)]
    outcomes = []
    for item in items:
        try:
            score, extras = interpret(item)
        except InvalidScore as exc:
            outcomes.append(ScoreOutcome(INVALID, error=str(exc), seconds=seconds))
            continue
        outcomes.append(ScoreOutcome(ABSTAIN if score is None else OK, score, extras, seconds=seconds))
    return outcomes


def score_by_ref(ref: FunctionRef, data_source: str, solution_str: str, ground_truth: Any,
                 extra_info: Optional[dict], kwargs: dict[str, Any]) -> ScoreOutcome:
    """:func:`score_sample` for a worker process, which re-imports the scorer by reference."""
    return score_sample(_load(ref), data_source, solution_str, ground_truth, extra_info, kwargs)


def score_batch_by_ref(ref: FunctionRef, data_sources: list[str], solution_strs: list[str], ground_truths: list[Any],
                       extra_infos: list[Optional[dict]], kwargs: dict[str, Any]) -> list[ScoreOutcome]:
    """:func:`score_batch` for a worker process, which re-imports the function by reference."""
    return score_batch(_load(ref), data_sources, solution_strs, ground_truths, extra_infos, kwargs)


_loaded: dict[FunctionRef, Callable[..., Any]] = {}


def _load(ref: FunctionRef) -> Callable[..., Any]:
    fn = _loaded.get(ref)
    if fn is None:
        fn = _loaded[ref] = ref.load()
    return fn
