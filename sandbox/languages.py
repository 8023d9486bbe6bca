"""The languages this machine can run, and how each is compiled and started.

A language is available when its toolchain is installed (Debian packages:
``bash``, ``g++``); Python always is, since the sandbox runs on the server's
own base interpreter unless ``--python`` names another.
"""
from __future__ import annotations

import shutil
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


def detect_languages(python: str) -> dict[str, Language]:
    """Every language whose toolchain is present, keyed by SandboxFusion's name."""
    found = {"python": Language("python", "solution.py", (python, "solution.py"), warm_python=True)}
    bash = shutil.which("bash")
    if bash:
        found["bash"] = Language("bash", "solution.sh", (bash, "solution.sh"))
    gxx = shutil.which("g++")
    if gxx:
        found["cpp"] = Language(
            "cpp",
            "solution.cpp",
            ("./solution",),
            compile_argv=(gxx, "-O2", "-std=gnu++17", "-pipe", "-o", "solution", "solution.cpp"),
            binary="solution",
        )
    return found
