"""A warm sandbox worker: one long-lived process that runs jobs in fresh, isolated children.

Started by the server as ``python -I -S worker.py --uid N [--expose PATH ...]``
on the sandbox interpreter (``-S``: no ``site`` start-up, whose ``.pth``
hooks may import megabytes of modules that every run would then copy; the
worker adds site's paths and builtins itself). It enters a private
read-only mount namespace once (and, with ``--netns per-worker``, one empty
network namespace for all its runs), pre-imports common modules, then
serves jobs read from stdin as length-prefixed pickles (the server is its
only peer; user code never sees these pipes). What every run needs and
can share is set up here once rather than in each child, where every page
touched costs a copy-on-write fault. For every job it:

1. mounts a fresh size-capped tmpfs on /tmp (in its own mount namespace)
   and writes the job's files to /tmp/work;
2. forks the program's process straight into new network, mount, PID, IPC
   and UTS namespaces (one ``clone``): PID 1 of its namespace, with its own
   /proc and /dev/shm, resource limits and an unprivileged uid (and
   the worker's seccomp filter, inherited), it
   then runs the program — Python source executed in-process (the warm
   path), or ``execve`` of an argv (bash, C++, the spawn path);
3. reads stdout/stderr while it runs, caps them, and enforces the
   wall-clock deadline by SIGKILL to PID 1, which makes the kernel kill
   everything else in the namespace (daemons included);
4. reaps it (status, CPU time), reads the requested files without
   following symlinks, and unmounts the run's tmpfs.
"""
from __future__ import annotations

import atexit
import gc
import os
import select
import signal
import site
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Loaded by path on purpose: this interpreter must not import rewardkit.
import frames  # noqa: E402
import jail  # noqa: E402

# Warm path: modules a short solution typically imports are loaded once here
# and shared copy-on-write by every run. Every page of the worker is copied
# into (and torn down with) every run, so modules a solution rarely needs
# stay out: dataclasses alone (with inspect and ast) would add ~1.5 MB, and
# without threading a run has no threads to wait for at exit (~0.1 ms).
import bisect, collections, copy, decimal, fractions, functools, heapq  # noqa: E401,F401,E402
import io, itertools, json, math, operator, random, re, string, types, typing  # noqa: E401,F401,E402

WORK_DIR = "/tmp/work"
# Every program's environment, plus the job's own variables. Set once in the
# worker: replacing the whole environment in each run's child cost about
# 0.3 ms of a run's CPU. HOME is the work dir (constant with a private /tmp).
PROGRAM_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2",
               "HOME": WORK_DIR}
_READ_CHUNK = 65536
_KILL_GRACE_S = 5.0
_DRAIN_GRACE_S = 0.5


class Worker:
    """Holds the worker-wide facts (uid, which layers are available) and runs jobs."""

    def __init__(self, uid: int, expose: list[str], netns_per_worker: bool = False):
        self.uid = uid
        self.is_root = os.geteuid() == 0
        self.layers = jail.available_namespaces()
        # Per-worker network namespace: created once here and shared by this
        # worker's runs, which never overlap in time; creating and tearing
        # down a network namespace is the costliest part of a run.
        self.netns_per_run = self.layers["network_namespace"] and not netns_per_worker
        if self.layers["network_namespace"] and netns_per_worker:
            jail.unshare(jail.CLONE_NEWNET)
        try:
            jail.enter_readonly_view(expose)
            self.layers["readonly_root"] = True
        except OSError:
            self.layers["readonly_root"] = False
        if self.layers["readonly_root"] and self.layers["network_namespace"] and netns_per_worker:
            jail.mount_fresh_sysfs()
        if self.layers["ipc_namespace"]:
            # Named once in a UTS namespace of the worker's own; each run's
            # namespace starts as a copy, so its child has nothing to set.
            jail.unshare(jail.CLONE_NEWUTS)
            jail.set_hostname("sandbox")
        self.layers["private_tmp"] = self.layers["readonly_root"]
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

    # -- one job ---------------------------------------------------------------------

    def run(self, job: dict) -> dict:
        work = self._prepare_work_dir(job)
        try:
            return self._run_in(job, work)
        finally:
            self._discard_work_dir(work)

    def _prepare_work_dir(self, job: dict) -> str:
        if self.layers["private_tmp"]:
            jail.mount_tmpfs("/tmp", job["tmpfs_mb"])
            work = WORK_DIR
            os.mkdir(work, 0o755)
        else:
            import tempfile  # weak isolation only: kept out of the image every run copies

            work = tempfile.mkdtemp(prefix="rewardkit-run-")
        if self.is_root:
            os.chown(work, self.uid, self.uid)
        _write_files(work, job["files"], job["executable"], self.uid if self.is_root else None)
        return work

    def _discard_work_dir(self, work: str) -> None:
        if self.layers["private_tmp"]:
            jail.umount("/tmp")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)

    def _run_in(self, job: dict, work: str) -> dict:
        stdin_fd = os.memfd_create("stdin")
        data = memoryview(job["stdin"])
        while data:
            data = data[os.write(stdin_fd, data):]
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        if job["mode"] == "inline-python":
            # A fresh interpreter seeds random from urandom; the clone skips
            # CPython's at-fork reseeding (jail.fork_into), so the worker reseeds
            # here, for this child alone, where those pages cost no copy-on-write.
            random.seed()
        pid = jail.fork_into(self.clone_flags)
        if pid == 0:
            self._become_program(job, work, stdin_fd, out_w, err_w)
        started = time.monotonic()
        for fd in (stdin_fd, out_w, err_w):
            os.close(fd)
        try:
            captured = self._supervise(job, pid, started, out_r, err_r)
        finally:
            os.close(out_r)
            os.close(err_r)
        _, status, usage = os.wait4(pid, 0)
        return {
            **captured,
            "wait_status": status,
            "cpu_time": usage.ru_utime + usage.ru_stime,
            "max_rss_kb": usage.ru_maxrss,
            "files": _fetch_files(work, job["fetch"], job["max_file_bytes"]),
            "layers": self.layers,
        }

    # -- the child: PID 1 of the run's namespaces, becomes the program ------------------

    def _become_program(self, job: dict, work: str, stdin_fd: int, out_w: int, err_w: int) -> None:
        code = 127
        try:
            if self.layers["mount_namespace"] and self.layers["readonly_root"]:
                jail.mount_tmpfs("/dev/shm", 64, noexec=True)
                if self.layers["pid_namespace"]:
                    jail.mount_fresh_proc()
                if self.netns_per_run:
                    jail.mount_fresh_sysfs()
            os.setsid()  # without a PID namespace the worker kills the process group
            os.dup2(stdin_fd, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.closerange(3, 65536)
            jail.apply_limits(
                memory_mb=job["memory_mb"],
                cpu_seconds=int(job["timeout"]) + 1,
                nproc=job["nproc"],
                fsize_mb=job["fsize_mb"],
                nofile=job["nofile"],
            )
            if self.is_root:
                jail.drop_privileges(self.uid)
            jail.die_with_parent()  # a crashed worker must not leave its program running
            os.chdir(work)
            # The rest of the environment was set once, in the worker (PROGRAM_ENV).
            if work != WORK_DIR:
                os.environ["HOME"] = work
            if job["env"]:
                os.environ.update(job["env"])
            if job["mode"] == "inline-python":
                code = _run_python_inline(os.path.join(work, job["main"]), job["files"][job["main"]])
            else:
                os.execve(job["argv"][0], job["argv"], os.environ)
        except BaseException as exc:  # noqa: BLE001 - must never return into the worker loop
            try:
                os.write(2, f"sandbox: could not start the program: {exc}\n".encode())
            except OSError:
                pass
        os._exit(code)

    # -- the worker side: output, deadline ------------------------------------------

    def _supervise(self, job: dict, pid: int, started: float, out_r: int, err_r: int) -> dict:
        """Read both streams until they close; kill the tree at the deadline."""
        cap = job["max_output"]
        streams = {out_r: bytearray(), err_r: bytearray()}
        truncated = {out_r: False, err_r: False}
        exited = os.pidfd_open(pid)
        poller = select.poll()
        for fd in (out_r, err_r, exited):
            poller.register(fd, select.POLLIN)
        open_fds = {out_r, err_r}
        deadline = started + job["timeout"]
        timed_out = False
        ended = None
        try:
            while open_fds:
                now = time.monotonic()
                if now >= deadline:
                    if timed_out or ended is not None:
                        break  # past the grace period: what is still open belongs to escaped daemons
                    timed_out = True
                    ended = now
                    _kill_tree(pid)
                    deadline = now + _KILL_GRACE_S
                    continue
                for fd, _ in poller.poll(max(1, int((deadline - now) * 1000))):
                    if fd == exited:
                        poller.unregister(exited)
                        ended = time.monotonic()
                        # The program is gone; with a PID namespace so is everything
                        # it started. Without one, take its process group along.
                        _kill_tree(pid, group_only=True)
                        deadline = min(deadline, ended + _DRAIN_GRACE_S)
                        continue
                    chunk = os.read(fd, _READ_CHUNK)
                    if not chunk:
                        poller.unregister(fd)
                        open_fds.discard(fd)
                        continue
                    room = cap - len(streams[fd])
                    if room > 0:
                        streams[fd] += chunk[:room]
                    if len(chunk) > room:
                        truncated[fd] = True
        finally:
            os.close(exited)
        return {
            "timed_out": timed_out,
            "wall_time": (ended or time.monotonic()) - started,
            "stdout": bytes(streams[out_r]),
            "stderr": bytes(streams[err_r]),
            "stdout_truncated": truncated[out_r],
            "stderr_truncated": truncated[err_r],
        }


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


def _open_beneath(work: str, rel: str) -> int:
    """Open ``work/rel`` read-only without following any symlink the program planted."""
    parts = rel.split("/")
    dir_fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
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


def _fetch_files(work: str, names, max_bytes: int) -> dict:
    files = {}
    for rel in names:
        try:
            _safe_join(work, rel)
            with os.fdopen(_open_beneath(work, rel), "rb") as fh:
                files[rel] = fh.read(max_bytes)
        except (OSError, ValueError):
            continue  # absent from the response; the server reports which
    return files


def install_program_stdio() -> None:
    """Make ``sys.stdin``/``stdout``/``stderr`` the text streams ``python`` gives a program, once, in the worker.

    They only name fds 0, 1 and 2, which each run's child points at its own
    stdin file and output pipes, so every child inherits them ready to use.
    The worker never reads stdin or writes stdout, and its stderr (tracebacks
    only) is line-buffered, so no child inherits buffered data. Swapping the
    streams in each child instead cost ~170 copy-on-write page faults
    (~0.5 ms) per run: the interpreter's own streams were freed there and new
    ones opened.
    """
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1,
                                       closefd=False)


def _run_python_inline(path: str, source: bytes) -> int:
    """Execute ``source``, the Python file at ``path``, in this (freshly forked) interpreter like ``python path``.

    The source comes from the job, not from reading the file back (which
    cost ~0.08 ms per run); compiled from bytes, it is decoded as the
    interpreter decodes a file (UTF-8 or its PEP 263 coding line).

    Returns the exit status the interpreter would have had: 0, the
    ``SystemExit`` code, or 1 after printing the traceback.
    """
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    status = 0
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException as exc:  # noqa: BLE001 - reported exactly like the interpreter does
        # Drop this function's frame so the traceback starts in the program.
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        status = 1
    try:
        # As CPython finalizes: wait for the program's non-daemon threads, then atexit.
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a broken pipe at exit is not the program's verdict
        pass
    return status


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


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
    args = parse_args(sys.argv[1:])
    worker = Worker(args["uid"], args["expose"], netns_per_worker=args["netns"] == "per-worker")
    # What site's start-up gives every program, bar the .pth hooks and
    # sitecustomize: the interpreter's third-party packages, and the exit(),
    # quit(), help(), copyright(), credits() and license() builtins.
    sys.path.extend(path for path in site.getsitepackages() if os.path.isdir(path))
    site.setquit()
    site.setcopyright()
    site.sethelper()
    os.environ.clear()  # the server's environment is not the programs' business
    os.environ.update(PROGRAM_ENV)
    inbox, outbox = os.dup(0), os.dup(1)
    # Nothing user-facing may inherit the server's pipes as stdio.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.set_inheritable(inbox, False)
    os.set_inheritable(outbox, False)
    install_program_stdio()
    # The first compile() builds CPython's AST node types (~1.6 ms): once here,
    # not in every run's child.
    compile("", "<warm-up>", "exec")
    gc.freeze()  # keep the collector from dirtying shared pages in every child
    frames.write_frame(outbox, {"layers": worker.layers, "pid": os.getpid()})
    while True:
        job = frames.read_frame(inbox)
        if job is None:
            return
        try:
            reply = worker.run(job)
        except Exception as exc:  # noqa: BLE001 - reported to the server as a SandboxError
            import traceback  # only on this path: kept out of the image every run copies

            traceback.print_exc()
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        frames.write_frame(outbox, reply)


if __name__ == "__main__":
    main()
