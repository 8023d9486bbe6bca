"""Issue 19's red-team findings, each as a hostile program (or request) through the real server.

Every test here failed on the code before the fix (commit 83d06cd) and
names its finding. Expected exit statuses come from running the same file
with the server's own interpreter, outside the sandbox: the warm path must
end a program exactly as ``python solution.py`` would. Traffic goes only to
127.0.0.1; the servers run programs as uids 62400 and up.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest
import requests

from rewardsmith.sandbox.server import base_interpreter
from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

BASE_UID = 62400


# The server starts as some CI runners and `nohup` start it: signals ignored
# (classic, glibc's own 32 and 33, real-time ones) and some blocked, all of
# which a process inherits across fork and exec.
HOSTILE_SIGNALS = textwrap.dedent("""
    import os, signal, sys
    from rewardsmith.sandbox import jail
    for signum in (1, 2, 3, 10, 12, 14, 32, 33, 34, 64):
        jail.set_signal_disposition(signum, 1)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2, 35])
    os.execv(sys.argv[1], sys.argv[1:])
""")


@pytest.fixture(scope="module")
def url():
    prefix = (sys.executable, "-c", HOSTILE_SIGNALS)
    with running_server("--workers", "1", "--base-uid", str(BASE_UID), prefix=prefix) as base:
        yield base


def post(url, path="/run_code", **body):
    return requests.post(url + path, json=body, timeout=120)


def run(url, code, **fields):
    reply = post(url, code=code, **fields)
    assert reply.status_code == 200, reply.text
    return reply.json()


def cpython_status(tmp_path, code: str) -> int:
    """The exit status of ``python solution.py`` for ``code`` (stdout a pipe, as in the sandbox)."""
    path = tmp_path / "solution.py"
    path.write_text(code)
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    return subprocess.run([base_interpreter(), str(path)], capture_output=True, env=env, timeout=60).returncode


# -- findings 9-11: the warm path ends a program exactly as CPython does -------------------------------

SPOOFS = {
    "os._exit replaced": "import os\n_real = os._exit\nos._exit = lambda code: _real(0)\nraise ValueError('fails')\n",
    "atexit._run_exitfuncs replaced": (
        "import atexit, os\natexit._run_exitfuncs = lambda: os._exit(0)\nraise SystemExit(3)\n"),
    "int subclass with its own __and__": (
        "class Code(int):\n    def __and__(self, other):\n        return 0\n"
        "import sys\nsys.exit(Code(4))\n"),
    "the sandbox's own helpers replaced": (
        "import sys\nfor name in ('template', 'worker'):\n    m = sys.modules.get(name)\n"
        "    for attr in dir(m or object()):\n        if 'exit' in attr or 'status' in attr or 'flush' in attr:\n"
        "            try: setattr(m, attr, lambda *a, **k: 0)\n            except Exception: pass\n"
        "raise SystemExit(5)\n"),
}


@pytest.mark.parametrize("name", sorted(SPOOFS))
def test_finding_9_a_failing_program_cannot_spoof_its_exit_status(url, tmp_path, name):
    code = SPOOFS[name]
    expected = cpython_status(tmp_path, code)
    assert expected != 0
    result = run(url, code)
    assert result["status"] == "Failed", (name, result)
    assert result["run_result"]["return_code"] == expected, (name, result["run_result"])


EXIT_SEMANTICS = {
    "sys.exit(2**64)": "import sys\nsys.exit(2**64)\n",
    "sys.exit(-2**63)": "import sys\nsys.exit(-2**63)\n",
    "sys.exit(2**31 + 5)": "import sys\nsys.exit(2**31 + 5)\n",
    "sys.exit(259)": "import sys\nsys.exit(259)\n",
    "sys.exit('message')": "import sys\nsys.exit('bye')\n",
    "sys.exit(True)": "import sys\nsys.exit(True)\n",
    "final stdout flush fails": "import os\nprint('buffered')\nos.close(1)\n",
    "final flush fails after sys.exit(3)": "import os, sys\nprint('buffered')\nos.close(1)\nsys.exit(3)\n",
}


@pytest.mark.parametrize("name", sorted(EXIT_SEMANTICS))
def test_finding_10_exit_statuses_follow_cpython(url, tmp_path, name):
    code = EXIT_SEMANTICS[name]
    result = run(url, code)["run_result"]
    assert result["return_code"] == cpython_status(tmp_path, code), (name, result)


def test_finding_10_flush_failure_is_reported_like_cpython(url):
    result = run(url, "import os\nprint('buffered')\nos.close(1)\n")["run_result"]
    assert result["return_code"] == 120 and result["verdict"] == "RuntimeError", result
    assert "Exception ignored in" in result["stderr"] and "Bad file descriptor" in result["stderr"], result


def test_finding_11_builtins_is_the_builtins_module(url):
    code = ("import builtins\n__builtins__.print('via module')\n"
            "print(__builtins__ is builtins, type(__builtins__).__name__)\n")
    result = run(url, code)["run_result"]
    assert result["verdict"] == "OK", result
    assert result["stdout"] == "via module\nTrue module\n"


# -- finding 13: signal dispositions are the default ones in what a run executes ----------------------

@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_finding_13_a_pipeline_writer_dies_by_sigpipe(url):
    code = "yes | head -n 2 > /dev/null\necho \"${PIPESTATUS[0]}\"\ntrap -p\n"
    result = run(url, code, language="bash")["run_result"]
    assert result["stdout"].split()[0] == "141", result  # 128 + SIGPIPE, as on any host shell


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_finding_13_no_signal_is_ignored_after_exec(url):
    code = "grep -E '^Sig(Ign|Blk):' /proc/self/status\n"
    result = run(url, code, language="bash")["run_result"]
    ignored = dict(line.split(":\t") for line in result["stdout"].splitlines())
    assert int(ignored["SigIgn"], 16) == 0 and int(ignored["SigBlk"], 16) == 0, result


def test_finding_13_a_warm_python_run_has_the_signals_of_a_fresh_interpreter(url):
    code = ("import signal\n"
            "for line in open('/proc/self/status'):\n"
            "    if line.startswith(('SigIgn:', 'SigBlk:')):\n"
            "        print(line, end='')\n"
            "print('SIGINT:\\t', signal.getsignal(signal.SIGINT) is signal.default_int_handler, sep='')\n")
    result = run(url, code, language="python")["run_result"]
    status = dict(line.split(":\t") for line in result["stdout"].splitlines())
    cpython = (1 << (signal.SIGPIPE - 1)) | (1 << (signal.SIGXFSZ - 1))  # what `python x.py` ignores itself
    assert int(status["SigIgn"], 16) == cpython and int(status["SigBlk"], 16) == 0, result
    assert status["SIGINT"] == "True", result  # KeyboardInterrupt on Ctrl-C, as in a fresh interpreter


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_finding_13_a_c_writer_to_a_closed_pipe_dies_by_signal(url):
    code = textwrap.dedent("""
        #include <unistd.h>
        int main(void) {
            int fds[2];
            if (pipe(fds)) return 2;
            close(fds[0]);
            for (;;) write(fds[1], "x", 1);  /* errors ignored: only SIGPIPE ends this */
        }
    """)
    result = run(url, code, language="c", run_timeout=3)["run_result"]
    assert result["verdict"] == "RuntimeError" and result["return_code"] == -13, result


# -- finding 12: truncation never changes the verdict -------------------------------------------------

def test_finding_12_memory_error_after_megabytes_of_stderr_is_still_a_memory_verdict(url):
    code = ("import sys\nfor _ in range(3 * 1024):\n    sys.stderr.write('x' * 1023 + '\\n')\n"
            "blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n")
    result = run(url, code, memory_limit_MB=256)["run_result"]
    assert result["stderr_truncated"], result["stderr"][-200:]
    assert "MemoryError" not in result["stderr"]  # the marker is beyond what the response keeps
    assert result["verdict"] == "MemoryLimitExceeded", (result["verdict"], result["return_code"])


# -- finding 14: file trees a run could not hold are refused up front, naming the limit ---------------

UNWRITABLE_TREES = {
    "a 300-byte file name": ({"n" * 300: ""}, "longer than the limit of 255 bytes"),
    "a 2,100-deep path": ({"/".join(["d"] * 2100) + "/f": ""}, "is longer than the limit of 1024 bytes"),
    "a 40-deep path": ({"/".join(["d"] * 40) + "/f": ""}, "41 levels deep; the limit is 32"),
    # Refused before parsing (issue 28): more JSON values than any valid request holds.
    "17,000 files": ({f"f{i}": "" for i in range(17000)}, "4096 files"),
    "3,000 files in 3,000 directories": ({f"d{i}/f": "" for i in range(3000)},
                                         "3000 files in 3000 directories exceed the limit of 4096"),
}


@pytest.mark.parametrize("name", sorted(UNWRITABLE_TREES))
def test_finding_14_unwritable_file_trees_are_a_4xx_naming_the_limit(url, name):
    files, limit = UNWRITABLE_TREES[name]
    reply = post(url, code="print(1)", files=files)
    assert reply.status_code == (413 if name == "17,000 files" else 422), (name, reply.status_code, reply.text[:300])
    assert limit in reply.json()["detail"], (name, reply.json()["detail"][:300])


def test_finding_14_a_tree_at_the_limits_is_written_and_runs(url):
    deep = "/".join(["d"] * 31)
    files = {"n" * 255: "MQ==", deep: "Mg==", **{f"many/f{i}": "" for i in range(4000)}}
    code = "import os\nprint(open('n' * 255).read(), open('/'.join(['d'] * 31)).read(), len(os.listdir('many')))\n"
    result = run(url, code, files=files)
    assert result["run_result"]["stdout"] == "1 2 4000\n", result


def test_finding_14_total_size_is_bounded_by_the_runs_tmp():
    from fastapi import HTTPException

    from rewardsmith.sandbox.schema import RunCodeRequest
    from rewardsmith.sandbox.server import Sandbox, ServerSettings

    sandbox = Sandbox(ServerSettings(tmpfs_mb=2, workers=1), {}, BASE_UID)
    lang = sandbox.languages["python"]
    fits = RunCodeRequest(code="", files={"a": "A" * (4 << 18)})  # 768 KiB decoded
    assert set(sandbox._files(fits, lang)) == {"a", "solution.py"}
    too_big = RunCodeRequest(code="", files={"a": "A" * (4 << 18), "b": "A" * (4 << 18)})
    with pytest.raises(HTTPException) as refused:
        sandbox._files(too_big, lang)
    assert refused.value.status_code == 422 and "exceed this server's limit of 1 MiB" in refused.value.detail


# -- finding 1: results are read below the work dir the server made, with the run's rights -------------

WORK_DIR_SWAP = textwrap.dedent("""
    import os
    os.chdir("/")
    os.rename("/tmp/work", "/tmp/moved")
    os.symlink({target!r}, "/tmp/work")
    os.symlink({target!r} + "/" + {name!r}, "/tmp/moved/link")
    print("swapped")
""")


@pytest.mark.skipif(not os.path.exists("/etc/shadow"), reason="needs a root-only host file (/etc/shadow)")
def test_finding_1_a_swapped_work_dir_does_not_return_host_files(url):
    code = WORK_DIR_SWAP.format(target="/etc", name="shadow")
    result = run(url, code, fetch_files=["shadow", "link", "passwd"])
    assert result["run_result"]["stdout"] == "swapped\n", result
    assert result["files"] == {}, sorted(result["files"])
    assert "not found" in result["message"]


def test_finding_1_fetch_reads_with_the_runs_uid(url):
    # A file the program itself made unreadable to its own uid is not returned.
    code = "open('kept.txt', 'w').write('kept')\nopen('locked.txt', 'w').write('secret')\n" \
           "import os\nos.chmod('locked.txt', 0)\n"
    result = run(url, code, fetch_files=["kept.txt", "locked.txt"])
    assert result["files"] == {"kept.txt": "a2VwdA=="}, result


# -- findings 7 and 8: the template is out of the OOM killer's reach; tiny limits are refused ---------

def test_finding_8_a_limit_below_the_floor_is_a_4xx_and_disables_nothing(url):
    for _ in range(4):  # as many as the red team needed to disable every worker of a 4-worker server
        reply = post(url, code="print(1)", memory_limit_MB=1)
        assert reply.status_code == 400, reply.text
        assert "memory_limit_MB: 1 is below this server's floor of 16" in reply.json()["detail"]
    assert run(url, "print(1)")["run_result"]["stdout"] == "1\n"


def test_finding_7_the_template_is_outside_the_run_cgroup_and_survives_its_oom(url):
    before = requests.get(url + "/v1/status", timeout=10).json()
    (template_pid,) = before["template_pids"]
    with open(f"/proc/{template_pid}/cgroup") as fh:  # its worker's cpu cgroup, but no run's memory cgroup
        memory = [line for line in fh if "memory" in line.split(":")[1].split(",") or line.startswith("0::")]
    assert not any("rewardsmith-sandbox-uid" in line for line in memory), memory
    hog = "import os\nblocks = []\nwhile True:\n    blocks.append(os.urandom(1 << 20))\n"
    for language, code in (("python", hog), ("python", "x = bytearray(15 << 20)\nprint(len(x))\n")):
        result = run(url, code, language=language, memory_limit_MB=16)["run_result"]
        assert result["verdict"] == "MemoryLimitExceeded", result
    after = requests.get(url + "/v1/status", timeout=10).json()
    assert after["template_pids"] == [template_pid] and after["worker_restarts"] == before["worker_restarts"]
    assert run(url, "print(2)", memory_limit_MB=16)["run_result"]["stdout"] == "2\n"


# -- finding 6: nothing a run leaves behind reaches the next run ---------------------------------------

SHM_LEFTOVER = textwrap.dedent("""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    size = 96 << 20
    shm = libc.shmget(0, ctypes.c_size_t(size), 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600, never removed
    addr = libc.shmat(shm, None, 0)
    ctypes.memset(addr, 1, size)
    print("left", shm >= 0)
""")


def test_finding_6_memory_a_run_leaves_is_not_charged_to_the_next(url):
    verdicts = []
    for _ in range(6):
        left = run(url, SHM_LEFTOVER, memory_limit_MB=128)["run_result"]
        assert left["stdout"] == "left True\n", left
        after = run(url, "x = bytearray(80 << 20)\nprint('ok')\n", memory_limit_MB=128)["run_result"]
        verdicts.append(after["verdict"])
    assert verdicts == ["OK"] * 6, verdicts


MQUEUE_PROBE = textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    made = 0
    for i in range(64):
        if libc.mq_open(f"/q{i}".encode(), os.O_CREAT | os.O_RDWR, 0o600, None) < 0:
            break
        made += 1
    print(made, ctypes.get_errno())
""")


def test_finding_6_posix_message_queue_quota_is_the_same_for_every_run(url):
    outcomes = {run(url, MQUEUE_PROBE)["run_result"]["stdout"] for _ in range(8)}
    assert len(outcomes) == 1, outcomes


def test_finding_6_each_run_has_a_memory_cgroup_of_its_own(url):
    code = "print(open('/proc/self/cgroup').read())"
    seen = [line for _ in range(3) for line in run(url, code)["run_result"]["stdout"].splitlines() if "memory" in line]
    assert len(seen) == 3 and len(set(seen)) == 3 and all("rewardsmith-sandbox-uid" in line for line in seen), seen


def test_finding_6_a_runs_threads_and_child_processes_share_its_cgroup(url):
    """The child joins its cgroup as one thread (v1's ``tasks``): whatever it starts must land there too."""
    code = textwrap.dedent("""
        import subprocess, threading
        def memory_line(path):
            return next(line for line in open(path).read().splitlines() if "memory" in line)
        lines = [memory_line("/proc/thread-self/cgroup")]
        worker = threading.Thread(target=lambda: lines.append(memory_line("/proc/thread-self/cgroup")))
        worker.start()
        worker.join()
        child = subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True, text=True).stdout
        lines.append(next(line for line in child.splitlines() if "memory" in line))
        print("\\n".join(lines))
    """)
    lines = run(url, code)["run_result"]["stdout"].splitlines()
    assert len(lines) == 3 and len(set(lines)) == 1 and "/run-" in lines[0], lines


# -- findings 2-5: a run sees a minimal world of its own -----------------------------------------------

@pytest.fixture()
def host_bait():
    """A world-readable file, a mode-666 FIFO and a world-readable directory in places of the host a run
    must not see (a data directory, /var/tmp, /srv, /opt, /home)."""
    made = []
    for top in ("/var/tmp", "/srv", "/opt", "/home"):
        if not os.path.isdir(top):
            continue
        directory = os.path.join(top, f"rewardsmith-bait-{os.getpid()}")
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o755)
        with open(os.path.join(directory, "answers.txt"), "w") as fh:
            fh.write("the test cases' answers\n")
        os.chmod(os.path.join(directory, "answers.txt"), 0o644)
        os.mkfifo(os.path.join(directory, "pipe"), 0o666)
        os.chmod(os.path.join(directory, "pipe"), 0o666)
        made.append(directory)
    yield made
    for directory in made:
        shutil.rmtree(directory, ignore_errors=True)


def test_finding_5_and_2_host_files_and_fifos_outside_the_runtimes_are_invisible(url, host_bait):
    # The interpreter's prefix is bound at its own path: its top directory exists, holding only the way to it.
    prefix = os.path.dirname(os.path.dirname(base_interpreter()))
    top, below = prefix.split("/")[1:3]
    runtime_tops = {"bin", "lib", "lib32", "lib64", "libx32", "sbin", "usr"}
    exposed = {} if top in runtime_tops else {"/" + top: [below]}
    code = textwrap.dedent(f"""
        import os
        for directory in {host_bait!r} + [{os.getcwd()!r}, "/root", "/var", "/srv", "/mnt", "/opt", "/home"]:
            print(directory, sorted(os.listdir(directory)) if os.path.exists(directory) else None)
        print("/", sorted(os.listdir("/")))
        print("/etc", sorted(os.listdir("/etc")))
        print("/usr/bin/env", os.path.exists("/usr/bin/env"))
    """)
    lines = run(url, code)["run_result"]["stdout"].splitlines()
    seen = {path: eval(listing) for path, listing in (line.split(" ", 1) for line in lines)}
    assert host_bait and all(seen[directory] is None for directory in host_bait), lines
    assert seen[os.getcwd()] is None, lines  # the project checkout
    for path in ("/root", "/var", "/srv", "/mnt", "/opt", "/home"):
        assert seen[path] == exposed.get(path), (path, seen[path])
    assert set(seen["/"]) <= runtime_tops | {"dev", "etc", "proc", "sys", "tmp", *(p[1:] for p in exposed)}, seen["/"]
    assert "shadow" not in seen["/etc"] and "passwd" in seen["/etc"], seen["/etc"]
    assert seen["/usr/bin/env"] is True


def test_finding_3_dev_is_private_with_its_own_ptys(url):
    code = textwrap.dedent("""
        import os, pty
        print(sorted(os.listdir("/dev")))
        master, slave = os.openpty()
        print(os.ttyname(slave), sorted(os.listdir("/dev/pts")))
        with open("/dev/urandom", "rb") as fh:
            print(len(fh.read(8)))
    """)
    result = run(url, code)["run_result"]
    devices, ptys, random_bytes = result["stdout"].splitlines()
    assert eval(devices) == ["fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
                             "tty", "urandom", "zero"], devices
    assert ptys == "/dev/pts/0 ['0', 'ptmx']", ptys  # a devpts instance of its own: numbering starts afresh
    assert random_bytes == "8"
    assert not os.path.exists("/dev/pts/0") or os.stat("/dev/pts/0").st_uid != BASE_UID


def test_finding_4_file_system_watches_are_refused(url):
    code = textwrap.dedent("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for name, call in (("inotify_init1", lambda: libc.inotify_init1(0)),
                           ("fanotify_init", lambda: libc.fanotify_init(0, 0))):
            print(name, call(), ctypes.get_errno())
    """)
    lines = run(url, code)["run_result"]["stdout"].splitlines()
    assert lines == ["inotify_init1 -1 1", "fanotify_init -1 1"], lines
