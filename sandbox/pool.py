"""The server's pool of warm worker processes (asyncio side).

Each worker runs one job at a time; requests wait in a bounded queue for a
free worker, and the queue answers ``Overloaded`` once it is full so the
server can reply 429 instead of piling up work it cannot finish.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rewardsmith.sandbox import cgroups, jail, wire

_SANDBOX_DIR = Path(__file__).parent
# The worker's modules, each importing only those before it; the last one is the worker itself.
WORKER_MODULES = ("wire", "jail", "cgroups", "template", "worker")
# What the worker's interpreter runs (``python -c``): its modules' sources
# arrive on stdin, one frame (``wire``'s format) ahead of the jobs, and are
# compiled under names of no host path. Started from files, a run would
# find the server's checkout in the modules' ``__file__``, their code
# objects, ``sys.orig_argv`` and ``/proc/1/cmdline``.
_BOOTSTRAP = """
import os, pickle, sys
def take(size):
    data = b""
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            raise SystemExit("sandbox worker: stdin closed before the worker's code arrived")
        data += chunk
    return data
for name, source in pickle.loads(take(int.from_bytes(take(4), "big"))):
    module = sys.modules[name] = type(sys)(name)
    exec(compile(source, f"<sandbox>/{name}.py", "exec"), module.__dict__)
del take, name, source, module
sys.modules["worker"].main()
"""

# Isolation layers a run reports, with what each one guarantees; all are
# required unless the server was started with --allow-weak-isolation.
LAYERS = {
    "mount_namespace": "private mount namespace per run",
    "readonly_root": "minimal read-only root: the host's runtimes (/usr, /lib*, /bin), a few /etc files, "
                     "a private /dev and devpts; nothing else of the host",
    "private_tmp": "fresh size-capped tmpfs for /tmp and the work dir",
    "network_namespace": "no network: only a downed loopback (a fresh namespace per run, or per worker if asked)",
    "pid_namespace": "PID namespace: a timeout kills the whole process tree",
    "ipc_namespace": "private IPC and hostname",
    "unprivileged_uid": "programs run as an unprivileged uid",
    "seccomp": "system-call filter: no user namespaces, io_uring, AIO contexts, bpf, ptrace, perf events, "
               "keyrings, file-system watches (inotify, fanotify, F_NOTIFY) or leases; sync() and "
               "advisory locks no-ops; "
               "sockets only of the IPv4, IPv6 and connected-pair unix families",
    "memory_cgroup": "memory cgroup per run: memory_limit_MB bounds all the memory a run makes the kernel hold",
    "cpu_cgroup": "cpu cgroup per run with an equal share: a run of many processes cannot starve another run",
}

# The workers' whole environment: the server's (its token, any secret of the
# host) must not be in the memory that programs are forked from. glibc reads
# MALLOC_ARENA_MAX when the process starts, so warm runs, which never exec,
# get it only from here: without it each thread of a program reserves a
# 64 MiB arena, and 21 threads exhaust a 1 GiB address-space limit.
# LD_BIND_NOW: the dynamic linker resolves every symbol as the worker starts;
# resolved lazily, each run's child paid (~40 us) for the library functions
# its template had never called, and copied the pages it patched.
WORKER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2", "LD_BIND_NOW": "1"}

# Seconds a worker may overrun a job's own timeout before it is presumed hung.
_WORKER_SLACK_S = 15.0


class Overloaded(Exception):
    """The queue is full; the caller should retry later (HTTP 429)."""


class WorkerFailed(Exception):
    """A worker died or hung while running a job (HTTP 200 with SandboxError)."""


def worker_argv(python: str, uid: int, expose: list[str], netns: str = "per-run") -> list[str]:
    """The worker's command line: it names no file of the server's (the code follows on stdin, ``worker_code``)."""
    argv = [python, "-I", "-S", "-c", _BOOTSTRAP, "--uid", str(uid), "--netns", netns]
    for path in expose:
        argv += ["--expose", path]
    return argv


def worker_code() -> bytes:
    """The first frame on a worker's stdin: its modules' sources, in load order."""
    return wire.encode([(name, (_SANDBOX_DIR / f"{name}.py").read_text()) for name in WORKER_MODULES])


def probe_isolation(python: str, uid: int, expose: list[str], netns: str = "per-run") -> tuple[dict[str, bool], bool]:
    """Start one worker, run a probe program through it, and report each layer's state.

    A layer counts as present only if the worker set it up *and* the probe,
    running as an ordinary program, observes it (fail closed). Also says
    whether programs can import from the interpreter's standard library.
    Synchronous so ``serve`` can refuse to start before binding a port.
    """
    proc = subprocess.Popen(worker_argv(python, uid, expose, netns), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=WORKER_ENV, start_new_session=True)  # as Worker.start: Ctrl-C is the server's
    try:
        proc.stdin.write(worker_code())
        proc.stdin.flush()
        hello = wire.read_frame(proc.stdout.fileno())
        if hello is None:
            raise RuntimeError(f"the sandbox worker ({python}) exited during start-up; see its stderr above")
        wire.write_frame(proc.stdin.fileno(), job_template(mode="inline-python", main="probe.py",
                                                             files={"probe.py": _PROBE.encode()}))
        result = wire.read_frame(proc.stdout.fileno())
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()
        cgroups.remove(uid)  # the probe's cgroups: a server that then refuses to start leaves none
    if result is None or "error" in result:
        raise RuntimeError(f"the sandbox worker could not run a probe program: {result}")
    try:
        observed = json.loads(result["stdout"])
    except ValueError as exc:
        raise RuntimeError(f"the isolation probe failed: {result['stderr'][-2000:]!r}") from exc
    layers = {name: bool(result["layers"].get(name)) and observed.get(name, True) for name in LAYERS}
    return layers, observed["stdlib_readable"]


# What a program inside the sandbox can see of each layer.
_PROBE = """
import ctypes, json, os  # preloaded by the worker: importable whatever the uid may read
seen = {}
seen["pid_namespace"] = os.getpid() == 1
seen["unprivileged_uid"] = os.getuid() != 0 and os.geteuid() != 0
seen["readonly_root"] = bool(os.statvfs("/").f_flag & os.ST_RDONLY)
seen["private_tmp"] = sorted(os.listdir("/tmp")) == ["work"]
seen["mount_namespace"] = seen["readonly_root"] and seen["private_tmp"]
seen["network_namespace"] = sorted(os.listdir("/sys/class/net")) == ["lo"]
seen["ipc_namespace"] = os.uname().nodename == "sandbox"
libc = ctypes.CDLL(None, use_errno=True)
seen["seccomp"] = libc.unshare(0x10000000) != 0 and ctypes.get_errno() == 1  # CLONE_NEWUSER -> EPERM
cgroup_lines = [line.split(":", 2) for line in open("/proc/self/cgroup").read().splitlines()]
seen["memory_cgroup"] = any("rewardsmith-sandbox-uid" in path for _, _, path in cgroup_lines)
seen["cpu_cgroup"] = any("rewardsmith-sandbox-uid" in path for _, names, path in cgroup_lines
                         if "cpu" in names.split(",") or names == "")
try:
    import wave  # never preloaded: only importable if the program's uid can read the standard library
    seen["stdlib_readable"] = True
except ImportError:
    seen["stdlib_readable"] = False
print(json.dumps(seen))
"""


def job_template(**fields) -> dict:
    """A job with the worker's defaults; callers override what they set."""
    job = {
        "mode": "exec",
        "argv": None,
        "main": None,
        "files": {},
        "executable": (),
        "stdin": b"",
        "timeout": 5.0,
        "memory_mb": 512,  # address space
        "cgroup_memory_mb": 512,  # all the memory the run makes the kernel hold
        "nproc": 64,
        "fsize_mb": 64,
        "nofile": 256,
        "tmpfs_mb": 256,
        "fetch": (),
        "max_output": 1 << 20,
        "max_file_bytes": 64 << 20,
        "max_fetch_bytes": 64 << 20,  # all fetched files together
        "runtime_files": (),  # brought into the page cache before the run (cgroups.cache_runtime_files)
    }
    job.update(fields)
    return job


@dataclass
class _WorkerProcess:
    """One warm worker (``worker.py``) and its pipes; runs one job at a time."""

    index: int
    uid: int
    argv: list[str]
    proc: asyncio.subprocess.Process | None = None
    template_pid: int | None = None
    runs: int = 0

    async def start(self) -> dict:
        # A session of its own: a Ctrl-C at the terminal reaches the server, which stops
        # its workers, not the workers themselves (a KeyboardInterrupt traceback from each).
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=WORKER_ENV,
            start_new_session=True,
        )
        self.proc.stdin.write(worker_code())
        await self.proc.stdin.drain()
        hello = await self._read()
        if hello is None:
            raise WorkerFailed(f"sandbox worker {self.index} exited during start-up")
        self.template_pid = hello["template_pid"]
        return hello

    def cancel(self) -> None:
        """Stop the job in progress (a no-op for the worker when it has just ended; it skips the frame)."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.stdin.write(wire.encode(wire.CANCEL))

    async def call(self, job: dict) -> dict:
        self.proc.stdin.write(wire.encode(job))
        await self.proc.stdin.drain()
        reply = await self._read()
        if reply is None:
            raise WorkerFailed(f"sandbox worker {self.index} died while running a job")
        self.runs += 1
        return reply

    async def _read(self):
        try:
            header = await self.proc.stdout.readexactly(wire.HEADER.size)
            (length,) = wire.HEADER.unpack(header)
            body = await self.proc.stdout.readexactly(length)
        except asyncio.IncompleteReadError:
            return None
        return wire.iter_frames(header + body).__next__()

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        await self.proc.wait()


@dataclass
class SandboxPool:
    """``size`` warm workers, each with its own unprivileged uid (``base_uid + i``).

    A per-worker uid keeps RLIMIT_NPROC per run: a fork bomb in one run
    cannot starve the processes of a run in another worker.
    """

    python: str
    size: int
    base_uid: int
    expose: list[str]
    max_pending: int
    netns: str = "per-run"
    _idle: asyncio.Queue = field(init=False)
    _workers: list[_WorkerProcess] = field(init=False, default_factory=list)
    pending: int = field(init=False, default=0)
    busy: int = field(init=False, default=0)
    peak_busy: int = field(init=False, default=0)
    restarts: int = field(init=False, default=0)

    async def start(self) -> None:
        with contextlib.suppress(OSError):
            jail.become_subreaper()
        self._idle = asyncio.Queue()
        for index in range(self.size):
            uid = self.base_uid + index
            worker = _WorkerProcess(index, uid, worker_argv(self.python, uid, self.expose, self.netns))
            await worker.start()
            self._workers.append(worker)
            self._idle.put_nowait(worker)

    async def stop(self) -> None:
        for worker in self._workers:
            await worker.stop()
        await self._reap_orphans()
        for worker in self._workers:
            cgroups.remove(worker.uid)

    def reserve(self, count: int) -> None:
        """Claim ``count`` run slots for one request, or raise ``Overloaded``."""
        if self.pending + count > self.max_pending:
            raise Overloaded(f"sandbox queue is full ({self.pending} runs in flight, limit {self.max_pending})")
        self.pending += count

    def release(self, count: int) -> None:
        """Give back the slots a request reserved, once it is done."""
        self.pending -= count

    @property
    def queue_depth(self) -> int:
        """Runs waiting for a free worker."""
        return max(0, self.pending - self.busy)

    async def run(self, job: dict, queue_wait_s: float) -> dict:
        """Run one job on the next free worker (within a reservation); ``Overloaded`` when none is free within
        ``queue_wait_s``. Cancelled (its client went away), it stops the job, waiting or running."""
        # asyncio.timeout, not wait_for: wait_for wraps the wait in a task of its own, a cost on every run.
        try:
            async with asyncio.timeout(queue_wait_s):
                worker = await self._idle.get()
        except TimeoutError:
            raise Overloaded(f"no sandbox worker was free within {queue_wait_s:g} s") from None
        call = asyncio.ensure_future(self._call(worker, job))
        try:
            # Shielded: the worker's reply is always read, so no half-read
            # reply stays in its pipe for the next request.
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            if not call.done():
                worker.cancel()
            raise

    async def _call(self, worker: _WorkerProcess, job: dict) -> dict:
        self.busy += 1
        self.peak_busy = max(self.peak_busy, self.busy)
        deadline = wire.wall_cap_s(job["timeout"]) + _WORKER_SLACK_S
        try:
            async with asyncio.timeout(deadline):
                return await worker.call(job)
        except (TimeoutError, WorkerFailed, ConnectionError) as exc:
            await self._replace(worker)
            detail = str(exc) or f"timed out: no answer within {deadline:g} s"
            raise WorkerFailed(f"sandbox worker {worker.index} failed: {detail}") from exc
        finally:
            self.busy -= 1
            self._idle.put_nowait(worker)

    async def _replace(self, worker: _WorkerProcess) -> None:
        await worker.stop()
        self.restarts += 1
        await self._reap_orphans()
        await worker.start()

    async def _reap_orphans(self) -> None:
        """Collect what a dead worker left behind.

        Its program was SIGKILLed when the worker died (parent-death signal)
        and, this process being a subreaper, is now our child: reap it, or it
        stays a zombie counted against its uid's process limit.
        """
        known = set(self.worker_pids())
        orphans = [pid for pid in jail.children_of(os.getpid()) if pid not in known]
        for _ in range(100):
            for pid in list(orphans):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0] == 0:
                        continue
                orphans.remove(pid)
            if not orphans:
                return
            await asyncio.sleep(0.05)

    def worker_pids(self) -> list[int]:
        """The workers' process ids."""
        return [w.proc.pid for w in self._workers if w.proc is not None]

    def template_pids(self) -> list[int]:
        """The process ids of the workers' templates (the processes programs are forked from)."""
        return [w.template_pid for w in self._workers if w.template_pid is not None]


def default_expose(python: str) -> list[str]:
    """Directories the sandbox interpreter needs that may sit under a closed parent."""
    real = os.path.realpath(python)
    prefix = os.path.dirname(os.path.dirname(real))
    return [prefix]
