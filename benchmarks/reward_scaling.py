"""Reward scaling on Ray: the same math responses with 1, 2, ... Ray reward workers.

Uses the batch of `reward_throughput.py` (math-verify scoring, group-sampled
responses) with the `parallel` manager on `trainer.backend=ray`, starting a
local Ray cluster with one CPU per worker (or joining RAY_ADDRESS). Prints
samples/s per worker count and the scaling efficiency against one worker, and
beside it the machine's own ceiling: the speed-up of as many independent
processes scoring their shares with nothing coordinating them.

    .venv/bin/python benchmarks/reward_scaling.py [--samples 2048] [--workers 1 2] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from reward_throughput import make_batch

from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.factory import build_reward_manager


def measure(workers: int, samples: int, group: int) -> float:
    """Seconds to score the batch with ``workers`` Ray reward workers (after a warm-up batch)."""
    cfg = load_config(Config, None, ["trainer.backend=ray", "reward_model.reward_manager=parallel",
                                     f"reward_model.num_workers={workers}", "reward_model.timeout=60"])
    batch = make_batch(samples, group)
    with build_reward_manager(cfg.reward_settings()) as manager:
        manager(make_batch(16 * workers, 8, seed=99))  # warm up: actors, imports
        start = time.perf_counter()
        manager(batch)
        return time.perf_counter() - start


# The machine's own ceiling: each process scores its share of the distinct
# responses in-process (as a pool worker does, without a guard process), with
# nothing coordinating them: no driver, no pool, no Ray.
INDEPENDENT = """
import sys, time
import rewardsmith.common.hard_timeout_pool as pool
from reward_throughput import make_batch
from rewardsmith.compute import compute_score
pool._GUARDED = True
part, parts, samples, group = map(int, sys.argv[1:])
batch = make_batch(samples, group)
rows = sorted(set(zip(batch.data_sources, batch.solutions, batch.ground_truths)))[part::parts]
compute_score(*rows[0])
print("ready", flush=True)
sys.stdin.readline()
start = time.perf_counter()
for row in rows:
    compute_score(*row)
print(time.perf_counter() - start, flush=True)
"""


def measure_independent(processes: int, samples: int, group: int) -> float:
    """Seconds until ``processes`` uncoordinated processes have scored their shares, started together."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                                         os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", INDEPENDENT, str(i), str(processes), str(samples), str(group)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for i in range(processes)]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        proc.stdin.write("\n")
        proc.stdin.flush()
    seconds = max(float(proc.stdout.readline()) for proc in procs)
    for proc in procs:
        proc.wait()
    return seconds


def main() -> None:
    import ray

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3,
                        help="measure every worker count this many times, in alternating order; medians are reported")
    args = parser.parse_args()
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if "RAY_ADDRESS" not in os.environ:
        ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    # Alternating rounds: this machine's speed drifts, and a drift must not favour one worker count.
    runs: dict[int, list[float]] = {n: [] for n in args.workers}
    alone: dict[int, list[float]] = {n: [] for n in args.workers}
    for round_ in range(args.rounds):
        for n in args.workers if round_ % 2 == 0 else args.workers[::-1]:
            runs[n].append(measure(n, args.samples, args.group))
            alone[n].append(measure_independent(n, args.samples, args.group))
    seconds = {n: statistics.median(times) for n, times in runs.items()}
    ceiling = {n: statistics.median(alone[args.workers[0]]) / statistics.median(times) for n, times in alone.items()}
    base = args.samples / seconds[args.workers[0]]
    print(f"\n{args.samples} responses on Ray reward workers ({os.cpu_count()} CPUs on this machine), "
          f"median of {args.rounds} rounds")
    print(f"{'workers':>7} {'seconds':>9} {'samples/s':>11} {'speed-up':>9} {'efficiency':>11}  {'ceiling':>8}")
    for n, s in seconds.items():
        rate = args.samples / s
        speedup = rate / base
        print(f"{n:>7} {s:>9.2f} {rate:>11.1f} {speedup:>8.2f}x {speedup / (n / args.workers[0]):>10.0%}  {ceiling[n]:>7.2f}x")
    print("ceiling: the same number of independent processes, each scoring its share in-process with nothing "
          "coordinating them (no driver, pool or Ray): the speed-up this machine itself gives")


if __name__ == "__main__":
    main()
