"""Stress-testing a scorer: derive hacks and controls from rows, score them as training would, report.

For every row, each registered attack family whose data_sources match the
row's data_source derives probes (:class:`~rewardsmith.reward_fns.attacks.Probe`).
They are scored in one batch through the configured reward manager, so the
verdicts are training's. A probe is *paid* when its score exceeds
``paid_above``. The report gives, per scorer and data_source, the rate of
hacks paid and of controls (correct answers) refused, with the worst examples
of each: hacks and refused controls from as many families as possible.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.loader import get_registry
from rewardsmith.reward_fns.attacks import Probe, target_of

WORST = 5
EXAMPLE_CHARS = 160


@dataclass
class ScoredProbe:
    """A probe with the row it came from and its verdict."""

    row: int
    data_source: str
    scorer: str
    probe: Probe
    score: float
    status: str
    paid: bool
    pred: Any = None


@dataclass
class GroupReport:
    """One scorer on one data_source."""

    scorer: str
    data_source: str
    hacks: int = 0
    hacks_paid: int = 0
    controls: int = 0
    controls_refused: int = 0
    paid_by_family: dict[str, list[int]] = field(default_factory=dict)  # family -> [paid, total]
    worst_hacks: list[dict] = field(default_factory=list)
    worst_refusals: list[dict] = field(default_factory=list)

    @property
    def hack_paid_rate(self) -> float:
        return self.hacks_paid / self.hacks if self.hacks else 0.0

    @property
    def correct_refused_rate(self) -> Optional[float]:
        return self.controls_refused / self.controls if self.controls else None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of this group."""
        return {"scorer": self.scorer, "data_source": self.data_source, "hacks": self.hacks,
                "hacks_paid": self.hacks_paid, "hack_paid_rate": self.hack_paid_rate,
                "controls": self.controls, "controls_refused": self.controls_refused,
                "correct_refused_rate": self.correct_refused_rate,
                "paid_by_family": {k: {"paid": v[0], "total": v[1]} for k, v in sorted(self.paid_by_family.items())},
                "worst_hacks": self.worst_hacks, "worst_refusals": self.worst_refusals}


@dataclass
class StressReport:
    """Every group's report plus the totals."""

    groups: list[GroupReport]

    @property
    def hacks(self) -> int:
        return sum(g.hacks for g in self.groups)

    @property
    def hack_paid_rate(self) -> float:
        return sum(g.hacks_paid for g in self.groups) / self.hacks if self.hacks else 0.0

    @property
    def correct_refused_rate(self) -> Optional[float]:
        controls = sum(g.controls for g in self.groups)
        return sum(g.controls_refused for g in self.groups) / controls if controls else None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of the report (``rewardsmith stress --json``)."""
        return {"hack_paid_rate": self.hack_paid_rate, "correct_refused_rate": self.correct_refused_rate,
                "hacks": self.hacks, "groups": [g.as_dict() for g in self.groups]}


def probes_for_rows(rows: list[dict[str, Any]], registry: Any, reward_fn_key: str = "data_source",
                    prompt_key: str = "prompt", source: str = "rows") -> list[tuple[int, dict[str, Any], Probe]]:
    """``(row index, row, probe)`` for every probe the matching attack families derive from ``rows``."""
    found = []
    for i, row in enumerate(rows):
        if reward_fn_key not in row:
            raise ValueError(f"{source}: row {i}: missing '{reward_fn_key}' (data.reward_fn_key)")
        if "ground_truth" not in (row.get("reward_model") or {}):
            raise ValueError(f"{source}: row {i}: missing 'reward_model.ground_truth'")
        target = target_of(row, reward_fn_key, prompt_key)
        for name, family in registry.attacks_for(target.data_source):
            try:
                probes = list(family(target))
            except Exception as exc:  # noqa: BLE001 - name the family and row, as for a scorer
                raise ValueError(f"{source}: row {i}: attack family '{name}' failed: {type(exc).__name__}: {exc}") from exc
            for probe in probes:
                if not isinstance(probe, Probe):
                    raise ValueError(f"attack family '{name}' returned {type(probe).__name__}, expected a Probe")
                found.append((i, row, probe))
    return found


def stress(rows: list[dict[str, Any]], settings: RewardSettings, reward_fn_key: str = "data_source",
           prompt_key: str = "prompt", paid_above: float = 0.5, source: str = "rows",
           count_tokens: Optional[Callable[[list[str]], list[int]]] = None) -> StressReport:
    """Derive probes from ``rows``, score them through the configured manager and report.

    A manager that reads response lengths (the ``dapo`` overlong penalty) gets each probe's
    length in tokens from ``count_tokens`` (the run's tokenizer); without it, such a manager
    is refused by name rather than fed a stand-in such as character counts.
    """
    registry = get_registry(settings.plugins)
    probes = probes_for_rows(rows, registry, reward_fn_key, prompt_key, source)
    if not probes:
        return StressReport([])
    batch = RewardBatch(
        [str(row[reward_fn_key]) for _, row, _ in probes], [p.response for _, _, p in probes],
        [row["reward_model"]["ground_truth"] for _, row, _ in probes], [row.get("extra_info") for _, row, _ in probes],
        [row["reward_model"].get("style", "rule") for _, row, _ in probes], prompts=[row.get(prompt_key) for _, row, _ in probes])
    with build_reward_manager(settings) as manager:
        if getattr(manager, "needs_response_lengths", False):
            if count_tokens is None:
                raise ValueError(f"stress: reward manager '{manager.name}' reads response lengths in tokens (dapo: "
                                 "its overlong penalty, reward_model.overlong_buffer.enable): name the run's tokenizer "
                                 "with data.tokenizer=DIR (or actor_rollout_ref.model.path=DIR), or turn the penalty off")
            batch.response_lengths = count_tokens(batch.solutions)
        manager.check_rows(batch)
        manager.check_data_sources(batch.data_sources)
        out = manager(batch)
        names = {(s, st): "+".join(c.name for c in manager.plan.components_for(s, st))
                 for s, st in zip(batch.data_sources, batch.styles)}
    scored = []
    for k, (i, row, probe) in enumerate(probes):
        pred = (out.extra_info.get("pred") or [None] * len(batch))[k]
        score = float(out.scores[k])
        scored.append(ScoredProbe(i, batch.data_sources[k], names[(batch.data_sources[k], batch.styles[k])], probe,
                                  score, out.extra_info["reward_status"][k], score > paid_above, pred))
    return StressReport(_group(scored))


def _group(scored: list[ScoredProbe]) -> list[GroupReport]:
    by_key: dict[tuple[str, str], list[ScoredProbe]] = defaultdict(list)
    for item in scored:
        by_key[(item.scorer, item.data_source)].append(item)
    groups = []
    for (scorer, data_source), items in sorted(by_key.items()):
        g = GroupReport(scorer, data_source)
        hacks = [p for p in items if not p.probe.should_pay]
        controls = [p for p in items if p.probe.should_pay]
        g.hacks, g.hacks_paid = len(hacks), sum(p.paid for p in hacks)
        g.controls, g.controls_refused = len(controls), sum(not p.paid for p in controls)
        for p in hacks:
            tally = g.paid_by_family.setdefault(p.probe.family, [0, 0])
            tally[0] += p.paid
            tally[1] += 1
        g.worst_hacks = _worst([p for p in hacks if p.paid], highest=True)
        g.worst_refusals = _worst([p for p in controls if not p.paid], highest=False)
        groups.append(g)
    return groups


def _worst(items: list[ScoredProbe], highest: bool) -> list[dict]:
    """Up to :data:`WORST` examples, the most wrongly scored first, one family at a time before repeating one."""
    ordered = sorted(items, key=lambda p: -p.score if highest else p.score)
    firsts = list({p.probe.family: p for p in reversed(ordered)}.values())[::-1]
    firsts.sort(key=ordered.index)
    picked = (firsts + [p for p in ordered if all(p is not q for q in firsts)])[:WORST]
    return [{"row": p.row, "family": p.probe.family, "score": p.score, "status": p.status,
             "pred": None if p.pred is None else str(p.pred)[:EXAMPLE_CHARS], "response": _clip(p.probe.response)}
            for p in picked]


def _clip(text: str) -> str:
    if len(text) <= EXAMPLE_CHARS:
        return text
    half = EXAMPLE_CHARS // 2
    return f"{text[:half]} ...[{len(text) - 2 * half} chars]... {text[-half:]}"


def format_report(report: StressReport) -> str:
    """The console table: one line per scorer and data_source, then the worst examples of each."""
    header = f"{'scorer':<18} {'data_source':<30} {'hacks':>6} {'paid':>6} {'paid %':>7} {'controls':>9} {'refused %':>10}"
    lines = [header, "-" * len(header)]
    for g in report.groups:
        refused = "-" if g.correct_refused_rate is None else f"{100 * g.correct_refused_rate:.1f}"
        lines.append(f"{g.scorer[:18]:<18} {g.data_source[:30]:<30} {g.hacks:>6} {g.hacks_paid:>6} "
                     f"{100 * g.hack_paid_rate:>7.1f} {g.controls:>9} {refused:>10}")
    refused = "-" if report.correct_refused_rate is None else f"{100 * report.correct_refused_rate:.1f}"
    lines.append(f"{'(all)':<18} {'':<30} {report.hacks:>6} {sum(g.hacks_paid for g in report.groups):>6} "
                 f"{100 * report.hack_paid_rate:>7.1f} {sum(g.controls for g in report.groups):>9} {refused:>10}")
    for g in report.groups:
        for title, examples in (("hacks paid", g.worst_hacks), ("correct answers refused", g.worst_refusals)):
            if examples:
                lines.append(f"\n{g.scorer} on {g.data_source}: {title}")
                lines += [f"  row {e['row']} [{e['family']}] score {e['score']:g}: {e['response']!r}" for e in examples]
    return "\n".join(lines)
