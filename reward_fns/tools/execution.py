"""Running the tool calls of one turn: concurrently, bounded, and never raising into the caller.

As verl's tool agent loop does, each call creates an instance of its tool
(``create(create_kwargs=...)``), executes it, and releases it; the first
``max_parallel_calls`` calls of a turn run concurrently and the rest are
dropped (counted). A call whose tool fails, raises, times out, is unknown or
whose service is unreachable becomes an error result the model sees
(``Error when executing tool: ...``, verl's wording) and is counted per tool
in :class:`ToolStats`; it never raises. Works with rewardsmith's tools and
with classes written against verl's ``BaseTool``.

A call that ran also asks its instance for the tool's own reward
(``calc_reward``, with the row's ``calc_reward_kwargs`` as verl's sglang
rollout passed them) before releasing it: the tool's **episode reward**
(:attr:`ToolResult.episode_reward`), which verl hands the scorer as
``extra_info["rollout_reward_scores"][tool]``. A ``calc_reward`` that raises
or times out costs only that reward (counted as ``reward_failed``).
"""
from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from rewardsmith.reward_fns.tools.errors import ToolInputError, ToolUnavailable
from rewardsmith.reward_fns.tools.schemas import ToolResponse

log = logging.getLogger(__name__)

# A call's outcome; everything but "ok" is counted as a failure of its tool.
OK, INVALID, FAILED, TIMEOUT, UNAVAILABLE, UNKNOWN_TOOL = "ok", "invalid", "failed", "timeout", "unavailable", "unknown_tool"


@dataclass
class ToolCall:
    """One call the model made: the tool's name and its decoded arguments."""

    name: str
    arguments: dict[str, Any]


@dataclass
class ToolResult:
    """What one call gave: the response for the conversation, the tool's step reward, its metrics."""

    name: str
    response: Any  # a ToolResponse: ours, or verl's for verl's tools (read by attribute)
    reward: Optional[float]
    metrics: dict[str, Any]
    status: str
    error: Optional[str]
    latency_s: float
    # The instance's calc_reward after this call: None when the call failed, the tool's calc_reward failed,
    # or it gave no number (verl's sandbox and search tools return "").
    episode_reward: Optional[float] = None

    @property
    def failed(self) -> bool:
        """True unless the tool ran and answered."""
        return self.status != OK


@dataclass
class ToolStats:
    """Calls, failures by kind, dropped calls and latencies, per tool."""

    calls: dict[str, int] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    reward_failures: dict[str, int] = field(default_factory=dict)  # calc_reward raised or timed out

    def record(self, result: ToolResult) -> None:
        """Count one finished call."""
        self.calls[result.name] = self.calls.get(result.name, 0) + 1
        self.latencies.setdefault(result.name, []).append(result.latency_s)
        if result.failed:
            kinds = self.failures.setdefault(result.name, {})
            kinds[result.status] = kinds.get(result.status, 0) + 1

    def record_reward_failure(self, name: str) -> None:
        """Count a ``calc_reward`` that raised or timed out."""
        self.reward_failures[name] = self.reward_failures.get(name, 0) + 1

    def record_dropped(self, name: str) -> None:
        """Count a call past ``max_parallel_calls`` that was not run."""
        self.dropped[name] = self.dropped.get(name, 0) + 1

    def merge(self, other: "ToolStats") -> None:
        """Add ``other``'s counts and latencies to these (e.g. every episode's of a batch)."""
        for name, count in other.calls.items():
            self.calls[name] = self.calls.get(name, 0) + count
        for name, kinds in other.failures.items():
            mine = self.failures.setdefault(name, {})
            for kind, count in kinds.items():
                mine[kind] = mine.get(kind, 0) + count
        for name, count in other.dropped.items():
            self.dropped[name] = self.dropped.get(name, 0) + count
        for name, latencies in other.latencies.items():
            self.latencies.setdefault(name, []).extend(latencies)
        for name, count in other.reward_failures.items():
            self.reward_failures[name] = self.reward_failures.get(name, 0) + count

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, failures (total and by kind), dropped, failed ``calc_reward`` calls, latency p50/p99 in seconds."""
        out = {}
        for name in sorted(set(self.calls) | set(self.dropped) | set(self.reward_failures)):
            latencies = sorted(self.latencies.get(name, []))
            kinds = self.failures.get(name, {})
            out[name] = {"calls": self.calls.get(name, 0), "failures": sum(kinds.values()), **kinds,
                         "dropped": self.dropped.get(name, 0), "reward_failed": self.reward_failures.get(name, 0),
                         "latency_p50_s": _percentile(latencies, 50), "latency_p99_s": _percentile(latencies, 99)}
        return out


def _percentile(ordered: list[float], q: float) -> Optional[float]:
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


async def call_tool(tool: Any, call: ToolCall, *, create_kwargs: Optional[dict] = None,
                    calc_reward_kwargs: Optional[dict] = None, timeout_s: Optional[float] = None,
                    stats: Optional[ToolStats] = None, **execute_kwargs: Any) -> ToolResult:
    """Create, execute, ask for the reward of and release one instance of ``tool`` for ``call``; never raises.

    ``stats`` counts a failed ``calc_reward`` (the call itself is counted by :func:`call_tools`).
    """
    started = time.perf_counter()
    instance_id = None
    try:
        instance_id, _ = _instance(await asyncio.wait_for(tool.create(create_kwargs=create_kwargs or {}), timeout_s))
        raw = await asyncio.wait_for(tool.execute(instance_id, call.arguments, **execute_kwargs), timeout_s)
        response, reward, metrics = raw
        if isinstance(response, str):  # verl's tools before ToolResponse returned text
            response = ToolResponse(text=response)
        if not hasattr(response, "text"):
            raise TypeError(f"execute returned {type(response).__name__}, not a ToolResponse")
        latency = time.perf_counter() - started
        episode_reward = await instance_reward(tool, call.name, instance_id, calc_reward_kwargs, timeout_s, stats)
        return ToolResult(call.name, response, None if reward is None else float(reward), dict(metrics or {}),
                          OK, None, latency, episode_reward)
    except asyncio.TimeoutError:
        status, error = TIMEOUT, f"tool '{call.name}' timed out after {timeout_s} s"
    except ToolInputError as exc:
        status, error = INVALID, str(exc)
    except ToolUnavailable as exc:
        status, error = UNAVAILABLE, str(exc)
    except Exception as exc:  # noqa: BLE001 - a tool's bug costs its call, never the episode
        status, error = FAILED, f"{type(exc).__name__}: {exc}"
    finally:
        if instance_id is not None:
            await _release(tool, call.name, instance_id, timeout_s)
    log.warning("tool '%s' call failed (%s): %s", call.name, status, error)
    return ToolResult(call.name, ToolResponse(text=f"Error when executing tool: {error}"), 0.0, {},
                      status, error, time.perf_counter() - started)


async def instance_reward(tool: Any, name: str, instance_id: str, calc_reward_kwargs: Optional[dict],
                          timeout_s: Optional[float], stats: Optional[ToolStats]) -> Optional[float]:
    """The instance's ``calc_reward`` as a float; None when it is not a number (verl's sandbox and search
    tools return ``""``), or when it raised or timed out (logged, and counted in ``stats``)."""
    try:
        value = await asyncio.wait_for(tool.calc_reward(instance_id, **(calc_reward_kwargs or {})), timeout_s)
    except Exception as exc:  # noqa: BLE001 - a broken calc_reward costs the reward, never the call
        log.warning("tool '%s' calc_reward failed: %s: %s", name, type(exc).__name__, exc)
        if stats is not None:
            stats.record_reward_failure(name)
        return None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


async def unused_tool_reward(tool: Any, name: str, *, create_kwargs: Optional[dict] = None,
                             calc_reward_kwargs: Optional[dict] = None, timeout_s: Optional[float] = None,
                             stats: Optional[ToolStats] = None) -> Optional[float]:
    """The reward of a tool the episode offered (the row's ``tools_kwargs``) but never called: a fresh
    instance's ``calc_reward``, as verl's sglang rollout asked each of the row's tools at the episode's end
    (e.g. 0.0 from the gsm8k tool with no answer submitted). None when it fails (logged, counted)."""
    instance_id = None
    try:
        instance_id, _ = _instance(await asyncio.wait_for(tool.create(create_kwargs=create_kwargs or {}), timeout_s))
        return await instance_reward(tool, name, instance_id, calc_reward_kwargs, timeout_s, stats)
    except Exception as exc:  # noqa: BLE001 - a tool that cannot start costs its reward, never the step
        log.warning("tool '%s' failed to create an instance for its reward: %s: %s", name, type(exc).__name__, exc)
        if stats is not None:
            stats.record_reward_failure(name)
        return None
    finally:
        if instance_id is not None:
            await _release(tool, name, instance_id, timeout_s)


def _instance(created: Any) -> tuple[str, Any]:
    # verl's older tools return only the instance id from create().
    return created if isinstance(created, tuple) else (created, None)


async def _release(tool: Any, name: str, instance_id: str, timeout_s: Optional[float]) -> None:
    try:
        await asyncio.wait_for(tool.release(instance_id), timeout_s)
    except Exception as exc:  # noqa: BLE001 - the call's result stands; the leak is logged
        log.warning("tool '%s' failed to release instance %s: %s: %s", name, instance_id, type(exc).__name__, exc)


async def call_tools(tools: Mapping[str, Any], calls: Sequence[ToolCall], *, max_parallel_calls: int = 1,
                     create_kwargs: Optional[Mapping[str, dict]] = None,
                     calc_reward_kwargs: Optional[Mapping[str, dict]] = None, timeout_s: Optional[float] = None,
                     stats: Optional[ToolStats] = None, **execute_kwargs: Any) -> list[ToolResult]:
    """Run the first ``max_parallel_calls`` of one turn's ``calls`` concurrently; results in call order.

    ``create_kwargs`` maps a tool's name to the ``create_kwargs`` its instances
    get (verl's ``tools_kwargs.<name>.create_kwargs`` of the row), and
    ``calc_reward_kwargs`` to what its ``calc_reward`` gets
    (``tools_kwargs.<name>.calc_reward_kwargs``).
    """
    if max_parallel_calls < 1:
        raise ValueError(f"max_parallel_calls must be at least 1, got {max_parallel_calls}")
    stats = stats if stats is not None else ToolStats()
    for dropped in calls[max_parallel_calls:]:
        stats.record_dropped(dropped.name)
    results = await asyncio.gather(*(_one(tools, call, create_kwargs or {}, calc_reward_kwargs or {}, timeout_s, stats,
                                          execute_kwargs) for call in calls[:max_parallel_calls]))
    for result in results:
        stats.record(result)
    return list(results)


async def _one(tools: Mapping[str, Any], call: ToolCall, create_kwargs: Mapping[str, dict],
               calc_reward_kwargs: Mapping[str, dict], timeout_s: Optional[float], stats: ToolStats,
               execute_kwargs: dict) -> ToolResult:
    tool = tools.get(call.name)
    if tool is None:
        error = f"no tool named '{call.name}'; tools: {', '.join(sorted(tools)) or 'none'}"
        return ToolResult(call.name, ToolResponse(text=f"Error when executing tool: {error}"), 0.0, {},
                          UNKNOWN_TOOL, error, 0.0)
    return await call_tool(tool, call, create_kwargs=create_kwargs.get(call.name),
                           calc_reward_kwargs=calc_reward_kwargs.get(call.name), timeout_s=timeout_s, stats=stats,
                           **execute_kwargs)
