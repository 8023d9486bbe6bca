"""A run whose working set does not fit its memory limit ends as MemoryLimitExceeded, at once, even when it thrashes.

The run's memory cgroup charges the file pages a run reads in. At the
limit, the kernel evicts those and the run reads them straight back, which
the kernel counts as progress, so its OOM killer never comes: the run
crawled until its deadline and ended as TimeLimitExceeded (seen with Node
filling its heap whenever the node binary had dropped out of the host's page
cache: the flaky ``test_nodejs_heap_is_bounded_by_the_memory_limit``). The
worker now kills a run that thrashes at its limit (``cgroups.ThrashWatch``).

Files go to /var/tmp, which programs see read-only; each is evicted from the
page cache first, so that the run reads it in (and is charged for it).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import uuid

import pytest
import requests

from rewardsmith.sandbox import cgroups
from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable() or (None if cgroups.parent_dir() else "this host has no memory cgroup "
                                                                               "controller (v1 or v2)")
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

FILE_MB = 48


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "1", "--base-uid", "63100") as base:
        yield base


@pytest.fixture(scope="module")
def big_file():
    # Under /usr: runs see only the host's runtime directories (docs/sandbox.md, "What a run sees").
    os.makedirs("/usr/local/share", exist_ok=True)
    path = f"/usr/local/share/rewardsmith-thrash-{uuid.uuid4().hex[:12]}.bin"
    with open(path, "wb") as fh:
        fh.write(os.urandom(FILE_MB << 20))
        os.fchmod(fh.fileno(), 0o644)
    try:
        yield path
    finally:
        os.unlink(path)


def evict_from_page_cache(*paths: str) -> None:
    """Drop ``paths`` from the host's page cache (pages no process maps), so the next reader is charged for them."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run(url, code, language="python", **fields):
    reply = requests.post(url + "/run_code", json={"code": code, "language": language, **fields}, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()["run_result"]


# Holds 72 of its 96 MiB, then reads a 48 MiB file: its page cache cannot all fit.
HOLD_AND_READ = """
    hog = b"\\1" * (72 << 20)
    def read_all():
        with open({path!r}, "rb", buffering=0) as fh:
            while fh.read(1 << 20):
                pass
"""


def test_a_run_rereading_more_than_fits_its_limit_is_a_memory_verdict(url, big_file):
    evict_from_page_cache(big_file)
    code = textwrap.dedent(HOLD_AND_READ.format(path=big_file)) + textwrap.dedent("""
        passes = 0
        while True:
            read_all()
            passes += 1
            print(passes, flush=True)
    """)
    result = run(url, code, memory_limit_MB=96, run_timeout=20)
    assert result["verdict"] == "MemoryLimitExceeded", result


def test_a_run_at_its_limit_that_reads_a_file_once_is_not_thrashing(url, big_file):
    # The same memory, the same file read once, then a while at the limit:
    # evicting page cache to make room is no thrashing.
    evict_from_page_cache(big_file)
    code = textwrap.dedent(HOLD_AND_READ.format(path=big_file)) + textwrap.dedent("""
        import time
        read_all()
        time.sleep(1.5)
        print("done")
    """)
    result = run(url, code, memory_limit_MB=96, run_timeout=20)
    assert (result["verdict"], result["stdout"]) == ("OK", "done\n"), result


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (Debian package nodejs)")
def test_node_filling_its_heap_with_its_binary_out_of_the_page_cache_is_a_memory_verdict(url):
    node = os.path.realpath(shutil.which("node"))
    libraries = [line.split()[2] for line in subprocess.run(["ldd", node], capture_output=True, text=True).stdout
                 .splitlines() if "=> /" in line]
    for _ in range(3):  # before the fix about half of such runs thrashed until the deadline
        evict_from_page_cache(node, *libraries)
        result = run(url, "const a = []; while (true) a.push(new Array(1e6).fill(1));", language="nodejs",
                     memory_limit_MB=128, run_timeout=20)
        assert result["verdict"] == "MemoryLimitExceeded", result
