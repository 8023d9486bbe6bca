"""Linux isolation primitives for the sandbox worker: namespaces, mounts, rlimits.

Standard library only: this module is loaded by ``worker.py``, which runs on
the bare sandbox interpreter (``python -I -S``) and must not import the rewardsmith
package or anything from site-packages.

Every function either applies one layer or raises ``OSError``; the caller
decides whether a missing layer is fatal (see ``--allow-weak-isolation``).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import resource
import signal
import stat

CLONE_PARENT = 0x00008000
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
MNT_DETACH = 2

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Namespaces a run gets, by the isolation layer each provides.
NAMESPACES = {
    "mount_namespace": CLONE_NEWNS,
    "pid_namespace": CLONE_NEWPID,
    "network_namespace": CLONE_NEWNET,
    "ipc_namespace": CLONE_NEWIPC | CLONE_NEWUTS,
}

_SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.syscall.restype = ctypes.c_long
# PyDLL keeps the GIL across the call, exactly as os.fork() does around fork().
_clone = ctypes.PyDLL(None, use_errno=True).syscall
_clone.restype = ctypes.c_long
_clone.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]



def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _b(value: str | None) -> bytes | None:
    return None if value is None else value.encode()


def unshare(flags: int) -> None:
    """Move the calling process into new namespaces (``unshare(2)``)."""
    _check(_libc.unshare(flags), f"unshare({flags:#x})")


def fork_into(flags: int) -> int:
    """Fork a child that starts in new namespaces (``clone(2)`` with ``flags``); 0 in the child.

    One system call instead of fork + unshare + fork: with CLONE_NEWPID the
    child is PID 1 of a fresh PID namespace and this process stays its
    parent, so it can wait4() it and kill the whole namespace by killing it.

    For single-threaded callers only (the sandbox worker). Unlike
    ``os.fork()``, CPython's at-fork hooks do not run: they repair locks and
    thread states that other threads may have held, and with no other thread
    there is nothing to repair, while running them dirtied ~40 copy-on-write
    pages (~0.25 ms) in every child. Registered ``os.register_at_fork``
    callbacks do not run either: the caller does what its child needs (the
    worker reseeds ``random``). Limitation: glibc's cached thread id is not
    refreshed in the child, so ``raise()`` there fails until the child
    execs (``abort()`` still ends the process, as it does for any PID 1).
    """
    if _SYS_CLONE is None:
        if not flags:
            return os.fork()
        raise OSError(errno.ENOSYS, f"clone with namespaces is not wired for {platform.machine()}")
    pid = _clone(_SYS_CLONE, flags | signal.SIGCHLD, None, None, None, None)
    if pid == 0:
        return 0
    err = ctypes.get_errno()
    if pid < 0:
        raise OSError(err, f"clone({flags:#x}): {os.strerror(err)}")
    return pid


def available_namespaces() -> dict[str, bool]:
    """Which of ``NAMESPACES`` this process may create (each tried in a throwaway child)."""
    found = {}
    for name, flag in NAMESPACES.items():
        pid = os.fork()
        if pid == 0:
            os._exit(0 if _libc.unshare(flag) == 0 else 1)
        _, status = os.waitpid(pid, 0)
        found[name] = status == 0
    return found


def umount(target: str) -> None:
    """Lazily detach the mount on ``target``."""
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


class Mount:
    """One ``mount(2)`` with its arguments encoded once.

    The template prepares a run's mounts before it forks anything: the
    child then mounts with no string work, whose allocations would copy
    template pages into every run.
    """

    def __init__(self, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None):
        self.target = target
        self._args = (_b(source), _b(target), _b(fstype), flags, _b(data))

    def apply(self) -> None:
        """Mount; raises ``OSError`` naming the target on failure."""
        _check(_libc.mount(*self._args), f"mount {self.target}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """``mount(2)``; raises ``OSError`` naming the target on failure."""
    Mount(source, target, fstype, flags, data).apply()


def set_hostname(name: str) -> None:
    """Set the UTS hostname (only inside a private UTS namespace)."""
    raw = name.encode()
    _check(_libc.sethostname(raw, len(raw)), "sethostname")


def set_no_new_privs() -> None:
    """Forbid privilege gain through setuid binaries or file capabilities."""
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


def die_with_parent() -> None:
    """SIGKILL this process when its parent (the worker) dies.

    Must come after the last uid change: changing credentials clears it.
    """
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")


_SYS_RT_SIGACTION = {"x86_64": 13, "aarch64": 134}.get(platform.machine())
_SYS_RT_SIGPROCMASK = {"x86_64": 14, "aarch64": 135}.get(platform.machine())
_SIG_SETMASK = 2
_KERNEL_NSIG = 64  # signals 1..64; the kernel's sigset_t is 8 bytes


def set_signal_disposition(signum: int, handler: int) -> None:
    """Set ``signum``'s disposition to ``SIG_DFL`` (0) or ``SIG_IGN`` (1) with raw ``rt_sigaction``.

    Raw because glibc and Python's ``signal`` module refuse signals 32 and 33
    (glibc's own), yet a process may inherit them ignored all the same.
    """
    if _SYS_RT_SIGACTION is None:
        signal.signal(signum, signal.Handlers(handler))
        return
    # struct kernel_sigaction {handler, flags, restorer, mask}: only the handler is non-zero.
    action = (ctypes.c_ulong * 4)(handler, 0, 0, 0)
    _check(_libc.syscall(_SYS_RT_SIGACTION, signum, ctypes.byref(action), None, 8), f"rt_sigaction({signum})")


def default_signals(keep: tuple[int, ...] = ()) -> None:
    """Every signal but ``keep`` back to its default action, and none blocked, as in a freshly booted process.

    An ignored disposition and the blocked mask survive ``exec`` and ``fork``:
    a server started under ``nohup``, or by a runtime that ignores or blocks
    signals, would otherwise hand them to every program, and CPython itself
    ignores SIGPIPE and SIGXFSZ (a pipeline writer would spin instead of dying).
    """
    numbers = range(1, _KERNEL_NSIG + 1) if _SYS_RT_SIGACTION is not None else signal.valid_signals()
    for signum in numbers:
        if signum not in (signal.SIGKILL, signal.SIGSTOP) and signum not in keep:
            set_signal_disposition(signum, 0)
    if _SYS_RT_SIGPROCMASK is None:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        return
    empty = ctypes.c_ulong(0)
    _check(_libc.syscall(_SYS_RT_SIGPROCMASK, _SIG_SETMASK, ctypes.byref(empty), None, 8), "rt_sigprocmask")


def become_subreaper() -> None:
    """Adopt orphaned descendants (programs of a crashed worker) so they can be reaped here."""
    _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(CHILD_SUBREAPER)")


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid`` (all its threads)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += [int(p) for p in fh.read().split()]
        except OSError:
            continue
    return found


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


# Ptys per devpts instance (one per run): far more than a program needs, a sliver of the host's pool.
RUN_PTYS = 16
_AUDIT_ARCH_X86_64 = 0xC000003E
_CLONE_NEWUSER = 0x10000000
# x86_64 system calls a program never needs and that open kernel attack
# surface. Mount APIs stay allowed (the worker needs them, and they need
# CAP_SYS_ADMIN, which only the refused user namespaces could give a program).
_DENIED_X86_64 = {
    "ptrace": 101, "add_key": 248, "request_key": 249, "keyctl": 250, "perf_event_open": 298, "bpf": 321,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    # File-system watches: the runtimes' files are the host's inodes, shared by
    # every run, so a watch would show a program what concurrent runs open.
    "inotify_init": 253, "inotify_init1": 294, "fanotify_init": 300,
    # AIO contexts are a host-wide pool (fs.aio-max-nr): one run could take them all.
    "io_setup": 206,
}
# Flushing every file system's dirty pages is the host's business: sync() and
# syncfs() succeed without doing anything (a program's own fsync still works).
# Advisory locks are no-ops too: the runtimes' files are the host's inodes, so
# a lock on one (even read-only: flock, or a read lock) would be seen by
# concurrent runs and the host, outlive its run in an open file description
# kept in flight, and block the host's own lock. The filter sees only the fd,
# never the file, so every lock of a program is a no-op, its own files' too.
# Success, not an error: ordinary programs lock their own files (sqlite,
# libraries that flock a state file) and keep working, as one process of one
# run changes nothing; what is lost is mutual exclusion between processes of
# the same run.
_NOOP_X86_64 = {"sync": 162, "syncfs": 306, "flock": 73}
_NR_FCNTL = 72
# fcntl commands refused (EPERM): notifications of other processes' use of a
# file, directory notifications (F_NOTIFY, the inotify of old) and leases
# (F_SETLEASE: its break is a notification of another's open; F_GETLEASE
# only reports the caller's own lease, so it stays and answers "none").
_FCNTL_DENIED = {"F_SETLEASE": 1024, "F_NOTIFY": 1026}
# fcntl commands that take or drop a lock succeed doing nothing: process-
# associated and open-file-description (OFD) locks. The queries (F_GETLK,
# F_OFD_GETLK) stay real: with every program's lock a no-op, no run ever
# holds one, so a query shows another run nothing; what it can show is a
# lock a host process holds on a shared file (its type and range; its pid
# reads 0 outside the run's PID namespace), which no run can set or change.
# A no-op query would be worse: it leaves the caller's struct flock as
# passed, which reads as a conflicting lock, and sqlite's WAL mode then waits
# ~10 s for a holder that does not exist and fails ("locking protocol").
_FCNTL_NOOP = {"F_SETLK": 6, "F_SETLKW": 7, "F_OFD_SETLK": 37, "F_OFD_SETLKW": 38}
_NR_CLONE, _NR_UNSHARE, _NR_CLONE3 = 56, 272, 435
_NR_SOCKET, _NR_SOCKETPAIR = 41, 53
# Socket families a program may create: an allow list, since every family is
# kernel code and some are not network-namespaced (AF_VSOCK reaches the
# hypervisor; a path-bound AF_UNIX socket reaches any host service whose
# socket file it can see). IPv4/IPv6 sockets are harmless in the empty network
# namespace and expected by libraries; AF_UNIX only as a connected pair
# (``socketpair``: pipes for multiprocessing and asyncio), and only of stream
# types, since a datagram socket can ``sendto`` any path.
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
_SOCKET_FAMILIES = (_AF_INET, _AF_INET6)
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF


def seccomp_available() -> bool:
    """Whether ``install_seccomp_filter`` works here (tried in a throwaway child)."""
    if platform.machine() != "x86_64":
        return False  # the filter is written for x86_64 system call numbers
    pid = os.fork()
    if pid == 0:
        try:
            set_no_new_privs()
            install_seccomp_filter()
            os._exit(0)
        except BaseException:  # noqa: BLE001 - any failure means "not available"
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return status == 0


def install_seccomp_filter() -> None:
    """Deny user namespaces, io_uring, AIO contexts, bpf, ptrace, perf events, userfaultfd, keyrings,
    inotify/fanotify, ``F_NOTIFY`` and ``F_SETLEASE`` (EPERM), make ``sync``/``syncfs`` and advisory
    locks (``flock``, ``fcntl`` record and OFD locks) no-ops, and deny sockets outside
    ``_SOCKET_FAMILIES`` (EAFNOSUPPORT).

    ``clone``/``unshare`` are refused only with CLONE_NEWUSER (the one
    namespace an unprivileged process may create); ``clone3`` answers ENOSYS,
    so glibc falls back to ``clone``, whose flags the filter can read. System
    calls of other ABIs (i386, x32) answer ENOSYS. Requires no_new_privs.
    """
    if platform.machine() != "x86_64":
        raise OSError(errno.ENOSYS, f"no seccomp filter for {platform.machine()}")
    ld_w, jeq, jset, jge, ret, and_k = 0x20, 0x15, 0x45, 0x35, 0x06, 0x54
    allow, errno_ret = 0x7FFF0000, 0x00050000
    deny, nosys, no_family = errno_ret | errno.EPERM, errno_ret | errno.ENOSYS, errno_ret | errno.EAFNOSUPPORT
    prog = [
        (ld_w, 0, 0, 4),  # arch
        (jeq, 1, 0, _AUDIT_ARCH_X86_64),
        (ret, 0, 0, nosys),
        (ld_w, 0, 0, 0),  # syscall number
        (jge, 0, 1, 0x40000000),  # x32 ABI
        (ret, 0, 0, nosys),
        (jeq, 0, 1, _NR_CLONE3),
        (ret, 0, 0, nosys),
    ]
    for nr in (_NR_CLONE, _NR_UNSHARE):
        prog += [
            (jeq, 0, 4, nr),
            (ld_w, 0, 0, 16),  # low 32 bits of the first argument (the flags)
            (jset, 0, 1, _CLONE_NEWUSER),
            (ret, 0, 0, deny),
            (ret, 0, 0, allow),
        ]
    # socket(family, ...): only the allowed families.
    prog += [(jeq, 0, 3 + len(_SOCKET_FAMILIES), _NR_SOCKET), (ld_w, 0, 0, 16)]
    for index, family in enumerate(_SOCKET_FAMILIES):
        prog.append((jeq, len(_SOCKET_FAMILIES) - index, 0, family))
    prog += [(ret, 0, 0, no_family), (ret, 0, 0, allow)]
    # socketpair(AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET [| flags], ...) only.
    prog += [
        (jeq, 0, 8, _NR_SOCKETPAIR),
        (ld_w, 0, 0, 16),  # family
        (jeq, 0, 4, _AF_UNIX),
        (ld_w, 0, 0, 24),  # type, with SOCK_NONBLOCK/SOCK_CLOEXEC masked off
        (and_k, 0, 0, _SOCK_TYPE_MASK),
        (jeq, 2, 0, _SOCK_STREAM),
        (jeq, 1, 0, _SOCK_SEQPACKET),
        (ret, 0, 0, no_family),
        (ret, 0, 0, allow),
    ]
    # fcntl(fd, cmd, ...): the command is the low 32 bits of the second argument (the kernel's is unsigned int).
    commands = [(cmd, deny) for cmd in _FCNTL_DENIED.values()] + [(cmd, errno_ret) for cmd in _FCNTL_NOOP.values()]
    prog += [(jeq, 0, len(commands) + 4, _NR_FCNTL), (ld_w, 0, 0, 24)]
    for index, (cmd, action) in enumerate(commands):
        # Past the remaining compares: allow, then deny, then the no-op.
        prog.append((jeq, len(commands) - index + (1 if action == errno_ret else 0), 0, cmd))
    prog += [(ret, 0, 0, allow), (ret, 0, 0, deny), (ret, 0, 0, errno_ret)]
    for nr in _DENIED_X86_64.values():
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, deny)]
    for nr in _NOOP_X86_64.values():
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, errno_ret)]
    prog.append((ret, 0, 0, allow))
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), filters)
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "prctl(SECCOMP)")


def _unescape(field: bytes) -> str:
    """A mountinfo path field as the path it names: the kernel writes space, tab, newline and backslash as
    octal escapes (``\\040``, ``\\011``, ``\\012``, ``\\134``); any other byte is itself."""
    return os.fsdecode(_OCTAL_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), field))


_OCTAL_ESCAPE = re.compile(rb"\\([0-3][0-7]{2})")


def parse_mountinfo(text: bytes) -> list[tuple[int, str, set[str]]]:
    """(mount id, mount point, per-mount options) of every line of a ``/proc/<pid>/mountinfo``."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(b" ")
        mounts.append((int(fields[0]), _unescape(fields[4]), set(os.fsdecode(fields[5]).split(","))))
    return mounts


def _mountinfo() -> list[tuple[int, str, set[str]]]:
    with open("/proc/self/mountinfo", "rb") as fh:
        return parse_mountinfo(fh.read())


def _mount_id_at(path: str) -> int | None:
    """The id of the mount that ``path`` reaches now (None if nothing is there): a mount
    stacked on top of another, or over a directory above it, hides it."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with open(f"/proc/self/fdinfo/{fd}") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("mnt_id:"))
    finally:
        os.close(fd)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def first_closed_ancestor(path: str) -> str | None:
    """The shallowest directory on ``path`` that others may not traverse."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


# The host directories a run sees, read-only, where they exist (the language
# runtimes and their libraries); merged-/usr symlinks (/bin -> usr/bin) are
# recreated as symlinks.
ROOT_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The files of the host's /etc the runtimes read (dynamic linker, compiler
# alternatives, perl's configuration, time zone), read-only.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "perl", "localtime")
# /dev: these device nodes of the host, and a devpts instance of the worker's own.
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine())
_NEW_ROOT = "/tmp"  # where the root is built (a directory every host has), before pivot_root


def enter_minimal_root(expose_paths: list[str], uid: int) -> None:
    """Give the calling process a private mount namespace whose root holds only what programs need, read-only.

    Built once per worker: a small tmpfs with ``ROOT_DIRS``, ``ETC_FILES``
    and ``expose_paths`` (the interpreter's prefix) bound from the host, an
    ``/etc`` of its own (``passwd``, ``group``, ``hosts``, ``nsswitch.conf``
    naming only root and the run's uid), a ``/dev`` with ``DEVICES`` and a
    private devpts instance (``/dev/ptmx``), an empty ``/tmp`` (each run
    mounts its own there), ``/sys`` (empty unless a run's network namespace
    mounts its sysfs) and ``/proc`` (each run mounts its PID namespace's).
    Then ``pivot_root`` into it, the host's root detached, and every mount
    read-only and ``nosuid`` (``nodev`` outside ``/dev``). Nothing else of
    the host — home directories, /root, /tmp, /var, /srv, /mnt, /opt, data
    and project trees, sockets, FIFOs, other device nodes — is reachable.
    """
    if _SYS_PIVOT_ROOT is None:
        raise OSError(errno.ENOSYS, f"pivot_root is not wired for {platform.machine()}")
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = _NEW_ROOT
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,nr_inodes=4096,mode=755")
    for path in ROOT_DIRS:
        _bind_into(root, path)
    os.mkdir(root + "/etc", 0o755)
    for name, text in _etc_files(uid).items():
        with open(f"{root}/etc/{name}", "w") as fh:
            fh.write(text)
    for name in ETC_FILES:
        _bind_into(root, "/etc/" + name)
    for path in expose_paths:
        if not any(_under(path, top) for top in ROOT_DIRS):
            _bind_into(root, path)
    _make_dev(root + "/dev")
    for directory in ("proc", "sys", "tmp"):
        os.mkdir(f"{root}/{directory}", 0o755)
    # The worker's own /proc (the host's PID namespace) until a run mounts its own over it.
    fresh_proc(root + "/proc").apply()
    os.mkdir(root + "/.old", 0o700)
    _check(_libc.syscall(_SYS_PIVOT_ROOT, root.encode(), (root + "/.old").encode()), "pivot_root")
    os.chdir("/")
    umount("/.old")
    os.rmdir("/.old")
    _make_mounts_readonly()


def _etc_files(uid: int) -> dict[str, str]:
    return {
        "passwd": f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{uid}:{uid}:sandbox:/tmp/work:/bin/sh\n",
        "group": f"root:x:0:\nsandbox:x:{uid}:\n",
        "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
        "hostname": "sandbox\n",
    }


def _bind_into(root: str, path: str) -> None:
    """Recreate host ``path`` under ``root``: a symlink as a symlink, a directory or file as a recursive bind."""
    if not os.path.lexists(path):
        return
    target = root + path
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    if os.path.islink(path):
        os.symlink(os.readlink(path), target)
        return
    if os.path.isdir(path):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    mount(path, target, None, MS_BIND | MS_REC)


def _make_dev(dev: str) -> None:
    os.mkdir(dev, 0o755)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
    for name in DEVICES:
        os.close(os.open(f"{dev}/{name}", os.O_WRONLY | os.O_CREAT, 0o666))
        mount("/dev/" + name, f"{dev}/{name}", None, MS_BIND)
    os.mkdir(dev + "/pts", 0o755)
    os.mkdir(dev + "/shm", 0o1777)
    # A devpts instance of this worker's: its runs' ptys are not the host's, nor another worker's
    # (each run mounts one of its own over it: template._run_mounts).
    fresh_devpts(dev + "/pts").apply()
    os.symlink("pts/ptmx", dev + "/ptmx")
    os.symlink("/proc/self/fd", dev + "/fd")
    for number, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{number}", f"{dev}/{name}")


def _make_mounts_readonly() -> None:
    """Remount every mount read-only and nosuid (nodev outside /dev); /proc and /dev/pts stay as they are.

    Fails closed: raises ``OSError`` naming every mount that a path still
    reaches writable afterwards (a remount that failed for any reason).
    """
    for _, point, options in _mountinfo():
        if _keeps_its_flags(point):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID
        if not _under(point, "/dev"):
            flags |= MS_NODEV
        if "noexec" in options:
            flags |= MS_NOEXEC
        try:
            mount(None, point, None, flags)
        except OSError as exc:
            # A mount hidden under another one is unreachable by path: checked below.
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise
    left = writable_mounts()
    if left:
        raise OSError(errno.EPERM, f"these mounts stayed writable after the read-only remount: {left}")


def _keeps_its_flags(point: str) -> bool:
    return _under(point, "/proc") or _under(point, "/dev/pts")


def writable_mounts() -> list[str]:
    """Mount points (besides /proc and /dev/pts) that a path reaches and that are not read-only."""
    return [point for mount_id, point, options in _mountinfo()
            if not _keeps_its_flags(point) and "ro" not in options and _mount_id_at(point) == mount_id]


def tmpfs(target: str, size_mb: int, inodes: int, noexec: bool = False) -> Mount:
    """A fresh world-writable (sticky) tmpfs on ``target``, capped in bytes and in inodes.

    Both caps: empty files use no bytes, yet each costs the kernel ~1 KiB of
    inode and dentry that only ``nr_inodes`` bounds per mount.
    """
    flags = MS_NOSUID | MS_NODEV | (MS_NOEXEC if noexec else 0)
    return Mount("tmpfs", target, "tmpfs", flags, f"size={size_mb}m,nr_inodes={inodes},mode=1777")


def fresh_sysfs() -> Mount:
    """sysfs as seen from the mounting process's network namespace (only its loopback)."""
    return Mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def fresh_devpts(target: str = "/dev/pts") -> Mount:
    """A new devpts instance of at most ``RUN_PTYS`` ptys: a run cannot take the host's pty pool."""
    return Mount("devpts", target, "devpts", MS_NOSUID | MS_NOEXEC,
                 f"newinstance,ptmxmode=0666,mode=0600,max={RUN_PTYS}")


class PtyInstance:
    """The worker's devpts instance (``/dev/pts``), which its runs use one at a time, renewed after any run that
    left a trace in it.

    A trace is a pty still allocated (kept open past the run, an fd in flight
    in a unix-socket cycle) or a changed time or owner of the instance's
    root or ``ptmx`` (a write to a pty master stamps ``ptmx``). Without one,
    the instance is as the last renewal left it: every run starts with all
    ``RUN_PTYS`` free and finds nothing of the run before. Mounting an
    instance in every run's child instead cost ~0.25 ms of CPU per run,
    mostly in tearing it down as the run's mount namespace went.
    """

    TARGET = "/dev/pts"

    def __init__(self) -> None:
        self._mark = self._state()

    def _state(self) -> tuple:
        # Listed before the times are read: the listing may stamp the root's atime once (relatime).
        entries = sorted(os.listdir(self.TARGET))
        return entries, [(st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)
                         for st in (os.stat(self.TARGET), os.stat(self.TARGET + "/ptmx"))]

    def renew_if_used(self) -> bool:
        """Replace the instance with a fresh one if the run that just ended (all its processes gone) left a
        trace in it; whether it did."""
        if self._state() == self._mark:
            return False
        umount(self.TARGET)  # lazily: a pty in flight keeps the old instance alive, out of every later run's sight
        fresh_devpts(self.TARGET).apply()
        self._mark = self._state()
        return True


def fresh_proc(target: str = "/proc") -> Mount:
    """procfs for the mounting process's PID namespace: other runs' processes are invisible."""
    return Mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def run_limits(*, memory_mb: int, cpu_seconds: int, nproc: int, fsize_mb: int, nofile: int
               ) -> tuple[tuple[int, int, int], ...]:
    """One run's resource limits as ``(resource, soft, hard)`` triples, for ``set_limits`` in the run's child.

    Built by the worker, so the child only makes the calls. Address space =
    ``memory_mb``; the stack stays at 8 MiB because glibc sizes every
    thread's stack from RLIMIT_STACK, so a larger one would eat the
    address-space budget and break threaded programs.
    """
    mib = 1024 * 1024
    limits = {
        resource.RLIMIT_AS: memory_mb * mib,
        resource.RLIMIT_CPU: cpu_seconds,
        resource.RLIMIT_NPROC: nproc,
        resource.RLIMIT_FSIZE: fsize_mb * mib,
        resource.RLIMIT_NOFILE: nofile,
        resource.RLIMIT_STACK: 8 * mib,
        resource.RLIMIT_CORE: 0,
        # POSIX message queues are charged to the uid, not to the run, and
        # released only when the kernel frees the run's IPC namespace, after
        # the run: a quota left held would change the next run's outcome, so
        # programs get none (mq_open(O_CREAT) always fails with EMFILE).
        resource.RLIMIT_MSGQUEUE: 0,
        # Locked memory likewise: SHM_LOCK charges the uid until the segment
        # goes with the run's IPC namespace, after the run (mlock too fails).
        resource.RLIMIT_MEMLOCK: 0,
    }
    # The CPU hard limit one second above the soft one: SIGXCPU first, SIGKILL if it is ignored.
    return tuple((which, value, value + 1 if which == resource.RLIMIT_CPU else value)
                 for which, value in limits.items())


def set_limits(limits: tuple[tuple[int, int, int], ...]) -> None:
    """Apply ``run_limits``' triples to the calling process."""
    for which, soft, hard in limits:
        resource.setrlimit(which, (soft, hard))


def drop_privileges(uid: int) -> None:
    """Become ``uid``/``uid`` with no supplementary groups (irreversibly)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
