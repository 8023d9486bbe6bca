"""A warm sandbox worker: one long-lived process that runs jobs in fresh, isolated children.

Started by the server as ``python -I worker.py --uid N [--expose PATH ...]``
on the sandbox interpreter. It enters a private read-only mount namespace
once, pre-imports common modules, then serves jobs read from stdin as
length-prefixed pickles (the server is its only peer; user code never sees
these pipes). For every job it forks:

    worker ── fork ──> keeper: new mount/net/PID/IPC/UTS namespaces, fresh
                       tmpfs on /tmp, job files written to /tmp/work
                 └─ fork ──> init (PID 1 of the new namespace): fresh /proc,
                             rlimits, unprivileged uid, then the program —
                             Python source executed in-process (warm path),
                             or ``execve`` of an argv (bash, C++, spawn path)

When init exits the kernel kills everything left in its PID namespace, so a
timeout (SIGKILL to init) ends the whole tree, daemons included. The keeper
reports init's pid at once and, after it exits, its status, rusage and the
requested files; the worker reads stdout/stderr while the program runs, caps
them, and enforces the wall-clock deadline.
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Loaded by path on purpose: this interpreter must not import rewardkit.
import frames  # noqa: E402
import jail  # noqa: E402

# Warm path: modules a short solution typically imports are loaded once here
# and shared copy-on-write by every run.
import bisect, collections, copy, dataclasses, decimal, fractions, functools, heapq  # noqa: E401,F401,E402
import io, itertools, json, math, operator, random, re, statistics, string  # noqa: E401,F401,E402
import threading, traceback, types, typing  # noqa: E401,F401,E402

WORK_DIR = "/tmp/work"
_READ_CHUNK = 65536
_KILL_GRACE_S = 5.0


class Worker:
    """Holds the worker-wide facts (uid, which layers came up) and runs jobs."""

    def __init__(self, uid: int, expose: list[str]):
        self.uid = uid
        self.layers: dict[str, bool] = {}
        self.errors: dict[str, str] = {}
        try:
            jail.enter_readonly_view(expose)
            self.layers["readonly_root"] = True
        except OSError as exc:
            self.layers["readonly_root"] = False
            self.errors["readonly_root"] = str(exc)
        self.is_root = os.geteuid() == 0

    # -- the keeper (first child) ------------------------------------------------

    def _keeper(self, job: dict, out_w: int, err_w: int, res_w: int) -> None:
        layers = dict(self.layers)
        ns_flags = {
            "pid_namespace": jail.CLONE_NEWPID,
            "network_namespace": jail.CLONE_NEWNET,
            "ipc_namespace": jail.CLONE_NEWIPC | jail.CLONE_NEWUTS,
            "mount_namespace": jail.CLONE_NEWNS,
        }
        try:
            jail.unshare(sum(ns_flags.values()))
            layers.update({name: True for name in ns_flags})
        except OSError:
            for name, flag in ns_flags.items():
                try:
                    jail.unshare(flag)
                    layers[name] = True
                except OSError:
                    layers[name] = False
        private_mounts = layers["mount_namespace"] and layers["readonly_root"]
        if private_mounts:
            jail.mount_private_tmp(job["tmpfs_mb"])
            work = WORK_DIR
        else:
            import tempfile
            work = tempfile.mkdtemp(prefix="rewardkit-run-")
        layers["private_tmp"] = private_mounts
        layers["unprivileged_uid"] = self.is_root
        if private_mounts and layers["network_namespace"]:
            jail.mount_fresh_sysfs()
        os.makedirs(work, mode=0o755, exist_ok=True)
        _write_files(work, job["files"], job.get("executable", ()), self.uid if self.is_root else None)
        stdin_fd = os.memfd_create("stdin")
        os.write(stdin_fd, job["stdin"])
        os.lseek(stdin_fd, 0, os.SEEK_SET)

        pid = os.fork()
        if pid == 0:
            os.close(res_w)
            self._init(job, work, layers, stdin_fd, out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        os.close(stdin_fd)
        frames.write_frame(res_w, ("pid", pid))
        started = time.monotonic()
        _, status, usage = os.wait4(pid, 0)
        wall = time.monotonic() - started
        if self.is_root:
            # Read the requested files with the run's own rights: a symlink
            # planted by the program then reaches nothing it could not read.
            jail.drop_privileges(self.uid)
        files = _fetch_files(work, job.get("fetch", ()), job["max_file_bytes"])
        if not private_mounts:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
        frames.write_frame(res_w, ("result", {
            "wait_status": status,
            "wall_time": wall,
            "cpu_time": usage.ru_utime + usage.ru_stime,
            "max_rss_kb": usage.ru_maxrss,
            "files": files,
            "layers": layers,
        }))

    # -- init: PID 1 of the run's namespace, becomes the program ------------------

    def _init(self, job: dict, work: str, layers: dict, stdin_fd: int, out_w: int, err_w: int) -> None:
        code = 127
        try:
            if layers["pid_namespace"] and layers["mount_namespace"]:
                jail.mount_fresh_proc()
            if layers["ipc_namespace"]:
                jail.set_hostname("sandbox")
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
            jail.set_no_new_privs()
            os.chdir(work)
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": work, "TMPDIR": "/tmp",
                   "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2"}
            env.update(job.get("env", {}))
            if job["mode"] == "inline-python":
                code = _run_python_inline(os.path.join(work, job["main"]), env)
            else:
                os.execve(job["argv"][0], job["argv"], env)
        except BaseException as exc:  # noqa: BLE001 - must never return into the worker loop
            try:
                os.write(2, f"sandbox: could not start the program: {exc}\n".encode())
            except OSError:
                pass
        os._exit(code)

    # -- the worker side of one job ---------------------------------------------

    def run(self, job: dict) -> dict:
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        res_r, res_w = os.pipe2(os.O_CLOEXEC)
        keeper = os.fork()
        if keeper == 0:
            code = 0
            try:
                for fd in (out_r, err_r, res_r):
                    os.close(fd)
                self._keeper(job, out_w, err_w, res_w)
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 1
            os._exit(code)
        for fd in (out_w, err_w, res_w):
            os.close(fd)
        try:
            return self._supervise(job, keeper, out_r, err_r, res_r)
        finally:
            for fd in (out_r, err_r, res_r):
                os.close(fd)
            os.waitpid(keeper, 0)

    def _supervise(self, job: dict, keeper: int, out_r: int, err_r: int, res_r: int) -> dict:
        cap = job["max_output"]
        streams = {out_r: bytearray(), err_r: bytearray()}
        truncated = {out_r: False, err_r: False}
        res_buf = bytearray()
        init_pid = None
        deadline = None
        timed_out = False
        open_fds = {out_r, err_r, res_r}
        poller = select.poll()
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        while open_fds:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                if timed_out:
                    # The tree refused to die within the grace period: give up on it.
                    os.kill(keeper, signal.SIGKILL)
                    break
                timed_out = True
                _kill_tree(init_pid)
                deadline = now + _KILL_GRACE_S
                continue
            wait_ms = -1 if deadline is None else max(1, int((deadline - now) * 1000))
            for fd, _ in poller.poll(wait_ms):
                chunk = os.read(fd, _READ_CHUNK)
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                elif fd == res_r:
                    res_buf += chunk
                    if init_pid is None and len(res_buf) >= frames.HEADER.size:
                        init_pid = _peek_pid(res_buf)
                        if init_pid is not None:
                            deadline = time.monotonic() + job["timeout"]
                else:
                    room = cap - len(streams[fd])
                    if room > 0:
                        streams[fd] += chunk[:room]
                    if len(chunk) > room:
                        truncated[fd] = True
        report = _last_frame(res_buf)
        if report is None:
            raise RuntimeError("the sandbox keeper died before reporting; see the worker log")
        return {
            "timed_out": timed_out,
            "stdout": bytes(streams[out_r]),
            "stderr": bytes(streams[err_r]),
            "stdout_truncated": truncated[out_r],
            "stderr_truncated": truncated[err_r],
            **report,
        }


def _kill_tree(init_pid: int | None) -> None:
    if init_pid is None:
        return
    for kill in (os.kill, os.killpg):
        try:
            kill(init_pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _peek_pid(buf: bytes) -> int | None:
    for kind, value in frames.iter_frames(bytes(buf)):
        if kind == "pid":
            return value
    return None


def _last_frame(buf: bytes) -> dict | None:
    for kind, value in frames.iter_frames(bytes(buf)):
        if kind == "result":
            return value
    return None


def _safe_join(work: str, rel: str) -> str:
    path = os.path.normpath(os.path.join(work, rel))
    if os.path.isabs(rel) or not path.startswith(work + os.sep):
        raise ValueError(f"file path {rel!r} escapes the work dir")
    return path


def _write_files(work: str, files: dict, executable, uid: int | None) -> None:
    for rel, data in files.items():
        path = _safe_join(work, rel)
        parent = os.path.dirname(path)
        os.makedirs(parent, mode=0o755, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
        os.chmod(path, 0o755 if rel in executable else 0o644)
        if uid is not None:
            os.chown(path, uid, uid)
            while parent.startswith(work):
                os.chown(parent, uid, uid)
                parent = os.path.dirname(parent)


def _fetch_files(work: str, names, max_bytes: int) -> dict:
    files = {}
    for rel in names:
        try:
            with open(_safe_join(work, rel), "rb") as fh:
                files[rel] = fh.read(max_bytes)
        except (OSError, ValueError):
            continue  # absent from the response; the server reports which
    return files


def _run_python_inline(path: str, env: dict) -> int:
    """Execute a Python file in this (freshly forked) interpreter like ``python path``.

    Returns the exit status the interpreter would have had: 0, the
    ``SystemExit`` code, or 1 after printing the traceback.
    """
    os.environ.clear()
    os.environ.update(env)
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace",
                                       buffering=1, closefd=False)
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    status = 0
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        exec(compile(source, path, "exec"), module.__dict__)
        threading._shutdown()
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException as exc:  # noqa: BLE001 - reported exactly like the interpreter does
        # Drop this function's frame so the traceback starts in the program.
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        status = 1
    try:
        import atexit
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uid", type=int, required=True)
    parser.add_argument("--expose", action="append", default=[])
    args = parser.parse_args()
    worker = Worker(args.uid, args.expose)
    inbox, outbox = os.dup(0), os.dup(1)
    # Nothing user-facing may inherit the server's pipes as stdio.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.set_inheritable(inbox, False)
    os.set_inheritable(outbox, False)
    import gc
    gc.freeze()  # keep the collector from dirtying shared pages in every child
    frames.write_frame(outbox, {"layers": worker.layers, "errors": worker.errors, "pid": os.getpid()})
    while True:
        job = frames.read_frame(inbox)
        if job is None:
            return
        try:
            reply = worker.run(job)
        except Exception as exc:  # noqa: BLE001 - reported to the server as a SandboxError
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        frames.write_frame(outbox, reply)


if __name__ == "__main__":
    main()
