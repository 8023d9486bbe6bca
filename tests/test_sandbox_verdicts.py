"""Issue 28, section 2: a verdict is what the plain runtime gives, never one a program's own signal decides.

Each program also runs outside the sandbox, with the same interpreter, and
the two exit statuses are compared. Traffic goes only to 127.0.0.1; the
server runs programs as uids 62900 and up.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import requests

from rewardsmith.sandbox.languages import runtime_files
from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

BASE_UID = 62900


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "1", "--base-uid", str(BASE_UID)) as base:
        yield base


def run(url, code, language, **fields):
    reply = requests.post(url + "/run_code", json={"code": code, "language": language, "run_timeout": 10, **fields},
                          timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()["run_result"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_a_program_that_sends_itself_sigxcpu_dies_by_it_and_is_not_timed_out(url):
    code = "echo before\nkill -XCPU $$\necho after\n"
    plain = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)
    result = run(url, code, "bash")
    assert (result["return_code"], result["stdout"]) == (plain.returncode, plain.stdout) == (-24, "before\n"), result
    assert result["verdict"] == "RuntimeError" and result["status"] == "Finished", result


def evict_from_page_cache(path: str) -> None:
    """Drop ``path``'s cached pages (those no live process maps), as a host under memory pressure would."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


HELLO = {"nodejs": ("node", "console.log(6 * 7)"), "perl": ("perl", "print 6 * 7, \"\\n\";"),
         "bash": ("bash", "echo $((6 * 7))")}


@pytest.mark.parametrize("language", sorted(HELLO))
def test_the_memory_floor_holds_with_the_runtime_out_of_the_page_cache(url, language):
    executable, code = HELLO[language]
    if shutil.which(executable) is None:
        pytest.skip(f"{executable} is not installed")
    for path in runtime_files(shutil.which(executable)):
        evict_from_page_cache(path)
    result = run(url, code, language, memory_limit_MB=16)
    assert (result["verdict"], result["stdout"]) == ("OK", "42\n"), result
