"""Score the same responses two ways and say what changes: ``rewardsmith diff`` from Python.

A *side* is how one set of scores is made, written as the command line takes it:

- a scorer name (``math_answer``): ``reward_model.scorer=math_answer``;
- a custom file (``my_reward.py`` or ``my_reward.py:fn_name``): ``custom_reward_function.path`` (and ``.name``);
- a YAML config file (``a.yaml``): that side's config file;
- ``key=value`` overrides (``reward_model.reward_kwargs.strict=true``);
- ``recorded``: the scores already in the rows (``rewardsmith score`` output's
  ``score``, a training rollout dump's ``score``).

Several items make one side when separated by spaces (``"math_answer reward_model.fallback_score=-1"``).
A sample *passes* when its score is above ``threshold``; the two sides agree on a
sample when both pass or both fail. Samples that either side could not score
(every component abstained) are counted apart and left out of agreement and
McNemar's test.
"""
from __future__ import annotations

import math
import shlex
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch

RECORDED = "recorded"
# Below this many discordant samples McNemar's chi-square is a poor approximation: use the exact binomial.
EXACT_BELOW = 25
EXAMPLE_CHARS = 200


@dataclass
class Side:
    """One way of scoring: a config file and overrides, or the recorded scores."""

    spec: str
    config_file: Optional[str] = None
    overrides: list[str] = field(default_factory=list)
    recorded: bool = False


def parse_side(spec: str) -> Side:
    """Read a side as the command line writes it (see the module docstring)."""
    side = Side(spec)
    items = shlex.split(spec)
    if not items:
        raise ValueError("a diff side is empty: give a scorer name, a .py file, a .yaml config, key=value items or 'recorded'")
    for item in items:
        if "=" in item:
            side.overrides.append(item)
        elif item == RECORDED:
            side.recorded = True
        elif item.endswith((".yaml", ".yml")):
            side.config_file = item
        elif item.split(":", 1)[0].endswith(".py"):
            path, _, name = item.partition(":")
            if not Path(path).is_file():
                raise FileNotFoundError(f"diff side {spec!r}: no such file {path}")
            side.overrides.append(f"custom_reward_function.path={path}")
            if name:
                side.overrides.append(f"custom_reward_function.name={name}")
        else:
            side.overrides.append(f"reward_model.scorer={item}")
    if side.recorded and (side.overrides or side.config_file):
        raise ValueError(f"diff side {spec!r}: 'recorded' takes the rows' own scores and cannot be combined with other items")
    return side


@dataclass
class SideScores:
    """One side's score per sample and which samples it could not score."""

    scores: list[Optional[float]]
    unscored: list[bool]


def recorded_scores(rows: list[dict[str, Any]], owners: Sequence[tuple[int, int]], source: str) -> SideScores:
    """The scores the rows already carry: ``score`` (a number, or a list for several
    responses); a sample is unscored where its score is null or its
    ``unscored`` / ``reward_extra_info.unscored`` says so."""
    scores, unscored = [], []
    for i, j in owners:
        row = rows[i]
        if "score" not in row:
            raise ValueError(f"{source}: row {i} has no 'score' to compare as 'recorded' (score it with `rewardsmith score` first)")
        value, info = row["score"], row.get("reward_extra_info") or {}
        if isinstance(row.get("response"), list):
            value = value[j] if isinstance(value, list) and j < len(value) else None
            info = info[j] if isinstance(info, list) and j < len(info) else {}
        if value is not None and not isinstance(value, (int, float)):
            raise ValueError(f"{source}: row {i}: 'score' is {type(value).__name__} {value!r}, expected a number")
        # reward_masked: the same flag under its earlier name, in files older rewardsmith versions wrote
        flagged = bool(row.get("unscored")) or any(bool((info or {}).get(k)) for k in ("unscored", "reward_masked"))
        scores.append(None if value is None else float(value))
        unscored.append(value is None or flagged)
    return SideScores(scores, unscored)


def score_side(side: Side, batch: RewardBatch, rows: list[dict[str, Any]], owners: Sequence[tuple[int, int]],
               source: str, config_file: Optional[str] = None, overrides: Sequence[str] = (),
               progress: Optional[Any] = None) -> SideScores:
    """Score ``batch`` as ``side`` says, through the configured reward manager (as training would)."""
    if side.recorded:
        return recorded_scores(rows, owners, source)
    from rewardsmith.plugins.offline import score_batch

    config = load_config(Config, side.config_file or config_file, [*overrides, *side.overrides])
    out = score_batch(config.reward_settings(), batch, progress)
    unscored = out.unscored.tolist() if out.unscored is not None else [False] * len(batch)
    return SideScores([float(s) for s in out.scores.tolist()], unscored)


def mcnemar(b: int, c: int) -> tuple[float, str]:
    """Two-sided p-value of McNemar's test on the discordant counts ``b`` (A passes, B fails)
    and ``c`` (A fails, B passes), and the method used.

    With ``n = b + c < 25``: exact, ``p = min(1, 2 * P(X <= min(b, c)))``, ``X ~ Binomial(n, 1/2)``.
    Otherwise the chi-square with continuity correction,
    ``x = (|b - c| - 1)^2 / (b + c)``, ``p = P(chi2_1 > x) = erfc(sqrt(x / 2))``.
    No discordant sample gives ``p = 1``.
    """
    n = b + c
    if n == 0:
        return 1.0, "exact binomial"
    if n < EXACT_BELOW:
        tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
        return min(1.0, 2 * tail), "exact binomial"
    x = (abs(b - c) - 1) ** 2 / n
    return math.erfc(math.sqrt(x / 2)), "chi-square, continuity-corrected"


def _mean(values: list[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def _example(k: int, owners, batch: RewardBatch, a: SideScores, b: SideScores) -> dict[str, Any]:
    row, response = owners[k]
    text = batch.solutions[k]
    return {
        "row": row, "response_index": response, "data_source": batch.data_sources[k],
        "ground_truth": batch.ground_truths[k],
        "response": text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS] + f"... ({len(text)} chars)",
        "score_a": a.scores[k], "score_b": b.scores[k],
    }


def compare(batch: RewardBatch, owners: Sequence[tuple[int, int]], a: SideScores, b: SideScores,
            threshold: float = 0.5, examples: int = 3) -> dict[str, Any]:
    """The diff report (a JSON-ready dict): counts, agreement, flips each way with
    examples, mean change overall and per data_source, and McNemar's test."""
    both = [k for k in range(len(batch)) if not a.unscored[k] and not b.unscored[k]]
    passed_a = {k: a.scores[k] > threshold for k in both}
    passed_b = {k: b.scores[k] > threshold for k in both}
    a_only = [k for k in both if passed_a[k] and not passed_b[k]]
    b_only = [k for k in both if passed_b[k] and not passed_a[k]]
    p_value, method = mcnemar(len(a_only), len(b_only))
    by_source: dict[str, list[int]] = defaultdict(list)
    for k in both:
        by_source[batch.data_sources[k]].append(k)

    def summary(ks: list[int]) -> dict[str, Any]:
        mean_a, mean_b = _mean([a.scores[k] for k in ks]), _mean([b.scores[k] for k in ks])
        flips_down, flips_up = sum(k in set_a for k in ks), sum(k in set_b for k in ks)
        return {
            "samples": len(ks), "mean_a": mean_a, "mean_b": mean_b,
            "mean_change": None if mean_a is None else mean_b - mean_a,
            "pass_rate_a": _mean([float(passed_a[k]) for k in ks]), "pass_rate_b": _mean([float(passed_b[k]) for k in ks]),
            "agreement": _mean([float(passed_a[k] == passed_b[k]) for k in ks]),
            "a_pass_b_fail": flips_down, "a_fail_b_pass": flips_up,
        }

    set_a, set_b = set(a_only), set(b_only)
    overall = summary(both)
    return {
        "samples": len(batch),
        "compared": len(both),
        "unscored_a": sum(a.unscored),
        "unscored_b": sum(b.unscored),
        "threshold": threshold,
        **{key: overall[key] for key in ("agreement", "mean_a", "mean_b", "mean_change", "pass_rate_a", "pass_rate_b")},
        "identical_scores": _mean([float(a.scores[k] == b.scores[k]) for k in both]),
        "both_pass": sum(passed_a[k] and passed_b[k] for k in both),
        "both_fail": sum(not passed_a[k] and not passed_b[k] for k in both),
        "a_pass_b_fail": len(a_only),
        "a_fail_b_pass": len(b_only),
        "mcnemar": {"b": len(a_only), "c": len(b_only), "p_value": p_value, "method": method},
        "by_data_source": {source: summary(ks) for source, ks in sorted(by_source.items())},
        "examples": {
            "a_pass_b_fail": [_example(k, owners, batch, a, b) for k in a_only[:examples]],
            "a_fail_b_pass": [_example(k, owners, batch, a, b) for k in b_only[:examples]],
        },
    }


def diff_rows(rows: list[dict[str, Any]], a: str, b: str, *, config_file: Optional[str] = None,
              overrides: Sequence[str] = (), threshold: float = 0.5, examples: int = 3,
              source: str = "rows", progress: Optional[Any] = None) -> dict[str, Any]:
    """Score ``rows`` (verl's schema plus ``response``: ``rewardsmith score`` output or a
    training rollout dump) with sides ``a`` and ``b`` and return :func:`compare`'s report,
    with the sides' specs under ``a`` and ``b``. ``config_file`` and ``overrides`` apply
    to both sides, before each side's own items."""
    from rewardsmith.commands.score import samples_of

    side_a, side_b = parse_side(a), parse_side(b)
    base = load_config(Config, config_file, list(overrides))
    batch, owners = samples_of(rows, base.data.reward_fn_key, source, base.data.prompt_key)
    scored = [score_side(side, batch, rows, owners, source, config_file, overrides, progress) for side in (side_a, side_b)]
    report = compare(batch, owners, scored[0], scored[1], threshold, examples)
    return {"a": a, "b": b, **report}


def _fmt(value: Optional[float], spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def render(report: dict[str, Any]) -> str:
    """The console form of a diff report."""
    r, m = report, report["mcnemar"]
    verdict = "the difference is more than noise (p < 0.05)" if m["p_value"] < 0.05 else "no significant difference (p >= 0.05)"
    lines = [
        f"A: {r['a']}",
        f"B: {r['b']}",
        f"samples: {r['samples']}  compared: {r['compared']}  unscored by A: {r['unscored_a']}  unscored by B: {r['unscored_b']}"
        f"  (pass: score > {r['threshold']:g})",
        f"agreement: {_fmt(r['agreement'])}  identical scores: {_fmt(r['identical_scores'])}"
        f"  mean A: {_fmt(r['mean_a'])}  mean B: {_fmt(r['mean_b'])}  change: {_fmt(r['mean_change'], '+.3f')}",
        f"both pass: {r['both_pass']}  both fail: {r['both_fail']}  A pass -> B fail: {r['a_pass_b_fail']}"
        f"  A fail -> B pass: {r['a_fail_b_pass']}",
        f"McNemar ({m['method']}): b={m['b']} c={m['c']} p={m['p_value']:.4g}: {verdict}",
        "",
    ]
    header = f"{'data_source':<28} {'samples':>7} {'mean A':>8} {'mean B':>8} {'change':>8} {'agree':>7} {'A>B':>5} {'B>A':>5}"
    lines += [header, "-" * len(header)]
    for source, s in r["by_data_source"].items():
        lines.append(f"{source[:28]:<28} {s['samples']:>7} {_fmt(s['mean_a']):>8} {_fmt(s['mean_b']):>8} "
                     f"{_fmt(s['mean_change'], '+.3f'):>8} {_fmt(s['agreement']):>7} {s['a_pass_b_fail']:>5} {s['a_fail_b_pass']:>5}")
    for key, title in (("a_pass_b_fail", "A pays, B refuses"), ("a_fail_b_pass", "A refuses, B pays")):
        if r["examples"][key]:
            lines += ["", f"{title} ({r[key]}):"]
            for e in r["examples"][key]:
                lines.append(f"  row {e['row']}.{e['response_index']} [{e['data_source']}] gold={e['ground_truth']!r} "
                             f"A={e['score_a']:g} B={e['score_b']:g}: {e['response']!r}")
    return "\n".join(lines)
