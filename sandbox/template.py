"""The pristine template: the process every program is forked from, which never holds a request's data.

Standard library only (the worker loads it by path on the bare interpreter).

A program forked from the worker itself would inherit everything the worker
ever held: earlier requests' stdin, code and replies in freed heap and in
its frames, readable through ``/proc/self/mem`` or ``sys._getframe()``. So
the worker forks this template once, at start, before it reads any request,
and the template forks every program. Per run it receives exactly one byte
and four descriptors (the run's spec, stdin, stdout and stderr) and answers
the child's pid; it never reads what the descriptors hold. The child, whose
only parent is the worker (``CLONE_PARENT``: the worker reaps it, times it
and kills it), reads its own spec and becomes the program.
"""
from __future__ import annotations

import _socket
import array
import atexit
import os
import pickle
import random
import struct
import sys
import types

import jail

_PID = struct.Struct("q")
_FDS_PER_RUN = 4  # spec, stdin, stdout, stderr


class TemplateFailed(OSError):
    """The template process is gone; the worker cannot fork pristine programs any more."""


class Template:
    """The worker's handle on its template process."""

    def __init__(self, pid: int, channel: _socket.socket):
        self.pid = pid
        self._channel = channel

    @classmethod
    def start(cls, setup) -> "Template":
        """Fork the template from the calling (not yet request-tainted) worker.

        ``setup`` is the worker's ``Worker``: the child reads its layers, uid,
        clone flags and cgroup from it.
        """
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs, setup)
        theirs.close()
        return cls(pid, ours)

    def spawn(self, fds: list[int]) -> int:
        """Fork a program's child with ``fds`` (spec, stdin, stdout, stderr); return its pid."""
        self._channel.sendmsg([b"r"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))])
        answer = self._channel.recv(_PID.size)
        if len(answer) != _PID.size:
            raise TemplateFailed(f"the sandbox template (pid {self.pid}) is gone")
        (pid,) = _PID.unpack(answer)
        if pid < 0:
            raise OSError(-pid, f"clone of a program failed: {os.strerror(-pid)}")
        return pid


def _serve(channel: _socket.socket, setup) -> None:
    """The template's loop: one clone per request byte, until the worker goes away."""
    jail.die_with_parent()
    if setup.cgroup is not None:
        # The template lives in the run cgroup, so each program is born in it:
        # moving every child in (a cgroup attach, ~0.2 ms) would cost each run.
        os.write(setup.cgroup.procs_fd, b"0")
        os.close(setup.cgroup.procs_fd)
    space = _socket.CMSG_SPACE(_FDS_PER_RUN * 4)
    flags = setup.clone_flags | jail.CLONE_PARENT
    while True:
        try:
            data, ancillary, _, _ = channel.recvmsg(1, space)
        except OSError:
            os._exit(1)
        if not data:
            os._exit(0)
        fds = array.array("i")
        for _, _, payload in ancillary:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        # A fresh interpreter seeds random from urandom; the clone skips
        # CPython's at-fork reseeding (jail.fork_into), so reseed here, where
        # the pages touched are the template's own, not copied into the child.
        random.seed()
        try:
            pid = jail.fork_into(flags)
        except OSError as exc:
            pid = -exc.errno
        if pid == 0:
            _become_program(setup, list(fds))
        for fd in fds:
            os.close(fd)
        channel.send(_PID.pack(pid))


def _become_oom_victim() -> None:
    """Make this process the one the OOM killer picks first (``oom_score_adj`` 1000)."""
    # os.open/os.write, not open(): a text file object cost the child ~60 us of
    # allocations and copy-on-write faults for a one-line write.
    fd = os.open(b"/proc/self/oom_score_adj", os.O_WRONLY)
    try:
        os.write(fd, b"1000")
    finally:
        os.close(fd)


def _read_spec(fd: int) -> dict:
    # One read of exactly the file's size (lseek: os.fstat builds a stat
    # result): reading in fixed 1 MiB chunks made every run's child map,
    # shrink and unmap two 1 MiB buffers (~70 us). The spec is bounded by the
    # request size limit, far below one read's maximum.
    size = os.lseek(fd, 0, os.SEEK_END)
    data = os.pread(fd, size, 0)
    if len(data) != size:
        raise OSError(f"short read of the run's spec: {len(data)} of {size} bytes")
    return pickle.loads(data)


def _become_program(setup, fds: list[int]) -> None:
    """In the fresh child, PID 1 of the run's namespaces: set up the jail, become the program, never return."""
    code = 127
    try:
        if setup.cgroup is not None:
            # First: the OOM killer ends the program, never the template beside it in
            # the cgroup (memfd or tmpfs pages are nobody's RSS, so badness alone could pick it).
            _become_oom_victim()
        spec_fd, stdin_fd, out_w, err_w = fds
        spec = _read_spec(spec_fd)
        if setup.layers["mount_namespace"] and setup.layers["readonly_root"]:
            jail.mount_tmpfs("/dev/shm", 64, inodes=1024, noexec=True)
            if setup.layers["pid_namespace"]:
                jail.mount_fresh_proc()
            if setup.netns_per_run:
                jail.mount_fresh_sysfs()
        os.setsid()  # without a PID namespace the worker kills the process group
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)  # the spec, the template's channel, the cgroup's file
        jail.apply_limits(
            memory_mb=spec["memory_mb"],
            cpu_seconds=spec["cpu_seconds"],
            nproc=spec["nproc"],
            fsize_mb=spec["fsize_mb"],
            nofile=spec["nofile"],
        )
        if setup.is_root:
            jail.drop_privileges(setup.uid)
        jail.die_with_parent()  # a crashed worker must not leave its program running
        work = spec["work"]
        os.chdir(work)
        # The environment was set once, in the worker (PROGRAM_ENV), HOME as the usual work dir.
        if os.environ.get("HOME") != work:
            os.environ["HOME"] = work
        if spec["mode"] == "inline-python":
            code = _run_python_inline(os.path.join(work, spec["main"]), spec["source"])
        else:
            os.execve(spec["argv"][0], spec["argv"], os.environ)
    except BaseException as exc:  # noqa: BLE001 - must never return into the template's loop
        try:
            os.write(2, f"sandbox: could not start the program: {exc}\n".encode())
        except OSError:
            pass
    os._exit(code)


def install_program_stdio() -> None:
    """Make ``sys.stdin``/``stdout``/``stderr`` the text streams ``python`` gives a program, once, before forking.

    They only name fds 0, 1 and 2, which each run's child points at its own
    stdin file and output pipes, so every child inherits them ready to use.
    Neither the worker nor the template reads stdin or writes stdout, and
    stderr (tracebacks only) is line-buffered, so no child inherits buffered
    data. Swapping the streams in each child instead cost ~170 copy-on-write
    page faults (~0.5 ms) per run.
    """
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1,
                                       closefd=False)


def _run_python_inline(path: str, source: bytes) -> int:
    """Execute ``source``, the Python file at ``path``, in this (freshly forked) interpreter like ``python path``.

    The source comes from the spec, not from reading the file back (which
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
