"""Issue 28, section 5: every host mount under an exposed tree is read-only inside runs, whatever its path.

The kernel escapes space, tab, newline and backslash in /proc/self/mountinfo;
a mount whose path held one of the last three was remounted under a wrong
path (the failure ignored) and stayed writable in every run. The tests
build the worker's minimal root in a forked child, inside a private mount
namespace of its own, so nothing of it reaches the host's mounts.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from rewardsmith.sandbox import jail
from rewardsmith.sandbox.testing import isolation_unavailable

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

ODD_NAMES = ("tab\there", "new\nline", "back\\slash", "space here", "all \t\n\\ four")


def in_private_namespace(body) -> dict:
    """Run ``body()`` in a forked child with a private mount namespace; its JSON-able result, or its error."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            jail.unshare(jail.CLONE_NEWNS)
            jail.mount(None, "/", None, jail.MS_REC | jail.MS_PRIVATE)
            result = {"result": body()}
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            result = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture()
def exposed():
    # Not under /tmp: the minimal root is built on a tmpfs mounted there.
    path = tempfile.mkdtemp(prefix="rewardsmith-mounts-", dir="/var/tmp")
    for name in ODD_NAMES:
        os.mkdir(os.path.join(path, name))
    yield path
    shutil.rmtree(path)


def test_mounts_with_escaped_characters_in_their_paths_are_read_only_in_the_minimal_root(exposed):
    def body():
        for name in ODD_NAMES:
            jail.mount("tmpfs", os.path.join(exposed, name), "tmpfs", 0, "size=1m")
        jail.enter_minimal_root([exposed], uid=65534)
        writable = []
        for name in ODD_NAMES:
            try:
                with open(os.path.join(exposed, name, "planted"), "w") as fh:
                    fh.write("x")
                writable.append(name)
            except OSError:
                pass
        return writable

    outcome = in_private_namespace(body)
    assert outcome == {"result": []}, f"writable inside the minimal root: {outcome}"


def test_mountinfo_paths_are_unescaped_in_full():
    line = (rb"41 30 0:52 / /srv/a\011b\012c\134d\040e rw,nosuid,relatime shared:1 - tmpfs tmp\040fs rw" + b"\n"
            + rb"42 41 0:53 /x /srv/\134011 ro - tmpfs none rw")
    assert jail.parse_mountinfo(line) == [(41, "/srv/a\tb\nc\\d e", {"rw", "nosuid", "relatime"}),
                                         (42, "/srv/\\011", {"ro"})]


def test_a_mount_left_writable_is_found_unless_something_hides_it(exposed):
    def body():
        lower = os.path.join(exposed, ODD_NAMES[0])
        jail.mount("tmpfs", lower, "tmpfs", 0, "size=1m")
        seen = [lower in jail.writable_mounts()]
        jail.mount("tmpfs", lower, "tmpfs", jail.MS_RDONLY, "size=1m")  # stacked on top: hides the writable one
        seen.append(lower in jail.writable_mounts())
        return seen

    assert in_private_namespace(body) == {"result": [True, False]}
