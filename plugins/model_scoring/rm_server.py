"""``rewardsmith rm serve``: a local reward model behind OpenRLHF's ``/get_reward`` protocol.

``POST /get_reward {"query": [...], "prompts": [...]}`` answers
``{"rewards": [...], "scores": [...], "extra_logs": {"truncated_prompt": [...]}}``;
``query[i]`` is the full text (prompt + response) and ``prompts[i]``, when it
is the start of ``query[i]``, marks the prompt part that is cut first when the
text is too long. Queries of concurrent requests are scored together by one
batching thread. ``GET /health`` answers ``{"status": "ok"}``.
"""
from __future__ import annotations

import hmac
import json
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from rewardsmith.common.network import RM_TOKEN_ENV, check_exposure
from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel


MAX_REQUEST_MB = 64


class _Job:
    def __init__(self, queries: list[str], prompts: list[str]) -> None:
        self.queries, self.prompts = queries, prompts
        self.done = threading.Event()
        self.rewards: Optional[list[float]] = None
        self.truncated: Optional[list[bool]] = None
        self.error: Optional[str] = None


class RewardBatcher:
    """One thread scoring the queries of every waiting request together (up to ``max_batch``)."""

    def __init__(self, model: LocalRewardModel, max_batch: int) -> None:
        self.model, self.max_batch = model, max_batch
        self.jobs: "queue.Queue[_Job]" = queue.Queue()
        self.batches = 0
        threading.Thread(target=self._loop, daemon=True, name="rm-batcher").start()

    def submit(self, queries: list[str], prompts: list[str]) -> _Job:
        job = _Job(queries, prompts)
        self.jobs.put(job)
        job.done.wait()
        return job

    def _loop(self) -> None:
        while True:
            jobs = [self.jobs.get()]
            size = len(jobs[0].queries)
            while size < self.max_batch:
                try:
                    jobs.append(self.jobs.get_nowait())
                except queue.Empty:
                    break
                size += len(jobs[-1].queries)
            queries = [q for j in jobs for q in j.queries]
            prefixes = [p if q.startswith(p) else "" for j in jobs for q, p in zip(j.queries, j.prompts)]
            try:
                encoded = [self.model.encode(p, q) for p, q in zip(prefixes, queries)]
                sequences = [ids for ids, _ in encoded]
                truncated = [cut for _, cut in encoded]
                rewards = self.model.forward(sequences)
                self.batches += 1
            except Exception as exc:  # noqa: BLE001 - answered as a 500, the server keeps serving
                for j in jobs:
                    j.error = f"{type(exc).__name__}: {exc}"
                    j.done.set()
                continue
            at = 0
            for j in jobs:
                n = len(j.queries)
                j.rewards, j.truncated = rewards[at:at + n], truncated[at:at + n]
                at += n
                j.done.set()


def make_server(model: LocalRewardModel, host: str, port: int, token: Optional[str], max_batch: int = 256,
                max_request_mb: int = MAX_REQUEST_MB) -> ThreadingHTTPServer:
    """The HTTP server (not yet serving); refuses a non-loopback ``host`` without a ``token``.

    A request's token is checked before its body is read, and a body over
    ``max_request_mb`` is refused (413) unread.
    """
    check_exposure(host, token, RM_TOKEN_ENV)
    max_bytes = max_request_mb << 20
    batcher = RewardBatcher(model, max_batch)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # one line per request would flood training logs
            pass

        def _send(self, code: int, body: dict, close: bool = False) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if close:  # the request's body was left unread: the connection cannot carry another request
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"status": "ok", "batches": batcher.batches})
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def _refused(self) -> bool:
            """Answer 401, 400 or 413 (and close) if the headers alone rule the request out."""
            if token and not hmac.compare_digest(self.headers.get("Authorization", "").encode(), f"Bearer {token}".encode()):
                self._send(401, {"error": "missing or wrong bearer token"}, close=True)
                return True
            length = self.headers.get("Content-Length") or "0"
            if not length.isdigit():
                self._send(400, {"error": f"bad Content-Length {length!r}"}, close=True)
                return True
            if int(length) > max_bytes:
                self._send(413, {"error": f"request body of {int(length)} bytes is over the limit of {max_request_mb} MiB "
                                          "(rm serve --max-request-mb); send fewer queries per request"}, close=True)
                return True
            return False

        def handle_expect_100(self) -> bool:  # no "100 Continue" (inviting the body) before the checks
            return not self._refused() and super().handle_expect_100()

        def do_POST(self) -> None:
            # Nothing of the body is read before the token and the size are checked.
            if self._refused():
                return
            length = self.headers.get("Content-Length") or "0"
            body = self.rfile.read(int(length))
            if self.path.rstrip("/") != "/get_reward":
                self._send(404, {"error": f"no route {self.path}; POST /get_reward"})
                return
            try:
                data = json.loads(body or b"{}")
                queries = data["query"]
                prompts = data.get("prompts") or [""] * len(queries)
                if not (isinstance(queries, list) and all(isinstance(q, str) for q in queries)):
                    raise ValueError("'query' must be a list of strings")
                if not (isinstance(prompts, list) and len(prompts) == len(queries) and all(isinstance(p, str) for p in prompts)):
                    raise ValueError("'prompts' must be a list of strings as long as 'query'")
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": f"bad request: {exc}"})
                return
            job = batcher.submit(queries, prompts)
            if job.error is not None:
                self._send(500, {"error": job.error})
                return
            self._send(200, {"rewards": job.rewards, "scores": job.rewards, "extra_logs": {"truncated": job.truncated}})

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def serve(cfg: Any, host: str, port: int, token: Optional[str], max_batch: int = 256,
          max_request_mb: int = MAX_REQUEST_MB) -> None:
    """Load the reward model of ``cfg`` (a RewardModelPathConfig) and serve it until interrupted."""
    check_exposure(host, token, RM_TOKEN_ENV)  # before the slow part: loading the weights
    server = make_server(LocalRewardModel(cfg, "rm serve"), host, port, token, max_batch, max_request_mb)
    print(f"serving reward model {cfg.path} on http://{host}:{server.server_address[1]}/get_reward", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
