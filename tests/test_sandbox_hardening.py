"""Issue 11's red-team findings, each as a hostile program through the real server.

Every test here failed on the code before the fix (commit b337696) and
names its finding. Traffic goes only to 127.0.0.1; the servers run programs
as uids 62100 and up.
"""
from __future__ import annotations

import os
import socket
import textwrap
import time
import uuid

import pytest
import requests

from rewardsmith.sandbox import cgroups
from rewardsmith.sandbox.testing import isolation_unavailable, processes_of_uids, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))
NO_MEMORY_CGROUP = None if cgroups.parent_dir() else "this host has no memory cgroup controller (v1 or v2)"

BASE_UID = 62100
TOKEN = f"server-token-{uuid.uuid4().hex}"
# Another secret of the server's environment, which no program may find anywhere.
HOST_SECRET = f"host-secret-{uuid.uuid4().hex}"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def url():
    # One worker: consecutive runs are forked by the same worker.
    with running_server("--workers", "1", "--base-uid", str(BASE_UID), "--max-fetch-mb", "8",
                        env={"REWARDSMITH_SANDBOX_TOKEN": TOKEN, "TRAINING_HOST_SECRET": HOST_SECRET}) as base:
        yield base


def post(url, path="/run_code", **body):
    return requests.post(url + path, json=body, headers=AUTH, timeout=120)


def run(url, code, **fields):
    reply = post(url, code=code, **fields)
    assert reply.status_code == 200, reply.text
    return reply.json()


def status(url):
    return requests.get(url + "/v1/status", headers=AUTH, timeout=10).json()


def halves(secret: str) -> tuple[str, str]:
    """A secret in two parts, so that a spy can look for it without ever holding it whole."""
    return secret[:len(secret) // 2], secret[len(secret) // 2:]


# Reads every readable byte of its own memory (as the red team did, after
# PR_SET_DUMPABLE) and reports which secrets it finds; the secrets arrive on
# stdin as "name first-half second-half" lines, never joined.
MEMORY_SPY = textwrap.dedent("""
    import ctypes, sys
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/mem becomes ours to read
    wanted = [line.split() for line in sys.stdin.read().splitlines()]
    found = set()
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or fields[-1] in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            for name, first, second in wanted:
                at = chunk.find(first.encode())
                while at != -1:
                    if chunk[at + len(first):at + len(first) + len(second)] == second.encode():
                        found.add(name)
                        break
                    at = chunk.find(first.encode(), at + 1)
    frame, names = sys._getframe().f_back, set()
    while frame is not None:  # the red team's second way in: the frames below the program
        names.update(frame.f_locals)
        frame = frame.f_back
    print(sorted(found))
    print(sorted(names))
""")


def test_no_earlier_run_and_no_server_environment_in_a_programs_memory(url):
    """Findings 1-3: environment block, the previous reply in a frame, the previous stdin in freed heap."""
    code_secret, stdin_secret, out_secret = (f"{kind}-{uuid.uuid4().hex}" for kind in ("code", "stdin", "out"))
    first, second = halves(out_secret)
    victim = f"# {code_secret}\nimport sys\ndata = sys.stdin.read()\nprint({first!r} + {second!r}, len(data))\n"
    for _ in range(3):  # several earlier runs, as in training
        assert run(url, victim, stdin=stdin_secret * 50)["run_result"]["stdout"].startswith(out_secret)
    secrets = {"code": code_secret, "stdin": stdin_secret, "stdout": out_secret, "token": TOKEN,
               "host_env": HOST_SECRET}
    spy_input = "".join(f"{name} {' '.join(halves(value))}\n" for name, value in secrets.items())
    result = run(url, MEMORY_SPY, stdin=spy_input, run_timeout=30)["run_result"]
    assert result["verdict"] == "OK", result["stderr"]
    found, local_names = result["stdout"].splitlines()
    assert found == "[]", f"a program found these in its memory: {found}"
    assert "'job'" not in local_names and "'reply'" not in local_names, \
        f"a program runs on top of the worker's job loop: {local_names}"


def test_socket_families_outside_the_allow_list_are_refused(url):
    """Finding 5 (and the AF_UNIX half of 4): only IPv4, IPv6 and stream socket pairs."""
    code = textwrap.dedent("""
        import socket
        tries = {"unix": (1, 1), "unix-dgram": (1, 2), "netlink": (16, 3), "packet": (17, 3), "alg": (38, 5),
                 "vsock": (40, 1), "vsock-dgram": (40, 2), "bluetooth": (31, 1), "inet": (2, 1), "inet6": (10, 2)}
        for name, (family, kind) in tries.items():
            try:
                socket.socket(family, kind).close(); print(name, "created")
            except OSError as exc:
                print(name, "refused")
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            try:
                socket.socketpair(socket.AF_UNIX, kind); print("pair", int(kind), "created")
            except OSError:
                print("pair", int(kind), "refused")
    """)
    lines = run(url, code)["run_result"]["stdout"].splitlines()
    created = {line.rsplit(" ", 1)[0] for line in lines if line.endswith("created")}
    assert created == {"inet", "inet6", "pair 1"}, lines


def test_host_unix_sockets_are_unreachable(url, tmp_path_factory):
    """Finding 4: a host service listening on a world-writable path-bound socket."""
    path = f"/var/tmp/rewardsmith-test-{uuid.uuid4().hex[:12]}.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)
    listener.listen(4)
    listener.settimeout(0.5)
    code = textwrap.dedent(f"""
        import socket
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect({path!r}); s.sendall(b"hello host"); print("CONNECTED")
        except OSError as exc:
            print("refused", type(exc).__name__)
        try:
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            a.connect({path!r}); print("RECONNECTED")
        except OSError as exc:
            print("refused", type(exc).__name__)
    """)
    try:
        out = run(url, code)["run_result"]["stdout"]
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
        os.unlink(path)
    assert "CONNECTED" not in out and out.count("refused") == 2, out


@pytest.mark.skipif(NO_MEMORY_CGROUP is not None, reason=str(NO_MEMORY_CGROUP))
@pytest.mark.parametrize("kind", ["memfd", "tmpfs"])
def test_memory_outside_the_address_space_counts_against_the_limit(url, kind):
    """Finding 6: memfd and tmpfs pages are memory the address-space limit never saw."""
    make = "os.memfd_create('x')" if kind == "memfd" else "os.open('/tmp/f%d' % len(held), os.O_CREAT | os.O_WRONLY)"
    code = textwrap.dedent(f"""
        import os
        held = []
        for _ in range(12):  # 12 x 32 MiB = 384 MiB, three times the limit; each file under RLIMIT_FSIZE
            fd = {make}
            held.append(fd)
            for _ in range(32):
                os.write(fd, b"x" * (1 << 20))
            print(32 * len(held), flush=True)
    """)
    result = run(url, code, memory_limit_MB=128, run_timeout=20)["run_result"]
    held_mib = max([0] + [int(x) for x in result["stdout"].split()])
    assert result["verdict"] == "MemoryLimitExceeded", result
    assert held_mib <= 128, f"a run limited to 128 MiB held {held_mib} MiB"
    assert run(url, "print('next')")["run_result"]["stdout"] == "next\n"


def test_an_inode_flood_stops_at_the_tmpfs_inode_cap(url):
    """Finding 7: empty files use no tmpfs space, but each costs kernel memory."""
    code = textwrap.dedent("""
        import os
        for where in ("/tmp", "/dev/shm"):
            made = 0
            try:
                while made < 60000:
                    os.close(os.open(f"{where}/f{made}", os.O_CREAT | os.O_WRONLY)); made += 1
                print(where, made, "CREATED ALL")
            except OSError as exc:
                print(where, made, exc.errno)
    """)
    lines = run(url, code, run_timeout=30)["run_result"]["stdout"].splitlines()
    assert len(lines) == 2 and not any("CREATED ALL" in line for line in lines), lines
    for line in lines:
        _, made, errno_ = line.split()
        assert int(made) <= 16384 and errno_ == "28", lines  # ENOSPC at the cap


def test_fetch_files_are_bounded_per_request_even_when_sparse(url):
    """Finding 8: five sparse 60 MiB files would come back as 300 MiB of zeros."""
    names = [f"sparse{i}.bin" for i in range(5)]
    code = "".join(f"with open({n!r}, 'wb') as f:\n    f.truncate(60 << 20)\n" for n in names)
    code += "open('small.txt', 'w').write('kept')\n"
    reply = run(url, code, fetch_files=[*names, "small.txt"])
    assert reply["status"] == "Success", reply["message"]
    assert list(reply["files"]) == ["small.txt"]
    assert "8 MiB per request" in reply["message"] and all(n in reply["message"] for n in names)


def worker_tmpfs_mounts(url) -> int:
    (pid,) = status(url)["worker_pids"]
    with open(f"/proc/{pid}/mountinfo") as fh:
        return sum(1 for line in fh if line.split()[4] == "/tmp")


@pytest.mark.parametrize("files,culprit", [({"x": "", "x/y": ""}, "x/y"),
                                           ({"solution.py/y": ""}, "solution.py/y"),
                                           ({"a": "", "./a": ""}, "./a")])
def test_files_that_cannot_coexist_are_refused_by_name_and_leak_nothing(url, files, culprit):
    """Finding 9: a 4xx naming the file, and no tmpfs left mounted in the worker."""
    mounts = worker_tmpfs_mounts(url)
    for path, body in [("/run_code", {}), ("/v1/run_batch", {"cases": [{"stdin": ""}]})]:
        reply = post(url, path, code="print(1)", files=files, **body)
        assert reply.status_code == 422 and culprit in reply.json()["detail"], reply.text
    assert worker_tmpfs_mounts(url) == mounts
    assert run(url, "print('fine')")["run_result"]["stdout"] == "fine\n"


CLOSED_PIPES = "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)"


def test_the_deadline_holds_after_the_program_closes_its_pipes(url):
    """Finding 10: closing stdout and stderr must not stop the timeout."""
    restarts = status(url)["worker_restarts"]
    started = time.monotonic()
    result = run(url, CLOSED_PIPES, run_timeout=1)["run_result"]
    assert result["verdict"] == "TimeLimitExceeded" and time.monotonic() - started < 6, result
    batch = post(url, "/v1/run_batch", code="import sys\nif input() == 'close':\n" +
                 textwrap.indent(CLOSED_PIPES, "    ") + "\nprint('ok')",
                 run_timeout=1, cases=[{"stdin": "open\n"}, {"stdin": "close\n"}]).json()
    assert batch["status"] == "Failed", batch
    assert [r["verdict"] for r in batch["results"]] == ["OK", "TimeLimitExceeded"]
    assert status(url)["worker_restarts"] == restarts


def test_a_kill_by_the_cpu_time_limit_is_a_time_limit_verdict(url):
    """Finding 11: PID 1 ignores SIGXCPU, so the CPU limit ends it with SIGKILL."""
    code = "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (1, 1))\nwhile True:\n    pass"
    result = run(url, code, run_timeout=10)["run_result"]
    assert result["verdict"] == "TimeLimitExceeded" and result["status"] == "TimeLimitExceeded", result
    assert result["execution_time"] < 9  # the CPU limit ended it, not the wall-clock deadline


@pytest.mark.slow
def test_sixty_spinning_threads_are_a_time_limit_verdict(url):
    """Finding 11 as reported: threads burn the CPU limit faster than the wall clock runs.

    Which limit fires first depends on the free cores (on a busy two-core
    machine the deadline may win); either way the verdict is a time limit.
    The test above is the deterministic one.
    """
    code = textwrap.dedent("""
        import threading
        def spin():
            while True:
                pass
        for _ in range(60):
            threading.Thread(target=spin, daemon=True).start()
        threading.Event().wait()
    """)
    # The hard CPU limit (timeout + 2 s) comes after ~4 s of wall time on two free cores: before the deadline.
    result = run(url, code, run_timeout=6)["run_result"]
    assert result["verdict"] == "TimeLimitExceeded", result


def program_uid(url, headers=None) -> int:
    reply = requests.post(url + "/run_code", json={"code": "import os; print(os.getuid())"}, headers=headers,
                          timeout=60)
    return int(reply.json()["run_result"]["stdout"])


def test_two_servers_on_one_host_never_share_sandbox_uids():
    """Finding 12: both used to default to 61000 and up."""
    with running_server("--workers", "2") as first, running_server("--workers", "2") as second:
        uids = [status(first)["uids"], status(second)["uids"]]
        assert {program_uid(first) for _ in range(4)} <= set(range(uids[0][0], uids[0][1] + 1))
        assert {program_uid(second) for _ in range(4)} <= set(range(uids[1][0], uids[1][1] + 1))
        assert uids[0][1] < uids[1][0] or uids[1][1] < uids[0][0], uids
        with pytest.raises(RuntimeError, match="in use by another sandbox server"):
            with running_server("--workers", "1", "--base-uid", str(uids[0][0])):
                pass
    assert processes_of_uids(range(uids[0][0], uids[0][1] + 1)) == []


def test_a_warm_program_starts_sixty_threads_under_the_default_memory_limit(url):
    """Found on the way: glibc read MALLOC_ARENA_MAX only at the worker's start, so warm threads got 64 MiB arenas."""
    code = textwrap.dedent("""
        import threading
        stop = threading.Event()
        threads = [threading.Thread(target=stop.wait) for _ in range(60)]
        for t in threads:
            t.start()
        stop.set()
        print(len(threads))
    """)
    result = run(url, code)["run_result"]
    assert result["stdout"] == "60\n", result["stderr"]
