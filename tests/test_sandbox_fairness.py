"""Concurrent runs share the CPU fairly, and a time-limit verdict counts only a run's own time (issue 28, 1 and 6)."""
from __future__ import annotations

import contextlib
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

# 60 processes spinning until the run's timeout kills them all.
SPINNERS = """
import os
import signal
for _ in range(59):
    if os.fork() == 0:
        break
while True:
    pass
"""
# A correct program that needs 0.4 s of CPU, whatever the host's load.
NEEDS_CPU = """
import time
while time.process_time() < 0.4:
    pass
print("done")
"""


def run(url: str, code: str, timeout_s: float) -> dict:
    reply = requests.post(url + "/run_code", json={"code": code, "run_timeout": timeout_s}, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()


@contextlib.contextmanager
def service_cpu_cgroup(cpu_percent: int | None = None):
    """A cpu cgroup of its own for the server, as a service manager gives one (the kernel's per-session
    autogroups, which would share the CPU between runs' sessions, apply only to the root cpu cgroup);
    ``cpu_percent`` of one CPU at most, to play a host too loaded to give a run its time."""
    root = "/sys/fs/cgroup/cpu"
    if not os.path.isfile(f"{root}/cpu.shares"):
        pytest.skip("no cgroup v1 cpu controller")
    path = f"{root}/rewardsmith-test-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    if cpu_percent is not None:
        with open(f"{path}/cpu.cfs_quota_us", "w") as fh:
            fh.write(str(cpu_percent * 1000))  # of the default 100 ms period
    try:
        yield ("sh", "-c", f'echo $$ > {path}/cgroup.procs && exec "$@"', "sh")
    finally:
        for _ in range(50):  # the server's processes leave it as they exit
            with contextlib.suppress(OSError):
                for child in os.listdir(path):
                    if os.path.isdir(f"{path}/{child}"):
                        os.rmdir(f"{path}/{child}")
                os.rmdir(path)
                break
            time.sleep(0.1)


def test_a_run_of_60_spinning_processes_does_not_starve_a_concurrent_run():
    with service_cpu_cgroup() as prefix, running_server("--workers", "2", prefix=prefix) as url:
        with ThreadPoolExecutor(2) as pool:
            spinning = pool.submit(run, url, SPINNERS, 8)
            time.sleep(1.0)  # the 60 processes are up and spinning
            correct = run(url, NEEDS_CPU, 3)
            spun = spinning.result()
    assert correct["status"] == "Success", correct
    assert correct["run_result"]["stdout"] == "done\n"
    assert spun["run_result"]["verdict"] == "TimeLimitExceeded", spun


def test_a_run_whose_client_went_away_is_cancelled():
    with running_server("--workers", "1") as url:
        with pytest.raises(requests.ReadTimeout):  # the client gives up after 1 s and closes the connection
            requests.post(url + "/run_code", json={"code": "while True: pass", "run_timeout": 30}, timeout=1)
        began = time.monotonic()
        after = run(url, "print(1)", 5)
        waited = time.monotonic() - began
    assert after["run_result"]["stdout"] == "1\n", after
    assert waited < 8, f"the next run waited {waited:.1f} s behind an abandoned one"


def test_a_run_not_started_within_the_queue_wait_is_refused_429():
    with running_server("--workers", "1", "--max-queue-wait", "1") as url:
        with ThreadPoolExecutor(1) as pool:
            busy = pool.submit(run, url, "import time\ntime.sleep(6)", 10)
            time.sleep(1.0)
            began = time.monotonic()
            # Python has no compile step: its unused compile_timeout adds to the wait (here 1 + 1 s).
            refused = requests.post(url + "/run_code", json={"code": "print(1)", "compile_timeout": 1}, timeout=30)
            waited = time.monotonic() - began
            busy.result()
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1", refused.text
    assert waited < 4, f"refused only after {waited:.1f} s"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_sigterm_stops_the_server_within_seconds_killing_what_runs():
    with running_server("--workers", "2") as url:
        status = requests.get(url + "/v1/status", timeout=10).json()
        with ThreadPoolExecutor(2) as pool:
            loops = [pool.submit(requests.post, url + "/run_code",
                                 json={"code": "while True: pass", "run_timeout": 30}, timeout=60) for _ in range(2)]
            deadline = time.monotonic() + 20
            while requests.get(url + "/v1/status", timeout=10).json()["busy_workers"] < 2:
                assert time.monotonic() < deadline, "the two runs never started"
                time.sleep(0.1)
            os.kill(status["server_pid"], signal.SIGTERM)
            began = time.monotonic()
            while _state(status["server_pid"]) not in ("Z", "gone"):
                assert time.monotonic() - began < 8, "the server was still running 8 s after SIGTERM"
                time.sleep(0.1)
            for loop in loops:
                with contextlib.suppress(requests.RequestException):
                    loop.result()
        left = [pid for pid in status["worker_pids"] + status["template_pids"] if _state(pid) not in ("Z", "gone")]
    assert not left, f"processes of the server still running: {left}"


def test_a_run_slowed_by_load_is_charged_its_own_time_or_is_unavailable():
    # The server gets 20% of one CPU: a run needing 0.4 s of CPU takes about 2 s of wall time.
    with service_cpu_cgroup(cpu_percent=20) as prefix, running_server("--workers", "1", prefix=prefix) as url:
        slowed = run(url, NEEDS_CPU, 1.5)  # its own time (0.4 s of CPU) is within 1.5 s: the wait is not its own
        capped = run(url, NEEDS_CPU.replace("0.4", "1.2"), 1)  # 6 s of wall time needed, past the cap of 4 s
    assert slowed["status"] == "Success", slowed
    assert slowed["run_result"]["execution_time"] > 1.5
    assert capped["status"] == "SandboxError" and "too loaded" in capped["message"], capped
