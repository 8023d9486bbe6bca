"""Issue 28, section 4: a run sees no host path.

The preloaded modules' ``__file__``, ``sys.orig_argv`` and ``/proc/1/cmdline``
named the server's checkout (8726fc6). A program now looks everywhere it
can (modules, code objects, its command lines, every readable byte of its
memory) for the directory the server runs from, and finds nothing. Traffic
goes only to 127.0.0.1; the server runs programs as uids 62800 and up.
"""
from __future__ import annotations

import os
import shutil
import textwrap

import pytest
import requests

import rewardsmith.sandbox
from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

BASE_UID = 62800
# The checkout the server's code comes from (its virtual environment lies inside it too).
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(rewardsmith.sandbox.__file__)))


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "1", "--base-uid", str(BASE_UID)) as base:
        yield base


def run(url, code, language="python", **fields):
    reply = requests.post(url + "/run_code", json={"code": code, "language": language, **fields}, timeout=120)
    assert reply.status_code == 200, reply.text
    result = reply.json()["run_result"]
    assert result["verdict"] == "OK", result["stderr"]
    return result["stdout"]


# Everything a program can name without reading memory: one line per place.
NAMED_PLACES = textwrap.dedent("""
    import gc, sys, types
    places = {"sys.orig_argv": sys.orig_argv, "sys.argv": sys.argv, "sys.path": sys.path,
              "sys.executable": sys.executable}
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        places[f"module {name}"] = [getattr(module, "__file__", None), getattr(module, "__cached__", None),
                                    getattr(spec, "origin", None)]
    places["code objects"] = sorted({obj.__code__.co_filename for obj in gc.get_objects()
                                     if isinstance(obj, types.FunctionType)})
    for path in ("/proc/1/cmdline", "/proc/self/cmdline", "/proc/self/maps", "/proc/self/mountinfo"):
        try:
            places[path] = open(path, "rb").read().decode("utf-8", "replace")
        except OSError as exc:
            places[path] = f"unreadable: {exc}"
    for name, value in places.items():
        print(name, "=", value)
""")

# Every readable byte of the program's memory (after PR_SET_DUMPABLE), searched
# for the checkout path, which arrives on stdin in two halves, never whole.
MEMORY_SEARCH = textwrap.dedent("""
    import ctypes, sys
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
    first, second = sys.stdin.read().split()
    first, second = first.encode(), second.encode()
    found = []
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or fields[-1] in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            at = chunk.find(first)
            while at != -1:
                if chunk[at + len(first):at + len(first) + len(second)] == second:
                    found.append(f"{line.strip()} +{at:#x}: {chunk[max(0, at - 40):at + 120]!r}")
                    break
                at = chunk.find(first, at + 1)
    print("\\n".join(found))
""")


def test_a_warm_python_run_names_no_host_path(url):
    places = run(url, NAMED_PLACES)
    leaks = [line for line in places.splitlines() if CHECKOUT in line]
    assert leaks == [], "\n".join(leaks)


def test_no_host_path_anywhere_in_a_programs_memory(url):
    half = len(CHECKOUT) // 2
    found = run(url, MEMORY_SEARCH, stdin=f"{CHECKOUT[:half]} {CHECKOUT[half:]}\n", run_timeout=30)
    assert found.strip() == "", found


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_an_exec_d_program_names_no_host_path(url):
    places = run(url, "tr '\\0' ' ' < /proc/1/cmdline; echo; tr '\\0' ' ' < /proc/self/cmdline; echo",
                 language="bash")
    assert CHECKOUT not in places, places
