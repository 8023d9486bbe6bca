"""The languages this machine can run, and how each is compiled and started.

A language is available when its toolchain is installed (Debian packages:
``bash``, ``g++``, ``gcc``, ``nodejs``, ``perl``); Python always is, since the
sandbox runs on the server's own base interpreter unless ``--python`` names
another.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    """How to turn one source file into a running program inside the sandbox."""

    name: str
    source: str  # file name the code is written to, relative to the work dir
    run_argv: tuple[str, ...]
    compile_argv: tuple[str, ...] | None = None
    binary: str | None = None  # what compiling produces, fetched and fed to every run
    warm_python: bool = False  # run in-process in a pre-forked interpreter
    # Runtimes that reserve address space up front (V8) get this much on top of
    # the memory limit, and bound their heap themselves ("{memory_mb}" in run_argv).
    address_space_extra_mb: int = 0
    # The runtime's executable and shared libraries: the worker has them in the
    # page cache, charged outside the run, before each run (cgroups.cache_runtime_files).
    runtime_files: tuple[str, ...] = ()

    def argv(self, memory_mb: int) -> list[str]:
        """The run command for a program limited to ``memory_mb``."""
        return [part.format(memory_mb=memory_mb) for part in self.run_argv]


def runtime_files(executable: str) -> tuple[str, ...]:
    """``executable`` and the shared libraries the dynamic loader maps for it (asked as ``ldd`` asks: glibc's
    ``LD_TRACE_LOADED_OBJECTS``), as real paths."""
    files = [os.path.realpath(executable)]
    try:
        listing = subprocess.run([files[0]], env={"LD_TRACE_LOADED_OBJECTS": "1"}, stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    for line in listing.splitlines():
        path = line.split("=>")[-1].split("(")[0].strip()
        if path.startswith("/") and os.path.isfile(path):
            files.append(os.path.realpath(path))
    return tuple(dict.fromkeys(files))


def detect_languages(python: str) -> dict[str, Language]:
    """Every language whose toolchain is present, keyed by SandboxFusion's name."""
    found = {"python": Language("python", "solution.py", (python, "solution.py"), warm_python=True,
                                runtime_files=runtime_files(python))}
    bash = shutil.which("bash")
    if bash:
        found["bash"] = Language("bash", "solution.sh", (bash, "solution.sh"), runtime_files=runtime_files(bash))
    gxx = shutil.which("g++")
    if gxx:
        found["cpp"] = Language(
            "cpp",
            "solution.cpp",
            ("./solution",),
            compile_argv=(gxx, "-O2", "-std=gnu++17", "-pipe", "-o", "solution", "solution.cpp"),
            binary="solution",
        )
    gcc = shutil.which("gcc")
    if gcc:
        found["c"] = Language(
            "c",
            "solution.c",
            ("./solution",),
            compile_argv=(gcc, "-O2", "-std=gnu11", "-pipe", "-o", "solution", "solution.c", "-lm"),
            binary="solution",
        )
    node = shutil.which("node")
    if node:
        found["nodejs"] = Language("nodejs", "solution.js", (node, "--max-old-space-size={memory_mb}", "solution.js"),
                                   address_space_extra_mb=1024, runtime_files=runtime_files(node))
    perl = shutil.which("perl")
    if perl:
        found["perl"] = Language("perl", "solution.pl", (perl, "solution.pl"), runtime_files=runtime_files(perl))
    return found
