"""No secret is written down: credentials in URLs never reach config files, errors, scored rows or
user functions; the servers take their tokens from the environment, check them before reading a
body, and refuse to listen beyond loopback without one. Real servers and subprocesses on loopback."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import requests

from model_scoring_helpers import ScriptedServer, rm_serve, save_random_rm

from rewardsmith.common.errors import ConfigError
from rewardsmith.common.redaction import redact_config, redact_text, redact_url
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import RemoteRewardModelConfig
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.model_scoring.remote_rm import RemoteRewardModel
from rewardsmith.plugins.scoring_plan import router_address
from rewardsmith.sandbox.client import SandboxClient, SandboxUnavailable
from rewardsmith.sandbox.testing import free_port

SECRET = "pw-SECRET"


def test_redact_url_masks_userinfo_and_secret_query_values_only():
    assert redact_url("http://alice:pw@h:8080/run_code?token=abc&language=python") == \
        "http://***@h:8080/run_code?token=***&language=python"
    assert redact_url("https://h/v1?api_key=k&X-Amz-Signature=s&page=2#frag") == "https://h/v1?api_key=***&X-Amz-Signature=***&page=2#frag"
    assert redact_url("http://[::1]:5000/get_reward") == "http://[::1]:5000/get_reward"
    # requests' own messages carry the path and query without the host
    assert redact_text("Max retries exceeded with url: /run_code?token=abc (Caused by X)") == \
        "Max retries exceeded with url: /run_code?token=*** (Caused by X)"
    assert redact_config({"a": ["see http://u:p@h/x"], "b": 3, "c": None}) == {"a": ["see http://***@h/x"], "b": 3, "c": None}
    assert redact_text("no scheme: alice:pw@127.0.0.1:8080/run_code") == "no scheme: ***@127.0.0.1:8080/run_code"
    assert redact_text("at 12:00 on 127.0.0.1:80") == "at 12:00 on 127.0.0.1:80"


def test_config_errors_quoting_a_value_mask_its_credentials(make_config):
    with pytest.raises(ConfigError) as caught:
        make_config(f"reward_model.sandbox_fusion.url=[http://sb:{SECRET}@h/run_code?token={SECRET}]")
    assert "reward_model.sandbox_fusion.url" in str(caught.value) and "http://***@h/run_code?token=***" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_router_address_for_verl_judge_functions_has_no_userinfo(tmp_path, make_config):
    assert router_address(f"http://judge:{SECRET}@127.0.0.1:8000/v1") == "127.0.0.1:8000"
    assert router_address("http://[::1]:8000/v1") == "[::1]:8000"
    # what a verl generative-judge function really receives, through the reward manager
    (tmp_path / "genrm.py").write_text(
        "def compute_score(data_source, solution_str, ground_truth, extra_info, reward_router_address):\n"
        "    return {'score': 0.0, 'address': reward_router_address}\n")
    cfg = make_config(f"custom_reward_function.path={tmp_path / 'genrm.py'}",
                      f"reward_model.judge.base_url=http://judge:{SECRET}@127.0.0.1:8000/v1")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["chat"], ["an answer"], [None]))
    assert out.extra_info["address"] == ["127.0.0.1:8000"]


def test_judge_errors_in_scored_rows_carry_no_credentials(make_config):
    def reply(path, body, headers):
        return 500, {"error": "overloaded"}

    with ScriptedServer(reply) as server:
        url = server.url.replace("http://", f"http://judge-user:{SECRET}@") + "/v1"
        cfg = make_config("reward_model.enable=true", f"reward_model.judge.base_url={url}", "reward_model.judge.model=m",
                          "reward_model.judge.max_retries=0", "reward_model.fallback_score=-1")
        with build_reward_manager(cfg.reward_settings()) as manager:
            out = manager(RewardBatch(["chat"], ["an answer"], [None], styles=["model"], prompts=["Q?"]))
        assert server.requests, "the request was made (with the real URL)"
        assert server.requests[0][2]["Authorization"].startswith("Basic ")  # requests sent the userinfo as basic auth
    seen = json.dumps([out.extra_info, out.metrics], default=str)
    assert "HTTP 500" in seen and "127.0.0.1" in seen
    assert SECRET not in seen and "judge-user" not in seen


def test_remote_rm_connection_errors_carry_no_credentials():
    port = free_port()  # nothing listens there
    rm = RemoteRewardModel(RemoteRewardModelConfig(urls=[f"http://rm-user:{SECRET}@127.0.0.1:{port}/get_reward?token={SECRET}"],
                                                   max_retries=0, timeout=5))
    try:
        [outcome] = rm.score([ModelRequest("x", "prompt", "response")])
    finally:
        rm.close()
    assert outcome.status == "unavailable"
    assert f"127.0.0.1:{port}" in outcome.error and SECRET not in outcome.error and "rm-user" not in outcome.error


def test_sandbox_client_errors_carry_no_credentials():
    port = free_port()
    client = SandboxClient(f"http://sb:{SECRET}@127.0.0.1:{port}/run_code?token={SECRET}", retries=0, backoff_s=0.01)
    with pytest.raises(SandboxUnavailable) as caught:
        client.status()
    client.close()
    assert f"127.0.0.1:{port}" in str(caught.value) and SECRET not in str(caught.value)


# -- rm serve -----------------------------------------------------------------

@pytest.fixture(scope="module")
def rm_path(tmp_path_factory):
    return save_random_rm(tmp_path_factory.mktemp("rm") / "rm")


def raw_post(address: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
    """POST /get_reward with exactly these headers (e.g. a Content-Length the body does not have);
    returns the status and whatever the server answered before closing."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(f"POST /get_reward HTTP/1.1\r\nHost: {address}\r\n{head}\r\n".encode() + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < int(
                data.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0] if b"Content-Length: " in data else 0):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def test_rm_serve_reads_its_token_from_the_environment_and_checks_it_before_the_body(rm_path):
    with rm_serve(rm_path, token="env-token") as address:  # token in $REWARDSMITH_RM_TOKEN, not in argv
        url = f"http://{address}/get_reward"
        assert requests.post(url, json={"query": ["x"]}, timeout=30).status_code == 401
        assert requests.post(url, json={"query": ["x"]}, headers={"Authorization": "Bearer env-token"}, timeout=30).status_code == 200
        # A body announced as 10 GB and never sent: answered at once (the socket's timeout would
        # raise if the server were waiting to read it).
        status, _ = raw_post(address, {"Content-Length": str(10 << 30), "Authorization": "Bearer wrong"})
        assert status == 401
        status, answer = raw_post(address, {"Content-Length": str(10 << 30), "Authorization": "Bearer env-token"})
        assert status == 413 and b"max-request-mb" in answer
        # a client that waits for "100 Continue" before sending its body is refused instead
        status, answer = raw_post(address, {"Content-Length": "100", "Expect": "100-continue", "Authorization": "Bearer wrong"})
        assert status == 401 and b"100 Continue" not in answer
        # the server still serves
        assert requests.post(url, json={"query": ["y"]}, headers={"Authorization": "Bearer env-token"}, timeout=30).status_code == 200


# -- sandbox serve --------------------------------------------------------------

def sandbox_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "REWARDSMITH_SANDBOX_TOKEN"}
    return subprocess.run([sys.executable, "-m", "rewardsmith", "sandbox", "serve", *args], capture_output=True, text=True,
                          timeout=120, env={**environ, **(env or {})})


def test_sandbox_serve_refuses_a_public_host_without_a_token():
    done = sandbox_serve("--host", "0.0.0.0", "--port", str(free_port()), "--allow-weak-isolation")
    assert done.returncode == 2
    assert "refusing to serve on non-loopback host '0.0.0.0' without a token" in done.stderr
    assert "$REWARDSMITH_SANDBOX_TOKEN" in done.stderr and "rewardsmith sandbox: http" not in done.stderr


def test_sandbox_serve_on_a_taken_port_fails_before_its_banner():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = sandbox_serve("--port", str(port), "--allow-weak-isolation", "--workers", "1")
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "in use" in done.stderr
    assert "rewardsmith sandbox: http" not in done.stderr + done.stdout
