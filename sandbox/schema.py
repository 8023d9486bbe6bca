"""Request and response bodies of the sandbox HTTP API (SandboxFusion-compatible).

Requests accept SandboxFusion's fields and ignore unknown ones, so existing
clients (verl's among them) work unchanged. Responses carry SandboxFusion's
fields plus ours (``verdict``, ``cpu_time``, truncation flags, ...), which
strict SandboxFusion clients simply ignore.
"""
from __future__ import annotations

import base64
import binascii
import posixpath
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

RunStatus = Literal["Finished", "TimeLimitExceeded", "Error"]
ApiStatus = Literal["Success", "Failed", "SandboxError"]
Verdict = Literal["OK", "RuntimeError", "TimeLimitExceeded", "MemoryLimitExceeded", "CompileError", "SandboxError"]


# What a request's file tree may hold: every tree within these can be written
# to a run's /tmp (16384 inodes; names and paths within the kernel's
# NAME_MAX and PATH_MAX below /tmp/work), so a tree is refused up front
# (422 naming the limit) rather than failing in the worker.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
MAX_PATH_DEPTH = 32
MAX_TREE_ENTRIES = 4096  # files and the directories they need, together
MAX_FETCH_FILES = 4096  # names in fetch_files: each is looked up by the worker after the run


def _short(path: str) -> str:
    return repr(path) if len(path) <= 80 else repr(path[:60] + "...") + f" ({len(path)} characters)"


def check_relative_path(path: str) -> str:
    """Return ``path`` normalized if it stays inside the work dir and within the limits; raise ``ValueError`` otherwise."""
    if not path or "\x00" in path:
        raise ValueError(f"file path {_short(path)} is empty or contains NUL")
    if path.startswith("/") or path.startswith("\\"):
        raise ValueError(f"file path {_short(path)} is absolute; only paths relative to the work dir are allowed")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../") or normal == ".":
        raise ValueError(f"file path {_short(path)} escapes the work dir")
    if len(normal.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise ValueError(f"file path {_short(path)} is longer than the limit of {MAX_PATH_BYTES} bytes")
    parts = normal.split("/")
    if len(parts) > MAX_PATH_DEPTH:
        raise ValueError(f"file path {_short(path)} is {len(parts)} levels deep; the limit is {MAX_PATH_DEPTH}")
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise ValueError(f"file path {_short(path)} has a name longer than the limit of {MAX_NAME_BYTES} bytes")
    return normal


def check_file_tree(paths) -> None:
    """Raise ``ValueError`` naming the first path that cannot coexist with the others in one directory tree.

    ``x`` and ``x/y`` cannot both be written (``x`` would be a file and a
    directory), nor can two spellings of one path (``a`` and ``./a``).
    """
    files = set()
    for path in paths:
        normal = check_relative_path(path)
        if normal in files:
            raise ValueError(f"file path {_short(path)} names a file given twice")
        files.add(normal)
    directories = {posixpath.dirname(normal) for normal in files} - {""}
    for directory in list(directories):
        while directory:
            directories.add(directory)
            directory = posixpath.dirname(directory)
    if len(files) + len(directories) > MAX_TREE_ENTRIES:
        raise ValueError(f"{len(files)} files in {len(directories)} directories exceed the limit of "
                         f"{MAX_TREE_ENTRIES} files and directories together")
    for normal in files:
        parent = posixpath.dirname(normal)
        while parent:
            if parent in files:
                raise ValueError(f"file path {normal!r} needs {parent!r} to be a directory, but it is a file too")
            parent = posixpath.dirname(parent)


class _Limits(BaseModel):
    model_config = ConfigDict(extra="ignore")

    code: str
    language: str = "python"
    compile_timeout: float = Field(10.0, gt=0)
    run_timeout: float = Field(10.0, gt=0)
    memory_limit_MB: int = Field(-1, description="-1 means the server's default")
    files: dict[str, Optional[str]] = Field(default_factory=dict, description="relative path -> base64 content")
    _decoded: Optional[dict[str, bytes]] = PrivateAttr(default=None)

    @field_validator("files")
    @classmethod
    def _decode_files(cls, files: dict[str, Optional[str]]) -> dict[str, Optional[str]]:
        for path, content in files.items():
            check_relative_path(path)
            if content is not None:
                try:
                    base64.b64decode(content, validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise ValueError(f"file {path!r} is not valid base64: {exc}") from exc
        check_file_tree(path for path, content in files.items() if content is not None)
        return files

    @field_validator("memory_limit_MB")
    @classmethod
    def _memory(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError("must be a positive number of MiB, or -1 for the server default")
        return value

    def decoded_files(self) -> dict[str, bytes]:
        """The files' contents by normalized path, decoded once (the server decodes them where it parses the body)."""
        if self._decoded is None:
            self._decoded = {check_relative_path(p): base64.b64decode(c) for p, c in self.files.items()
                             if c is not None}
        return self._decoded


class RunCodeRequest(_Limits):
    """``POST /run_code``: run ``code`` once with ``stdin``."""

    stdin: Optional[str] = None
    fetch_files: list[str] = Field(default_factory=list, max_length=MAX_FETCH_FILES)

    @field_validator("fetch_files")
    @classmethod
    def _fetch(cls, paths: list[str]) -> list[str]:
        return [check_relative_path(p) for p in paths]


class BatchCase(BaseModel):
    model_config = ConfigDict(extra="ignore")
    stdin: Optional[str] = None


class RunBatchRequest(_Limits):
    """``POST /v1/run_batch``: compile once, run the program once per case."""

    cases: list[BatchCase] = Field(min_length=1)


class CommandResult(BaseModel):
    """One compile or run step (SandboxFusion's ``CommandRunResult`` plus our fields)."""

    status: RunStatus
    execution_time: Optional[float] = None
    return_code: Optional[int] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    verdict: Verdict = "OK"
    cpu_time: Optional[float] = None
    max_rss_kb: Optional[int] = None
    signal: Optional[int] = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False


class RunCodeResponse(BaseModel):
    status: ApiStatus
    message: str = ""
    compile_result: Optional[CommandResult] = None
    run_result: Optional[CommandResult] = None
    executor_pod_name: Optional[str] = None
    files: dict[str, str] = Field(default_factory=dict)


class RunBatchResponse(BaseModel):
    status: ApiStatus
    message: str = ""
    compile_result: Optional[CommandResult] = None
    results: list[CommandResult] = Field(default_factory=list)
