"""The sandbox HTTP service: SandboxFusion's ``/run_code`` plus batch and status endpoints.

``serve(settings)`` probes which isolation layers this host provides,
refuses to start if any is missing (unless ``allow_weak_isolation``), then
runs the FastAPI app on uvicorn. Every request runs through a
:class:`~rewardsmith.sandbox.pool.SandboxPool` of warm, pre-forked workers.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ValidationError

from rewardsmith.common.network import SANDBOX_TOKEN_ENV, check_exposure
from rewardsmith.sandbox.gate import Admission, BodyLimit, TokenAuth, bounded_http_protocol, json_items
from rewardsmith.sandbox.languages import Language, detect_languages
from rewardsmith.sandbox import uids
from rewardsmith.sandbox.wire import wall_cap_s
from rewardsmith.sandbox.pool import LAYERS, Overloaded, SandboxPool, WorkerFailed, default_expose, job_template
from rewardsmith.sandbox.pool import probe_isolation
from rewardsmith.sandbox.schema import (
    MAX_FETCH_FILES,
    MAX_TREE_ENTRIES,
    CommandResult,
    RunBatchRequest,
    RunBatchResponse,
    RunCodeRequest,
    RunCodeResponse,
    check_file_tree,
)
from rewardsmith.sandbox.verdicts import command_result


# The smallest memory_limit_MB accepted: below it runtimes fail to load
# (bash and C programs could not map libc at 2 MiB) rather than being judged.
MIN_MEMORY_MB = 16
# Bodies up to this size are validated on the event loop (the usual request,
# ~1 KB, in microseconds); larger ones in a thread, so that an unrelated
# request is not kept waiting while their strings are copied and decoded.
INLINE_BODY_BYTES = 256 << 10
# The endpoints that start runs: admission (429) is decided for them before their body is read.
RUN_PATHS = ("/run_code", "/v1/run_batch")
# Seconds SIGTERM waits for requests in flight before cancelling them (and killing their runs).
SHUTDOWN_GRACE_S = 1.0


def base_interpreter() -> str:
    """The real interpreter behind this (possibly virtual-env) Python."""
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


@dataclass
class ServerSettings:
    """Everything ``rewardsmith sandbox serve`` can set; defaults suit a laptop."""

    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = field(default_factory=lambda: max(2, 2 * (os.cpu_count() or 1)))
    token: str | None = None
    allow_weak_isolation: bool = False
    python: str = field(default_factory=base_interpreter)
    spawn_python: bool = False  # exec a fresh interpreter per run instead of the warm path
    network_namespace: str = "per-run"  # a fresh one per run; or "per-worker": shared by a worker's sequential runs
    max_pending: int = 1024
    max_queue_wait_s: float = 10.0  # a run not started by then is refused (429), never queued past its client's patience
    max_timeout: float = 60.0
    default_memory_mb: int = 1024
    max_memory_mb: int = 8192
    compile_memory_mb: int = 2048
    max_processes: int = 64
    max_file_mb: int = 64
    max_open_files: int = 256
    tmpfs_mb: int = 256
    max_output_bytes: int = 1 << 20
    max_batch_cases: int = 1000
    max_request_mb: int = 64
    max_fetch_mb: int = 64  # all of a request's fetch_files together
    max_reply_mb: int = 64  # program output one /v1/run_batch reply carries, all cases together
    max_head_kb: int = 64  # request line and headers of one request, before anything else is read
    max_headers: int = 100
    base_uid: int | None = None  # None: the first block of uids no other server on this host holds


class ReplyBudget:
    """The program output one reply may still carry (stdout and stderr of all its runs).

    Each run's report is cut to what is left as it arrives, so the server
    never holds more than the budget (and the runs in flight) for a request.
    """

    def __init__(self, limit: int):
        self.left = limit
        self.exceeded = False

    def take(self, report: dict) -> None:
        """Cut ``report``'s stdout and stderr to what is left, flagging what was cut."""
        for stream in ("stdout", "stderr"):
            data = report[stream]
            if len(data) > self.left:
                report[stream] = data[:self.left]
                report[f"{stream}_truncated"] = True
                self.exceeded = True
            self.left -= len(report[stream])


class Sandbox:
    """Request handling between the HTTP layer and the worker pool."""

    def __init__(self, settings: ServerSettings, layers: dict[str, bool], base_uid: int):
        self.settings = settings
        self.layers = layers
        self.missing = [name for name, ok in layers.items() if not ok]
        self.languages: dict[str, Language] = detect_languages(settings.python)
        self.pool = SandboxPool(
            python=settings.python,
            size=settings.workers,
            base_uid=base_uid,
            expose=default_expose(settings.python),
            max_pending=settings.max_pending,
            netns=settings.network_namespace,
        )
        self.verdicts: Counter[str] = Counter()
        self.started = time.time()
        # A body with more JSON values than the largest valid request needs is
        # refused before it is parsed: per case its object, "stdin", its value
        # and a comma; per file and fetched name its strings and a comma; the
        # other fields (unknown ones too) in the rest.
        self.json_item_limit = 4 * settings.max_batch_cases + 3 * MAX_TREE_ENTRIES + 2 * MAX_FETCH_FILES + 256

    def full(self) -> str | None:
        """Why a request for a run is refused now (the run queue is full), or None; read before its body."""
        if self.pool.pending < self.settings.max_pending:
            return None
        return f"sandbox queue is full ({self.pool.pending} runs in flight, limit {self.settings.max_pending})"

    def parse(self, model: type[BaseModel], body: bytes) -> BaseModel:
        """``body`` validated as ``model``, its files decoded: 413 if it holds more JSON values than any valid
        request, 422 naming each bad field."""
        items = json_items(body, self.json_item_limit)
        if items > self.json_item_limit:
            raise HTTPException(413, f"request body: more than {self.json_item_limit} JSON values (strings, objects, "
                                     "arrays and list elements), more than any valid request holds with this "
                                     f"server's limits ({self.settings.max_batch_cases} cases, "
                                     f"{MAX_TREE_ENTRIES} files, {MAX_FETCH_FILES} fetch_files)")
        try:
            req = model.model_validate_json(body)
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors()]
            raise HTTPException(422, "; ".join(problems)) from None
        req.decoded_files()  # decoded here: in the thread that parses a large body
        return req

    # -- validation that depends on the server's configuration -------------------

    def _language(self, name: str) -> Language:
        if name not in self.languages:
            raise HTTPException(400, f"language: {name!r} is not supported here; available: {sorted(self.languages)}")
        return self.languages[name]

    def _check(self, req) -> int:
        for name in ("compile_timeout", "run_timeout"):
            if getattr(req, name) > self.settings.max_timeout:
                raise HTTPException(400, f"{name}: {getattr(req, name)} s exceeds this server's limit of "
                                         f"{self.settings.max_timeout} s")
        memory = self.settings.default_memory_mb if req.memory_limit_MB == -1 else req.memory_limit_MB
        if memory < MIN_MEMORY_MB:
            raise HTTPException(400, f"memory_limit_MB: {memory} is below this server's floor of {MIN_MEMORY_MB} "
                                     "(the smallest limit under which every language's runtime starts)")
        if memory > self.settings.max_memory_mb:
            raise HTTPException(400, f"memory_limit_MB: {memory} exceeds this server's limit of "
                                     f"{self.settings.max_memory_mb}")
        return memory

    def _job(self, **fields) -> dict:
        s = self.settings
        return job_template(**{"nproc": s.max_processes, "fsize_mb": s.max_file_mb, "nofile": s.max_open_files,
                                "tmpfs_mb": s.tmpfs_mb, "max_output": s.max_output_bytes,
                                "max_file_bytes": s.max_file_mb << 20, "max_fetch_bytes": s.max_fetch_mb << 20,
                                **fields})

    def _files(self, req, lang: Language) -> dict[str, bytes]:
        """The request's files plus the program's source, refused (422) if they cannot all be written."""
        files = {**req.decoded_files(), lang.source: req.code.encode()}
        try:
            check_file_tree(files)
        except ValueError as exc:
            raise HTTPException(422, f"files: {exc}") from None
        # Half the run's /tmp at most: the rest is the program's (and the compiler's) room.
        limit = (self.settings.tmpfs_mb << 20) // 2
        total = sum(len(data) for data in files.values())
        if total > limit:
            raise HTTPException(422, f"files: {total} bytes in all (code included) exceed this server's limit of "
                                     f"{limit >> 20} MiB, half the run's /tmp")
        return files

    def _message(self, *notes: str) -> str:
        parts = [n for n in notes if n]
        if self.missing:
            parts.append("weak isolation: missing layers " + ", ".join(self.missing))
        return "; ".join(parts)

    def _queue_wait_s(self, lang: Language, req) -> float:
        """How long a run of ``req`` may wait for a worker: ``--max-queue-wait``, plus the compile time a language
        without a compile step leaves unused (SandboxFusion clients such as verl wait compile_timeout +
        run_timeout + 10 s for the reply)."""
        return self.settings.max_queue_wait_s + (req.compile_timeout if lang.compile_argv is None else 0)

    async def _execute(self, job: dict, budget: ReplyBudget | None = None,
                       queue_wait_s: float | None = None) -> tuple[CommandResult, dict]:
        report = await self.pool.run(job, self.settings.max_queue_wait_s if queue_wait_s is None else queue_wait_s)
        if "error" in report:
            raise WorkerFailed(report["error"])
        if report["load_capped"]:
            # Unscored, never a wrong answer: the program did not get its time.
            raise WorkerFailed(f"the host was too loaded to give the program its {job['timeout']:g} s: stopped at "
                               f"{wall_cap_s(job['timeout']):g} s of wall time; retry later")
        if budget is not None:
            budget.take(report)
        return command_result(report), report

    # -- the two kinds of request ------------------------------------------------

    async def _compile(self, lang: Language, files: dict[str, bytes], req, memory: int):
        """Compile when the language needs it; returns (compile_result, files for the run: ``files`` plus the binary)."""
        if lang.compile_argv is None:
            return None, files
        compile_memory = max(memory, self.settings.compile_memory_mb)
        job = self._job(argv=list(lang.compile_argv), files=files, timeout=req.compile_timeout,
                        memory_mb=compile_memory, cgroup_memory_mb=compile_memory, fetch=(lang.binary,),
                        max_fetch_bytes=self.settings.max_file_mb << 20)
        result, report = await self._execute(job)
        if result.verdict != "OK":
            result.verdict = "TimeLimitExceeded" if result.status == "TimeLimitExceeded" else "CompileError"
            return result, None
        binary = report["files"].get(lang.binary)
        if binary is None:
            raise WorkerFailed(f"the compiler exited 0 but produced no {lang.binary!r}")
        return result, {**files, lang.binary: binary}

    def _run_job(self, lang: Language, files: dict[str, bytes], stdin: str | None, req, memory: int, fetch=()):
        common = dict(files=files, stdin=(stdin or "").encode(), timeout=req.run_timeout,
                      memory_mb=memory + lang.address_space_extra_mb, cgroup_memory_mb=memory, fetch=tuple(fetch))
        if lang.warm_python and not self.settings.spawn_python:
            return self._job(mode="inline-python", main=lang.source, **common)
        executable = (lang.binary,) if lang.binary else ()
        return self._job(argv=lang.argv(memory), executable=executable, runtime_files=lang.runtime_files, **common)

    async def run_code(self, req: RunCodeRequest) -> RunCodeResponse:
        lang = self._language(req.language)
        memory = self._check(req)
        files = self._files(req, lang)
        steps = 2 if lang.compile_argv else 1
        self.pool.reserve(steps)
        try:
            compile_result, run_files = await self._compile(lang, files, req, memory)
            if run_files is None:
                self.verdicts[compile_result.verdict] += 1
                return RunCodeResponse(status="Failed", compile_result=compile_result,
                                       message=self._message("compilation failed"))
            run_result, report = await self._execute(
                self._run_job(lang, run_files, req.stdin, req, memory, req.fetch_files),
                queue_wait_s=self._queue_wait_s(lang, req))
        except WorkerFailed as exc:
            self.verdicts["SandboxError"] += 1
            return RunCodeResponse(status="SandboxError", message=self._message(str(exc)))
        finally:
            self.pool.release(steps)
        self.verdicts[run_result.verdict] += 1
        over_budget = report["fetch_over_budget"]
        missing = [p for p in req.fetch_files if p not in report["files"] and p not in over_budget]
        notes = [f"fetch_files: {missing} not found" if missing else "",
                 f"fetch_files: {over_budget} left out: together they exceed this server's limit of "
                 f"{self.settings.max_fetch_mb} MiB per request" if over_budget else "",
                 "output truncated" if run_result.stdout_truncated or run_result.stderr_truncated else ""]
        return RunCodeResponse(
            status="Success" if run_result.verdict == "OK" else "Failed",
            message=self._message(*notes),
            compile_result=compile_result,
            run_result=run_result,
            files={p: base64.b64encode(data).decode() for p, data in report["files"].items()},
        )

    async def run_batch(self, req: RunBatchRequest) -> RunBatchResponse:
        lang = self._language(req.language)
        memory = self._check(req)
        if len(req.cases) > self.settings.max_batch_cases:
            raise HTTPException(400, f"cases: {len(req.cases)} cases exceed this server's limit of "
                                     f"{self.settings.max_batch_cases}")
        files = self._files(req, lang)
        steps = len(req.cases) + (1 if lang.compile_argv else 0)
        self.pool.reserve(steps)
        try:
            compile_result, run_files = await self._compile(lang, files, req, memory)
            if run_files is None:
                self.verdicts[compile_result.verdict] += 1
                return RunBatchResponse(status="Failed", compile_result=compile_result,
                                        message=self._message("compilation failed"))
            jobs = [self._run_job(lang, run_files, case.stdin, req, memory) for case in req.cases]
            budget = ReplyBudget(self.settings.max_reply_mb << 20)
            wait = self._queue_wait_s(lang, req)
            outcomes = await asyncio.gather(*(self._execute(job, budget, wait) for job in jobs),
                                            return_exceptions=True)
        except WorkerFailed as exc:
            self.verdicts["SandboxError"] += 1
            return RunBatchResponse(status="SandboxError", message=self._message(str(exc)))
        finally:
            self.pool.release(steps)
        results = []
        for outcome in outcomes:
            if isinstance(outcome, WorkerFailed):
                self.verdicts["SandboxError"] += 1
                return RunBatchResponse(status="SandboxError", message=self._message(str(outcome)))
            if isinstance(outcome, BaseException):
                raise outcome
            self.verdicts[outcome[0].verdict] += 1
            results.append(outcome[0])
        ok = all(r.verdict == "OK" for r in results)
        truncated = any(r.stdout_truncated or r.stderr_truncated for r in results)
        over_budget = (f"output truncated: the reply reached this server's limit of {self.settings.max_reply_mb} MiB "
                       "of program output per request") if budget.exceeded else ""
        return RunBatchResponse(status="Success" if ok else "Failed", compile_result=compile_result, results=results,
                                message=self._message(over_budget or ("output truncated" if truncated else "")))

    def status(self) -> dict:
        return {
            "isolation": self.layers,
            "missing_layers": self.missing,
            "languages": sorted(self.languages),
            "python": self.settings.python,
            "python_mode": "spawn" if self.settings.spawn_python else "warm",
            "network_namespace": self.settings.network_namespace,
            "workers": self.settings.workers,
            "uids": [self.pool.base_uid, self.pool.base_uid + self.settings.workers - 1],
            "busy_workers": self.pool.busy,
            "peak_busy_workers": self.pool.peak_busy,
            "queue_depth": self.pool.queue_depth,
            "runs_in_flight": self.pool.pending,
            "max_pending": self.settings.max_pending,
            "runs_by_verdict": dict(self.verdicts),
            "worker_restarts": self.pool.restarts,
            "server_pid": os.getpid(),
            "worker_pids": self.pool.worker_pids(),
            "template_pids": self.pool.template_pids(),
            "uptime_s": round(time.time() - self.started, 3),
        }


def create_app(sandbox: Sandbox) -> FastAPI:
    """The FastAPI app; the worker pool starts and stops with it."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        await sandbox.pool.start()
        try:
            yield
        finally:
            await sandbox.pool.stop()

    app = FastAPI(title="rewardsmith sandbox", lifespan=lifespan)
    # Added innermost first: the token, then admission, then the body.
    app.add_middleware(BodyLimit, limit=sandbox.settings.max_request_mb << 20)
    app.add_middleware(Admission, full=sandbox.full, paths=RUN_PATHS)
    if sandbox.settings.token is not None:
        app.add_middleware(TokenAuth, token=sandbox.settings.token, open_paths=("/v1/ping",))

    @app.exception_handler(Overloaded)
    async def _overloaded(_request: Request, exc: Overloaded):
        return JSONResponse(status_code=429, content={"detail": str(exc)}, headers={"Retry-After": "1"})

    @app.get("/v1/ping", response_class=PlainTextResponse)
    async def ping() -> str:
        return "pong"

    @app.get("/v1/status")
    async def status() -> dict:
        return sandbox.status()

    app.add_route("/run_code", _json_endpoint(sandbox, RunCodeRequest, sandbox.run_code), methods=["POST"])
    app.add_route("/v1/run_batch", _json_endpoint(sandbox, RunBatchRequest, sandbox.run_batch), methods=["POST"])
    return app


def _json_endpoint(sandbox: Sandbox, model: type[BaseModel], handle: Callable[[Any], Awaitable[BaseModel]]):
    """A plain Starlette endpoint: the body validated as ``model`` (``Sandbox.parse``), ``handle``'s reply as JSON.

    The two run endpoints take this path rather than FastAPI's parameter
    machinery, which cost ~0.2 ms of the server's ~1 ms per run: pydantic
    parses and validates the raw body in one step, and serializes the
    reply once. A body over ``INLINE_BODY_BYTES`` is parsed in a thread.
    """

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        if len(body) <= INLINE_BODY_BYTES:
            req = sandbox.parse(model, body)
        else:
            req = await asyncio.to_thread(sandbox.parse, model, body)
        # Work whose client went away is cancelled, waiting or running: nobody would read its result. The
        # request is handled in this task, which a watcher cancels (one task per request, not two and a wait).
        this = asyncio.current_task()
        handled = False

        def stop(watcher: asyncio.Future) -> None:
            if not handled and not watcher.cancelled():
                this.cancel()

        gone = asyncio.ensure_future(_disconnected(request))
        gone.add_done_callback(stop)
        try:
            reply = await handle(req)
        except asyncio.CancelledError:
            if not (gone.done() and not gone.cancelled()):
                raise  # not the client's doing (the server is stopping)
            this.uncancel()
            return Response(status_code=499)  # nobody reads it
        finally:
            handled = True
            gone.cancel()
        return Response(reply.model_dump_json(), media_type="application/json")

    return endpoint


async def _disconnected(request: Request) -> None:
    """Return when the client closes its connection (the body has been read: nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class WeakIsolation(RuntimeError):
    """Some isolation layer is unavailable and weak isolation was not allowed."""


def check_isolation(settings: ServerSettings, base_uid: int) -> dict[str, bool]:
    """Probe the layers; raise ``WeakIsolation`` naming the missing ones unless allowed."""
    layers, stdlib_readable = probe_isolation(settings.python, base_uid, default_expose(settings.python),
                                              settings.network_namespace)
    missing = [name for name, ok in layers.items() if not ok]
    if missing and not settings.allow_weak_isolation:
        lines = "\n".join(f"  - {name}: {LAYERS[name]}" for name in missing)
        raise WeakIsolation(
            "refusing to start: these isolation layers are unavailable on this host "
            f"(namespaces need root or CAP_SYS_ADMIN):\n{lines}\n"
            "Start with --allow-weak-isolation to run anyway; the missing layers are then reported "
            "by /v1/status and in every response's message."
        )
    if not stdlib_readable:
        raise WeakIsolation(
            f"refusing to start: programs, running as uid {base_uid}, cannot read the standard library of "
            f"{settings.python} (a directory above it is private and, without a mount namespace, it cannot be "
            "exposed alone); pass --python with an interpreter installed outside private directories"
        )
    return layers


def serve(settings: ServerSettings) -> int:
    """Check the host has a token if it is not loopback, bind the port, probe isolation,
    then serve until interrupted. Returns a process exit code.

    The port is bound before the banner is printed, so a taken port is an error, not a
    "serving" line followed by a failure.
    """
    try:
        if settings.token == "":
            raise ValueError(f"the token (--token or ${SANDBOX_TOKEN_ENV}) is empty: an empty token would be "
                             "accepted from anyone; set a non-empty one, or unset it to serve without a token")
        check_exposure(settings.host, settings.token, SANDBOX_TOKEN_ENV)
        sock = bind(settings.host, settings.port)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with sock:
        try:
            claim = uids.claim(settings.workers, settings.base_uid)  # held until this process exits
            layers = check_isolation(settings, claim.base)
        except (WeakIsolation, uids.UidsUnavailable) as exc:
            print(exc, file=sys.stderr)
            return 2
        sandbox = Sandbox(settings, layers, claim.base)
        config = uvicorn.Config(create_app(sandbox), host=settings.host, port=settings.port,
                                log_level="warning", access_log=False, backlog=4096,
                                # SIGTERM: requests in flight are cancelled (their runs killed) after this, not awaited.
                                timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
                                http=bounded_http_protocol(settings.max_head_kb << 10, settings.max_headers))
        print(f"rewardsmith sandbox: http://{settings.host}:{sock.getsockname()[1]} ({settings.workers} workers, "
              f"uids {claim.base}-{claim.base + settings.workers - 1}, "
              f"languages {sorted(sandbox.languages)}, missing layers {sandbox.missing or 'none'})",
              file=sys.stderr, flush=True)
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; raises OSError naming the address (e.g. a port already taken)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restart while old connections linger
        sock.bind((host, port))
        sock.listen(4096)
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
