"""The pristine template: the process every program is forked from, which never holds a request's data.

Standard library only (the worker loads it by path on the bare interpreter).

A program forked from the worker itself would inherit everything the worker
ever held: earlier requests' stdin, code and replies in freed heap and in
its frames, readable through ``/proc/self/mem`` or ``sys._getframe()``. So
the worker forks this template once, at start, before it reads any request,
and the template forks every program. Per run it receives exactly one byte
and five descriptors (the run's spec, stdin, stdout, stderr and memory
cgroup) and answers
the child's pid; it never reads what the descriptors hold. The child, whose
only parent is the worker (``CLONE_PARENT``: the worker reaps it, times it
and kills it), reads its own spec and becomes the program.
"""
from __future__ import annotations

import _socket
import array
import atexit
import builtins
import gc
import os
import pickle
import random
import signal
import struct
import sys
import types

import jail

_PID = struct.Struct("q")
_FDS_PER_RUN = 5  # spec, stdin, stdout, stderr and, with a memory cgroup, the file that joins the run's cgroup
# An exec'd program's init writes its wait status over the start of the spec
# file, behind a magic no pickle starts with.
_STATUS = struct.Struct("8si")
_STATUS_MAGIC = b"\xffstatus\xff"
_STATUS_FD = 3
_CPYTHON_SIGNALS = (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)  # what the interpreter sets up at start


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
            try:
                _serve(theirs, setup)
            finally:  # an exception (KeyboardInterrupt too) must not unwind into the worker's code
                os._exit(1)
        theirs.close()
        return cls(pid, ours)

    def spawn(self, fds: list[int]) -> int:
        """Fork a program's child with ``fds`` (spec, stdin, stdout, stderr); return its pid."""
        try:
            self._channel.sendmsg([b"r"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))])
            answer = self._channel.recv(_PID.size)
        except OSError as exc:  # BrokenPipeError, ECONNRESET: the template died between runs
            raise TemplateFailed(f"the sandbox template (pid {self.pid}) is gone: {exc}") from exc
        if len(answer) != _PID.size:
            raise TemplateFailed(f"the sandbox template (pid {self.pid}) is gone")
        (pid,) = _PID.unpack(answer)
        if pid < 0:
            raise OSError(-pid, f"clone of a program failed: {os.strerror(-pid)}")
        return pid


def _serve(channel: _socket.socket, setup) -> None:
    """The template's loop: one clone per request byte, until the worker goes away."""
    jail.die_with_parent()
    # Warm Python runs start from here: the signals a fresh `python` sets up itself
    # (SIGPIPE and SIGXFSZ ignored, SIGINT its handler) stay, the server's others go.
    jail.default_signals(keep=_CPYTHON_SIGNALS)
    # Set here, once, for every warm run to inherit (the server may have
    # started the worker with SIGINT ignored); an interrupted template exits.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    mounts = _run_mounts(setup)
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
            _become_program(setup, mounts, list(fds))
        for fd in fds:
            os.close(fd)
        channel.send(_PID.pack(pid))


def _run_mounts(setup) -> tuple[jail.Mount, ...]:
    """What each run's child mounts in its own mount namespace: its /dev/shm, its PID namespace's /proc and,
    with a network namespace per run, its sysfs. Its devpts is the worker's (``jail.PtyInstance``)."""
    if not (setup.layers["mount_namespace"] and setup.layers["readonly_root"]):
        return ()
    mounts = [jail.tmpfs("/dev/shm", 64, inodes=1024, noexec=True)]
    if setup.layers["pid_namespace"]:
        mounts.append(jail.fresh_proc())
    if setup.netns_per_run:
        mounts.append(jail.fresh_sysfs())
    return tuple(mounts)


def _set_oom_score_adj(value: bytes) -> None:
    """Set this process's ``oom_score_adj`` (1000: the OOM killer's first choice; -1000: never chosen)."""
    # os.open/os.write, not open(): a text file object cost the child ~60 us of
    # allocations and copy-on-write faults for a one-line write.
    fd = os.open(b"/proc/self/oom_score_adj", os.O_WRONLY)
    try:
        os.write(fd, value)
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


def _become_program(setup, mounts: tuple[jail.Mount, ...], fds: list[int]) -> None:
    """In the fresh child, PID 1 of the run's namespaces: set up the jail, become the program, never return."""
    code = 127
    try:
        spec_fd, stdin_fd, out_w, err_w, *cgroup_join = fds
        if cgroup_join:
            # First: the OOM killer's first choice, then into the run's own
            # memory cgroup (in that order, so no moment in the cgroup finds it
            # less likely to be chosen). The template stays outside the
            # cgroup (in the worker's), so no program's memory, nor anything a
            # run leaves charged, can make the OOM killer pick the template
            # (oom_score_adj -1000 would need CAP_SYS_RESOURCE, which hosts
            # may not grant).
            _set_oom_score_adj(b"1000")
            os.write(cgroup_join[0], b"0")
        spec = _read_spec(spec_fd)
        for mount in mounts:
            mount.apply()
        os.setsid()  # without a PID namespace the worker kills the process group
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        under_init = spec["mode"] != "inline-python" and setup.layers["pid_namespace"]
        if under_init and spec_fd != _STATUS_FD:
            os.dup2(spec_fd, _STATUS_FD, inheritable=False)  # where init hands the program's status back
        elif under_init:
            os.set_inheritable(_STATUS_FD, False)
        os.closerange(_STATUS_FD + 1 if under_init else 3, 65536)  # the template's channel, the cgroup's file
        if under_init:
            program = jail.fork_into(0)
            if program != 0:
                _reap_as_init(program)
        jail.set_limits(spec["rlimits"])
        if setup.is_root:
            jail.drop_privileges(setup.uid)
        jail.die_with_parent()  # a crashed worker must not leave its program running
        work = spec["work"]
        os.chdir(work)
        # The environment was set once, in the worker (PROGRAM_ENV), HOME as the usual work dir.
        if os.environ.get("HOME") != work:
            os.environ["HOME"] = work
        if spec["mode"] == "inline-python":
            _run_python_inline(os.path.join(work, spec["main"]), spec["source"])
        else:
            jail.default_signals()  # ignored and blocked signals survive exec
            os.execve(spec["argv"][0], spec["argv"], os.environ)
    except BaseException as exc:  # noqa: BLE001 - must never return into the template's loop
        try:
            os.write(2, f"sandbox: could not start the program: {exc}\n".encode())
        except OSError:
            pass
    os._exit(code)


def _reap_as_init(program: int) -> None:
    """PID 1 of an exec'd program's namespace: reap until the program is gone, hand its wait status to the worker.

    The program is PID 2. As PID 1 it would ignore every signal whose default
    action kills (the kernel protects a namespace's init): a C program writing
    to a closed pipe would spin instead of dying by SIGPIPE, and ``abort()``
    would not end in SIGABRT. This process stays root and runs nothing of the
    program's, so the program can neither signal nor inspect it: the status
    it writes (into the run's spec file, which the worker still holds) comes
    from ``waitpid``. Its exit then ends the namespace, daemons included.
    """
    for fd in (0, 1, 2):
        os.close(fd)  # the program's pipes: the worker sees their end when the program's side closes
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(127)
        if pid == program:
            break
    os.pwrite(_STATUS_FD, _STATUS.pack(_STATUS_MAGIC, status), 0)
    os._exit(0)


def program_status(spec_fd: int, wait_status: int) -> tuple[int, bool]:
    """The run's wait status, and whether an init reported it: the program's, read from the spec file where
    the run's init wrote it, else (warm runs, or an init killed by the worker) ``wait_status``, the clone's own."""
    if os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == 0:
        magic, status = _STATUS.unpack(os.pread(spec_fd, _STATUS.size, 0).ljust(_STATUS.size, b"\0"))
        if magic == _STATUS_MAGIC:
            return status, True
    return wait_status, False


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


def _run_python_inline(path: str, source: bytes) -> None:
    """Execute ``source``, the Python file at ``path``, in this (freshly forked) interpreter like ``python path``,
    and end the process with the status CPython would have: never returns.

    The source comes from the spec, not from reading the file back (which
    cost ~0.08 ms per run); compiled from bytes, it is decoded as the
    interpreter decodes a file (UTF-8 or its PEP 263 coding line).

    What runs after the program is CPython's exit path, rebuilt from
    references bound to this frame's locals before the program starts: the
    program may replace any module attribute (``os._exit``,
    ``atexit._run_exitfuncs``, ``builtins.int``, this module's functions) and
    CPython's own exit path, written in C, reads none of them. It honours
    what CPython honours: ``sys.excepthook``, ``sys.stdout``/``sys.stderr``,
    ``threading._shutdown``. ``__main__``'s ``__builtins__`` is the
    ``builtins`` module, as in CPython.
    """
    exit_now, run_exitfuncs, system, get_attr, type_of = os._exit, atexit._run_exitfuncs, sys, getattr, type
    base_exception, system_exit, exit_status, flush_std_files = BaseException, SystemExit, _exit_status, _flush_std_files
    keyboard_interrupt, is_instance = KeyboardInterrupt, isinstance
    finalize_main, exit_by_sigint = _finalize_main, _exit_by_sigint
    system.argv = [path]
    system.path[0] = os.path.dirname(path)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = builtins
    system.modules["__main__"] = module
    status = 0
    interrupted = False
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except system_exit as exc:
        status = exit_status(exc, system)
    except base_exception as exc:  # noqa: BLE001 - reported exactly like the interpreter does
        # Drop this function's frame so the traceback starts in the program.
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        interrupted = is_instance(exc, keyboard_interrupt)
        hook = get_attr(system, "excepthook", None)
        try:
            hook(type_of(exc), base_exception.with_traceback(exc, tb), tb)
        except base_exception:  # noqa: BLE001 - CPython falls back to its own printer
            system.__excepthook__(type_of(exc), exc, tb)
        status = 1
        del exc, tb
    # As Py_FinalizeEx: wait for the program's non-daemon threads, run atexit
    # callbacks (the C function, whatever the module attribute now is), flush,
    # release __main__'s globals, flush again; as Py_RunMain, an uncaught
    # KeyboardInterrupt then ends the process by SIGINT.
    try:
        threading = system.modules.get("threading")
        if threading is not None:
            threading._shutdown()
    except base_exception:  # noqa: BLE001 - CPython reports and goes on
        pass
    run_exitfuncs()
    if flush_std_files(system) < 0:
        status = 120  # Py_RunMain: a failed flush overrides the status
    del module
    finalize_main(system)
    if flush_std_files(system) < 0:
        status = 120
    if interrupted:
        status = exit_by_sigint()
    exit_now(status)


# The helpers below run after the program: whatever they use is bound as a
# default argument when this module loads, out of reach of module attributes.
def _exit_status(exc, system, get_attr=getattr, int_value=int.__int__, type_error=TypeError,
                 base_exception=BaseException, text=str) -> int:
    """The status of an uncaught ``SystemExit``, as CPython's ``_Py_HandleSystemExit`` computes it.

    An int (any subclass: its value, not its methods) is cut to a C long
    (overflow: -1) and then to the 8 bits the kernel keeps; None is 0;
    anything else is printed to stderr and gives 1.
    """
    code = get_attr(exc, "code", exc)
    if code is None:
        return 0
    try:
        value = int_value(code)  # int's own conversion: PyLong_Check, whatever the subclass overrides
    except type_error:
        try:  # CPython writes str(code) to sys.stderr; a failure to print is ignored
            stream = get_attr(system, "stderr", None)
            if stream is not None:
                stream.write(text(code))
                stream.write("\n")
        except base_exception:  # noqa: BLE001
            pass
        return 1
    if not -(1 << 63) <= value < (1 << 63):
        return 255
    return value & 0xFF


def _finalize_main(system, collect=gc.collect, get_attr=getattr, set_attr=setattr, dictionary=dict,
                   base_exception=BaseException, is_instance=isinstance) -> None:
    """What CPython's finalization does to ``__main__``, so that the finalizers it triggers run as in
    ``python file.py`` (a global's ``__del__``, a suspended generator's ``finally``, an unclosed file
    object's flush), before the standard streams' last flush.

    The standard streams are put back (``sys.stdout = sys.__stdout__``, …),
    ``__main__`` leaves ``sys.modules`` and its globals are released in
    the order they were defined (as when the interpreter frees the module's
    dict), then the collector runs over its two young generations (a full
    collection, ~0.1 ms, also empties the allocator's free lists). Not done:
    the modules the program imported keep their globals, and a reference
    cycle the collector had already moved to its oldest generation is not
    finalized.
    """
    for name in ("stdin", "stdout", "stderr"):
        try:
            original = get_attr(system, f"__{name}__", None)
            if get_attr(system, name, None) is not original:
                set_attr(system, name, original)
        except base_exception:  # noqa: BLE001 - CPython reports and goes on
            pass
    try:
        namespace = get_attr(system.modules.pop("__main__", None), "__dict__", None)
        if is_instance(namespace, dictionary):
            namespace.clear()
    except base_exception:  # noqa: BLE001 - a program that replaced sys.modules keeps its globals
        pass
    namespace = None
    collect(1)


def _exit_by_sigint(set_handler=signal.signal, kill=os.kill, get_pid=os.getpid, sigint=int(signal.SIGINT),
                    default=signal.SIG_DFL, os_error=OSError) -> int:
    """After an uncaught KeyboardInterrupt: die by SIGINT, as CPython does; PID 1 of a namespace (a warm run)
    cannot, and gets CPython's own fallback status, 128 + SIGINT."""
    try:
        set_handler(sigint, default)
        kill(get_pid(), sigint)
    except os_error:
        pass
    return 128 + sigint


def _flush_std_files(system, get_attr=getattr, base_exception=BaseException, write=os.write, type_of=type,
                     text=repr) -> int:
    """CPython's ``flush_std_files``: flush ``sys.stdout`` then ``sys.stderr``; -1 if either fails."""
    status = 0
    for name in ("stdout", "stderr"):
        stream = get_attr(system, name, None)
        if stream is None:
            continue
        try:
            if get_attr(stream, "closed", False):
                continue
        except base_exception:  # noqa: BLE001 - CPython treats an unreadable 'closed' as open
            pass
        try:
            stream.flush()
        except base_exception as exc:  # noqa: BLE001 - reported like PyErr_WriteUnraisable
            status = -1
            if name == "stdout":
                try:
                    write(2, f"Exception ignored in: {text(stream)}\n{type_of(exc).__name__}: {exc}\n".encode())
                except OSError:
                    pass
    return status
