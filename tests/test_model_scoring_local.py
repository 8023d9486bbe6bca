"""The local reward model, and rows routed by reward_model.style in one batch."""
from __future__ import annotations

import pytest
import torch

from model_scoring_helpers import save_random_rm

from rewardsmith.common.errors import ConfigError, NotRegistered, RewardError
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import RewardModelPathConfig
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel, length_sorted_batches, truncate_left

torch.set_num_threads(1)
PROMPT = [{"role": "user", "content": "Say something."}]


@pytest.fixture(scope="module")
def rm_path(tmp_path_factory):
    return save_random_rm(tmp_path_factory.mktemp("rm") / "rm")


def test_truncation_cuts_the_prompt_start_first():
    assert truncate_left([1, 2, 3], [4, 5], 10) == ([1, 2, 3, 4, 5], 0, 0)
    assert truncate_left([1, 2, 3], [4, 5], 4) == ([2, 3, 4, 5], 1, 0)
    assert truncate_left([1, 2, 3], [4, 5, 6, 7], 3) == ([4, 5, 6], 3, 1)


def test_micro_batches_group_similar_lengths():
    assert length_sorted_batches([3, 9, 1, 8, 2], 2) == [[1, 3], [0, 4], [2]]


def test_batched_scores_equal_one_by_one_and_truncation_is_counted(rm_path):
    texts = ["a", "abc" * 5, "hello there", "zz", "aaaa bbbb cccc dddd", ""]
    batched = LocalRewardModel(RewardModelPathConfig(path=str(rm_path), micro_batch_size=3))
    single = LocalRewardModel(RewardModelPathConfig(path=str(rm_path), micro_batch_size=1))
    requests = [ModelRequest("open", PROMPT, t) for t in texts]
    a = [o.score for o in batched.score(requests)]
    b = [o.score for o in single.score(requests)]
    assert a == pytest.approx(b, abs=1e-5)
    assert len(set(round(x, 6) for x in a)) == len(texts)  # really depends on the text
    assert batched.metrics() == {"truncated_prompt": 0.0, "truncated_response": 0.0, "missing_prompt": 0.0}

    # max_length below prompt + response: the prompt's start goes, the score is that of the kept tokens
    short = LocalRewardModel(RewardModelPathConfig(path=str(rm_path), max_length=12))
    ids, cut = short.encode(*_render(short, PROMPT, "hello"))
    assert cut and len(ids) == 12
    assert short.tokenizer.decode(ids).endswith("hello<|end|>")
    [out] = short.score([ModelRequest("open", PROMPT, "hello")])
    assert out.score == pytest.approx(short.forward([ids])[0])
    assert short.metrics()["truncated_prompt"] == 2.0  # the encode above and the scored request
    [long] = short.score([ModelRequest("open", None, "x" * 40)])
    assert long.status == "ok"
    assert short.metrics() == {"truncated_prompt": 0.0, "truncated_response": 1.0, "missing_prompt": 1.0}


def _render(model, prompt, response):
    from rewardsmith.plugins.model_scoring.interface import render_chat
    return render_chat(model.tokenizer, prompt, response)


def test_a_path_that_is_not_a_one_output_classifier_is_an_error(tmp_path, make_config):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    from model_scoring_helpers import TINY_RM
    lm = tmp_path / "lm"
    AutoModelForCausalLM.from_config(AutoConfig.for_model(**TINY_RM, vocab_size=120)).save_pretrained(lm)
    two = tmp_path / "two"
    AutoModelForSequenceClassification.from_config(AutoConfig.for_model(**TINY_RM, vocab_size=120, num_labels=2)).save_pretrained(two)
    for path, message in [(lm, r"reward_model\.model\.path=.*lm is not a sequence classifier \(architectures: Qwen2ForCausalLM\)"),
                          (two, r"has 2 outputs"), (tmp_path / "missing", "not a directory")]:
        with pytest.raises(ConfigError, match=message):
            build_reward_manager(make_config("reward_model.enable=true", f"reward_model.model.path={path}").reward_settings())


def test_mixed_batch_routes_rule_and_model_rows_in_row_order(rm_path, make_config):
    cfg = make_config("reward_model.enable=true", "reward_model.route_by_style=true", f"reward_model.model.path={rm_path}")
    direct = LocalRewardModel(cfg.reward_model.model)
    responses = ["#### 4", "aaaa", "#### 5", "bbbb", "aaaa"]
    styles = ["rule", "model", "rule", "model", "model"]
    sources = ["openai/gsm8k", "open/chat", "openai/gsm8k", "open/chat", "open/chat"]
    batch = RewardBatch(sources, responses, ["4", None, "4", None, None], styles=styles, prompts=[PROMPT] * 5,
                        response_mask=torch.ones(5, 3))
    with build_reward_manager(cfg.reward_settings()) as manager:
        manager.check_rows(batch)
        out = manager(batch)
    expected = [o.score for o in direct.score([ModelRequest("open/chat", PROMPT, r) for r in ("aaaa", "bbbb")])]
    assert out.scores.tolist() == pytest.approx([1.0, expected[0], 0.0, expected[1], expected[0]], abs=1e-5)
    assert out.token_level_scores[:, -1].tolist() == pytest.approx(out.scores.tolist())
    assert out.metrics["reward/local_rm/count"] == 3.0
    assert out.metrics["reward/local_rm/mean"] == pytest.approx((2 * expected[0] + expected[1]) / 3, abs=1e-5)
    assert out.metrics["reward/gsm8k/mean"] == 0.5
    assert out.metrics["reward/source/open/chat/mean"] == pytest.approx((2 * expected[0] + expected[1]) / 3, abs=1e-5)
    assert out.metrics["reward/unique_calls_ratio"] == pytest.approx(4 / 5)


def test_under_verl_keys_the_reward_model_scores_every_row_whatever_its_style(rm_path, make_config):
    # verl 0.9.1 (RewardLoopWorker.compute_score): reward_model.enable without a custom function
    # scores every row with the reward model; a rule row's scorer is never asked.
    cfg = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}")
    direct = LocalRewardModel(cfg.reward_model.model)
    responses = ["#### 4", "aaaa", "#### 4"]
    batch = RewardBatch(["openai/gsm8k", "open/chat", "openai/gsm8k"], responses, ["4", None, "4"],
                        styles=["rule", "model", "rule-lighteval/MATH_v2"], prompts=[PROMPT] * 3,
                        response_mask=torch.ones(3, 3))
    with build_reward_manager(cfg.reward_settings()) as manager:
        manager.check_rows(batch)
        out = manager(batch)
    expected = [o.score for o in direct.score([ModelRequest("x", PROMPT, r) for r in responses])]
    assert out.scores.tolist() == pytest.approx(expected, abs=1e-5)
    assert 1.0 not in out.scores.tolist()  # the gsm8k scorer would have given 1.0
    assert out.metrics["reward/local_rm/count"] == 3.0


def test_under_verl_keys_a_custom_function_scores_every_row_even_with_the_model_on(rm_path, make_config, tmp_path):
    fn = tmp_path / "fn.py"
    fn.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.25\n")
    # a local model that no row would reach is refused, naming the keys
    idle = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}", f"custom_reward_function.path={fn}")
    with pytest.raises(ConfigError, match=r"reward_model\.model\.path is set, but custom_reward_function\.path scores every row.*route_by_style=true"):
        build_reward_manager(idle.reward_settings())
    cfg = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}", f"custom_reward_function.path={fn}",
                      "reward_model.components={'never/*': {rm: {kind: local_rm}}}")
    batch = RewardBatch(["open/chat", "openai/gsm8k"], ["aaaa", "#### 4"], [None, "4"], styles=["model", "rule"],
                        prompts=[PROMPT] * 2, response_mask=torch.ones(2, 3))
    with build_reward_manager(cfg.reward_settings()) as manager:
        manager.check_rows(batch)
        assert manager(batch).scores.tolist() == [0.25, 0.25]


def test_return_raw_chat_gives_the_reward_model_the_chat_under_its_own_template(tmp_path, make_config):
    # verl's RM worker re-templates the raw chat when the RM's tokenizer differs from the policy's.
    from transformers import AutoTokenizer

    path = save_random_rm(tmp_path / "rm")
    tok = AutoTokenizer.from_pretrained(path)
    policy_template = tok.chat_template
    tok.chat_template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    tok.save_pretrained(path)
    cfg = make_config("data.return_raw_chat=True", "reward_model.enable=true", f"reward_model.model.path={path}")
    assert cfg.data.return_raw_chat
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say something."}]
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["open/chat"], ["aaab"], [None], styles=["model"], prompts=[chat]))
        rm = manager.plan.models["local_rm"]
        text = "[system] Be brief.\n[user] Say something.\n[assistant] aaab\n"
        assert rm.forward([tok(text, add_special_tokens=False)["input_ids"]])[0] == pytest.approx(out.scores[0].item(), abs=1e-5)
        tok.chat_template = policy_template
        policy_text = tok.apply_chat_template(chat + [{"role": "assistant", "content": "aaab"}], tokenize=False)
        assert rm.forward([tok(policy_text, add_special_tokens=False)["input_ids"]])[0] != pytest.approx(out.scores[0].item(), abs=1e-4)


def test_model_rows_without_prompts_are_scored_and_counted(rm_path, make_config):
    cfg = make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["open/chat"], ["aaaa"], [None], styles=["model"]))
    assert out.extra_info["reward_status"] == ["ok"]
    assert out.metrics["reward/local_rm/missing_prompt"] == 1.0


def test_model_rows_need_model_scoring_turned_on(rm_path, make_config):
    batch = RewardBatch(["openai/gsm8k", "open/chat"], ["#### 1", "x"], ["1", None], styles=["rule", "model"])
    with build_reward_manager(make_config().reward_settings()) as manager:
        with pytest.raises(RewardError, match=r"row 1: data_source 'open/chat': reward_model.style is 'model' but reward_model.enable is false"):
            manager(batch)
        with pytest.raises(RewardError, match=r"dataset row 1: .*reward_model.enable is false"):
            manager.check_rows(batch)
        # only style 'model' asks for a model: verl reads no other style, so any other is a rule row
        with pytest.raises(NotRegistered, match=r"row 0: no scorer for data_source 'x'"):
            manager(RewardBatch(["x"], ["y"], [None], styles=["modle"]))
    # a path that would be used only with enable=true is not silently half-used
    with pytest.raises(ConfigError, match="reward_model.enable is true but no model is configured"):
        build_reward_manager(make_config("reward_model.enable=true").reward_settings())
    with pytest.raises(ConfigError, match=r"reward_model.components.open/\*.rm.kind is judge, but reward_model.judge.base_url is not set"):
        build_reward_manager(make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}",
                                         "reward_model.components={'open/*': {rm: {kind: judge}}}").reward_settings())
    with pytest.raises(ConfigError, match=r"reward_model.model.path is set but reward_model.enable is false"):
        build_reward_manager(make_config(f"reward_model.model.path={rm_path}").reward_settings())
    with pytest.raises(ConfigError, match=r"components.open/\*.rm.kind is local_rm, but reward_model.enable is false"):
        build_reward_manager(make_config("reward_model.components={'open/*': {rm: {kind: local_rm}}}").reward_settings())


def test_component_gate_must_name_an_earlier_component(make_config):
    with pytest.raises(ConfigError, match=r"components.x.b.gate names 'c', which is not an earlier component"):
        make_config("reward_model.components={x: {b: {gate: c}, c: {}}}")


def test_rewardsmith_score_scores_model_rows_offline_with_a_column_per_component(rm_path, tmp_path, capsys):
    from rewardsmith.cli import main
    from rewardsmith.common.rows import read_rows, write_rows

    rows = [{"data_source": "openai/gsm8k", "prompt": "1+3?", "reward_model": {"style": "rule", "ground_truth": "4"},
             "response": "#### 4"},
            {"data_source": "open/chat", "prompt": PROMPT, "reward_model": {"style": "model", "ground_truth": ""},
             "response": ["aaaa", "bbbb"]}]
    write_rows(tmp_path / "in.jsonl", rows)
    assert main(["score", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                 "reward_model.enable=true", "reward_model.route_by_style=true",
                 f"reward_model.model.path={rm_path}"]) == 0
    table = capsys.readouterr().out
    header = next(line for line in table.splitlines() if line.startswith("data_source"))
    assert header.split()[-2:] == ["gsm8k", "local_rm"]
    scored = read_rows(tmp_path / "out.jsonl")
    direct = LocalRewardModel(RewardModelPathConfig(path=str(rm_path)))
    expected = [o.score for o in direct.score([ModelRequest("open/chat", PROMPT, r) for r in ("aaaa", "bbbb")])]
    assert scored[0]["score"] == 1.0
    assert scored[1]["score"] == pytest.approx(expected, abs=1e-5)  # scored with the row's prompt
    assert scored[1]["reward_extra_info"][0]["reward_components"] == {"local_rm": pytest.approx(expected[0], abs=1e-5)}


def test_verl_reward_model_worker_keys_set_what_they_mean_or_give_a_notice(rm_path, make_config):
    keys = ["reward_model.enable=true", f"reward_model.model.path={rm_path}", "reward_model.micro_batch_size_per_gpu=3",
            "reward_model.model.use_remove_padding=True", "reward_model.model.fsdp_config.param_offload=True",
            "reward_model.use_reward_loop=True", "reward_model.rollout.name=vllm",
            "reward_model.rollout.gpu_memory_utilization=0.8", "reward_model.rollout.tensor_model_parallel_size=1",
            "reward_model.rollout.prompt_length=40", "reward_model.rollout.response_length=24"]
    rm = make_config(*keys).reward_model
    assert rm.model.micro_batch_size == 3 and rm.model.max_length == 64
    # rollout.name=vllm serves the model (tests/test_reward_loop_vllm.py): its serving keys are vLLM options, no notices.
    assert rm.serves_with_vllm()
    named = [line.split(":")[0] for line in rm.notices()]
    assert named == ["reward_model.model.use_remove_padding", "reward_model.model.fsdp_config.param_offload"]
    assert make_config(*keys[:2]).reward_model.notices() == []
    with pytest.raises(ConfigError, match="micro_batch_size_per_gpu"):
        make_config("reward_model.micro_batch_size_per_gpu=0")
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        make_config("reward_model.rollout.gpu_memory_utilization=1.5")


def test_the_in_process_reward_loop_scores_as_the_reward_model(rm_path, make_config):
    # use_reward_loop with rollout.name=hf runs the same model in-process: the scores equal those without it.
    batch = RewardBatch(["open/chat"] * 3, ["aaaa", "ab", "bbbbbbbb"], [None] * 3, styles=["rule"] * 3, prompts=[PROMPT] * 3)
    scores = []
    for extra in ([], ["reward_model.use_reward_loop=True", "reward_model.rollout.name=hf", "reward_model.micro_batch_size_per_gpu=1"]):
        with build_reward_manager(make_config("reward_model.enable=true", f"reward_model.model.path={rm_path}", *extra).reward_settings()) as m:
            scores.append(m(batch).scores.tolist())
    assert scores[0] == pytest.approx(scores[1], abs=1e-5)
