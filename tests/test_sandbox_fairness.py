"""Concurrent runs share the CPU fairly, and a time-limit verdict counts only a run's own time (issue 28, 1 and 6)."""
from __future__ import annotations

import contextlib
import os
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
def service_cpu_cgroup():
    """A cpu cgroup of its own for the server, as a service manager gives one (the kernel's per-session
    autogroups, which would share the CPU between runs' sessions, apply only to the root cpu cgroup)."""
    root = "/sys/fs/cgroup/cpu"
    if not os.path.isfile(f"{root}/cpu.shares"):
        pytest.skip("no cgroup v1 cpu controller")
    path = f"{root}/rewardsmith-test-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
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
