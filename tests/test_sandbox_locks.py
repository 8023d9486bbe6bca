"""Advisory locks carry nothing between runs or to the host (issue 28 section 1).

The runtimes' files are the host's inodes, shared by every run: a lock a run
took on one would be seen by concurrent runs, outlive its run in an open file
description kept in flight, and block the host's own lock. Every lock of a
program is a no-op that succeeds (``jail._NOOP_X86_64``, ``jail._FCNTL_NOOP``).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import threading
import time
from typing import Iterator

import pytest

from rewardsmith.sandbox.testing import isolation_unavailable, running_server, successful_stdout

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

# A file of the runtime every run reads: shared, read-only, the host's inode.
SHARED = os.__file__


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "2") as base:  # two runs at once
        yield base


# Holds an exclusive flock, a record read lock and an OFD read lock (the file is read-only to a run).
HOLD = (
    "import fcntl, os, struct, time\n"
    "path = {path!r}\n"
    "fds = [os.open(path, os.O_RDONLY) for _ in range(3)]\n"
    "fcntl.flock(fds[0], fcntl.LOCK_EX)\n"
    "fcntl.lockf(fds[1], fcntl.LOCK_SH)\n"
    "fcntl.fcntl(fds[2], fcntl.F_OFD_SETLK, struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 0, 0))\n"
    "print('held')\n"
    "time.sleep({seconds})\n"
)
# What a run can learn about others' locks on the file: a non-blocking
# exclusive flock, and both kinds of lock query.
PROBE = (
    "import errno, fcntl, os, struct\n"
    "fd = os.open({path!r}, os.O_RDONLY)\n"
    "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('flock taken')\n"
    "except OSError as exc:\n    print('flock', errno.errorcode[exc.errno])\n"
    "for cmd in (fcntl.F_GETLK, fcntl.F_OFD_GETLK):\n"
    "    query = struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)\n"
    "    print(cmd, struct.unpack('hhqqi', fcntl.fcntl(fd, cmd, query)))\n"
)


def open_somewhere(path: str) -> bool:
    """Whether a process (a run: nothing else keeps it open) has ``path`` open now."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == path for fd in os.listdir(f"/proc/{pid}/fd")):
                return True
        except OSError:
            continue  # exited meanwhile
    return False


@contextlib.contextmanager
def held_by_a_run(url: str, path: str) -> Iterator[None]:
    """Yield while a concurrent run holds every kind of lock on ``path`` (as far as the run can tell)."""
    result: list[str] = []
    hold = HOLD.format(path=path, seconds=8)
    holder = threading.Thread(target=lambda: result.append(successful_stdout(url, hold, run_timeout=20)))
    holder.start()
    deadline = time.monotonic() + 30
    while not open_somewhere(path):
        assert time.monotonic() < deadline and holder.is_alive(), "the holding run never opened the file"
        time.sleep(0.05)
    time.sleep(0.5)  # it takes its locks right after opening
    assert holder.is_alive(), "the holding run ended before the test looked"
    yield
    holder.join()
    assert result == ["held\n"]


def test_a_concurrent_run_learns_nothing_from_another_runs_locks(url):
    alone = successful_stdout(url, PROBE.format(path=SHARED), run_timeout=20)
    with held_by_a_run(url, SHARED):
        beside = successful_stdout(url, PROBE.format(path=SHARED), run_timeout=20)
    assert beside == alone  # the same answer whoever holds what: not one bit passes
    assert alone.splitlines()[0] == "flock taken"


def test_the_host_takes_its_own_lock_while_a_run_holds_one(url):
    with held_by_a_run(url, SHARED):
        with open(SHARED, "rb") as shared:
            fcntl.flock(shared, fcntl.LOCK_EX | fcntl.LOCK_NB)  # would raise BlockingIOError
        with open(SHARED, "r+b") as shared:  # root may open it for writing; nothing is written
            query = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
            assert struct.unpack("hhqqi", fcntl.fcntl(shared, fcntl.F_OFD_GETLK, query))[0] == fcntl.F_UNLCK
            fcntl.lockf(shared, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_lock_kept_in_flight_carries_nothing_to_the_next_run(url):
    before = successful_stdout(url, PROBE.format(path=SHARED), run_timeout=20)
    # The locked file's description in flight in a unix socket's own queue: a cycle that outlives the run.
    keep = ("import array, fcntl, os, socket, struct\n"
            f"fd = os.open({SHARED!r}, os.O_RDONLY)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            f"ofd = os.open({SHARED!r}, os.O_RDONLY)\n"
            "fcntl.fcntl(ofd, fcntl.F_OFD_SETLK, struct.pack('hhqqi', fcntl.F_RDLCK, 0, 0, 0, 0))\n"
            "a, b = socket.socketpair()\n"
            "a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd, ofd, a.fileno(), "
            "b.fileno()]))])\n"
            "print('kept')\n")
    assert successful_stdout(url, keep, run_timeout=20) == "kept\n"
    assert successful_stdout(url, PROBE.format(path=SHARED), run_timeout=20) == before
    with open(SHARED, "rb") as shared:
        fcntl.flock(shared, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_ordinary_programs_that_lock_their_own_files_still_work(url):
    code = (
        "import fcntl, sqlite3\n"
        "for mode in ('delete', 'wal', 'truncate'):\n"
        "    db = sqlite3.connect(f'/tmp/{mode}.db')\n"
        "    db.execute(f'pragma journal_mode={mode}')\n"
        "    db.execute('create table t (x integer)')\n"
        "    with db:\n"
        "        db.executemany('insert into t values (?)', [(i,) for i in range(100)])\n"
        "    with db:\n"
        "        db.execute('delete from t where x >= 50')\n"
        "    db.close()\n"
        "    again = sqlite3.connect(f'/tmp/{mode}.db')\n"
        "    print(mode, again.execute('select count(*), sum(x) from t').fetchone())\n"
        "with open('/tmp/state.lock', 'w') as fh:\n"
        "    fcntl.flock(fh, fcntl.LOCK_EX)\n"
        "    fh.write('mine')\n"
        "    fcntl.flock(fh, fcntl.LOCK_UN)\n"
        "fcntl.lockf(open('/tmp/state.lock', 'a'), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "print(open('/tmp/state.lock').read())\n"
    )
    assert successful_stdout(url, code, run_timeout=20) == "delete (50, 1225)\nwal (50, 1225)\ntruncate (50, 1225)\nmine\n"


def test_leases_are_refused_and_none_is_ever_held(url):
    code = ("import errno, fcntl\nfh = open('/tmp/mine', 'w')\n"
            "try:\n    fcntl.fcntl(fh, fcntl.F_SETLEASE, fcntl.F_WRLCK)\n    print('leased')\n"
            "except OSError as exc:\n    print(errno.errorcode[exc.errno])\n"
            "print(fcntl.fcntl(fh, fcntl.F_GETLEASE) == fcntl.F_UNLCK)\n")
    assert successful_stdout(url, code, run_timeout=20) == "EPERM\nTrue\n"
