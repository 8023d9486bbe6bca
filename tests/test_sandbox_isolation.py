"""Hostile programs through the real server: every isolation layer is tested by an attack.

Traffic goes only to 127.0.0.1. The servers run programs as uids 62000+i;
after each attack no process with such a uid may survive on the host.
"""
from __future__ import annotations

import os
import socket
import textwrap
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from rewardsmith.sandbox.testing import isolation_unavailable, processes_of_uids, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

WORKERS = 4
BASE_UID = 62000  # own range: the process checks below look at these uids only
OUTPUT_CAP = 1 << 20


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", str(WORKERS), "--base-uid", str(BASE_UID),
                        "--max-output-bytes", str(OUTPUT_CAP)) as base:
        yield base


def run(url, code, language="python", **fields):
    reply = requests.post(url + "/run_code", json={"code": code, "language": language, **fields}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()


def sandbox_processes() -> list[str]:
    """Host processes still owned by a sandbox uid (should be none between runs)."""
    return processes_of_uids(range(BASE_UID, BASE_UID + WORKERS + 2))  # the main server's and two one-worker ones


def assert_contained(url):
    assert sandbox_processes() == []
    assert run(url, "print('still serving')")["run_result"]["stdout"] == "still serving\n"


FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


def test_python_fork_bomb_hits_the_process_limit_and_times_out(url):
    body = run(url, FORK_BOMB, run_timeout=2)
    assert body["run_result"]["status"] == "TimeLimitExceeded"
    assert body["run_result"]["verdict"] == "TimeLimitExceeded"
    assert_contained(url)


def test_bash_fork_bomb(url):
    body = run(url, ":(){ :|:& };:\nsleep 30", language="bash", run_timeout=2)
    assert body["run_result"]["verdict"] == "TimeLimitExceeded"
    assert_contained(url)


def test_memory_bomb_gets_memory_verdict(url):
    body = run(url, "x = []\nwhile True:\n    x.append(bytearray(10**7))", memory_limit_MB=256, run_timeout=10)
    result = body["run_result"]
    assert result["status"] == "Finished" and result["return_code"] == 1
    assert result["verdict"] == "MemoryLimitExceeded"
    assert "MemoryError" in result["stderr"]
    assert_contained(url)


def test_infinite_loop_times_out(url):
    body = run(url, "while True:\n    pass", run_timeout=1)
    result = body["run_result"]
    assert body["status"] == "Failed"
    assert result["status"] == "TimeLimitExceeded" and result["return_code"] is None
    assert 1 <= result["execution_time"] < 6
    assert_contained(url)


def test_sleep_past_the_timeout_is_killed(url):
    body = run(url, "import time\ntime.sleep(60)\nprint('woke')", run_timeout=1)
    assert body["run_result"]["status"] == "TimeLimitExceeded"
    assert body["run_result"]["stdout"] == ""
    assert body["run_result"]["execution_time"] < 6
    assert_contained(url)


def test_double_forked_setsid_daemon_dies_with_the_run(url):
    daemon = textwrap.dedent("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(120)
            os._exit(0)
        print('parent done')
    """)
    body = run(url, daemon, run_timeout=5)
    assert body["status"] == "Success" and body["run_result"]["stdout"] == "parent done\n"
    body = run(url, "setsid nohup sleep 120 >/dev/null 2>&1 &\necho spawned", language="bash", run_timeout=5)
    assert body["run_result"]["stdout"] == "spawned\n"
    assert_contained(url)


def test_socket_connect_to_a_loopback_server_fails(url):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    code = textwrap.dedent(f"""
        import socket
        for host in ("127.0.0.1", "localhost"):
            try:
                socket.create_connection((host, {port}), timeout=2)
                print("CONNECTED", host)
            except OSError as exc:
                print("refused", host, type(exc).__name__)
    """)
    try:
        body = run(url, code, run_timeout=10)
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
    assert "CONNECTED" not in body["run_result"]["stdout"]
    assert body["run_result"]["stdout"].count("refused") == 2


def test_only_a_downed_loopback_is_visible(url):
    code = textwrap.dedent("""
        import os, socket
        print(socket.if_nametoindex('lo'))
        print(sorted(os.listdir('/sys/class/net')))
        print(int(open('/sys/class/net/lo/flags').read(), 16) & 1)
        print([line.split(':')[0].strip() for line in open('/proc/net/dev').readlines()[2:]])
    """)
    lines = run(url, code)["run_result"]["stdout"].splitlines()
    assert lines == ["1", "['lo']", "0", "['lo']"]


def test_writes_outside_the_work_dir_fail(url):
    marker = f"escape-{uuid.uuid4().hex}"
    targets = [f"/etc/{marker}", f"{os.getcwd()}/{marker}", f"/root/{marker}", f"/var/tmp/{marker}",
               f"/usr/{marker}", f"/dev/{marker}"]
    code = textwrap.dedent(f"""
        for path in {targets!r}:
            try:
                open(path, 'w').write('x')
                print('WROTE', path)
            except OSError as exc:
                print('denied', type(exc).__name__)
        open('/tmp/work/inside.txt', 'w').write('fine')
        open('/tmp/also-fine', 'w').write('fine')
        print('inside ok')
    """)
    out = run(url, code)["run_result"]["stdout"]
    assert "WROTE" not in out and out.count("denied") == len(targets) and "inside ok" in out
    for target in targets:
        assert not os.path.exists(target)


def test_secrets_of_the_host_and_privileges_stay_out_of_reach(url):
    code = textwrap.dedent("""
        import os
        for path in ('/etc/shadow', '/root/.bash_history'):
            try:
                open(path).read(); print('READ', path)
            except OSError as exc:
                print('denied', type(exc).__name__)
        try:
            os.setuid(0); print('ROOT')
        except PermissionError:
            print('setuid denied')
        print(os.getuid() >= 61000, os.getpid())
    """)
    out = run(url, code)["run_result"]["stdout"]
    assert "READ" not in out and "ROOT" not in out and "setuid denied" in out
    assert out.strip().endswith("True 1")  # its own PID namespace: it is PID 1 there


def test_user_namespaces_and_risky_system_calls_are_refused(url):
    code = textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        for name, nr, args in [("unshare(NEWUSER)", 272, (0x10000000,)), ("clone(NEWUSER)", 56, (0x10000000 | 17, 0, 0, 0, 0)),
                               ("io_uring_setup", 425, (8, 0)), ("bpf", 321, (0, 0, 0)), ("ptrace", 101, (0, 0, 0, 0)),
                               ("userfaultfd", 323, (0,)), ("keyctl", 250, (0, 0))]:
            result = libc.syscall(nr, *args)
            print(name, result, os.strerror(ctypes.get_errno()) if result < 0 else "ALLOWED")
    """)
    lines = run(url, code)["run_result"]["stdout"].splitlines()
    assert len(lines) == 7
    assert all(line.endswith("-1 Operation not permitted") for line in lines), lines
    body = run(url, "unshare --user --map-root-user id", language="bash")
    assert body["run_result"]["return_code"] != 0 and "Operation not permitted" in body["run_result"]["stderr"]


def test_another_runs_work_dir_is_invisible(url):
    secret = f"SECRET-{uuid.uuid4().hex}"
    owner = "echo {s} > secret.txt; echo {s} > /tmp/secret2; echo {s} > /dev/shm/s3; sleep 4".format(s=secret)
    # The spy gets the secret on stdin, so its own source file does not contain it.
    spy = textwrap.dedent("""
        import glob, os
        secret = input()
        hits = []
        paths = glob.glob('/tmp/**', recursive=True) + glob.glob('/dev/shm/**', recursive=True)
        paths += glob.glob('/proc/*/root/tmp/**', recursive=True) + glob.glob('/proc/*/cwd/*')
        for path in paths:
            try:
                if os.path.isfile(path) and secret in open(path).read():
                    hits.append(path)
            except OSError:
                pass
        print([p for p in os.listdir('/proc') if p.isdigit()])
        print('hits', hits)
    """)
    with ThreadPoolExecutor(2) as pool:
        owner_run = pool.submit(run, url, owner, "bash", run_timeout=10)
        time.sleep(1.0)
        spied = run(url, spy, stdin=secret + "\n")["run_result"]["stdout"]
        owner_run.result()
    assert "hits []" in spied
    assert spied.splitlines()[0] == "['1']"  # nothing but itself in its PID namespace


def test_fetch_files_never_follow_planted_symlinks(url):
    code = "ln -s /etc/passwd leak.txt; ln -s / root; mkdir d; ln -s /etc d/etc; echo fine > ok.txt"
    body = run(url, code, language="bash", fetch_files=["leak.txt", "root/etc/passwd", "d/etc/passwd", "ok.txt"])
    assert set(body["files"]) == {"ok.txt"}
    for name in ("leak.txt", "root/etc/passwd", "d/etc/passwd"):
        assert name in body["message"]


def test_ten_megabytes_of_output_is_truncated_not_a_timeout(url):
    body = run(url, "import sys\nsys.stdout.write('x' * 10_000_000)\nprint('done', file=sys.stderr)", run_timeout=10)
    result = body["run_result"]
    assert result["status"] == "Finished" and result["return_code"] == 0
    assert result["stdout_truncated"] is True and len(result["stdout"]) == OUTPUT_CAP
    assert result["stderr"] == "done\n" and result["stderr_truncated"] is False
    assert body["status"] == "Success" and "truncated" in body["message"]


def test_kill_minus_one_only_hits_the_run_itself(url):
    body = run(url, "sleep 30 &\nkill -9 -1\necho survived", language="bash", run_timeout=5)
    assert body["run_result"]["stdout"] == "survived\n"
    code = "import os, signal, subprocess\nchild = subprocess.Popen(['sleep', '30'])\n" \
           "os.kill(-1, signal.SIGKILL)\nprint('after', child.wait())"
    body = run(url, code, run_timeout=5)
    assert body["run_result"]["stdout"] == "after -9\n"
    assert_contained(url)


def test_attacks_in_parallel_with_benign_traffic(url):
    attacks = [
        (FORK_BOMB, "python", {"run_timeout": 2}, "TimeLimitExceeded"),
        ("x = ' ' * (2 ** 34)", "python", {"memory_limit_MB": 256}, "MemoryLimitExceeded"),
        ("while True: pass", "python", {"run_timeout": 1}, "TimeLimitExceeded"),
        ("import sys\nsys.stdout.write('y' * 10_000_000)", "python", {}, "OK"),
        ("kill -9 -1; echo ok", "bash", {}, "OK"),
    ]
    stop = threading.Event()
    benign_failures: list[str] = []
    benign_count = [0]

    def benign():
        i = 0
        while not stop.is_set():
            i += 1
            out = run(url, f"print({i} + 1)")["run_result"]["stdout"]
            if out != f"{i + 1}\n":
                benign_failures.append(out)
            benign_count[0] += 1

    with ThreadPoolExecutor(len(attacks) + 2) as pool:
        streams = [pool.submit(benign) for _ in range(2)]
        verdicts = list(pool.map(lambda a: run(url, a[0], a[1], **a[2])["run_result"]["verdict"], attacks))
        stop.set()
        for stream in streams:
            stream.result()
    assert verdicts == [a[3] for a in attacks]
    assert benign_failures == [] and benign_count[0] > 0
    assert_contained(url)


@pytest.fixture(scope="module")
def per_run_netns_url():
    with running_server("--workers", "1", "--base-uid", str(BASE_UID + WORKERS), "--network-namespace",
                        "per-run") as base:
        yield base


@pytest.fixture(scope="module")
def one_worker_url():
    # One worker with --network-namespace per-worker, so consecutive runs share its namespace.
    with running_server("--workers", "1", "--base-uid", str(BASE_UID + WORKERS + 1), "--network-namespace",
                        "per-worker") as base:
        yield base


def test_per_run_network_namespace_has_no_network_either(per_run_netns_url):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = textwrap.dedent(f"""
        import os, socket
        print(os.listdir('/sys/class/net'), int(open('/sys/class/net/lo/flags').read(), 16) & 1)
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2); print("CONNECTED")
        except OSError as exc:
            print("refused", type(exc).__name__)
    """)
    try:
        out = run(per_run_netns_url, code)["run_result"]["stdout"].splitlines()
    finally:
        listener.close()
    assert out[0] == "['lo'] 0"
    assert out[1].startswith("refused")


def test_shared_network_namespace_keeps_nothing_between_runs(one_worker_url):
    leave = textwrap.dedent("""
        import fcntl, os, socket, struct, time
        try:
            socket.socket(socket.AF_UNIX).bind("\\0rewardsmith-leak"); print("ABSTRACT NAME BOUND")
        except OSError as exc:
            print("no unix socket", type(exc).__name__)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 4242))
        try:  # SIOCSIFFLAGS, IFF_UP: bring the shared loopback up for the next run
            fcntl.ioctl(socket.socket(), 0x8914, struct.pack("16sH", b"lo", 1)); print("UP")
        except OSError as exc:
            print("lo stays down", type(exc).__name__)
        if os.fork() == 0:  # a daemon that would keep the port bound, if it could outlive the run
            os.setsid()
            time.sleep(60)
        print("bound")
    """)
    probe = textwrap.dedent("""
        import socket
        print(int(open('/sys/class/net/lo/flags').read(), 16) & 1)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).bind(("0.0.0.0", 4242)); print("port free")
        except OSError as exc:
            print("LEAKED", type(exc).__name__)
    """)
    assert run(one_worker_url, leave)["run_result"]["stdout"] == \
        "no unix socket OSError\nlo stays down PermissionError\nbound\n"
    assert run(one_worker_url, probe)["run_result"]["stdout"] == "0\nport free\n"
    assert sandbox_processes() == []
