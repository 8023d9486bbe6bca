"""SandboxClient against the real server, and against a flaky loopback front that fails on purpose."""
from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import time

import pytest
import requests

from rewardsmith.sandbox.client import SandboxClient, SandboxRequestError, SandboxUnavailable
from rewardsmith.sandbox.testing import free_port, isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()

TOKEN = "client-test-token"


@pytest.fixture(scope="module")
def url():
    if NO_ISOLATION:
        pytest.skip(NO_ISOLATION)
    with running_server("--workers", "2", "--token", TOKEN) as base:
        yield base


class FlakyFront:
    """A loopback HTTP front: fails the first ``failures`` requests with ``status``, then forwards.

    With ``batch_missing`` it answers /v1/run_batch with 404, like a plain SandboxFusion server.
    """

    def __init__(self, upstream: str, failures: int, status: int, batch_missing: bool = False):
        self.calls: list[str] = []
        front = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                front.calls.append(self.path)
                if len(front.calls) <= failures:
                    return self._reply(status, {"detail": "injected failure"}, {"Retry-After": "0"})
                if batch_missing and self.path.startswith("/v1/run_batch"):
                    return self._reply(404, {"detail": "Not Found"})
                upstream_reply = requests.post(upstream + self.path, data=body, timeout=60,
                                               headers={"Content-Type": "application/json",
                                                        "Authorization": self.headers.get("Authorization", "")})
                self._reply(upstream_reply.status_code, upstream_reply.json())

            def _reply(self, code, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_run_code_with_verl_style_url_and_token(url):
    with SandboxClient(url + "/run_code", token=TOKEN) as client:
        assert client.base_url == url
        reply = client.run_code("print(input()[::-1])", stdin="abc\n")
    assert reply["status"] == "Success" and reply["run_result"]["stdout"] == "cba\n"


def test_token_in_a_verl_style_url_is_used(url):
    with SandboxClient(f"{url}/run_code?token={TOKEN}") as client:
        assert client.base_url == url
        assert client.run_code("print(5)")["run_result"]["stdout"] == "5\n"
        assert client.run_batch("print(input())", ["a"])["results"][0]["stdout"] == "a\n"


def test_files_are_encoded_and_fetched(url):
    with SandboxClient(url, token=TOKEN) as client:
        reply = client.run_code("cat in.bin > out.bin", "bash", files={"in.bin": b"\x00\x01\xff"},
                                fetch_files=["out.bin"])
    assert base64.b64decode(reply["files"]["out.bin"]) == b"\x00\x01\xff"


def test_wrong_token_is_a_request_error_not_retried(url):
    with SandboxClient(url, token="wrong", retries=3, backoff_s=0.01) as client:
        with pytest.raises(SandboxRequestError) as info:
            client.run_code("print(1)")
    assert info.value.status_code == 401


@pytest.mark.parametrize("status", [503, 429, 500, 504])
def test_retries_transient_failures(url, status):
    front = FlakyFront(url, failures=2, status=status)
    try:
        with SandboxClient(front.url, token=TOKEN, retries=3, backoff_s=0.01) as client:
            reply = client.run_code("print('through')")
    finally:
        front.close()
    assert reply["run_result"]["stdout"] == "through\n"
    assert len(front.calls) == 3


def test_gives_up_after_the_last_retry(url):
    front = FlakyFront(url, failures=100, status=503)
    try:
        with SandboxClient(front.url, retries=2, backoff_s=0.01) as client:
            with pytest.raises(SandboxUnavailable, match="503"):
                client.run_code("print(1)")
    finally:
        front.close()
    assert len(front.calls) == 3


def test_a_server_never_reached_fails_at_once_without_retries():
    dead = f"http://127.0.0.1:{free_port()}"
    with SandboxClient(dead, retries=4, backoff_s=2) as client:
        assert client.ping() is False
        start = time.monotonic()
        with pytest.raises(SandboxUnavailable, match=f"sandbox at {dead} cannot be reached: ConnectionError: "
                                                     "Connection refused$"):
            client.run_code("print(1)")
        assert time.monotonic() - start < 1.0  # retried, the back-off alone would be 15 s or more


def test_batch_uses_the_batch_endpoint(url):
    with SandboxClient(url, token=TOKEN) as client:
        reply = client.run_batch("print(int(input()) + 1)", ["1", "2", "x"])
    assert [r["stdout"] for r in reply["results"][:2]] == ["2\n", "3\n"]
    assert reply["results"][2]["return_code"] == 1
    assert reply["status"] == "Failed"


def test_batch_falls_back_to_run_code_on_a_plain_sandboxfusion(url):
    front = FlakyFront(url, failures=0, status=500, batch_missing=True)
    try:
        with SandboxClient(front.url, token=TOKEN) as client:
            first = client.run_batch("print(int(input()) * 10)", ["1", "2", "3"])
            second = client.run_batch("print(int(input()) * 10)", ["4"])
    finally:
        front.close()
    assert [r["stdout"] for r in first["results"]] == ["10\n", "20\n", "30\n"]
    assert first["status"] == "Success" and second["results"][0]["stdout"] == "40\n"
    assert front.calls.count("/v1/run_batch") == 0  # known from the capability check, never tried
    assert front.calls.count("/run_code") == 4


def test_status_and_ping(url):
    with SandboxClient(url, token=TOKEN) as client:
        assert client.ping() is True
        assert client.status()["missing_layers"] == []
