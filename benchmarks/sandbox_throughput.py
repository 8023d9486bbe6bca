"""Sandbox throughput: warm pre-forked Python workers vs a fresh interpreter per run.

Starts two real servers on 127.0.0.1 (same isolation; one with
``--spawn-python``), drives each at several concurrency levels with a mix of
short programs over keep-alive HTTP connections, and prints runs/s and
p50/p99 latency side by side with the warm/spawn ratio.

It also measures ``/v1/run_batch`` (many cases per request) and the
``sandbox`` reward manager scoring 1,024 responses, against the same server.

Runs/s depend on whatever else the machine is doing, so the table also
shows the CPU the server's whole process tree spent per run (HTTP server,
workers and every sandboxed child) and by kernel threads (namespace
teardown): ``2000 / (cpu_ms + kthr_ms)`` is the rate two idle cores could
sustain.

    .venv/bin/python benchmarks/sandbox_throughput.py [--requests 600] [--concurrency 1 4 16 64]
        [--rounds 5] [--server-args="--network-namespace per-worker"]

``--rounds`` repeats the warm measurement at the highest concurrency and
prints the spread, since one round on a shared VM can be 30% off either way.

``--baseline-python OTHER/.venv/bin/python`` compares two versions instead:
it starts a warm server from each (the other from that interpreter, i.e.
that checkout's code) and alternates ``--rounds`` rounds between them at the
highest concurrency, so both see the same machine at the same time.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from urllib.parse import urlparse

import requests

from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.sandbox.testing import running_server

PROGRAMS = [
    ("print(sum(map(int, input().split())))", "3 4\n", "7\n"),
    ("import sys\nn = int(sys.stdin.readline())\nprint(sum(i * i for i in range(n)))", "1000\n",
     f"{sum(i * i for i in range(1000))}\n"),
    ("from collections import Counter\nprint(Counter(input()).most_common(1)[0][0])", "abracadabra\n", "a\n"),
    ("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib(15))", "", "610\n"),
]


def tree_cpu_s(url: str) -> float:
    """CPU seconds used so far by the server's live process tree (workers, templates) and their reaped children."""
    pending, total = [requests.get(url + "/v1/status", timeout=10).json()["server_pid"]], 0
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    pending += [int(child) for child in fh.read().split()]
        except OSError:
            continue  # exited meanwhile: its time is now its parent's
        total += sum(int(x) for x in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def kernel_threads_cpu_s() -> float:
    """CPU seconds used so far by kernel threads (children of kthreadd, PID 2).

    Namespace teardown (network namespaces above all) runs there, out of the
    server's process tree; other work on the machine adds a little.
    """
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if fields[1] == "2":
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def drive(url: str, concurrency: int, total: int) -> dict:
    """Send ``total`` requests from ``concurrency`` threads; return runs/s and latency percentiles."""
    parsed = urlparse(url)
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(total))
    lock = threading.Lock()

    def client():
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            code, stdin, expected = PROGRAMS[i % len(PROGRAMS)]
            body = json.dumps({"code": code, "stdin": stdin, "language": "python", "run_timeout": 10})
            start = time.perf_counter()
            conn.request("POST", "/run_code", body, {"Content-Type": "application/json"})
            reply = conn.getresponse()
            payload = reply.read()
            elapsed = time.perf_counter() - start
            result = json.loads(payload)
            with lock:
                latencies.append(elapsed)
                if reply.status != 200 or result["run_result"]["stdout"] != expected:
                    errors.append(f"{reply.status}: {payload[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    cpu_before, kernel_before = tree_cpu_s(url), kernel_threads_cpu_s()
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    cpu_ms = 1000 * (tree_cpu_s(url) - cpu_before) / len(latencies)
    kernel_ms = 1000 * (kernel_threads_cpu_s() - kernel_before) / len(latencies)
    latencies.sort()
    return {
        "runs_per_s": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "cpu_ms": cpu_ms,
        "kernel_ms": kernel_ms,
        "errors": len(errors),
    }


def batch_rate(url: str, concurrency: int, requests_total: int, cases: int) -> float:
    """Runs/s through ``/v1/run_batch`` with ``cases`` test cases per request (one program each)."""
    parsed = urlparse(url)
    code, stdin, expected = PROGRAMS[0]
    body = json.dumps({"code": code, "language": "python", "run_timeout": 10, "cases": [{"stdin": stdin}] * cases})
    counter = iter(range(requests_total))
    lock = threading.Lock()
    bad: list[str] = []

    def client():
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
        while True:
            with lock:
                if next(counter, None) is None:
                    break
            conn.request("POST", "/v1/run_batch", body, {"Content-Type": "application/json"})
            reply = json.loads(conn.getresponse().read())
            if [r["stdout"] for r in reply["results"]] != [expected] * cases:
                bad.append(str(reply)[:200])
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if bad:
        raise RuntimeError(f"wrong batch results: {bad[0]}")
    return requests_total * cases / (time.perf_counter() - start)


def manager_rate(url: str, samples: int, max_concurrent: int) -> tuple[float, float]:
    """Runs/s of the ``sandbox`` reward manager scoring ``samples`` one-case code responses,
    and the CPU milliseconds this (client) process spent per sample."""
    config = load_config(Config, None, ["reward_model.reward_manager=sandbox",
                                        f"reward_model.sandbox_fusion.url={url}/run_code",
                                        f"reward_model.sandbox_fusion.max_concurrent={max_concurrent}"])
    truth = json.dumps({"inputs": ["3 4\n"], "outputs": ["7\n"]})
    responses = [f"```python\nprint(sum(map(int, input().split())))  # {i}\n```" for i in range(samples)]
    batch = RewardBatch(["codecontests"] * samples, responses, [truth] * samples)
    with build_reward_manager(config.reward_settings()) as manager:
        start, cpu_start = time.perf_counter(), time.process_time()
        out = manager(batch)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if out.scores.sum().item() != samples:
        raise RuntimeError(f"the manager scored {out.scores.sum().item()} of {samples} correct responses as correct")
    return samples / wall, 1000 * cpu / samples


def baseline_module(python: str, cwd: str) -> str:
    """The package name the baseline checkout's code has: ``rewardsmith``, or ``rewardkit`` before the rename."""
    for module in ("rewardsmith", "rewardkit"):
        probe = subprocess.run([python, "-c", f"import {module}.sandbox.server"], capture_output=True, cwd=cwd)
        if probe.returncode == 0:
            return module
    raise RuntimeError(f"{python} imports neither rewardsmith.sandbox nor rewardkit.sandbox")


def alternate(servers: dict[str, str], concurrency: int, total: int, rounds: int) -> dict[str, list[dict]]:
    """``rounds`` rounds of ``total`` runs on each server in turn, so all see the same machine at the same time."""
    for url in servers.values():
        drive(url, 4, 40)  # warm-up: connections, page cache
    results: dict[str, list[dict]] = {name: [] for name in servers}
    for _ in range(rounds):
        for name, url in servers.items():
            results[name].append(drive(url, concurrency, total))
    return results


def compare(baseline_python: str, extra: list[str], concurrency: int, total: int, rounds: int) -> None:
    """Alternate warm rounds between this checkout's server and ``baseline_python``'s; print both."""
    # The baseline gets uids of its own: older servers do not claim theirs, so ours could be shared.
    # Its probe and server run in an empty directory: Python imports from the working directory first,
    # and a checkout's own package directory there would shadow the baseline's installed code.
    with tempfile.TemporaryDirectory() as outside:
        module = baseline_module(baseline_python, outside)
        with running_server(*extra) as new, running_server(*extra, "--base-uid", "64000", python=baseline_python,
                                                           module=module, cwd=outside) as old:
            results = alternate({"this checkout": new, "baseline": old}, concurrency, total, rounds)
    print(f"concurrency {concurrency}, {rounds} alternating rounds of {total} runs "
          f"(baseline: {baseline_python}):")
    for name, rows in results.items():
        rates = [r["runs_per_s"] for r in rows]
        costs = [r["cpu_ms"] + r["kernel_ms"] for r in rows]
        print(f"  {name:>13}: runs/s median {statistics.median(rates):.1f} (rounds {', '.join(f'{x:.0f}' for x in rates)}); "
              f"p99 median {statistics.median(r['p99_ms'] for r in rows):.0f} ms; CPU per run (tree + kernel "
              f"threads) median {statistics.median(costs):.2f} ms; errors {sum(r['errors'] for r in rows)}")
    ratios = [n["runs_per_s"] / b["runs_per_s"] for n, b in zip(results["this checkout"], results["baseline"])]
    print(f"  per-round ratio this/baseline: {', '.join(f'{x:.2f}' for x in ratios)} "
          f"(median {statistics.median(ratios):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=600, help="requests per warm measurement")
    parser.add_argument("--spawn-requests", type=int, default=150, help="requests per spawn measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--workers", type=int, default=None, help="server workers (default: the server's)")
    parser.add_argument("--server-args", default="", help="extra `rewardsmith sandbox serve` flags for both servers")
    parser.add_argument("--rounds", type=int, default=5,
                        help="repeat the warm measurement at the highest concurrency this many times (spread)")
    parser.add_argument("--baseline-python", default=None,
                        help="compare with the code this interpreter imports (another checkout's venv), in "
                             "alternating rounds, instead of the full benchmark")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    extra = (["--workers", str(args.workers)] if args.workers else []) + args.server_args.split()
    if args.baseline_python:
        print(f"load average before the run: {load_before:.2f} on {os.cpu_count()} CPUs")
        compare(args.baseline_python, extra, max(args.concurrency), args.requests, args.rounds)
        return
    rows = {}
    for mode, flags, total in (("warm", [], args.requests), ("spawn", ["--spawn-python"], args.spawn_requests)):
        with running_server(*extra, *flags) as url:
            drive(url, 4, 40)  # warm-up: connections, page cache
            for c in args.concurrency:
                rows[(mode, c)] = drive(url, c, max(total, c))
            if mode == "warm":
                repeats = [drive(url, max(args.concurrency), args.requests) for _ in range(args.rounds)]
                managed, client_ms = manager_rate(url, 1024, 64)
                batched = batch_rate(url, 8, 64, 16)
    print(f"load average before the run: {load_before:.2f} on {os.cpu_count()} CPUs (other work skews runs/s)")
    print(f"{'conc':>5} | {'warm runs/s':>11} {'p50 ms':>7} {'p99 ms':>7} {'cpu ms':>7} {'kthr ms':>7} | "
          f"{'spawn runs/s':>12} {'p50 ms':>7} {'p99 ms':>7} {'cpu ms':>7} | {'ratio':>6} | errors")
    print("-" * 116)
    for c in args.concurrency:
        w, s = rows[("warm", c)], rows[("spawn", c)]
        print(f"{c:>5} | {w['runs_per_s']:>11.1f} {w['p50_ms']:>7.1f} {w['p99_ms']:>7.1f} {w['cpu_ms']:>7.2f} "
              f"{w['kernel_ms']:>7.2f} | "
              f"{s['runs_per_s']:>12.1f} {s['p50_ms']:>7.1f} {s['p99_ms']:>7.1f} {s['cpu_ms']:>7.2f} | "
              f"{w['runs_per_s'] / s['runs_per_s']:>5.1f}x | {w['errors'] + s['errors']}")
    print("cpu ms = CPU of the server's process tree per run; kthr ms = CPU of kernel threads per run (namespace "
          "teardown); 2000 / (cpu ms + kthr ms) = runs/s two idle cores sustain")
    if repeats:
        rates = sorted(r["runs_per_s"] for r in repeats)
        costs = sorted(r["cpu_ms"] + r["kernel_ms"] for r in repeats)
        print(f"warm, concurrency {max(args.concurrency)}, {len(repeats)} more rounds: runs/s min {rates[0]:.1f} / "
              f"median {statistics.median(rates):.1f} / max {rates[-1]:.1f}; cpu + kthr ms per run median "
              f"{statistics.median(costs):.2f} (the spread is this machine's, not the code's)")
    best = max(rows[("warm", c)]["runs_per_s"] for c in args.concurrency)
    print(f"/v1/run_batch, 16 cases per request, 8 requests in flight: {batched:.1f} runs/s "
          f"= {batched / best:.2f} x the best raw /run_code rate above")
    print(f"sandbox reward manager, 1024 responses, max_concurrent=64: {managed:.1f} runs/s "
          f"= {managed / best:.2f} x the best raw /run_code rate above; client CPU {client_ms:.2f} ms/sample "
          f"(on the same cores as the sandbox)")


if __name__ == "__main__":
    main()
