"""Claim a block of sandbox uids that no other server on this host uses.

Programs of two servers sharing a uid would share its ``RLIMIT_NPROC`` (one
server's fork bomb starving the other's runs), its memory cgroup, and each
other's processes. Each uid of a block is claimed with an exclusive
``flock`` on a file under ``/run`` (root-only, gone at reboot) that the
server holds open for its lifetime; the kernel drops the lock when the
server dies, however it dies. A uid that belongs to an account, or that a
live process runs as (a server of an older version, say), is never used.
"""
from __future__ import annotations

import fcntl
import os
import pwd

LOCK_DIR = "/run/rewardsmith-sandbox"
DEFAULT_BASE = 61000
_SEARCH_BLOCKS = 256  # how far above DEFAULT_BASE an automatic block may go, in blocks


class UidsUnavailable(RuntimeError):
    """No usable block of uids: the message says why and what to do."""


class UidClaim:
    """A claimed block ``base .. base + count - 1``; ``release()`` (or the server's exit) frees it."""

    def __init__(self, base: int, count: int, fds: list[int]):
        self.base = base
        self.count = count
        self._fds = fds

    def release(self) -> None:
        """Give the block back (closing the lock files drops the locks)."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []


def claim(count: int, base: int | None = None, lock_dir: str = LOCK_DIR) -> UidClaim:
    """Claim ``count`` uids from ``base`` (exactly there), or the first free block at or above 61000 when None."""
    if base is not None:
        problem = _problem(base, count)
        if problem:
            raise UidsUnavailable(f"refusing to start: {problem}; choose a free range with --base-uid "
                                  "(or leave it out to pick one automatically)")
        held = _lock(base, count, lock_dir)
        if held is None:
            raise UidsUnavailable(f"refusing to start: sandbox uids {base}-{base + count - 1} are in use by another "
                                  "sandbox server on this host; choose another --base-uid (or leave it out)")
        return UidClaim(base, count, held)
    for block in range(_SEARCH_BLOCKS):
        start = DEFAULT_BASE + block * count
        if _problem(start, count):
            continue
        held = _lock(start, count, lock_dir)
        if held is not None:
            return UidClaim(start, count, held)
    raise UidsUnavailable(f"refusing to start: no free block of {count} sandbox uids at or above {DEFAULT_BASE}")


def _problem(base: int, count: int) -> str | None:
    """Why uids ``base .. base + count - 1`` may not be used, or None."""
    taken = []
    for uid in range(base, base + count):
        try:
            taken.append(f"{uid} ({pwd.getpwuid(uid).pw_name})")
        except KeyError:
            continue
    if taken:
        return f"sandbox uids {', '.join(taken)} belong to existing accounts"
    running = _uids_of_live_processes() & set(range(base, base + count))
    if running:
        return f"processes already run as sandbox uids {sorted(running)}"
    return None


def _uids_of_live_processes() -> set[int]:
    """Real uids of every process on the host (``/proc/PID`` itself is root's once a process changed uid)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    found.add(int(fh.read().split("\nUid:\t", 1)[1].split()[0]))
            except (OSError, IndexError):
                continue  # exited meanwhile
    return found


def _lock(base: int, count: int, lock_dir: str) -> list[int] | None:
    """Exclusive locks on every uid of the block, or None (and none held) if another server has one."""
    os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    fds = []
    for uid in range(base, base + count):
        fd = os.open(os.path.join(lock_dir, f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            for held in fds:
                os.close(held)
            return None
        fds.append(fd)
    return fds
