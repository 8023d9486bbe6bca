"""Time ``math_answer`` per sample on labelled answer sets, in one process.

Each row of each jsonl file (keys ``data_source``, ``response``, ``gold``) is
scored once through ``math_answer.compute_score`` and timed. The guard
subprocess that runs the symbolic judges is started, and its imports paid,
by one judgement before the clock starts: a training run pays that once, not
per sample. Prints p50 / p99 / max milliseconds per file and the slowest
rows with the judge that decided them (``--slowest N``); ``--profile`` prints
a cProfile of the guard-free judgement of the slowest rows, run in this process.

    .venv/bin/python benchmarks/math_latency.py [FILES.jsonl ...] [--slowest 10] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from pathlib import Path

from rewardsmith.reward_fns import math_answer

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILES = [ROOT / "tests" / "data" / name for name in
                 ("math_answer_cases.jsonl", "math_answer_blind.jsonl", "math_answer_blind2.jsonl")]


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def percentile(sorted_ms: list[float], q: float) -> float:
    """The ``q`` quantile of ascending ``sorted_ms`` (nearest rank below)."""
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))]


def time_rows(rows: list[dict]) -> list[tuple[float, dict, str]]:
    """``(milliseconds, row, method)`` for each row, scored once."""
    timed = []
    for row in rows:
        started = time.perf_counter()
        try:
            method = math_answer.compute_score(row["data_source"], row["response"], row["gold"])["method"]
        except Exception as exc:  # noqa: BLE001 - a timeout or crash is a measured outcome here
            method = f"{type(exc).__name__}"
        timed.append((1000 * (time.perf_counter() - started), row, method))
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--slowest", type=int, default=5, help="print this many slowest rows per file")
    parser.add_argument("--profile", action="store_true", help="cProfile the slowest rows' judgements in-process")
    args = parser.parse_args()
    started = time.perf_counter()
    math_answer.compute_score("math", "\\boxed{x^2}", "x \\cdot x")  # starts the guard outside the clock
    print(f"first symbolic judgement (starts the guard, once per process): {time.perf_counter() - started:.2f} s")
    slowest_overall = []
    for path in args.files:
        timed = time_rows(load(path))
        ms = sorted(t for t, _, _ in timed)
        print(f"{path.name:28s} {len(ms):4d} rows  p50 {percentile(ms, 0.5):7.1f} ms  p99 {percentile(ms, 0.99):7.1f} ms"
              f"  max {ms[-1]:7.1f} ms  total {sum(ms) / 1000:6.1f} s")
        worst = sorted(timed, key=lambda t: -t[0])[: args.slowest]
        for t, row, method in worst:
            print(f"    {t:8.1f} ms  {row['id']:36s} {method:16s} gold {row['gold'][:40]!r}")
        slowest_overall += worst
    if args.profile:
        from rewardsmith.common import hard_timeout_pool

        hard_timeout_pool._GUARDED = True  # judge in this process, so cProfile sees the symbolic work
        profiler = cProfile.Profile()
        profiler.enable()
        for _, row, _ in slowest_overall:
            math_answer.compute_score(row["data_source"], row["response"], row["gold"])
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
