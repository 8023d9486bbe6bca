"""Start a real sandbox server in a subprocess on a free loopback port (tests, benchmarks)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Iterator

import requests

from rewardsmith.sandbox.jail import available_namespaces, seccomp_available


def isolation_unavailable() -> str | None:
    """Why this host cannot run the fully isolated server, or None if it can."""
    missing = [name for name, ok in available_namespaces().items() if not ok]
    if missing:
        return f"creating namespaces ({', '.join(missing)}) is not permitted here: needs root or CAP_SYS_ADMIN"
    if os.geteuid() != 0:
        return "the sandbox drops programs to other uids, which needs root"
    if not seccomp_available():
        return "the sandbox's seccomp filter is written for x86_64 only"
    return None


def processes_of_uids(uids: range) -> list[str]:
    """``"pid name"`` of every live (not zombie) host process whose real uid is in ``uids``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                text = fh.read()
        except OSError:
            continue  # exited meanwhile
        uid = int(text.split("\nUid:\t", 1)[1].split()[0])
        # A zombie has already died; only its exit status waits to be reaped
        # (asynchronously, by whoever inherited it).
        zombie = "\nState:\tZ" in text
        if uid in uids and not zombie:
            found.append(f"{entry} {text.splitlines()[0].split()[-1]}")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_server(*args: str, start_timeout_s: float = 60.0, prefix: tuple[str, ...] = (),
                   env: dict[str, str] | None = None, python: str = sys.executable,
                   module: str = "rewardsmith", cwd: str | None = None) -> Iterator[str]:
    """Yield the base URL of ``rewardsmith sandbox serve <args>`` (the real CLI) bound to 127.0.0.1.

    ``prefix`` wraps the command (e.g. ``setpriv ...`` to drop privileges);
    ``env`` adds to the server's environment; ``python`` runs the server
    (another checkout's virtual environment, to compare versions) as
    ``python -m <module>`` (``rewardkit`` for checkouts before the rename). The server
    is stopped (SIGTERM, then SIGKILL) on exit. ``cwd`` is the server's working directory (default:
    ours); ``python -m`` imports from it first, so another checkout's server needs one outside any checkout.
    """
    port = free_port()
    cmd = [*prefix, python, "-m", module, "sandbox", "serve", "--host", "127.0.0.1",
           "--port", str(port), *args]
    # A file, not a pipe: nobody drains a pipe while tests run, and a full one would stall the server.
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"sandbox server exited with {proc.returncode}:\n{log.read()}")
            try:
                if requests.get(url + "/v1/ping", timeout=1).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"sandbox server did not answer within {start_timeout_s} s")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def successful_stdout(url: str, code: str, run_timeout: float = 10) -> str:
    """The stdout of ``code`` run through ``url``'s ``/run_code``; asserts the request and the run succeeded."""
    reply = requests.post(url + "/run_code", json={"code": code, "run_timeout": run_timeout}, timeout=60 + 3 * run_timeout)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "Success", body
    return body["run_result"]["stdout"]
