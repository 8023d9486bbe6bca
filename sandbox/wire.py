"""Length-prefixed pickle frames: the wire format between the server and its workers.

Standard library only (the worker loads it by path on the bare interpreter).
Both ends are processes the server itself started; user code never holds
these pipes, so unpickling here trusts nothing a program controls.
"""
from __future__ import annotations

import os
import pickle
import struct

HEADER = struct.Struct("!I")
# The frame the server sends a worker to stop the run in progress (its client went away, or the server stops).
CANCEL = "cancel"


def encode(obj) -> bytes:
    """One frame: a 4-byte big-endian length, then the pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def write_frame(fd: int, obj) -> None:
    """Write one frame to a blocking file descriptor."""
    view = memoryview(encode(obj))
    while view:
        view = view[os.write(fd, view):]


def read_frame(fd: int):
    """Read one frame from a blocking file descriptor; None at end of file."""
    header = _read_exact(fd, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    body = _read_exact(fd, length)
    if body is None:
        return None
    return pickle.loads(body)


def iter_frames(buf: bytes):
    """Yield every complete frame in ``buf`` (a partial tail is ignored)."""
    pos = 0
    while pos + HEADER.size <= len(buf):
        (length,) = HEADER.unpack_from(buf, pos)
        end = pos + HEADER.size + length
        if end > len(buf):
            return
        yield pickle.loads(buf[pos + HEADER.size:end])
        pos = end


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def wall_cap_s(timeout: float) -> float:
    """The most wall-clock seconds a run of ``timeout`` may take while the host is too loaded to give it its time.

    A run's clock counts only its own time (the wall time less what its
    program waited for a CPU, ``worker.Worker._supervise``); one still short
    of its timeout at this cap is stopped and reported unavailable, never
    ``TimeLimitExceeded``. Three times the timeout covers a run's fair share
    on a host with three workers per core.
    """
    return 3 * timeout + 1
