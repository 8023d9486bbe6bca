"""Runs share no countable host pool or notification channel (issue 28 section 1)."""
from __future__ import annotations

import pytest

from rewardsmith.sandbox.testing import isolation_unavailable, running_server, successful_stdout

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "1") as base:  # one worker: consecutive runs share everything a worker has
        yield base


def test_directory_notifications_on_shared_trees_are_refused(url):
    code = ("import errno, fcntl, os\nfd = os.open('/usr/lib', os.O_RDONLY)\n"
            "try:\n    fcntl.fcntl(fd, fcntl.F_NOTIFY, fcntl.DN_ACCESS | fcntl.DN_MULTISHOT)\n    print('watching')\n"
            "except OSError as exc:\n    print(errno.errorcode[exc.errno])\n")
    assert successful_stdout(url, code) == "EPERM\n"


def test_aio_contexts_are_refused(url):
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nctx = ctypes.c_ulong(0)\n"
            "print(libc.syscall(206, 1024, ctypes.byref(ctx)), ctypes.get_errno())\n")  # io_setup
    assert successful_stdout(url, code) == "-1 1\n"


def dirty_kb() -> int:
    with open("/proc/meminfo") as fh:
        return int(next(line for line in fh if line.startswith("Dirty:")).split()[1])


def test_sync_is_a_no_op_that_succeeds(url, tmp_path):
    with open(tmp_path / "dirty", "wb") as fh:  # the host's own dirty pages, not yet written back
        fh.write(b"x" * (64 << 20))
    if dirty_kb() < 32 << 10:
        pytest.skip("the host wrote its dirty pages back at once")
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nos.sync()\n"
            "fd = os.open('/tmp/work', os.O_RDONLY)\nprint(libc.syncfs(fd))\n")
    assert successful_stdout(url, code) == "0\n"
    assert dirty_kb() >= 32 << 10, "a run's sync() wrote the host's dirty pages back"


def test_a_run_has_a_capped_pty_instance_of_its_own(url):
    code = ("import os\nptys = []\ntry:\n    while len(ptys) < 1000:\n        ptys.append(os.openpty())\n"
            "except OSError:\n    pass\nprint(len(ptys))\n")
    assert successful_stdout(url, code) == "16\n"  # jail.RUN_PTYS, whoever ran before
    assert successful_stdout(url, code) == "16\n"


def test_a_pty_kept_in_flight_past_its_run_is_not_seen_by_the_next(url):
    # The pty's master and the socket itself in flight in the socket's own queue: a cycle that outlives the run.
    keep = ("import array, os, socket\nmaster, slave = os.openpty()\nos.write(master, b'secret\\n')\n"
            "a, b = socket.socketpair()\n"
            "a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [master, slave, a.fileno(), "
            "b.fileno()]))])\n"
            "print(sorted(os.listdir('/dev/pts')))\n")
    assert successful_stdout(url, keep) == "['0', 'ptmx']\n"
    assert successful_stdout(url, "import os\nprint(sorted(os.listdir('/dev/pts')))\n") == "['ptmx']\n"


def test_no_run_can_lock_memory_charged_to_its_uid(url):
    code = ("import ctypes, resource\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "shm = libc.shmget(0, 4 << 20, 0o1600)\n"  # IPC_PRIVATE, IPC_CREAT | 0600
            "print(resource.getrlimit(resource.RLIMIT_MEMLOCK), libc.shmctl(shm, 11, None))\n")  # SHM_LOCK
    assert successful_stdout(url, code) == "(0, 0) -1\n"
    assert successful_stdout(url, code) == "(0, 0) -1\n"  # the same in every run: no quota to leave held
