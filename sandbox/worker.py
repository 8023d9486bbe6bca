"""A warm sandbox worker: one long-lived process that runs jobs in fresh, isolated children.

Started by the server as ``python -I -S -c <bootstrap> --uid N [--expose PATH ...]``
(``pool.worker_argv``; this module and the ones it imports arrive on stdin)
on the sandbox interpreter, with a minimal environment (``-S``: no ``site``
start-up, whose ``.pth`` hooks may import megabytes of modules that every
run would then copy; the worker adds site's paths and builtins itself). It
builds a minimal read-only root in a private mount namespace once
(``jail.enter_minimal_root``; and, with ``--netns per-worker``, one empty
network namespace for all its runs), opens its directory of memory cgroups,
pre-imports common modules and forks its pristine
**template** (``template.py``) before it reads any request: every program is
forked from the template, never from this process, whose memory holds
earlier requests. Then it serves jobs read from stdin as length-prefixed
pickles (the server is its only peer; user code never sees these pipes).
For every job it:

1. mounts a fresh size- and inode-capped tmpfs on /tmp (in its own mount
   namespace, which the template shares) and writes the job's files to
   /tmp/work;
2. limits the run's own fresh memory cgroup and has the template fork the
   program's process straight into new network, mount, PID, IPC and UTS
   namespaces (one ``clone``), as this process's child: PID 1 of its
   namespace (an exec'd program runs as PID 2 under an init that reports
   its wait status), in the run's cgroup, with its own /proc and /dev/shm,
   resource limits and an unprivileged uid (and the seccomp filter,
   inherited), it runs the program — Python source executed in-process
   (the warm path), or ``execve`` of an argv (bash, C++, the spawn path);
3. while it runs, removes the previous run's cgroup and makes the next
   one's (``WorkerCgroups.tidy``), reads stdout/stderr, caps them, and enforces the
   wall-clock deadline by SIGKILL to PID 1, which makes the kernel kill
   everything else in the namespace (daemons included), whether or not
   the program closed its pipes; a run that thrashes at its memory limit
   (``cgroups.ThrashWatch``) is killed the same way, at once;
4. reaps it (status, CPU time, OOM kills), reads the requested files below
   the work dir's descriptor opened before the run, without following
   symlinks and with the run's uid, up to the job's byte budget, and
   unmounts the run's tmpfs.
"""
from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import site
import stat
import sys
import time

# Loaded from stdin by the bootstrap (pool.worker_argv), not as part of
# rewardsmith: this interpreter must not import the server's package.
import cgroups  # noqa: E402
import jail  # noqa: E402
import template  # noqa: E402
import wire  # noqa: E402

# Warm path: modules a short solution typically imports are loaded once here
# and shared copy-on-write by every run. Every page of the template is copied
# into (and torn down with) every run, so modules a solution rarely needs
# stay out: dataclasses alone (with inspect and ast) would add ~1.5 MB, and
# without threading a run has no threads to wait for at exit (~0.1 ms).
import bisect, collections, copy, decimal, fractions, functools, heapq  # noqa: E401,F401,E402
import io, itertools, json, math, operator, random, re, string, types, typing  # noqa: E401,F401,E402

WORK_DIR = "/tmp/work"
# Every program's environment, and the worker's: the server starts it with
# this much and no more, so no secret of the server's environment is in any
# memory a program inherits. Set once in the worker: replacing the whole
# environment in each run's child cost about 0.3 ms of a run's CPU. HOME is
# the work dir (constant with a private /tmp).
PROGRAM_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2",
               "HOME": WORK_DIR}
# Files and directories per run's /tmp: far more than a program needs, far
# fewer than it would take to tie up the host's kernel memory.
TMP_INODES = 16384
_READ_CHUNK = 65536
# Bytes at the end of stderr kept apart from the capped output (verdicts.py reads them).
STDERR_TAIL = 4096
_KILL_GRACE_S = 5.0
_DRAIN_GRACE_S = 0.5
# The spec the program's child reads: what it needs of the job, and nothing else.
_SPEC_KEYS = ("mode", "argv", "main")


class Worker:
    """Holds the worker-wide facts (uid, layers, cgroup, template) and runs jobs.

    The template's children read ``uid``, ``is_root``, ``layers``,
    ``netns_per_run``, ``clone_flags`` and ``cgroup`` from it.
    """

    def __init__(self, uid: int, expose: list[str], netns_per_worker: bool = False):
        self.uid = uid
        self.is_root = os.geteuid() == 0
        self.layers = jail.available_namespaces()
        # Opened while /sys is still visible: the read-only view hides it.
        try:
            self.cgroup = cgroups.WorkerCgroups(uid)
        except OSError:
            self.cgroup = None
        self.layers["memory_cgroup"] = self.cgroup is not None
        # After the memory cgroups (v2 enables the cpu controller below them), before the template is forked.
        self.layers["cpu_cgroup"] = cgroups.join_cpu_share(uid)
        # Per-worker network namespace: created once here and shared by this
        # worker's runs, which never overlap in time; creating and tearing
        # down a network namespace is the costliest part of a run.
        self.netns_per_run = self.layers["network_namespace"] and not netns_per_worker
        if self.layers["network_namespace"] and netns_per_worker:
            jail.unshare(jail.CLONE_NEWNET)
        try:
            jail.enter_minimal_root(expose, uid)
            self.layers["readonly_root"] = True
        except OSError:
            self.layers["readonly_root"] = False
        if self.layers["readonly_root"] and self.layers["network_namespace"] and netns_per_worker:
            jail.fresh_sysfs().apply()
        if self.layers["ipc_namespace"]:
            # Named once in a UTS namespace of the worker's own; each run's
            # namespace starts as a copy, so its child has nothing to set.
            jail.unshare(jail.CLONE_NEWUTS)
            jail.set_hostname("sandbox")
        self.layers["private_tmp"] = self.layers["readonly_root"]
        # The minimal root's devpts instance, shared by this worker's runs one at a time.
        self.ptys = jail.PtyInstance() if self.layers["readonly_root"] and self.layers["mount_namespace"] else None
        self.layers["unprivileged_uid"] = self.is_root
        # Both installed once, here, and inherited by every run (neither can
        # be undone): compiling the filter per run would cost more than the
        # rest of a run's set-up.
        jail.set_no_new_privs()
        try:
            jail.install_seccomp_filter()
            self.layers["seccomp"] = True
        except OSError:
            self.layers["seccomp"] = False
        self.clone_flags = sum(flag for name, flag in jail.NAMESPACES.items() if self.layers[name])
        if not self.netns_per_run:
            self.clone_flags &= ~jail.CLONE_NEWNET
        self.template: template.Template | None = None
        self.inbox: int | None = None  # the server's pipe: jobs, and cancels of the job in progress

    def start_template(self) -> None:
        """Fork the pristine template; call once, after the warm-up and before reading any job."""
        self.template = template.Template.start(self)

    # -- one job ---------------------------------------------------------------------

    def run(self, job: dict) -> dict:
        """Run one job in a fresh child of the template; the report the server turns into a result."""
        if self.layers["private_tmp"]:
            jail.tmpfs("/tmp", job["tmpfs_mb"], inodes=TMP_INODES).apply()
        work = None
        try:  # the work dir is set up inside the clean-up's reach: a bad file must not leak the mount
            work = self._make_work_dir(job)
            return self._run_in(job, work)
        finally:
            self._discard_work_dir(work)
            if self.ptys is not None:
                self.ptys.renew_if_used()  # before the next run: nothing of this one's ptys reaches it

    def _make_work_dir(self, job: dict) -> str:
        if self.layers["private_tmp"]:
            work = WORK_DIR
            os.mkdir(work, 0o755)
        else:
            import tempfile  # weak isolation only: kept out of the image every run copies

            work = tempfile.mkdtemp(prefix="rewardsmith-run-")
        if self.is_root:
            os.chown(work, self.uid, self.uid)
        _write_files(work, job["files"], job["executable"], self.uid if self.is_root else None)
        return work

    def _discard_work_dir(self, work: str | None) -> None:
        if self.layers["private_tmp"]:
            jail.umount("/tmp")
        elif work is not None:
            import shutil

            shutil.rmtree(work, ignore_errors=True)

    def _run_in(self, job: dict, work: str) -> dict:
        spec = {key: job[key] for key in _SPEC_KEYS}
        spec["work"] = work
        spec["rlimits"] = jail.run_limits(memory_mb=job["memory_mb"], cpu_seconds=_cpu_seconds(job),
                                          nproc=job["nproc"], fsize_mb=job["fsize_mb"], nofile=job["nofile"])
        if job["mode"] == "inline-python":
            spec["source"] = job["files"][job["main"]]
        # The work dir as the server made it, held before the program can
        # rename it or plant a symlink in its place: results are read below it.
        work_fd = os.open(work, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC) if job["fetch"] else None
        try:
            return self._run_with(job, spec, work_fd)
        finally:
            if work_fd is not None:
                os.close(work_fd)

    def _run_with(self, job: dict, spec: dict, work_fd: int | None) -> dict:
        run_cgroup = None if self.cgroup is None else self.cgroup.start_run(job["cgroup_memory_mb"])
        try:
            return self._run_in_cgroup(job, spec, work_fd, run_cgroup)
        finally:
            if run_cgroup is not None:
                self.cgroup.end_run(run_cgroup)

    def _run_in_cgroup(self, job: dict, spec: dict, work_fd: int | None,
                       run_cgroup: cgroups.RunCgroup | None) -> dict:
        cpu_seconds = _cpu_seconds(job)
        if run_cgroup is not None:
            cgroups.cache_runtime_files(job["runtime_files"])  # charged here, not to the run's limit
        spec_fd = _memfd("spec", pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
        stdin_fd = _memfd("stdin", job["stdin"])
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        if self.is_root:
            # The program's own: opening /dev/stdout or /dev/stderr (its /proc/self/fd/1 and 2) works, as
            # anywhere; a pipe made by root is root's, mode 0600.
            os.fchown(out_w, self.uid, self.uid)
            os.fchown(err_w, self.uid, self.uid)
        try:
            try:
                fds = [spec_fd, stdin_fd, out_w, err_w] + ([] if run_cgroup is None else [run_cgroup.join_fd])
                pid = self.template.spawn(fds)
            finally:
                for fd in (stdin_fd, out_w, err_w):
                    os.close(fd)
            started = time.monotonic()
            if run_cgroup is not None:
                self.cgroup.tidy()  # while the program runs: the worker would only wait
            watch = None if run_cgroup is None else cgroups.ThrashWatch(run_cgroup)
            try:
                captured = self._supervise(job, pid, started, out_r, err_r, watch, run_cgroup)
            finally:
                os.close(out_r)
                os.close(err_r)
            _, status, usage = os.wait4(pid, 0)
            status, under_init = template.program_status(spec_fd, status)
        finally:
            os.close(spec_fd)
        cpu_time = usage.ru_utime + usage.ru_stime
        # Read only for a failed run: a clean exit is OK whatever was OOM-killed beside it.
        oom_killed = run_cgroup is not None and status != 0 and run_cgroup.oom_kills() > 0
        files, over_budget = ({}, []) if work_fd is None else self._fetch(job, work_fd)
        return {
            **captured,
            "wait_status": status,
            "cpu_time": cpu_time,
            "max_rss_kb": usage.ru_maxrss,
            "oom_killed": oom_killed,
            "cpu_limit_exceeded": self._cpu_limit_killed(status, cpu_time, cpu_seconds, captured["timed_out"],
                                                         oom_killed or captured["thrashed"], under_init),
            "files": files,
            "fetch_over_budget": over_budget,
            "layers": self.layers,
        }

    def _fetch(self, job: dict, work_fd: int) -> tuple[dict, list]:
        """``job``'s fetch_files, read below ``work_fd`` with the run's uid as the effective one (never root's
        rights: a file the program could not read, it cannot have returned)."""
        if not self.is_root:
            return _fetch_files(work_fd, job["fetch"], job["max_file_bytes"], job["max_fetch_bytes"])
        os.setegid(self.uid)
        os.seteuid(self.uid)
        try:
            return _fetch_files(work_fd, job["fetch"], job["max_file_bytes"], job["max_fetch_bytes"])
        finally:
            os.seteuid(0)
            os.setegid(0)

    def _cpu_limit_killed(self, status: int, cpu_time: float, limit_s: int, timed_out: bool,
                          memory_killed: bool, under_init: bool) -> bool:
        """Whether RLIMIT_CPU ended the program.

        PID 1 of a namespace (a warm Python run) ignores SIGXCPU (a signal it
        has no handler for), so the hard limit's SIGKILL is what ends it.
        Inside its PID namespace nothing but the kernel can SIGKILL PID 1, and
        the kernel's reasons are the CPU limit and the OOM killer (counted by
        the cgroup); the worker's own kills are for the wall-clock timeout and
        for thrashing. An exec'd program (PID 2, under an init) or one without
        a PID namespace could send itself SIGXCPU or SIGKILL, so the CPU time
        must show the limit: a program that signals itself dies by that signal,
        as it would outside the sandbox, and is not timed out.
        """
        if not os.WIFSIGNALED(status):
            return False
        signum = os.WTERMSIG(status)
        if signum == signal.SIGXCPU:
            return cpu_time >= limit_s
        if signum != signal.SIGKILL or timed_out or memory_killed:
            return False
        return (self.layers["pid_namespace"] and not under_init) or cpu_time >= limit_s

    # -- the worker side: output, deadline ------------------------------------------

    def _supervise(self, job: dict, pid: int, started: float, out_r: int, err_r: int,
                   watch: cgroups.ThrashWatch | None, run_cgroup: cgroups.RunCgroup | None) -> dict:
        """Read both streams until they close and the program exits; kill the tree at the deadline,
        or as soon as ``watch`` sees the run thrashing at its memory limit.

        The deadline holds whatever the program does to its pipes: closing
        both ends nothing but the reading.
        """
        cap = job["max_output"]
        streams = {out_r: bytearray(), err_r: bytearray()}
        # The end of the whole stderr, kept whatever the cap drops: the
        # memory verdict reads it (a MemoryError traceback comes last).
        err_tail = b""
        truncated = {out_r: False, err_r: False}
        exited = os.pidfd_open(pid)
        poller = select.poll()
        for fd in (out_r, err_r, exited):
            poller.register(fd, select.POLLIN)
        if self.inbox is not None:
            poller.register(self.inbox, select.POLLIN)
        open_fds = {out_r, err_r}
        deadline = started + job["timeout"]
        wall_cap = started + wire.wall_cap_s(job["timeout"])
        under_init = job["mode"] != "inline-python" and self.layers["pid_namespace"]
        timed_out = thrashed = load_capped = False
        ended = None
        next_check = started + watch.FIRST_CHECK_S if watch is not None else float("inf")
        try:
            while open_fds or ended is None:
                now = time.monotonic()
                if ended is None and now >= next_check:
                    next_check = now + watch.CHECK_EVERY_S
                    thrashed = watch.thrashing()
                if ended is None and not thrashed and now >= deadline:
                    # The timeout counts the program's own time: not what it waited for a CPU.
                    owed = job["timeout"] - (now - started - _load_delay_s(pid, under_init, run_cgroup))
                    if owed > 0 and now < wall_cap:
                        deadline = min(wall_cap, now + owed)
                        continue
                    load_capped = owed > 0
                if now >= deadline or (thrashed and ended is None):
                    if ended is not None:
                        break  # past the grace period: what is still open belongs to escaped daemons
                    timed_out = not (thrashed or load_capped)
                    ended = now
                    _kill_tree(pid)
                    deadline = now + _KILL_GRACE_S
                    continue
                wake = min(deadline, next_check) if ended is None else deadline
                for fd, _ in poller.poll(max(1, int((wake - now) * 1000))):
                    if fd == self.inbox:
                        # The server writes nothing but a cancel while a job runs.
                        poller.unregister(fd)
                        if wire.read_frame(fd) is not None and ended is None:
                            ended = time.monotonic()
                            _kill_tree(pid)
                            deadline = ended + _KILL_GRACE_S
                        continue
                    if fd == exited:
                        poller.unregister(exited)
                        ended = ended or time.monotonic()
                        # The program is gone; with a PID namespace so is everything
                        # it started. Without one, take its process group along.
                        _kill_tree(pid, group_only=True)
                        deadline = min(deadline, time.monotonic() + _DRAIN_GRACE_S)
                        continue
                    chunk = os.read(fd, _READ_CHUNK)
                    if not chunk:
                        poller.unregister(fd)
                        open_fds.discard(fd)
                        continue
                    if fd == err_r:
                        err_tail = (err_tail + chunk)[-STDERR_TAIL:]
                    room = cap - len(streams[fd])
                    if room > 0:
                        streams[fd] += chunk[:room]
                    if len(chunk) > room:
                        truncated[fd] = True
        finally:
            os.close(exited)
        return {
            "timed_out": timed_out,
            "thrashed": thrashed,
            "load_capped": load_capped,
            "wall_time": (ended or time.monotonic()) - started,
            "stdout": bytes(streams[out_r]),
            "stderr": bytes(streams[err_r]),
            "stderr_tail": err_tail,
            "stdout_truncated": truncated[out_r],
            "stderr_truncated": truncated[err_r],
        }


def _cpu_seconds(job: dict) -> int:
    """The run's CPU-time limit: a second past its wall-clock timeout (the deadline, not RLIMIT_CPU, comes first)."""
    return int(job["timeout"]) + 1


def _load_delay_s(pid: int, under_init: bool, run_cgroup: cgroups.RunCgroup | None) -> float:
    """Seconds of the run's wall time spent waiting for a CPU that other runs or the host held.

    The kernel's ``schedstat`` counts the time a thread was runnable but
    not running. The program's main thread (``pid`` is the run's PID 1; an
    exec'd program is its init's child) is the measure; divided by the run's
    live threads, because a run that competes with itself (60 spinning
    processes) made its own wait: charged to it, as before. 0 when the
    kernel keeps no scheduler statistics, or the program is gone.
    """
    task = pid
    try:
        if under_init:
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                task = int(fh.read().split()[0])
        with open(f"/proc/{task}/schedstat") as fh:
            waited = int(fh.read().split()[1]) / 1e9
        threads = 1 if run_cgroup is None else run_cgroup.task_count() - under_init
    except (OSError, ValueError, IndexError):
        return 0.0
    return waited / max(1, threads)


def _memfd(name: str, data: bytes) -> int:
    """An anonymous file holding ``data``, positioned at its start."""
    fd = os.memfd_create(name)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _kill_tree(pid: int, group_only: bool = False) -> None:
    """SIGKILL the program (PID 1 of its namespace: the kernel then kills the rest) and its group."""
    kills = (os.killpg,) if group_only else (os.kill, os.killpg)
    for kill in kills:
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _safe_join(work: str, rel: str) -> str:
    path = os.path.normpath(os.path.join(work, rel))
    if os.path.isabs(rel) or not path.startswith(work + os.sep):
        raise ValueError(f"file path {rel!r} escapes the work dir")
    return path


def _write_files(work: str, files: dict, executable, uid: int | None) -> None:
    """Write the job's files below ``work``, owned by the run's uid when we are root."""
    for rel, data in files.items():
        path = _safe_join(work, rel)
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            os.makedirs(parent, mode=0o755)
            if uid is not None:
                for directory in _dirs_between(work, parent):
                    os.chown(directory, uid, uid)
        with open(path, "wb") as fh:
            fh.write(data)
        os.chmod(path, 0o755 if rel in executable else 0o644)
        if uid is not None:
            os.chown(path, uid, uid)


def _dirs_between(work: str, directory: str) -> list[str]:
    """``directory`` and its parents, up to but excluding ``work``."""
    found = []
    while directory != work:
        found.append(directory)
        directory = os.path.dirname(directory)
    return found


def _open_beneath(work_fd: int, rel: str) -> int:
    """Open ``rel`` below the directory ``work_fd`` read-only without following any symlink the program planted."""
    parts = rel.split("/")
    dir_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=work_fd)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{rel} is not a regular file")
    return fd


def _fetch_files(work_fd: int, names, max_file_bytes: int, budget: int) -> tuple[dict, list]:
    """The requested files (at most ``max_file_bytes`` each, ``budget`` in all), and the names left out for the budget.

    The budget bounds the reply whatever the files are: a sparse file costs
    the run no tmpfs space, yet reads back as its whole length of zeros.
    """
    files, over_budget = {}, []
    for rel in names:
        try:
            _safe_join(WORK_DIR, rel)
            with os.fdopen(_open_beneath(work_fd, rel), "rb") as fh:
                if os.fstat(fh.fileno()).st_size > budget:
                    over_budget.append(rel)
                    continue
                data = fh.read(min(max_file_bytes, budget))
        except (OSError, ValueError):
            continue  # absent from the response; the server reports which
        files[rel] = data
        budget -= len(data)
    return files, over_budget


def parse_args(argv: list[str]) -> dict:
    """``--uid N [--expose PATH]... [--netns per-run|per-worker]``, as ``pool.worker_argv`` writes them.

    By hand: argparse would add ~1.5 MB to the image that every run copies.
    """
    args = {"uid": None, "expose": [], "netns": "per-run"}
    pairs = iter(argv)
    for flag in pairs:
        value = next(pairs, None)
        if value is None or flag not in ("--uid", "--expose", "--netns"):
            raise SystemExit(f"worker.py: bad arguments {argv}; expected --uid N [--expose PATH]... [--netns MODE]")
        if flag == "--expose":
            args["expose"].append(value)
        else:
            args[flag[2:]] = value
    if args["uid"] is None or not args["uid"].isdigit() or args["netns"] not in ("per-run", "per-worker"):
        raise SystemExit(f"worker.py: bad arguments {argv}; --uid must be a number and --netns per-run or per-worker")
    args["uid"] = int(args["uid"])
    return args


def main() -> None:
    """Set up the worker and its template, then serve jobs until the server closes the pipe."""
    args = parse_args(sys.argv[1:])
    worker = Worker(args["uid"], args["expose"], netns_per_worker=args["netns"] == "per-worker")
    # What site's start-up gives every program, bar the .pth hooks and
    # sitecustomize: the interpreter's third-party packages, and the exit(),
    # quit(), help(), copyright(), credits() and license() builtins.
    sys.path.extend(path for path in site.getsitepackages() if os.path.isdir(path))
    site.setquit()
    site.setcopyright()
    site.sethelper()
    os.environ.clear()  # the server passed a minimal environment; keep exactly the programs' one
    os.environ.update(PROGRAM_ENV)
    inbox, outbox = os.dup(0), os.dup(1)
    worker.inbox = inbox
    # Nothing user-facing may inherit the server's pipes as stdio.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    os.set_inheritable(inbox, False)
    os.set_inheritable(outbox, False)
    template.install_program_stdio()
    # The first compile() builds CPython's AST node types (~1.6 ms): once here,
    # not in every run's child.
    compile("", "<warm-up>", "exec")
    gc.freeze()  # keep the collector from dirtying shared pages in every child
    worker.start_template()  # before the first job: the template never sees one
    wire.write_frame(outbox, {"layers": worker.layers, "pid": os.getpid(), "template_pid": worker.template.pid})
    while True:
        job = wire.read_frame(inbox)
        if job is None:
            return
        if job == wire.CANCEL:
            continue  # for a job that had ended before the cancel arrived
        try:
            reply = worker.run(job)
        except template.TemplateFailed:
            raise  # a new template would not be pristine: exit, and the server starts a fresh worker
        except Exception as exc:  # noqa: BLE001 - reported to the server as a SandboxError
            import traceback  # only on this path: kept out of the image every run copies

            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        wire.write_frame(outbox, reply)
