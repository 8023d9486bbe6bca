"""What ``rewardsmith score`` prints once scoring is done: the per-data_source table,
the first failure of each component on each data_source, which components
could not reach their service at all, and whether any sample was scored."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Optional

from rewardsmith.common.redaction import redact_text
from rewardsmith.plugins.batch import scored_mean

ERRORS = ("error", "invalid", "crash")
FAILED = ERRORS + ("timeout", "unavailable")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def component_columns(components: list[dict]) -> dict[str, list]:
    """Each component's score per sample (None where a sample has no such component), from
    ``extra_info["reward_components"]``."""
    names = list(dict.fromkeys(name for sample in components for name in (sample or {})))
    return {name: [(sample or {}).get(name) for sample in components] for name in names}


def summary_table(sources: list[str], scores: list[float], unscored: list[bool], statuses: list[str], seconds: list[float],
                  components: dict[str, list] | None = None) -> str:
    """The per-data_source table printed at the end of ``rewardsmith score``, with a mean column
    per component; every column is as wide as its name (and the data_source column as its longest value).

    ``mean`` is over the scored samples (an unscored sample's score is only a placeholder, counted
    in ``unscored``); ``-`` where none was scored.
    """
    components = components or {}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(sources):
        groups[s].append(i)
    width = max([len("data_source"), len("(all)")] + [len(s) for s in groups])
    columns = [("samples", 7), ("mean", 8), ("unscored", 8), ("errors", 7), ("unavailable", 11), ("timeouts", 9),
               ("p50 ms", 9), ("p99 ms", 9)] + [(name, max(len(name), 8)) for name in components]
    header = f"{'data_source':<{width}}" + "".join(f" {name:>{w}}" for name, w in columns)
    lines = [header, "-" * len(header)]
    for source in sorted(groups) + ["(all)"]:
        idx = groups[source] if source != "(all)" else list(range(len(sources)))
        lat = [seconds[i] * 1000 for i in idx]
        mean = scored_mean([scores[i] for i in idx], [unscored[i] for i in idx])
        cells = [len(idx), "-" if mean is None else f"{mean:.3f}", sum(unscored[i] for i in idx),
                 sum(statuses[i] in ERRORS for i in idx), sum(statuses[i] == "unavailable" for i in idx),
                 sum(statuses[i] == "timeout" for i in idx), f"{_percentile(lat, 0.5):.1f}", f"{_percentile(lat, 0.99):.1f}"]
        cells += [_mean_or_dash([values[i] for i in idx]) for values in components.values()]
        lines.append(f"{source:<{width}}" + "".join(f" {cell!s:>{w}}" for cell, (_name, w) in zip(cells, columns)))
    return "\n".join(lines)


def _mean_or_dash(values: list) -> str:
    present = [v for v in values if v is not None]
    return f"{sum(present) / len(present):.3f}" if present else "-"


def component_outcomes(extra_info: dict[str, list], k: int) -> dict[str, tuple[str, Optional[str]]]:
    """Sample ``k``'s (status, error) per component, from the manager's extra info."""
    def value(key: str) -> Any:
        values = extra_info.get(key)
        return values[k] if values is not None else None

    components = value("reward_components") or {}
    if len(components) == 1:  # one component: the sample's own status and error are its
        (name,) = components
        error = value("reward_error")
        if error and error.startswith(f"{name}: "):  # the manager prefixes each error with its component
            error = error[len(name) + 2:]
        return {name: (value("reward_status"), error)}
    return {name: (value(f"{name}/status") or "ok", value(f"{name}/error")) for name in components}


def failure_report(sources: list[str], extra_info: dict[str, list]) -> tuple[list[str], dict[str, str]]:
    """Lines naming the first failure of each component on each data_source (credentials masked),
    and the components every one of whose samples was ``unavailable`` (their service never
    answered), each with its first error; those get no lines of their own (one error says it)."""
    seen: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # (component, source) -> [failed, total]
    first: dict[tuple[str, str], tuple[str, Optional[str]]] = {}
    reachable: dict[str, bool] = {}
    for k, source in enumerate(sources):
        for name, (status, error) in component_outcomes(extra_info, k).items():
            counts = seen[(name, source)]
            counts[1] += 1
            reachable[name] = reachable.get(name, False) or status != "unavailable"
            if status in FAILED:
                counts[0] += 1
                first.setdefault((name, source), (status, error))
    unreachable = {name: redact_text(next(error or "no message" for (n, _s), (_st, error) in sorted(first.items())
                                          if n == name))
                   for name, ok in sorted(reachable.items()) if not ok}
    lines = []
    for (name, source), (status, error) in sorted(first.items()):
        if name in unreachable:
            continue
        failed, total = seen[(name, source)]
        lines.append(f"component '{name}' on data_source '{source}': {failed} of {total} samples failed; "
                     f"first ({status}): {redact_text(error or 'no message')}")
    return lines, unreachable


def unscored_report(statuses: list[str], components: list[dict]) -> Optional[str]:
    """When no sample was scored (no component of any sample gave it a score: each one failed,
    timed out, was unavailable or abstained), a line saying so with how many of each status;
    None when some sample has a score."""
    if not statuses or any(v is not None for sample in components for v in (sample or {}).values()):
        return None
    counts = Counter(statuses)
    why = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return f"every one of the {len(statuses)} samples is unscored ({why})"
