"""Reward throughput: the same 2,048 math responses through `naive` and `parallel`.

Scores with the math-verify based `math_verify` scorer, as group sampling
produces them: 256 prompts x 8 responses, where some responses repeat within a
group (identical (data_source, response, ground_truth) triples are scored
once). Prints samples/s for each manager and the ratio against `naive`.

    .venv/bin/python benchmarks/reward_throughput.py [--samples 2048] [--workers N]
"""
from __future__ import annotations

import argparse
import os
import random
import time

from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager

FORMATS = [
    "The answer is $\\boxed{{{a}}}$.",
    "So we get ${a}$.",
    "Therefore $x = {a}$.",
    "Final: $\\boxed{{\\frac{{{n}}}{{{d}}}}}$",
    "After simplifying, \\boxed{{{a}}}",
]


def make_batch(samples: int, group: int, seed: int = 0) -> RewardBatch:
    rng = random.Random(seed)
    sources, solutions, truths = [], [], []
    for _ in range(samples // group):
        n, d = rng.randint(1, 40), rng.randint(2, 12)
        gold = f"\\frac{{{n}}}{{{d}}}"
        candidates = [f"{n}/{d}", f"{n + 1}/{d}", f"{n * 2}/{d * 2}", f"{round(n / d, 3)}"]
        for _ in range(group):
            text = rng.choice(candidates)
            fmt = rng.choice(FORMATS)
            solutions.append(fmt.format(a=text, n=n, d=d) + f" ({rng.randint(0, 2)})")
            truths.append(gold)
            sources.append("math_verify")
    return RewardBatch(sources, solutions, truths)


def measure(manager_name: str, batch: RewardBatch, workers: int) -> tuple[float, dict]:
    cfg = load_config(Config, None, [f"reward_model.reward_manager={manager_name}",
                                     f"reward_model.num_workers={workers}", "reward_model.timeout=30"])
    with build_reward_manager(cfg.reward_settings()) as manager:
        manager(make_batch(16, 8, seed=99))  # warm up: imports, worker start-up
        start = time.perf_counter()
        out = manager(batch)
        elapsed = time.perf_counter() - start
    return elapsed, out.metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    batch = make_batch(args.samples, args.group)

    results = {name: measure(name, batch, args.workers) for name in ("naive", "parallel")}
    base = args.samples / results["naive"][0]
    print(f"\n{args.samples} responses, {args.samples // args.group} prompts x {args.group}, "
          f"{args.workers} workers, {os.cpu_count()} CPUs; unique scorer calls: "
          f"{results['naive'][1]['reward/unique_calls_ratio']:.0%} of samples")
    print(f"{'manager':<10} {'seconds':>9} {'samples/s':>11} {'ratio':>7} {'mean reward':>12}")
    for name, (seconds, metrics) in results.items():
        rate = args.samples / seconds
        print(f"{name:<10} {seconds:>9.2f} {rate:>11.1f} {rate / base:>6.2f}x {metrics['reward/mean']:>12.3f}")


if __name__ == "__main__":
    main()
