"""Sandbox throughput: warm pre-forked Python workers vs a fresh interpreter per run.

Starts two real servers on 127.0.0.1 (same isolation; one with
``--spawn-python``), drives each at several concurrency levels with a mix of
short programs over keep-alive HTTP connections, and prints runs/s and
p50/p99 latency side by side with the warm/spawn ratio.

    .venv/bin/python benchmarks/sandbox_throughput.py [--requests 600] [--concurrency 1 4 16 64]
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
from urllib.parse import urlparse

from rewardkit.sandbox.testing import running_server

PROGRAMS = [
    ("print(sum(map(int, input().split())))", "3 4\n", "7\n"),
    ("import sys\nn = int(sys.stdin.readline())\nprint(sum(i * i for i in range(n)))", "1000\n",
     f"{sum(i * i for i in range(1000))}\n"),
    ("from collections import Counter\nprint(Counter(input()).most_common(1)[0][0])", "abracadabra\n", "a\n"),
    ("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib(15))", "", "610\n"),
]


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
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    latencies.sort()
    return {
        "runs_per_s": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "errors": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=600, help="requests per warm measurement")
    parser.add_argument("--spawn-requests", type=int, default=150, help="requests per spawn measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--workers", type=int, default=None, help="server workers (default: the server's)")
    args = parser.parse_args()
    extra = ["--workers", str(args.workers)] if args.workers else []
    rows = {}
    for mode, flags, total in (("warm", [], args.requests), ("spawn", ["--spawn-python"], args.spawn_requests)):
        with running_server(*extra, *flags) as url:
            drive(url, 4, 40)  # warm-up: connections, page cache
            for c in args.concurrency:
                rows[(mode, c)] = drive(url, c, max(total, c))
    print(f"{'conc':>5} | {'warm runs/s':>11} {'p50 ms':>7} {'p99 ms':>7} | {'spawn runs/s':>12} {'p50 ms':>7} "
          f"{'p99 ms':>7} | {'ratio':>6} | errors")
    print("-" * 88)
    for c in args.concurrency:
        w, s = rows[("warm", c)], rows[("spawn", c)]
        print(f"{c:>5} | {w['runs_per_s']:>11.1f} {w['p50_ms']:>7.1f} {w['p99_ms']:>7.1f} | "
              f"{s['runs_per_s']:>12.1f} {s['p50_ms']:>7.1f} {s['p99_ms']:>7.1f} | "
              f"{w['runs_per_s'] / s['runs_per_s']:>5.1f}x | {w['errors'] + s['errors']}")


if __name__ == "__main__":
    main()
