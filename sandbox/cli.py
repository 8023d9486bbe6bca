"""``rewardsmith sandbox ...``: run the code-execution service."""
from __future__ import annotations

import argparse
import os

from rewardsmith.common.network import SANDBOX_TOKEN_ENV
from rewardsmith.sandbox.server import ServerSettings, serve

_DEFAULTS = ServerSettings()


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` sub-command to ``rewardsmith sandbox``."""
    sub = parser.add_subparsers(dest="sandbox_command", required=True)
    s = sub.add_parser("serve", help="serve SandboxFusion-compatible /run_code on HTTP",
                       description="Serve the isolated code sandbox (see docs/sandbox.md).")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--workers", type=int, default=_DEFAULTS.workers,
                   help=f"warm worker processes, i.e. concurrent runs (default: {_DEFAULTS.workers})")
    s.add_argument("--token", default=os.environ.get(SANDBOX_TOKEN_ENV),
                   help=f"require this bearer token (default: ${SANDBOX_TOKEN_ENV}, or none; a non-loopback --host "
                        "needs one; prefer the variable: a command line is visible to every user in ps)")
    s.add_argument("--allow-weak-isolation", action="store_true",
                   help="start even if some isolation layer is unavailable (reported in every response)")
    s.add_argument("--python", default=_DEFAULTS.python, help="interpreter that runs Python programs")
    s.add_argument("--spawn-python", action="store_true",
                   help="start a fresh interpreter per Python run instead of forking a warm one")
    s.add_argument("--network-namespace", choices=["per-worker", "per-run"], default=_DEFAULTS.network_namespace,
                   help="a fresh empty network namespace per run (default), or one per worker shared by its "
                        "sequential runs: no network either way; per-worker saves about 1 ms of CPU per run")
    s.add_argument("--max-pending", type=int, default=_DEFAULTS.max_pending,
                   help="runs in flight before new requests get 429")
    s.add_argument("--max-queue-wait", type=float, default=_DEFAULTS.max_queue_wait_s,
                   help="seconds a run may wait for a free worker before its request gets 429")
    s.add_argument("--max-timeout", type=float, default=_DEFAULTS.max_timeout,
                   help="largest compile_timeout/run_timeout accepted, seconds")
    s.add_argument("--default-memory-mb", type=int, default=_DEFAULTS.default_memory_mb,
                   help="memory limit when a request sends memory_limit_MB=-1")
    s.add_argument("--max-memory-mb", type=int, default=_DEFAULTS.max_memory_mb)
    s.add_argument("--max-processes", type=int, default=_DEFAULTS.max_processes,
                   help="processes/threads one run may have (RLIMIT_NPROC)")
    s.add_argument("--max-output-bytes", type=int, default=_DEFAULTS.max_output_bytes,
                   help="stdout/stderr kept per stream; the rest is dropped and flagged")
    s.add_argument("--max-request-mb", type=int, default=_DEFAULTS.max_request_mb,
                   help="largest request body accepted (413 beyond)")
    s.add_argument("--max-fetch-mb", type=int, default=_DEFAULTS.max_fetch_mb,
                   help="fetch_files returned per request, all files together (MiB)")
    s.add_argument("--max-reply-mb", type=int, default=_DEFAULTS.max_reply_mb,
                   help="program output (stdout and stderr) one /v1/run_batch reply carries, all cases together (MiB); "
                        "past it outputs are cut and flagged")
    s.add_argument("--max-head-kb", type=int, default=_DEFAULTS.max_head_kb,
                   help="request line and headers of one request (KiB); 431 beyond, before the token is checked")
    s.add_argument("--max-headers", type=int, default=_DEFAULTS.max_headers,
                   help="headers in one request; 431 beyond")
    s.add_argument("--base-uid", type=int, default=None,
                   help="worker i runs programs as uid base+i (default: the first block at or above 61000 that "
                        "no account, process or other sandbox server on this host uses)")


def run(args: argparse.Namespace) -> int:
    """Dispatch ``rewardsmith sandbox <command>``."""
    settings = ServerSettings(
        host=args.host, port=args.port, workers=args.workers, token=args.token,
        allow_weak_isolation=args.allow_weak_isolation, python=args.python, spawn_python=args.spawn_python,
        network_namespace=args.network_namespace,
        max_pending=args.max_pending, max_queue_wait_s=args.max_queue_wait, max_timeout=args.max_timeout,
        default_memory_mb=args.default_memory_mb,
        max_memory_mb=args.max_memory_mb, max_processes=args.max_processes,
        max_output_bytes=args.max_output_bytes, base_uid=args.base_uid, max_request_mb=args.max_request_mb,
        max_fetch_mb=args.max_fetch_mb, max_reply_mb=args.max_reply_mb, max_head_kb=args.max_head_kb,
        max_headers=args.max_headers,
    )
    return serve(settings)


def main(argv: list[str] | None = None) -> int:
    """``python -m rewardsmith.sandbox.cli serve ...`` (the same as ``rewardsmith sandbox``)."""
    parser = argparse.ArgumentParser(prog="rewardsmith sandbox")
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
