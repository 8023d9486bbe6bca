"""The demo over seeds, thread counts and rollout engines: held-out reward and wall time of each run.

Each run is the ``rewardsmith demo`` console script (what ``make demo`` runs)
with ``trainer.seed``, ``trainer.cpu_threads`` and
``actor_rollout_ref.rollout.name`` set and its output directory redirected.
Prints one row per run, in the order of the runs (a markdown table: before and after per
data source, overall, whether the demo's bar is met: overall >= 0.8 and every
source >= 0.7, and the run's wall time), and writes the rows to
``OUT/sweep.jsonl``.

Usage: ``python benchmarks/demo_sweep.py [--seeds 0 1 2 3 4] [--threads 1 2]
[--engines hf vllm] [--jobs 2] [--out outputs/demo_sweep]``. ``--jobs`` runs
that many demos at once (each uses ``--threads`` torch threads).
"""
from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SOURCES = ("lighteval/MATH", "math_dapo", "openai/gsm8k")
OVERALL, PER_SOURCE = 0.8, 0.7


def run_one(out: Path, engine: str, threads: int, seed: int) -> dict:
    """One demo run; its before/after means per source and overall, and its wall time."""
    run_dir = out / f"{engine}-t{threads}-s{seed}"
    script = Path(sys.executable).with_name("rewardsmith")
    start = time.perf_counter()
    proc = subprocess.run([str(script), "demo", f"trainer.seed={seed}", f"trainer.cpu_threads={threads}",
                           f"actor_rollout_ref.rollout.name={engine}", "trainer.progress_bar=false",
                           f"trainer.default_local_dir={run_dir}"], capture_output=True, text=True)
    row = {"engine": engine, "threads": threads, "seed": seed, "wall_s": round(time.perf_counter() - start), "rc": proc.returncode}
    (run_dir / "demo.log").parent.mkdir(parents=True, exist_ok=True)
    (run_dir / "demo.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode == 0:
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        vals = [r for r in map(json.loads, lines) if "val/reward/mean" in r]
        for key, record in (("before", vals[0]), ("after", vals[-1])):
            row[key] = {s: record[f"val/reward/{s}/mean"] for s in SOURCES} | {"all": record["val/reward/mean"]}
        after = row["after"]
        row["met"] = after["all"] >= OVERALL and all(after[s] >= PER_SOURCE for s in SOURCES)
    return row


def format_row(row: dict) -> str:
    head = f"| {row['engine']} | {row['threads']} | {row['seed']} |"
    if row["rc"] != 0:
        return f"{head} failed (exit {row['rc']}) | | | | | {row['wall_s']} |"
    cells = " | ".join(f"{row['before'][k]:.3f} -> {row['after'][k]:.3f}" for k in (*SOURCES, "all"))
    return f"{head} {cells} | {'yes' if row['met'] else 'NO'} | {row['wall_s']} |"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--engines", nargs="+", default=["hf", "vllm"], choices=["hf", "vllm"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("outputs/demo_sweep"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"| engine | threads | seed | {' | '.join(SOURCES)} | all | met | wall s |")
    print("|---|---|---|" + "---|" * (len(SOURCES) + 3))
    runs = list(itertools.product(args.engines, args.threads, args.seeds))
    failures = 0
    with ThreadPoolExecutor(args.jobs) as pool, (args.out / "sweep.jsonl").open("a") as log:
        for row in pool.map(lambda r: run_one(args.out, *r), runs):
            print(format_row(row), flush=True)
            log.write(json.dumps(row) + "\n")
            log.flush()
            failures += not row.get("met", False)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
