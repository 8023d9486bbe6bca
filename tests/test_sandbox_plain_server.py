"""The sandbox client against servers that are not ours: a plain SandboxFusion-like
server on loopback (no batch endpoint, serving only a few requests at a time),
and a gateway in front of it that answers 401/403/405 on paths it does not know."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.sandbox.client import PLAIN_START, AdaptiveLimit, SandboxClient


class PlainSandboxFusion:
    """Speaks SandboxFusion's ``POST /run_code`` (Python, run in a real subprocess), has no
    ``/v1/run_batch`` or ``/v1/status``, and runs at most ``capacity`` programs at once:
    the rest wait inside the server, so latency climbs with what is sent.

    ``deny`` maps paths to a status a gateway would answer (401/403/405).
    """

    def __init__(self, capacity: int, deny: dict[str, int] | None = None):
        self.slots = threading.Semaphore(capacity)
        self.lock = threading.Lock()
        self.inside = 0
        self.peak_inside = 0
        self.paths: list[str] = []
        plain = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                plain.paths.append("GET " + self.path)
                self._reply(plain_status(self.path, 404), {"detail": "Not Found"})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                plain.paths.append("POST " + self.path)
                if self.path != "/run_code" or (deny and self.path in deny):
                    return self._reply(plain_status(self.path, 404), {"detail": "Not Found"})
                with plain.lock:
                    plain.inside += 1
                    plain.peak_inside = max(plain.peak_inside, plain.inside)
                try:
                    with plain.slots:
                        proc = subprocess.run([sys.executable, "-c", body["code"]], input=body.get("stdin") or "",
                                              capture_output=True, text=True, timeout=body.get("run_timeout", 10))
                finally:
                    with plain.lock:
                        plain.inside -= 1
                run = {"status": "Finished", "return_code": proc.returncode, "stdout": proc.stdout,
                       "stderr": proc.stderr, "execution_time": 0.0}
                self._reply(200, {"status": "Success" if proc.returncode == 0 else "Failed", "message": "",
                                  "compile_result": None, "run_result": run, "files": {}})

            def _reply(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        def plain_status(path: str, default: int) -> int:
            return (deny or {}).get(path.split("?")[0], default)

        ThreadingHTTPServer.request_queue_size = 256
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def test_adaptive_limit_backs_off_when_latency_climbs_and_grows_when_flat():
    limit = AdaptiveLimit(64, adaptive=True, start=8)

    def round_of(latency: float) -> None:
        for _ in range(limit.current):
            limit.acquire()
        for _ in range(limit.current):
            limit.release(latency)

    round_of(0.1)
    assert limit.current == 9  # flat latency: one more
    round_of(0.5)
    assert limit.current == 6  # five times the best: a quarter less
    round_of(0.5)
    assert limit.current == 5  # 6.75 * 0.75
    limit.acquire()
    limit.release(overloaded=True)
    assert limit.current == 2
    fixed = AdaptiveLimit(3)
    for _ in range(3):
        fixed.acquire()
    assert fixed.in_flight == 3 and fixed.current == 3
    done = threading.Event()
    threading.Thread(target=lambda: (fixed.acquire(), done.set()), daemon=True).start()
    assert not done.wait(0.2)  # the fourth waits
    fixed.release(1.0)
    assert done.wait(5)


@pytest.mark.parametrize("status", [401, 403, 405])
def test_a_gateway_refusing_unknown_paths_does_not_make_samples_unavailable(status):
    deny = {"/v1/status": status, "/v1/run_batch": status}
    with PlainSandboxFusion(capacity=4, deny=deny) as server:
        client = SandboxClient(server.url + "/run_code", retries=0)
        reply = client.run_batch("print(int(input()) * 3)", ["1", "2"])
        assert [r["stdout"] for r in reply["results"]] == ["3\n", "6\n"]
        assert client.batch_supported() is False and client.limit.adaptive
        assert "POST /v1/run_batch" not in server.paths and server.paths.count("GET /v1/status") == 1


@pytest.mark.slow
def test_sandbox_manager_against_a_plain_server_serving_two_at_a_time(caplog):
    # 32 samples x 4 cases = 128 requests of ~0.1 s each, two at a time: ~6 s of work.
    # Sent all at once (64 samples' worth of requests in flight), samples finish
    # when the whole batch does and pass a 6 s timeout; bounded and adapting, none does.
    gt = json.dumps({"inputs": ["1\n", "2\n", "3\n", "4\n"], "outputs": ["1\n", "4\n", "9\n", "16\n"]})
    program = "import time\ntime.sleep(0.1)\nn = int(input())\nprint(n * n)"
    responses = [fenced(program + f"\n# sample {i}") for i in range(32)]
    with PlainSandboxFusion(capacity=2) as server:
        settings = load_config(Config, None, [
            "reward_model.reward_manager=sandbox", f"reward_model.sandbox_fusion.url={server.url}/run_code",
            "reward_model.timeout=6", "reward_model.sandbox_fusion.retry_backoff=0.01",
        ]).reward_settings()
        assert settings.reward_model.sandbox_fusion.max_concurrent == 64  # the default
        with caplog.at_level(logging.WARNING, logger="rewardsmith.sandbox.client"):
            with build_reward_manager(settings) as manager:
                out = manager(RewardBatch(["codecontests"] * 32, responses, [gt] * 32))
    assert out.extra_info["reward_status"] == ["ok"] * 32, out.extra_info["reward_error"]
    assert out.scores.tolist() == [1.0] * 32 and out.metrics["reward/timeouts"] == 0.0
    # Bounded: it starts at PLAIN_START (not the default 64) and adapts from there; an additive probe
    # may add one a round while latency looks steady (9 inside was seen once), queueing takes it back.
    assert server.peak_inside <= 2 * PLAIN_START
    assert "POST /v1/run_batch" not in server.paths
    warnings = [r for r in caplog.records if "no batch endpoint" in r.getMessage()]
    assert len(warnings) == 1
