"""Issue 28, section 3: the server is bounded before authentication and per request.

Each test sends what the red team sent (a head of 96 MiB without a token, a
tiny batch asking for a huge reply, millions of empty cases, half a million
fetch_files, a body behind a full queue, an empty token) to a real server
on 127.0.0.1, and failed on the code before the fix (8726fc6). Memory is
the server process's resident set, read from /proc.
"""
from __future__ import annotations

import json
import socket
import threading
import time
import uuid

import pytest
import requests

from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()
pytestmark = pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION))

BASE_UID = 62700
TOKEN = f"token-{uuid.uuid4().hex}"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "2", "--base-uid", str(BASE_UID), "--max-reply-mb", "4",
                        env={"REWARDSMITH_SANDBOX_TOKEN": TOKEN}) as base:
        yield base


def server_rss_mb(url: str) -> float:
    pid = requests.get(url + "/v1/status", headers=AUTH, timeout=10).json()["server_pid"]
    with open(f"/proc/{pid}/status") as fh:
        kb = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
    return kb / 1024


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def send_then_answer(sock: socket.socket, chunks, wait_s: float = 5.0) -> bytes:
    """Send ``chunks`` until the server closes, then whatever it answered within ``wait_s`` (b"" for none)."""
    try:
        for chunk in chunks:
            sock.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    sock.settimeout(wait_s)
    answer = b""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    except ConnectionResetError:
        pass
    except socket.timeout:
        return answer or b"(no answer: the server is still reading)"
    return answer


def test_a_96_mib_head_without_a_token_is_refused_without_memory_growth(url):
    before = server_rss_mb(url)
    with connect(url) as sock:
        head = b"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
        answer = send_then_answer(sock, [head, *(b"a" * (1 << 20) for _ in range(96))])
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer[:200]
    grown = server_rss_mb(url) - before
    assert grown < 16, f"the server grew by {grown:.0f} MiB while a client without a token sent headers"


def test_too_many_headers_are_refused_before_the_token(url):
    with connect(url) as sock:
        lines = b"".join(b"X-H%d: v\r\n" % i for i in range(500))
        answer = send_then_answer(sock, [b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n" + lines + b"\r\n"])
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"at most 100 headers" in answer


def test_heads_within_the_limits_are_served(url):
    headers = {**AUTH, "X-Large": "v" * (40 << 10), **{f"X-H{i}": "v" for i in range(90)}}
    with requests.Session() as session:  # one connection: a 2 MiB body, then a large head on it
        body = {"code": "print(len(input()))", "stdin": "x" * (2 << 20)}
        assert session.post(url + "/run_code", json=body, headers=AUTH, timeout=60).json()["run_result"]["stdout"] \
            == f"{2 << 20}\n"
        assert session.get(url + "/v1/status", headers=headers, timeout=10).status_code == 200


def test_a_tiny_batch_cannot_ask_for_a_huge_reply(url):
    code = "import sys\nsys.stdout.write('a' * (1 << 20))\nsys.stderr.write('b' * (1 << 20))\n"
    body = {"code": code, "language": "python", "cases": [{}] * 16}
    reply = requests.post(url + "/v1/run_batch", json=body, headers=AUTH, timeout=300)
    assert reply.status_code == 200, reply.text[:500]
    assert len(reply.content) < 5 << 20, f"a {len(json.dumps(body))}-byte request got a {len(reply.content)}-byte reply"
    answer = reply.json()
    assert "limit of 4 MiB of program output per request" in answer["message"]
    assert [r["verdict"] for r in answer["results"]] == ["OK"] * 16  # the cut never changes a verdict
    cut = [r for r in answer["results"] if r["stdout_truncated"] or r["stderr_truncated"]]
    assert len(cut) >= 14
    kept = sum(len(r["stdout"]) + len(r["stderr"]) for r in answer["results"])
    assert kept == 4 << 20


def test_two_million_empty_cases_are_refused_at_once_and_ping_is_not_kept_waiting(url):
    body = b'{"code": "print(1)", "cases": [' + b",".join([b"{}"] * 2_000_000) + b"]}"
    outcome = {}

    def send():
        started = time.monotonic()
        reply = requests.post(url + "/v1/run_batch", data=body, timeout=300,
                              headers={**AUTH, "Content-Type": "application/json"})
        outcome["reply"], outcome["seconds"] = reply, time.monotonic() - started

    sender = threading.Thread(target=send)
    sender.start()
    slowest = 0.0
    while sender.is_alive() and len(outcome) == 0:
        started = time.monotonic()
        assert requests.get(url + "/v1/ping", timeout=60).text == "pong"
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.02)
    sender.join(timeout=300)
    assert slowest < 2, f"an unrelated /v1/ping waited {slowest:.1f} s"
    assert outcome["seconds"] < 10, f"refused only after {outcome['seconds']:.1f} s"
    reply = outcome["reply"]
    assert reply.status_code == 413 and "JSON values" in reply.json()["detail"], reply.text[:500]


def test_fetch_files_are_bounded_in_count(url):
    few_too_many = {"code": "print(1)", "fetch_files": [f"f{i}" for i in range(5000)]}
    reply = requests.post(url + "/run_code", json=few_too_many, headers=AUTH, timeout=120)
    assert reply.status_code == 422 and "fetch_files" in reply.json()["detail"], reply.text[:500]
    started = time.monotonic()
    flood = {"code": "print(1)", "fetch_files": [f"f{i}" for i in range(500_000)]}
    reply = requests.post(url + "/run_code", json=flood, headers=AUTH, timeout=120)
    assert reply.status_code == 413, reply.text[:500]
    assert time.monotonic() - started < 10


def test_a_full_queue_refuses_before_the_body_is_read():
    with running_server("--workers", "1", "--max-pending", "1", "--base-uid", str(BASE_UID + 10),
                        env={"REWARDSMITH_SANDBOX_TOKEN": TOKEN}) as base:
        sleeper = threading.Thread(target=requests.post, args=(base + "/run_code",),
                                   kwargs={"json": {"code": "import time\ntime.sleep(6)"}, "headers": AUTH,
                                           "timeout": 60})
        sleeper.start()
        try:
            deadline = time.monotonic() + 20
            while requests.get(base + "/v1/status", headers=AUTH, timeout=10).json()["runs_in_flight"] < 1:
                assert time.monotonic() < deadline, "the sleeping run never started"
                time.sleep(0.05)
            with connect(base) as sock:
                head = (f"POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {8 << 20}\r\n\r\n").encode()
                answer = send_then_answer(sock, [head], wait_s=3)  # the 8 MiB body is never sent
            assert answer.startswith(b"HTTP/1.1 429"), answer[:200]
            assert b"retry-after: 1" in answer.lower()
        finally:
            sleeper.join(timeout=60)


def test_an_empty_token_is_refused_at_start():
    with pytest.raises(RuntimeError, match="is empty"):
        with running_server("--base-uid", str(BASE_UID + 20), env={"REWARDSMITH_SANDBOX_TOKEN": ""}):
            pass


def test_json_values_inside_strings_are_not_counted():
    from rewardsmith.sandbox.gate import json_items

    code = json.dumps("int main() { int a[3] = {1, 2, 3}; puts(\"[{,}]\"); }" * 1000)
    body = ('{"code": ' + code + ', "cases": [{"stdin": "1 2"}, {}]}').encode()
    assert json_items(body, 20) == 11  # 5 strings, 3 objects, 1 array, 2 commas (none of the code's)
    flood = b'{"cases": [' + b",".join([b"{}"] * 1000) + b"]}"
    assert json_items(flood, 100) == 101  # counted only up to the limit
