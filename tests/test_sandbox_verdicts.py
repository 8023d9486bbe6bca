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
# The plain runs get a program's environment in the sandbox, not the test's (PYTHONUNBUFFERED, say).
PLAIN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


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
    plain = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30, env=PLAIN_ENV)
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


# -- the warm Python path ends a program as `python file.py` does -------------------------------------

# Each program's stdout and exit status under plain CPython are the expected ones.
SHUTDOWN_CORPUS = {
    "a module global's __del__": "class A:\n    def __del__(self):\n        print('del')\na = A()\nprint('main')\n",
    "__del__ in a reference cycle": "class A:\n    def __del__(self):\n        print('cycle')\na = A()\na.me = a\n",
    "an unclosed file object on fd 1": "f = open(1, 'w', closefd=False)\nf.write('unclosed\\n')\nprint('main')\n",
    "an unclosed file on /dev/stdout": "f = open('/dev/stdout', 'w')\nf.write('devstdout\\n')\n",
    "an unflushed buffered writer": "import io\nw = io.BufferedWriter(io.FileIO(1, 'w', closefd=False))\n"
                                    "w.write(b'buffered\\n')\n",
    "a suspended generator's finally": "def g():\n    try:\n        yield 1\n    finally:\n        print('finally')\n"
                                       "it = g()\nnext(it)\n",
    "atexit before __del__": "import atexit\natexit.register(print, 'atexit')\nclass A:\n"
                             "    def __del__(self):\n        print('del')\na = A()\n",
    "sys.exit with a __del__": "import sys\nclass A:\n    def __del__(self):\n        print('del')\na = A()\n"
                               "sys.exit(3)\n",
    "an uncaught exception with a __del__": "class A:\n    def __del__(self):\n        print('del')\na = A()\n"
                                            "raise ValueError('x')\n",
    "a __del__ that raises": "class A:\n    def __del__(self):\n        raise RuntimeError('in del')\na = A()\n"
                             "print('main')\n",
    "globals released in definition order": "class A:\n    def __init__(self, n):\n        self.n = n\n"
                                              "    def __del__(self):\n        print(self.n)\n"
                                              "def f():\n    pass\nb = A('b')\n_a = A('_a')\n",
    "a module kept in sys.modules under another name": "import sys\nclass A:\n    def __init__(self, n):\n"
                                                         "        self.n = n\n    def __del__(self):\n"
                                                         "        print(self.n)\nb = A('b')\n_a = A('_a')\n"
                                                         "sys.modules['keep'] = sys.modules['__main__']\n",
    "a module that refers to itself": "import sys\nclass A:\n    def __del__(self):\n        print('del')\n"
                                      "me = sys.modules[__name__]\na = A()\n",
    "a replaced sys.stdout": "import sys, io\nsys.stdout = io.TextIOWrapper(io.FileIO(1, 'w', closefd=False))\n"
                             "print('replaced')\n",
    "os._exit drops buffered output": "import os\nprint('lost', end='')\nos._exit(4)\n",
}


@pytest.mark.parametrize("name", sorted(SHUTDOWN_CORPUS))
def test_shutdown_output_and_status_are_cpythons(url, name, tmp_path):
    from rewardsmith.sandbox.server import base_interpreter

    code = SHUTDOWN_CORPUS[name]
    (tmp_path / "solution.py").write_text(code)
    plain = subprocess.run([base_interpreter(), "solution.py"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL, env=PLAIN_ENV)
    result = run(url, code, "python")
    assert (result["stdout"], result["return_code"]) == (plain.stdout, plain.returncode), (name, result["stderr"])
    assert ("Exception ignored" in result["stderr"]) == ("Exception ignored" in plain.stderr), result["stderr"]


def test_an_uncaught_keyboard_interrupt_ends_as_cpython_ends_it(url, tmp_path):
    from rewardsmith.sandbox.server import base_interpreter

    code = "print('before')\nraise KeyboardInterrupt\n"
    (tmp_path / "solution.py").write_text(code)
    plain = subprocess.run([base_interpreter(), "solution.py"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=60, env=PLAIN_ENV)
    assert plain.returncode == -2  # killed by SIGINT
    result = run(url, code, "python")
    # A warm program is PID 1 of its namespace, which its own SIGINT cannot kill: CPython's fallback then is
    # 128 + SIGINT, the status a shell reports for a death by SIGINT.
    assert (result["stdout"], result["return_code"]) == ("before\n", 130), result
    assert "KeyboardInterrupt" in result["stderr"]
