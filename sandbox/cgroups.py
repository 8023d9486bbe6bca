"""One memory cgroup per worker, limited per run: every byte a program makes the kernel hold counts.

Standard library only (the worker loads it by path on the bare interpreter).

An address-space limit bounds what a program maps, not what it makes the
kernel keep: memfd and tmpfs pages, pipe buffers, inodes and dentries, page
tables. A memory cgroup charges all of them (kernel objects included: with
cgroup v1 the kernel charges them to ``memory.usage_in_bytes`` as well), so
a run's cgroup limit is the run's ``memory_limit_MB``, whatever the memory
is made of, and the cgroup's own OOM killer ends a run that goes past it.

A worker's runs never overlap (the next starts after the previous run's PID
namespace is empty), so one cgroup per worker, its limit set before each
run, is a cgroup per run without a ``mkdir``/``rmdir`` per run. What the
previous run leaves charged is page cache of host files, which the kernel
reclaims before it would OOM-kill anyone.

The cgroup sits under the server's own memory cgroup (so the server's limit,
if any, still bounds the sum) and is named for the worker's uid, which no
other server on the host may use (``uids.claim``).
"""
from __future__ import annotations

import contextlib
import os

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"
# Files per hierarchy: the memory limit, the memory+swap limit, the file
# whose "oom_kill N" line counts the cgroup's OOM kills, and the current usage.
_FILES = {
    "v1": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control", "memory.usage_in_bytes"),
    "v2": ("memory.max", "memory.swap.max", "memory.events", "memory.current"),
}

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def cgroup_name(uid: int) -> str:
    """The directory name of the cgroup of the worker running programs as ``uid``."""
    return f"rewardsmith-sandbox-uid{uid}"


def parent_dir() -> tuple[str, str] | None:
    """(hierarchy, directory) of this process's memory cgroup, where the workers' cgroups go; None without one."""
    with open("/proc/self/cgroup") as fh:
        lines = [line.rstrip("\n").split(":", 2) for line in fh]
    for _, controllers, path in lines:
        if "memory" in controllers.split(",") and os.path.isdir(V1_ROOT):
            return "v1", V1_ROOT + path
    for hierarchy_id, _, path in lines:
        if hierarchy_id == "0" and os.path.exists(f"{V2_ROOT}/cgroup.controllers"):
            return "v2", (V2_ROOT + path).rstrip("/")
    return None


class RunCgroup:
    """The worker's memory cgroup: programs join it, the worker sets its limit and reads its OOM kills.

    Every file is opened once, here, before the worker hides ``/sys``; each
    program's process joins with one ``write`` to an inherited descriptor
    as its first step, before it touches any memory of its own; the template
    that forks them stays outside.
    """

    def __init__(self, uid: int):
        found = parent_dir()
        if found is None:
            raise OSError(2, "no memory cgroup controller on this host")
        self.hierarchy, parent = found
        path = os.path.join(parent, cgroup_name(uid))
        os.makedirs(path, exist_ok=True)
        if self.hierarchy == "v2":
            _enable_memory_controller(parent, path)
        limit, memsw, events, usage = _FILES[self.hierarchy]
        self._limit_fd = os.open(os.path.join(path, limit), os.O_WRONLY | os.O_CLOEXEC)
        memsw_path = os.path.join(path, memsw)
        # Without swap accounting (or without swap) there is no memory+swap limit to keep in step.
        self._memsw_fd = os.open(memsw_path, os.O_WRONLY | os.O_CLOEXEC) if os.path.exists(memsw_path) else None
        self._events_fd = os.open(os.path.join(path, events), os.O_RDONLY | os.O_CLOEXEC)
        self._usage_fd = os.open(os.path.join(path, usage), os.O_RDONLY | os.O_CLOEXEC)
        self._stat_fd = os.open(os.path.join(path, "memory.stat"), os.O_RDONLY | os.O_CLOEXEC)
        # Inherited by the template (not CLOEXEC), whose program children join through it.
        self.procs_fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY)
        self._unlimit()
        self._limit_mb = None
        self._oom_kills = self.oom_kills()

    def set_limit(self, megabytes: int) -> None:
        """Limit memory (and memory + swap, so nothing escapes to swap) to ``megabytes`` for the next run."""
        if megabytes == self._limit_mb:
            return
        value = str(megabytes << 20).encode()
        if self.hierarchy == "v2" or self._memsw_fd is None:
            os.write(self._limit_fd, value)
        else:
            # v1 keeps memory <= memory+swap at every step: raise the outer limit first, lower it last.
            raising = self._limit_mb is not None and megabytes > self._limit_mb  # None: unlimited
            for fd in (self._memsw_fd, self._limit_fd) if raising else (self._limit_fd, self._memsw_fd):
                os.write(fd, value)
        self._limit_mb = megabytes

    def _unlimit(self) -> None:
        """Start from no limit whatever a previous worker with this uid left (v1: outer limit first)."""
        if self.hierarchy == "v2":
            os.write(self._limit_fd, b"max")
            if self._memsw_fd is not None:
                os.write(self._memsw_fd, b"0")  # swap is counted apart in v2: allow none
        else:
            for fd in (self._memsw_fd, self._limit_fd):
                if fd is not None:
                    os.write(fd, b"-1")

    def oom_kills(self) -> int:
        """How many processes the kernel has OOM-killed in this cgroup so far."""
        for line in os.pread(self._events_fd, 4096, 0).decode().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def oom_killed_since_last_call(self) -> bool:
        """Whether the OOM killer struck in this cgroup since the previous call (or since it was set up)."""
        before, self._oom_kills = self._oom_kills, self.oom_kills()
        return self._oom_kills > before

    def refaults(self) -> int:
        """Pages read back in soon after this cgroup's reclaim evicted them (the kernel's workingset refaults).

        Both hierarchies name them ``workingset_refault_anon``/``_file``
        (before Linux 5.9: ``workingset_refault``) in ``memory.stat``; v1's
        ``total_`` lines repeat them for the (empty) subtree.
        """
        total = 0
        for line in os.pread(self._stat_fd, 1 << 16, 0).splitlines():
            key, _, value = line.partition(b" ")
            if key.startswith(b"workingset_refault"):
                total += int(value)
        return total

    def at_limit(self) -> bool:
        """Whether usage is within 1/16 of the limit, where the kernel reclaims the cgroup's own pages."""
        usage = int(os.pread(self._usage_fd, 64, 0))
        return self._limit_mb is not None and usage >= (self._limit_mb << 20) * 15 // 16


class ThrashWatch:
    """Tells when a run is thrashing: its working set does not fit its memory limit, yet the OOM killer never comes.

    The OOM killer strikes only when reclaim frees nothing. A run at its limit
    that still has file pages charged (its interpreter's code, read in after
    the host's page cache dropped it; files it reads) makes reclaim evict
    those, and the run reads them straight back: progress, for the kernel,
    so the run crawls until its deadline (seen: Node filling its heap, ending
    as ``TimeLimitExceeded`` after the full timeout, in half the runs whose
    binary was not in the page cache). A run is thrashing when it is at its
    limit and has read back more evicted pages than its whole limit holds.

    Costs a run nothing until it has lasted ``FIRST_CHECK_S``: the baseline
    is read then, not at the start, so short runs never read ``memory.stat``.
    """

    FIRST_CHECK_S = 0.5
    CHECK_EVERY_S = 0.25

    def __init__(self, cgroup: RunCgroup, limit_mb: int):
        self._cgroup = cgroup
        self._limit_pages = (limit_mb << 20) // _PAGE_SIZE
        self._baseline = None

    def thrashing(self) -> bool:
        """Check now (every ``CHECK_EVERY_S`` from ``FIRST_CHECK_S`` into the run)."""
        refaults = self._cgroup.refaults()
        if self._baseline is None:
            self._baseline = refaults
            return False
        return refaults - self._baseline >= self._limit_pages and self._cgroup.at_limit()


def _enable_memory_controller(parent: str, path: str) -> None:
    with open(os.path.join(path, "cgroup.controllers")) as fh:
        if "memory" in fh.read().split():
            return
    # Fails (EBUSY) when the server's own cgroup holds processes and is not the
    # root: cgroup v2 then needs a delegated subtree (systemd's Delegate=yes).
    with open(os.path.join(parent, "cgroup.subtree_control"), "w") as fh:
        fh.write("+memory")


def remove(uid: int) -> None:
    """Remove the cgroup of the worker that ran programs as ``uid`` (once its programs are gone)."""
    found = parent_dir()
    if found is None:
        return
    # Absent, or a dying program still in it: the next worker with this uid reuses it.
    with contextlib.suppress(OSError):
        os.rmdir(os.path.join(found[1], cgroup_name(uid)))
