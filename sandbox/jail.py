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
MS_MOVE = 8192
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
# PyDLL keeps the GIL across the call, exactly as os.fork() does around fork().
_clone = ctypes.PyDLL(None, use_errno=True).syscall
_clone.restype = ctypes.c_long
_clone.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

# The worker's own small tmpfs mounts (made read-only once set up): a few inodes suffice.
_SCAFFOLD_TMPFS = "size=1m,nr_inodes=64,mode=755"

# Mount points the worker never remounts: every run mounts a fresh procfs
# of its own PID namespace over /proc.
_SKIP_READONLY = ("/proc",)


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


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """``mount(2)``; raises ``OSError`` naming the target on failure."""
    _check(_libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)), f"mount {target}")


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


_AUDIT_ARCH_X86_64 = 0xC000003E
_CLONE_NEWUSER = 0x10000000
# x86_64 system calls a program never needs and that open kernel attack
# surface. Mount APIs stay allowed (the worker needs them, and they need
# CAP_SYS_ADMIN, which only the refused user namespaces could give a program).
_DENIED_X86_64 = {
    "ptrace": 101, "add_key": 248, "request_key": 249, "keyctl": 250, "perf_event_open": 298, "bpf": 321,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
}
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
    """Deny user namespaces, io_uring, bpf, ptrace, perf events, userfaultfd and keyrings (EPERM), and sockets
    outside ``_SOCKET_FAMILIES`` (EAFNOSUPPORT).

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
    for nr in _DENIED_X86_64.values():
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, deny)]
    prog.append((ret, 0, 0, allow))
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), filters)
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "prctl(SECCOMP)")


def _mountinfo() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) for every mount this process sees."""
    mounts = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].replace("\\040", " ")
            mounts.append((point, set(fields[5].split(","))))
    return mounts


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


def expose(path: str, staging: str) -> None:
    """Make ``path`` reachable for unprivileged users without opening its parents.

    A closed ancestor (e.g. ``/root`` with mode 700) is covered by an empty
    tmpfs, and ``path`` alone is bind-mounted back at its original location,
    so an interpreter under ``/root/.pyenv`` keeps working while the rest of
    ``/root`` disappears from view.
    """
    closed = first_closed_ancestor(path)
    if closed is None:
        return
    os.makedirs(staging, exist_ok=True)
    mount(path, staging, None, MS_BIND | MS_REC)
    mount("tmpfs", closed, "tmpfs", MS_NOSUID | MS_NODEV, _SCAFFOLD_TMPFS)
    os.makedirs(path, mode=0o755, exist_ok=True)
    mount(staging, path, None, MS_MOVE)


def enter_readonly_view(expose_paths: list[str]) -> None:
    """Give the calling process a private mount namespace whose every mount is read-only.

    Bind remounts change per-mount flags only, never the host's file systems.
    ``nosuid`` everywhere closes setuid binaries; ``nodev`` everywhere but
    ``/dev`` keeps device nodes from being smuggled in.
    """
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # The host's sysfs (and the cgroup trees under it) goes: runs mount one of
    # their own network namespace, and every mount left here is copied into
    # (and torn down with) every run's mount namespace.
    try:
        umount("/sys")
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: /sys is no mount point here
            raise
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, _SCAFFOLD_TMPFS)
    for index, path in enumerate(expose_paths):
        expose(path, f"/tmp/stage{index}")
    for point, options in _mountinfo():
        if any(_under(point, skip) for skip in _SKIP_READONLY):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID
        if not _under(point, "/dev"):
            flags |= MS_NODEV
        if "noexec" in options:
            flags |= MS_NOEXEC
        try:
            mount(None, point, None, flags)
        except OSError as exc:
            # A mount hidden under another one (e.g. a second /dev/pts) is
            # unreachable by path; nothing can reach it, so nothing to protect.
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise


def mount_tmpfs(target: str, size_mb: int, inodes: int, noexec: bool = False) -> None:
    """A fresh world-writable (sticky) tmpfs on ``target``, capped in bytes and in inodes.

    Both caps: empty files use no bytes, yet each costs the kernel ~1 KiB of
    inode and dentry that only ``nr_inodes`` bounds per mount.
    """
    flags = MS_NOSUID | MS_NODEV | (MS_NOEXEC if noexec else 0)
    mount("tmpfs", target, "tmpfs", flags, f"size={size_mb}m,nr_inodes={inodes},mode=1777")


def mount_fresh_sysfs() -> None:
    """sysfs as seen from the current network namespace (only its loopback)."""
    mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def mount_fresh_proc() -> None:
    """procfs for the current PID namespace: other runs' processes are invisible."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def apply_limits(*, memory_mb: int, cpu_seconds: int, nproc: int, fsize_mb: int, nofile: int) -> None:
    """Resource limits for one run.

    Address space = ``memory_mb``; the stack stays at 8 MiB because glibc
    sizes every thread's stack from RLIMIT_STACK, so a larger one would eat
    the address-space budget and break threaded programs.
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
    }
    for which, value in limits.items():
        hard = value + 1 if which == resource.RLIMIT_CPU else value
        resource.setrlimit(which, (value, hard))


def drop_privileges(uid: int) -> None:
    """Become ``uid``/``uid`` with no supplementary groups (irreversibly)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
