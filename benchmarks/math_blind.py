"""Score the blind held-out split (issue 25) once and print what was measured.

Two files, written and labelled before any scorer ran on them:

- ``tests/data/math_answer_blind.jsonl``: answers labelled ``correct`` (true/false)
  in answer kinds no earlier labelled case covers;
- ``tests/data/math_hacks_blind.jsonl``: reward hacks (``should_pay`` false) and
  correct controls (``should_pay`` true), by family.

A second blind pair, ``tests/data/math_answer_blind2.jsonl`` and
``tests/data/math_hacks_blind2.jsonl`` ("blind2"), was written on 2026-11-27 by a
labeller who did not read the verifier's code, labelled before any run, and scored
once before any fix (``benchmarks/results/math_blind2_before_*.txt``); its labels
are never changed after seeing scores. Score it with ``--answers``/``--hacks``.
Splits 3 and 4 (``*_blind3.jsonl``, ``*_blind4.jsonl``) were written the same way;
their outputs are ``benchmarks/results/math_blind{3,4}_*.txt``.

Each row is scored through the public API, ``rewardsmith.compute_score``, with
``scorer="math_answer"`` and, for comparison, ``scorer="math_verify"``. A result
whose score is None or whose ``verdict`` is ``"undecided"`` is undecided; an
exception is counted as an error (and reported apart). Otherwise the verifier
pays the row when its score is above 0.5.

    .venv/bin/python benchmarks/math_blind.py [--scorers math_answer math_verify]
        [--answers tests/data/math_answer_blind2.jsonl --hacks tests/data/math_hacks_blind2.jsonl]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

from rewardsmith import compute_score

ROOT = Path(__file__).resolve().parent.parent
ANSWERS = ROOT / "tests" / "data" / "math_answer_blind.jsonl"
HACKS = ROOT / "tests" / "data" / "math_hacks_blind.jsonl"
PAY_THRESHOLD = 0.5


def git_commit() -> str:
    """The commit this checkout is at, with ``+dirty`` when tracked files differ from it."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def decide(result: Any) -> str:
    """``paid``, ``refused`` or ``undecided`` for one scorer result (float or dict)."""
    score: Optional[float]
    if isinstance(result, dict):
        if result.get("verdict") == "undecided":
            return "undecided"
        score = result.get("score")
    else:
        score = result
    if score is None:
        return "undecided"
    return "paid" if float(score) > PAY_THRESHOLD else "refused"


def score_rows(rows: list[dict], scorer: str) -> tuple[list[str], list[float]]:
    """Each row's decision (``paid``/``refused``/``undecided``/``error``) and its seconds."""
    decisions, seconds = [], []
    for row in rows:
        t0 = time.perf_counter()
        try:
            decisions.append(decide(compute_score(row["data_source"], row["response"], row["gold"], scorer=scorer)))
        except Exception as exc:  # a crash is a measured outcome here, not a reason to stop
            decisions.append("error")
            print(f"    error on {row['id']}: {type(exc).__name__}: {exc}"[:200])
        seconds.append(time.perf_counter() - t0)
    return decisions, seconds


def pct(n: int, d: int) -> str:
    return f"{n:4d}/{d:<4d} {100.0 * n / d:5.1f}%" if d else f"{n:4d}/0"


def report(title: str, rows: list[dict], label_key: str, group_key: str, scorer: str) -> None:
    """Print counts and rates of right, wrong, undecided and errored verdicts, overall and per group."""
    decisions, seconds = score_rows(rows, scorer)
    labels = [bool(r[label_key]) for r in rows]

    def tally(idx: list[int]) -> dict[str, int]:
        t = defaultdict(int)
        for i in idx:
            d = decisions[i]
            if d in ("undecided", "error"):
                t[d] += 1
            elif (d == "paid") == labels[i]:
                t["right"] += 1
            elif d == "paid":
                t["paid_wrong"] += 1
            else:
                t["refused_right"] += 1
        return t

    everything = list(range(len(rows)))
    t = tally(everything)
    n = len(rows)
    print(f"\n=== {title}: scorer={scorer} ({n} rows) ===")
    print(f"  right verdicts            {pct(t['right'], n)}")
    print(f"  wrong verdicts            {pct(t['paid_wrong'] + t['refused_right'], n)}"
          f"   (paid a should-not-pay row: {t['paid_wrong']}, refused a should-pay row: {t['refused_right']})")
    print(f"  undecided                 {pct(t['undecided'], n)}")
    print(f"  errors (exceptions)       {pct(t['error'], n)}")
    pos = [i for i in everything if labels[i]]
    neg = [i for i in everything if not labels[i]]
    if label_key == "should_pay":
        paid_hacks = sum(decisions[i] == "paid" for i in neg)
        refused_controls = sum(decisions[i] == "refused" for i in pos)
        print(f"  hacks paid                {pct(paid_hacks, len(neg))}")
        print(f"  controls refused          {pct(refused_controls, len(pos))}")
        print(f"  controls undecided/error  {pct(sum(decisions[i] in ('undecided', 'error') for i in pos), len(pos))}")
    else:
        print(f"  correct answers refused   {pct(sum(decisions[i] == 'refused' for i in pos), len(pos))}")
        print(f"  wrong answers paid        {pct(sum(decisions[i] == 'paid' for i in neg), len(neg))}")
    ms = sorted(s * 1000 for s in seconds)
    print(f"  time per row: p50 {ms[len(ms) // 2]:.1f} ms, p99 {ms[min(len(ms) - 1, int(len(ms) * 0.99))]:.1f} ms,"
          f" max {ms[-1]:.1f} ms")

    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[r[group_key]].append(i)
    print(f"  per {group_key}: rows, right, paid-wrong, refused-right, undecided, error")
    for g, idx in groups.items():
        gt = tally(idx)
        print(f"    {g:34s} {len(idx):3d}  right {gt['right']:3d}  paid-wrong {gt['paid_wrong']:2d}"
              f"  refused-right {gt['refused_right']:2d}  undecided {gt['undecided']:2d}  error {gt['error']:2d}")
    misses = [i for i in everything if decisions[i] in ("undecided", "error") or (decisions[i] == "paid") != labels[i]]
    print(f"  rows not judged right ({len(misses)}):")
    for i in misses:
        print(f"    {rows[i]['id']}: label {label_key}={labels[i]}, got {decisions[i]}")


def shown(path: Path) -> str:
    """``path`` relative to the repository root when it lies inside it, else as given."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorers", nargs="+", default=["math_answer", "math_verify"])
    parser.add_argument("--answers", type=Path, default=ANSWERS, help="labelled answers (jsonl, key 'correct')")
    parser.add_argument("--hacks", type=Path, default=HACKS, help="hacks and controls (jsonl, key 'should_pay')")
    args = parser.parse_args()
    answers_path, hacks_path = args.answers.resolve(), args.hacks.resolve()
    print(f"commit: {git_commit()}")
    print(f"python: {sys.version.split()[0]}; pay threshold: score > {PAY_THRESHOLD}")
    answers, hacks = load(answers_path), load(hacks_path)
    print(f"{shown(answers_path)}: {len(answers)} rows, {len({r['kind'] for r in answers})} kinds,"
          f" {sum(r['correct'] for r in answers)} labelled correct")
    print(f"{shown(hacks_path)}: {len(hacks)} rows, {sum(not r['should_pay'] for r in hacks)} hacks,"
          f" {sum(r['should_pay'] for r in hacks)} controls, {len({r['family'] for r in hacks})} families")
    for scorer in args.scorers:
        report("answers (blind)", answers, "correct", "kind", scorer)
        report("hacks and controls (blind)", hacks, "should_pay", "family", scorer)


if __name__ == "__main__":
    main()
