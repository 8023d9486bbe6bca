"""Load and overload against a real server: no 5xx, bounded memory, 429 (not a crash) when full."""
from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from rewardsmith.sandbox.testing import isolation_unavailable, processes_of_uids, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("VmRSS:")).split()[1])


def total_rss_kb(url: str) -> int:
    status = requests.get(url + "/v1/status", timeout=10).json()
    return sum(rss_kb(pid) for pid in [status["server_pid"], *status["worker_pids"]])


def wait_for(condition, what: str, timeout_s: float = 30.0) -> None:
    """Poll ``condition()`` until it is true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.02)


def server_status(url: str) -> dict:
    return requests.get(url + "/v1/status", timeout=10).json()


def hammer(url: str, total: int, concurrency: int, code_for) -> Counter:
    local = threading.local()

    def one(i: int) -> str:
        if not hasattr(local, "session"):
            local.session = requests.Session()
        reply = local.session.post(url + "/run_code", json={"code": code_for(i), "run_timeout": 10}, timeout=120)
        if reply.status_code != 200:
            return str(reply.status_code)
        body = reply.json()
        return "ok" if body["run_result"]["stdout"] == f"{i}\n" else f"wrong: {body}"

    with ThreadPoolExecutor(concurrency) as pool:
        return Counter(pool.map(one, range(total)))


@pytest.mark.slow
def test_two_thousand_requests_at_concurrency_128():
    with running_server("--workers", "4") as url:
        hammer(url, 200, 32, lambda i: f"print({i})")  # warm-up: allocator pools, connections
        before = total_rss_kb(url)
        outcomes = hammer(url, 2000, 128, lambda i: f"import sys\nprint(sum([{i}]))")
        after = total_rss_kb(url)
        status = requests.get(url + "/v1/status", timeout=10).json()
    assert outcomes == Counter({"ok": 2000})
    assert after - before < 64 * 1024, f"server memory grew from {before} kB to {after} kB"
    assert status["queue_depth"] == 0 and status["worker_restarts"] == 0


def test_overload_is_answered_429_and_the_server_keeps_serving():
    with running_server("--workers", "2", "--max-pending", "4") as url:
        outcomes = hammer(url, 24, 24, lambda i: f"import time\ntime.sleep(1)\nprint({i})")
        assert set(outcomes) == {"ok", "429"}, outcomes
        assert outcomes["ok"] >= 4
        with ThreadPoolExecutor(4) as pool:
            sleepers = [pool.submit(requests.post, url + "/run_code",
                                    json={"code": "import time\ntime.sleep(2)"}, timeout=30) for _ in range(4)]
            wait_for(lambda: server_status(url)["runs_in_flight"] >= 4, "4 runs in flight")
            refused = requests.post(url + "/run_code", json={"code": "print(1)"}, timeout=30)
            assert all(s.result(timeout=60).status_code == 200 for s in sleepers)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "1" and "limit 4" in refused.json()["detail"]
        reply = requests.post(url + "/run_code", json={"code": "print('after')"}, timeout=30)
        assert reply.json()["run_result"]["stdout"] == "after\n"


def test_a_worker_killed_mid_run_is_a_sandbox_error_and_is_replaced():
    with running_server("--workers", "1", "--base-uid", "63000") as url:
        worker_pid = requests.get(url + "/v1/status", timeout=10).json()["worker_pids"][0]
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(requests.post, url + "/run_code",
                                  json={"code": "import time\ntime.sleep(5)", "run_timeout": 10}, timeout=60)
            wait_for(lambda: server_status(url)["busy_workers"] > 0, "the worker to start the run")
            os.kill(worker_pid, signal.SIGKILL)
            reply = pending.result(timeout=60).json()
        assert reply["status"] == "SandboxError" and "worker 0" in reply["message"]
        after = requests.post(url + "/run_code", json={"code": "print('replaced')"}, timeout=30).json()
        assert after["run_result"]["stdout"] == "replaced\n"
        status = requests.get(url + "/v1/status", timeout=10).json()
        assert status["worker_restarts"] == 1 and status["worker_pids"] != [worker_pid]
        # The program of the killed worker died with it (it would have slept 5 s more).
        assert processes_of_uids(range(63000, 63001)) == []



@pytest.mark.slow
def test_a_hung_worker_is_replaced_after_its_deadline():
    with running_server("--workers", "1") as url:
        worker_pid = requests.get(url + "/v1/status", timeout=10).json()["worker_pids"][0]
        os.kill(worker_pid, signal.SIGSTOP)  # frozen: it will never answer
        reply = requests.post(url + "/run_code", json={"code": "print(1)", "run_timeout": 1}, timeout=60).json()
        assert reply["status"] == "SandboxError" and "timed out" in reply["message"]
        after = requests.post(url + "/run_code", json={"code": "print('fresh')"}, timeout=30).json()
        assert after["run_result"]["stdout"] == "fresh\n"
        assert requests.get(url + "/v1/status", timeout=10).json()["worker_restarts"] == 1
