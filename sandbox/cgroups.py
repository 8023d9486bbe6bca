"""A fresh memory cgroup per run, under one directory per worker: every byte a program makes the kernel hold counts.

Standard library only (the worker loads it by path on the bare interpreter).

An address-space limit bounds what a program maps, not what it makes the
kernel keep: memfd and tmpfs pages, pipe buffers, inodes and dentries, page
tables. A memory cgroup charges all of them (kernel objects included: with
cgroup v1 the kernel charges them to ``memory.usage_in_bytes`` as well), so
a run's cgroup limit is the run's ``memory_limit_MB``, whatever the memory
is made of, and the cgroup's own OOM killer ends a run that goes past it.

Each run gets a cgroup of its own (``run-PID-N``): what a run leaves charged when it is gone (socket
buffers of a network namespace the kernel tears down later, page cache of
the files it read) stays with that run's removed cgroup and is never counted
against the next run's limit, and the OOM counter read after a run is that
run's alone. Programs join their run's cgroup as their first step; the
template that forks them never does. Making and removing a cgroup costs the
kernel ~0.4 ms of CPU, so the worker does both while a program runs, when it
would only wait (``WorkerCgroups.tidy``): the next run's cgroup is made
ahead, a finished run's is removed during the next run.

The worker's directory sits under the server's own memory cgroup (so the
server's limit, if any, still bounds the sum) and is named for the worker's
uid, which no other server on the host may use (``uids.claim``).
"""
from __future__ import annotations

import contextlib
import ctypes
import mmap
import os

V1_ROOT = "/sys/fs/cgroup/memory"
CPU_V1_ROOT = "/sys/fs/cgroup/cpu"
# Every worker's cpu cgroup gets this weight (v1's default): equal shares.
CPU_SHARES = 1024
V2_ROOT = "/sys/fs/cgroup"
# Files per hierarchy: the memory limit, the memory+swap limit, the file
# whose "oom_kill N" line counts the cgroup's OOM kills, and the current usage.
_FILES = {
    "v1": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control", "memory.usage_in_bytes"),
    "v2": ("memory.max", "memory.swap.max", "memory.events", "memory.current"),
}
# The file a run's process joins through (writing "0": itself). v1's `tasks`
# moves one thread, the whole of a just-cloned single-threaded child; the
# kernel then skips the global lock that `cgroup.procs` takes against every
# fork and exit on the host (a write lock that waits for an RCU grace
# period), which at hundreds of runs per second left cores idle. v2 moves
# a domain cgroup's processes only through `cgroup.procs`.
_JOIN = {"v1": "tasks", "v2": "cgroup.procs"}

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


class WorkerCgroups:
    """The worker's directory of run cgroups, held by a descriptor opened before the worker hides ``/sys``."""

    def __init__(self, uid: int):
        found = parent_dir()
        if found is None:
            raise OSError(2, "no memory cgroup controller on this host")
        self.hierarchy, parent = found
        path = os.path.join(parent, cgroup_name(uid))
        os.makedirs(path, exist_ok=True)
        if self.hierarchy == "v2":
            _enable_controller("memory", parent, path)
            _enable_controller("memory", path, None)
        self._dir_fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        _remove_runs(path)  # what a previous worker with this uid left
        self._runs = 0
        self._ready: RunCgroup | None = None  # the next run's, made ahead
        self._finished: list[RunCgroup] = []  # runs over, their cgroups not yet removed

    def start_run(self, megabytes: int) -> "RunCgroup":
        """A fresh cgroup, never used before, limited to ``megabytes`` (memory and memory + swap) for one run."""
        run, self._ready = self._ready or self._make(), None
        try:
            run.set_limit(megabytes)
        except BaseException:
            run.remove()
            raise
        return run

    def end_run(self, run: "RunCgroup") -> None:
        """``run`` is over (its processes are gone): close its files; ``tidy`` removes the cgroup."""
        run.close()
        self._finished.append(run)

    def tidy(self) -> None:
        """Remove finished runs' cgroups and make the next run's; the worker calls it while a program runs."""
        while self._finished:
            self._finished.pop().remove()
        if self._ready is None:
            self._ready = self._make()

    def _make(self) -> "RunCgroup":
        self._runs += 1
        # The pid too: a replaced worker never meets a run cgroup its predecessor could not remove.
        return RunCgroup(self._dir_fd, f"run-{os.getpid()}-{self._runs}", self.hierarchy)


class RunCgroup:
    """One run's memory cgroup: the program joins through ``join_fd``; ``remove()`` deletes it after the run."""

    def __init__(self, dir_fd: int, name: str, hierarchy: str):
        self._dir_fd, self.name, self.hierarchy = dir_fd, name, hierarchy
        os.mkdir(name, 0o755, dir_fd=dir_fd)
        self._fds = {}
        self.limit_mb = 0
        try:
            # Sent to the template with the run's other descriptors; the program's process joins through it.
            self.join_fd = self._open(_JOIN[hierarchy], os.O_WRONLY)
        except BaseException:
            self.remove()
            raise

    def set_limit(self, megabytes: int) -> None:
        """Limit memory, and memory + swap, to ``megabytes`` (once, before the program joins)."""
        limit, memsw, _, _ = _FILES[self.hierarchy]
        value = str(megabytes << 20).encode()
        # A fresh cgroup is unlimited; v1 keeps memory <= memory+swap, so the inner limit goes first.
        os.write(self._open(limit, os.O_WRONLY), value)
        # Without swap accounting (or swap) there is no memory+swap limit to keep in step.
        with contextlib.suppress(FileNotFoundError):
            os.write(self._open(memsw, os.O_WRONLY), b"0" if self.hierarchy == "v2" else value)
        self.limit_mb = megabytes

    def _open(self, file: str, flags: int = os.O_RDONLY) -> int:
        """This cgroup's ``file``, opened once (the files a short run never reads are never opened)."""
        fd = self._fds.get(file)
        if fd is None:
            fd = self._fds[file] = os.open(f"{self.name}/{file}", flags | os.O_CLOEXEC, dir_fd=self._dir_fd)
        return fd

    def oom_kills(self) -> int:
        """How many processes the kernel has OOM-killed in this cgroup."""
        for line in os.pread(self._open(_FILES[self.hierarchy][2]), 4096, 0).decode().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def refaults(self) -> int:
        """Pages read back in soon after this cgroup's reclaim evicted them (the kernel's workingset refaults).

        Both hierarchies name them ``workingset_refault_anon``/``_file``
        (before Linux 5.9: ``workingset_refault``) in ``memory.stat``; v1's
        ``total_`` lines repeat them for the (empty) subtree.
        """
        total = 0
        for line in os.pread(self._open("memory.stat"), 1 << 16, 0).splitlines():
            key, _, value = line.partition(b" ")
            if key.startswith(b"workingset_refault"):
                total += int(value)
        return total

    def task_count(self) -> int:
        """How many threads of the run are alive (read whole: only at a run's deadline)."""
        with open(f"{self.name}/{'tasks' if self.hierarchy == 'v1' else 'cgroup.threads'}", "rb",
                  opener=lambda path, flags: os.open(path, flags, dir_fd=self._dir_fd)) as fh:
            return fh.read().count(b"\n")

    def at_limit(self) -> bool:
        """Whether usage is within 1/16 of the limit, where the kernel reclaims the cgroup's own pages."""
        usage = int(os.pread(self._open(_FILES[self.hierarchy][3]), 64, 0))
        return usage >= (self.limit_mb << 20) * 15 // 16

    def close(self) -> None:
        """Close the cgroup's files."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def remove(self) -> None:
        """Close the files and remove the cgroup (its processes are gone; leftover charges go with it)."""
        self.close()
        # EBUSY: without a PID namespace an escaped daemon may still be in it; the next worker removes it.
        with contextlib.suppress(OSError):
            os.rmdir(self.name, dir_fd=self._dir_fd)


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

    def __init__(self, cgroup: RunCgroup):
        self._cgroup = cgroup
        self._limit_pages = (cgroup.limit_mb << 20) // _PAGE_SIZE
        self._baseline = None

    def thrashing(self) -> bool:
        """Check now (every ``CHECK_EVERY_S`` from ``FIRST_CHECK_S`` into the run)."""
        refaults = self._cgroup.refaults()
        if self._baseline is None:
            self._baseline = refaults
            return False
        return refaults - self._baseline >= self._limit_pages and self._cgroup.at_limit()


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value
_LOW_BIT = bytes(b & 1 for b in range(256))  # mincore: bit 0 says resident, the others are undefined
_READ_CHUNK = 1 << 20


def cache_runtime_files(paths: tuple[str, ...]) -> None:
    """Bring every page of ``paths`` (a runtime's executable and libraries) into the page cache, charged to the
    calling worker's memory cgroup, before a run starts; a page already cached costs nothing.

    A page is charged to the cgroup of whoever reads it in first. A runtime
    the host's page cache had dropped would otherwise be read in by the run
    itself, charged to its limit: Node's 94 MiB binary under a 16 MiB limit
    thrashed and was judged MemoryLimitExceeded, while the same program
    passed with the binary cached. Checked per run with ``mincore`` (about
    10 us per 10 MiB when cached); a file with any page missing is read
    whole, here.
    """
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # the runtime is gone: the run fails on its own
        try:
            size = os.fstat(fd).st_size
            if size and not _all_cached(fd, size):
                buffer = bytearray(_READ_CHUNK)
                offset = 0
                while offset < size:
                    got = os.preadv(fd, [buffer], offset)
                    if got <= 0:
                        break
                    offset += got
        finally:
            os.close(fd)


def _all_cached(fd: int, size: int) -> bool:
    address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, _MAP_FAILED):
        return False
    try:
        pages = (size + _PAGE_SIZE - 1) // _PAGE_SIZE
        vector = ctypes.create_string_buffer(pages)
        if _libc.mincore(address, size, vector) != 0:
            return False
        return b"\0" not in vector.raw[:pages].translate(_LOW_BIT)
    finally:
        _libc.munmap(address, size)


def _enable_controller(controller: str, parent: str, path: str | None) -> None:
    """Enable ``controller`` for ``parent``'s children (``path`` being one, if it already has it: done)."""
    if path is not None:
        with open(os.path.join(path, "cgroup.controllers")) as fh:
            if controller in fh.read().split():
                return
    # Fails (EBUSY) when the server's own cgroup holds processes and is not the
    # root: cgroup v2 then needs a delegated subtree (systemd's Delegate=yes).
    with open(os.path.join(parent, "cgroup.subtree_control"), "w") as fh:
        fh.write("+" + controller)


def _cpu_dir(uid: int) -> tuple[str, str] | None:
    """(hierarchy, directory) of the cpu cgroup of the worker running programs as ``uid``; None without one."""
    with open("/proc/self/cgroup") as fh:
        lines = [line.rstrip("\n").split(":", 2) for line in fh]
    for _, controllers, path in lines:
        if "cpu" in controllers.split(",") and os.path.isdir(CPU_V1_ROOT):
            return "v1", os.path.join(CPU_V1_ROOT + path, cgroup_name(uid))
    found = parent_dir()
    if found is not None and found[0] == "v2":
        return "v2", os.path.join(found[1], cgroup_name(uid))
    return None


def join_cpu_share(uid: int) -> bool:
    """Give the calling worker, and every process it forks from now on, one equal share of the CPU; whether it could.

    The scheduler divides the CPU between cgroups first and between the
    processes of a cgroup second, so a run of 60 spinning processes gets one
    run's share, not 60 of the 61 processes' shares, and a neighbour's
    correct program keeps its pace. A worker runs one program at a time, so
    its cgroup is its run's; and a run's PID namespace dies with the run, so
    nothing of an earlier run can still spend the share. Joined once, as the
    worker starts (before it forks its template): no per-run cost. With
    cgroup v2 the share is each run's own cgroup (``cpu.weight`` 100, the
    default, once the controller is enabled below the server's cgroup).
    """
    found = _cpu_dir(uid)
    if found is None:
        return False
    hierarchy, path = found
    try:
        if hierarchy == "v2":
            _enable_controller("cpu", os.path.dirname(path), path)
            _enable_controller("cpu", path, None)
            return True
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "cpu.shares"), "w") as fh:
            fh.write(str(CPU_SHARES))
        with open(os.path.join(path, "cgroup.procs"), "w") as fh:
            fh.write("0")
    except OSError:
        return False
    return True


def _remove_runs(path: str) -> None:
    for entry in os.listdir(path):
        if entry.startswith("run-"):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(path, entry))


def remove(uid: int) -> None:
    """Remove the cgroups of the worker that ran programs as ``uid`` (once its programs are gone)."""
    found = parent_dir()
    if found is None:
        return
    path = os.path.join(found[1], cgroup_name(uid))
    # Absent, or a dying program still in it: the next worker with this uid reuses it.
    with contextlib.suppress(OSError):
        _remove_runs(path)
        os.rmdir(path)
    cpu = _cpu_dir(uid)
    if cpu is not None and cpu[0] == "v1":
        with contextlib.suppress(OSError):
            os.rmdir(cpu[1])
