"""Without namespace privileges the server refuses to start, unless told to accept weak isolation.

The privilege is really removed: the server runs under ``setpriv`` with
CAP_SYS_ADMIN dropped from its bounding set, so unshare(2) fails for real.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import requests

from rewardsmith.sandbox.jail import first_closed_ancestor
from rewardsmith.sandbox.server import base_interpreter
from rewardsmith.sandbox.testing import free_port, running_server

pytestmark = [
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (Debian package util-linux) is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="dropping CAP_SYS_ADMIN with setpriv needs root"),
]
NO_SYS_ADMIN = ("setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin")


def test_refuses_to_start_and_names_the_missing_layers():
    cmd = [*NO_SYS_ADMIN, sys.executable, "-m", "rewardsmith.sandbox.cli", "serve", "--port", str(free_port())]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "refusing to start" in done.stderr
    for layer in ("network_namespace", "pid_namespace", "mount_namespace", "readonly_root"):
        assert layer in done.stderr
    assert "--allow-weak-isolation" in done.stderr


def test_refuses_uids_of_existing_accounts():
    cmd = [sys.executable, "-m", "rewardsmith", "sandbox", "serve", "--port", str(free_port()), "--base-uid", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "0 (root)" in done.stderr and "--base-uid" in done.stderr


def _public_interpreter() -> str | None:
    """An interpreter unprivileged uids can read without a mount namespace to expose it."""
    for candidate in (base_interpreter(), shutil.which("python3"), "/usr/bin/python3"):
        if candidate and os.path.exists(candidate):
            prefix = os.path.dirname(os.path.dirname(os.path.realpath(candidate)))
            if first_closed_ancestor(prefix) is None:
                return candidate
    return None


def test_refuses_an_interpreter_programs_cannot_read():
    python = base_interpreter()
    if first_closed_ancestor(os.path.dirname(os.path.dirname(python))) is None:
        pytest.skip(f"{python} is readable by everyone here; nothing to refuse")
    cmd = [*NO_SYS_ADMIN, sys.executable, "-m", "rewardsmith", "sandbox", "serve", "--port", str(free_port()),
           "--allow-weak-isolation"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot read the standard library" in done.stderr and "--python" in done.stderr


def test_weak_mode_runs_and_reports_missing_layers_everywhere():
    python = _public_interpreter()
    if python is None:
        pytest.skip("no Python interpreter outside private directories for weak mode (e.g. Debian's python3)")
    with running_server("--workers", "2", "--allow-weak-isolation", "--python", python, prefix=NO_SYS_ADMIN) as url:
        status = requests.get(url + "/v1/status", timeout=10).json()
        assert "network_namespace" in status["missing_layers"]
        assert status["isolation"]["network_namespace"] is False
        assert status["isolation"]["unprivileged_uid"] is True
        reply = requests.post(url + "/run_code", json={"code": "print(6 * 7)"}, timeout=30).json()
        assert reply["status"] == "Success" and reply["run_result"]["stdout"] == "42\n"
        assert "weak isolation" in reply["message"] and "network_namespace" in reply["message"]
        # Without a PID namespace the timeout still kills the program's process group.
        reply = requests.post(url + "/run_code", json={"code": "import time; time.sleep(60)", "run_timeout": 1},
                              timeout=30).json()
        assert reply["run_result"]["status"] == "TimeLimitExceeded"
