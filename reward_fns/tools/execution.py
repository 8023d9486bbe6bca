"""Running the tool calls of one turn: concurrently, bounded, and never raising into the caller.

As verl's tool agent loop does, each call creates an instance of its tool
(``create(create_kwargs=...)``), executes it, and releases it; the first
``max_parallel_calls`` calls of a turn run concurrently and the rest are
dropped (counted). A call whose tool fails, raises, times out, is unknown or
whose service is unreachable becomes an error result the model sees
(``Error when executing tool: ...``, verl's wording) and is counted per tool
in :class:`ToolStats`; it never raises. Works with rewardsmith's tools and
with classes written against verl's ``BaseTool``.
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

    def record(self, result: ToolResult) -> None:
        """Count one finished call."""
        self.calls[result.name] = self.calls.get(result.name, 0) + 1
        self.latencies.setdefault(result.name, []).append(result.latency_s)
        if result.failed:
            kinds = self.failures.setdefault(result.name, {})
            kinds[result.status] = kinds.get(result.status, 0) + 1

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

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per tool: calls, failures (total and by kind), dropped, latency p50/p99 in seconds."""
        out = {}
        for name in sorted(set(self.calls) | set(self.dropped)):
            latencies = sorted(self.latencies.get(name, []))
            kinds = self.failures.get(name, {})
            out[name] = {"calls": self.calls.get(name, 0), "failures": sum(kinds.values()), **kinds,
                         "dropped": self.dropped.get(name, 0),
                         "latency_p50_s": _percentile(latencies, 50), "latency_p99_s": _percentile(latencies, 99)}
        return out


def _percentile(ordered: list[float], q: float) -> Optional[float]:
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


async def call_tool(tool: Any, call: ToolCall, *, create_kwargs: Optional[dict] = None,
                    timeout_s: Optional[float] = None, **execute_kwargs: Any) -> ToolResult:
    """Create, execute and release one instance of ``tool`` for ``call``; never raises."""
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
        return ToolResult(call.name, response, None if reward is None else float(reward), dict(metrics or {}),
                          OK, None, time.perf_counter() - started)
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


def _instance(created: Any) -> tuple[str, Any]:
    # verl's older tools return only the instance id from create().
    return created if isinstance(created, tuple) else (created, None)


async def _release(tool: Any, name: str, instance_id: str, timeout_s: Optional[float]) -> None:
    try:
        await asyncio.wait_for(tool.release(instance_id), timeout_s)
    except Exception as exc:  # noqa: BLE001 - the call's result stands; the leak is logged
        log.warning("tool '%s' failed to release instance %s: %s: %s", name, instance_id, type(exc).__name__, exc)


async def call_tools(tools: Mapping[str, Any], calls: Sequence[ToolCall], *, max_parallel_calls: int = 1,
                     create_kwargs: Optional[Mapping[str, dict]] = None, timeout_s: Optional[float] = None,
                     stats: Optional[ToolStats] = None, **execute_kwargs: Any) -> list[ToolResult]:
    """Run the first ``max_parallel_calls`` of one turn's ``calls`` concurrently; results in call order.

    ``create_kwargs`` maps a tool's name to the ``create_kwargs`` its instances
    get (verl's ``tools_kwargs.<name>.create_kwargs`` of the row).
    """
    if max_parallel_calls < 1:
        raise ValueError(f"max_parallel_calls must be at least 1, got {max_parallel_calls}")
    stats = stats if stats is not None else ToolStats()
    for dropped in calls[max_parallel_calls:]:
        stats.record_dropped(dropped.name)
    results = await asyncio.gather(*(_one(tools, call, create_kwargs or {}, timeout_s, execute_kwargs)
                                     for call in calls[:max_parallel_calls]))
    for result in results:
        stats.record(result)
    return list(results)


async def _one(tools: Mapping[str, Any], call: ToolCall, create_kwargs: Mapping[str, dict],
               timeout_s: Optional[float], execute_kwargs: dict) -> ToolResult:
    tool = tools.get(call.name)
    if tool is None:
        error = f"no tool named '{call.name}'; tools: {', '.join(sorted(tools)) or 'none'}"
        return ToolResult(call.name, ToolResponse(text=f"Error when executing tool: {error}"), 0.0, {},
                          UNKNOWN_TOOL, error, 0.0)
    return await call_tool(tool, call, create_kwargs=create_kwargs.get(call.name), timeout_s=timeout_s,
                           **execute_kwargs)
