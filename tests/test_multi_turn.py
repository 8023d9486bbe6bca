"""The multi-turn rollout (core/multi_turn.py): episodes with tool calls, their masks, tokenization and limits,
tools run concurrently and failing ones, and training through the trainer with the calculator tool."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path

import pytest
import torch

from multi_turn_helpers import (TOOL, ScriptedEngine, arithmetic_script, calculator_script, tool_calling_model,
                                tool_tokenizer)
from core_helpers import no_argument_schema, tiny_config
from rewardsmith.common.config import ConfigError
from rewardsmith.core.batch import Batch
from rewardsmith.core.multi_turn import (LENGTH, MAX_ASSISTANT_TURNS, NO_TOOL_CALL, TOOL_PARSERS, MultiTurnRollout,
                                         episode_metrics, parse_hermes,
                                         truncate_tool_text)
from rewardsmith.core.rollout import HFRollout, SamplingParams, prompt_seeds
from rewardsmith.core.schema import TOOL_CALL_FORMATS, MultiTurnConfig
from rewardsmith.core.trainer import PPOTrainer
from rewardsmith.reward_fns.tools import BaseTool, ToolResponse
from rewardsmith.reward_fns.tools.calculator import CalculatorTool

torch.set_num_threads(1)

MODEL = ("{model_type: qwen2, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
         "num_key_value_heads: 2, max_position_embeddings: 512, tie_word_embeddings: true}")


def prompts(*questions: str, extra_info=None) -> Batch:
    return Batch(meta={"raw_prompt": [[{"role": "user", "content": q}] for q in questions],
                       "extra_info": list(extra_info or [None] * len(questions)), "uid": [str(i) for i in range(len(questions))]})


def rollout(script, tools, budget=200, n=1, *questions, **cfg) -> tuple[MultiTurnRollout, Batch]:
    tok = tool_tokenizer()
    engine = MultiTurnRollout(ScriptedEngine(tok, script), tok, tools, MultiTurnConfig(enable=True, **cfg), [tok.eos_token_id])
    return engine, engine.generate(prompts(*(questions or ("what is 12*34?",))), SamplingParams(n=n, max_new_tokens=budget))


def env_text(tok, batch: Batch, i: int) -> str:
    width = batch["responses"].shape[1]
    env = batch["attention_mask"][i, -width:].bool() & ~batch["response_mask"][i].bool()
    return tok.decode(batch["responses"][i][env])


def test_hermes_calls_are_parsed_as_verl_does():
    text = ('ok <tool_call>{"name": "calculator", "arguments": {"expression": "1+2"}}</tool_call> and '
            '<tool_call>{"name": "x"}</tool_call><tool_call>not json</tool_call>')
    content, calls, malformed = parse_hermes(text)
    assert [(c.name, c.arguments) for c in calls] == [("calculator", {"expression": "1+2"})]
    assert malformed == 2 and content == "ok  and "
    assert parse_hermes("<tool_call> unclosed") == ("<tool_call> unclosed", [], 0)


def test_tool_responses_are_truncated_with_verls_markers():
    assert truncate_tool_text("abcdefghij", 4, "left") == "(truncated)...ghij"
    assert truncate_tool_text("abcdefghij", 4, "right") == "abcd...(truncated)"
    assert truncate_tool_text("abcdefghij", 4, "middle") == "ab...(truncated)...ij"
    assert truncate_tool_text("abcd", 4, "middle") == "abcd"


def test_an_episode_trains_only_on_generated_tokens_and_carries_its_trajectory():
    engine, out = rollout(calculator_script("12*34"), {"calculator": CalculatorTool()}, 200, 2)
    tok = engine.tokenizer
    assert set(out.tensors) == {"prompts", "responses", "response_mask", "input_ids", "attention_mask"}
    assert out["responses"].shape == (2, 200)
    for i in range(2):
        generated = tok.decode(out["responses"][i][out["response_mask"][i].bool()])
        assert generated == ('<tool_call>{"name": "calculator", "arguments": {"expression": "12*34"}}</tool_call><|end|>'
                             'answer 408<|end|>')
        # The tool's response and the next turn's opening are attended but not generated.
        assert env_text(tok, out, i) == f"{TOOL}408<|end|><|assistant|>"
        assert torch.equal(out["input_ids"], torch.cat([out["prompts"], out["responses"]], 1))
        info = out.meta["extra_info"][i]
        assert info["num_turns"] == 4 and info["stop_reason"] == NO_TOOL_CALL
        assert [m["role"] for m in info["messages"]] == ["user", "assistant", "tool", "assistant"]
        assert info["messages"][2]["content"] == "408" and info["messages"][3]["content"] == "answer 408"
        assert info["tool_calls"] == [{"turn": 1, "name": "calculator", "arguments": {"expression": "12*34"},
                                       "status": "ok", "error": None, "response": "408", "reward": 0.0}]
    # The prompt is rendered with the tools' schemas, as verl renders it.
    assert tok.decode(out["prompts"][0][out["prompts"][0] != tok.pad_token_id]).startswith("<|system|>tools: calculator")
    metrics = episode_metrics(out)
    assert metrics["tool/calculator/calls"] == 2 and metrics["tool/calculator/failures"] == 0
    assert metrics["num_turns/mean"] == 4 and metrics["multi_turn/tool_calls_per_episode"] == 1
    env_tokens = len(tok(f"{TOOL}408<|end|><|assistant|>", add_special_tokens=False)["input_ids"])
    assert metrics["multi_turn/env_token_share"] == env_tokens / out["attention_mask"][0, -200:].sum().item()
    assert metrics["tool/calculator/latency_p99_ms"] >= metrics["tool/calculator/latency_p50_ms"] > 0


def test_turn_by_turn_tokens_equal_the_conversation_rendered_whole():
    engine, out = rollout(calculator_script("7*6"), {"calculator": CalculatorTool()})
    episode_messages = [{"role": "user", "content": "what is 12*34?"},
                        {"role": "assistant", "content": calculator_script("7*6")("")},
                        {"role": "tool", "content": "42"}, {"role": "assistant", "content": "answer 42"}]
    tok = engine.tokenizer
    schemas = [CalculatorTool().tool_schema.model_dump(exclude_unset=True, exclude_none=True)]
    whole = tok(tok.apply_chat_template(episode_messages, tools=schemas, tokenize=False),
                add_special_tokens=False)["input_ids"]
    assert out["input_ids"][0][out["attention_mask"][0].bool()].tolist() == whole
    assert out.meta["multi_turn"][0]["tokenization_mismatch"] is False


@pytest.mark.parametrize("mode, flagged", [("strict", True), ("ignore_strippable", False), ("disable", False)])
def test_the_sanity_check_flags_a_template_that_renders_turns_differently(mode, flagged):
    # This template trims message contents: the model's " answer" with its leading space renders as "answer".
    trimming = tool_tokenizer().chat_template.replace("message['content']", "(message['content'] | trim)")
    tok = tool_tokenizer(trimming)
    engine = MultiTurnRollout(ScriptedEngine(tok, lambda text: " answer"), tok, {},
                              MultiTurnConfig(enable=True, tokenization_sanity_check_mode=mode), [tok.eos_token_id])
    out = engine.generate(prompts("q"), SamplingParams(n=1, max_new_tokens=20))
    assert out.meta["multi_turn"][0]["tokenization_mismatch"] is flagged


class SleepTool(BaseTool):
    """Sleeps ``config.seconds`` (``hang``: forever) or raises (``fail``); records how many run at once."""

    def __init__(self, config, tool_schema=None):
        super().__init__(config, no_argument_schema(config["name"]))
        self.running = self.most = 0

    async def execute(self, instance_id, parameters, **kwargs):
        if self.config.get("fail"):
            raise RuntimeError("the backend said no")
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(3600 if self.config.get("hang") else self.config["seconds"])
        finally:
            self.running -= 1
        return ToolResponse(text=f"slept {parameters.get('i')}"), None, {}


def calls_script(name: str, count: int):
    def script(conversation: str) -> str:
        if TOOL in conversation:
            return "done"
        return "".join('<tool_call>{"name": "%s", "arguments": {"i": %d}}</tool_call>' % (name, i) for i in range(count))
    return script


def test_tools_run_concurrently_up_to_max_parallel_calls():
    tool = SleepTool({"name": "sleep", "seconds": 0.5})
    start = time.perf_counter()
    engine, out = rollout(calls_script("sleep", 3), {"sleep": tool}, 300, 2, max_parallel_calls=3)
    elapsed = time.perf_counter() - start
    # Both episodes' three calls at once: six in flight, one sleep's time, not six.
    assert tool.most == 6 and elapsed < 1.5
    assert [m["content"] for m in out.meta["extra_info"][0]["messages"] if m["role"] == "tool"] == ["slept 0", "slept 1", "slept 2"]

    tool = SleepTool({"name": "sleep", "seconds": 0.01})
    engine, out = rollout(calls_script("sleep", 3), {"sleep": tool}, 300, 1, max_parallel_calls=1)
    assert [c["arguments"] for c in out.meta["extra_info"][0]["tool_calls"]] == [{"i": 0}]
    assert episode_metrics(out)["tool/sleep/dropped"] == 2


def test_a_failing_and_a_hanging_tool_become_error_results_counted_and_the_episode_goes_on():
    tools = {"bad": SleepTool({"name": "bad", "fail": True}), "stuck": SleepTool({"name": "stuck", "hang": True})}

    def script(conversation: str) -> str:
        if TOOL in conversation:
            return "no luck"
        return ('<tool_call>{"name": "bad", "arguments": {}}</tool_call>'
                '<tool_call>{"name": "stuck", "arguments": {}}</tool_call>')

    start = time.perf_counter()
    engine, out = rollout(script, tools, 400, 1, max_parallel_calls=2, tool_timeout_s=0.3, max_tool_response_length=1000)
    assert time.perf_counter() - start < 5
    info = out.meta["extra_info"][0]
    assert [(c["name"], c["status"]) for c in info["tool_calls"]] == [("bad", "failed"), ("stuck", "timeout")]
    tool_texts = [m["content"] for m in info["messages"] if m["role"] == "tool"]
    assert tool_texts == ["Error when executing tool: RuntimeError: the backend said no",
                          "Error when executing tool: tool 'stuck' timed out after 0.3 s"]
    assert info["messages"][-1] == {"role": "assistant", "content": "no luck"} and info["stop_reason"] == NO_TOOL_CALL
    metrics = episode_metrics(out)
    assert metrics["tool/bad/failed"] == metrics["tool/bad/failures"] == 1
    assert metrics["tool/stuck/timeout"] == metrics["tool/stuck/failures"] == 1


def test_episodes_end_at_the_turn_limits_and_the_response_budget():
    always = calls_script("sleep", 1)
    looping = lambda text: always("")  # noqa: E731 - calls the tool in every turn
    tool = {"sleep": SleepTool({"name": "sleep", "seconds": 0})}
    _, out = rollout(looping, tool, 1000, 1, max_assistant_turns=3)
    info = out.meta["extra_info"][0]
    assert info["stop_reason"] == MAX_ASSISTANT_TURNS and out.meta["multi_turn"][0]["assistant_turns"] == 3
    assert len(info["tool_calls"]) == 2  # the last turn's call is not run, as in verl
    _, out = rollout(looping, tool, 1000, 1, max_user_turns=1)
    assert out.meta["multi_turn"][0]["user_turns"] == 1 and out.meta["multi_turn"][0]["assistant_turns"] == 2

    # 120 tokens: the first call (~60) and its response fit, the second turn is cut by the budget.
    engine, out = rollout(looping, tool, 120, 1)
    info, mask = out.meta["extra_info"][0], out["attention_mask"][0, -120:]
    assert info["stop_reason"] == LENGTH and int(mask.sum()) == 120
    assert out["responses"][0, -1].item() != engine.tokenizer.eos_token_id
    # 70 tokens: the tool round does not fit after the first call: it ran but did not enter the sequence.
    _, out = rollout(looping, tool, 70, 1)
    info = out.meta["extra_info"][0]
    assert info["stop_reason"] == LENGTH and len(info["tool_calls"]) == 1
    assert [m["role"] for m in info["messages"]] == ["user", "assistant"] and int(out["response_mask"][0].sum()) < 70
    assert int(out["response_mask"][0].sum()) == int(out["attention_mask"][0, -70:].sum())


def test_a_real_model_whose_turn_calls_no_tool_samples_as_the_single_turn_engine():
    from rewardsmith.core.data import PromptDataset
    from rewardsmith.core.models import build_causal_lm
    from rewardsmith.common.config import load_config
    from rewardsmith.core.schema import Config

    tok = tool_tokenizer()
    cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={MODEL}", "data.max_prompt_length=64"])
    model = build_causal_lm(cfg.actor_rollout_ref.model, tok)
    rows = [{"data_source": "d", "prompt": [{"role": "user", "content": q}], "reward_model": {"ground_truth": "1"}}
            for q in ("1+1", "what is 2*3?", "x")]
    batch = PromptDataset(rows, tok, cfg.data).collate(range(3))
    params = SamplingParams(n=2, max_new_tokens=12)
    single = HFRollout(model, tok.pad_token_id, [tok.eos_token_id])
    torch.manual_seed(3)
    expected = single.generate(batch, params)
    torch.manual_seed(3)
    multi = MultiTurnRollout(single, tok, {}, MultiTurnConfig(enable=True), [tok.eos_token_id]).generate(batch, params)
    for key, value in expected.tensors.items():
        assert torch.equal(multi[key], value), key
    assert {info["stop_reason"] for info in multi.meta["extra_info"]} <= {NO_TOOL_CALL, LENGTH}
    assert all(info["num_turns"] == 2 for info in multi.meta["extra_info"])


def test_the_multi_turn_keys_are_checked_by_name(tmp_path):
    # both engines run it (sglang samples on the vllm engine)
    for engine in ("vllm", "sglang"):
        config = tiny_config(tmp_path, "actor_rollout_ref.rollout.multi_turn.enable=true",
                             f"actor_rollout_ref.rollout.name={engine}")
        assert config.actor_rollout_ref.rollout.engine == "vllm"
    with pytest.raises(ConfigError, match="format"):
        tiny_config(tmp_path, "actor_rollout_ref.rollout.multi_turn.format=gpt-oss")
    # verl's search example config spells Qwen2.5's <tool_call> blocks "qwen": parsed as hermes
    assert tiny_config(tmp_path, "actor_rollout_ref.rollout.multi_turn.format=qwen").actor_rollout_ref.rollout.multi_turn.format == "qwen"
    assert set(TOOL_PARSERS) == set(TOOL_CALL_FORMATS) and TOOL_PARSERS["qwen"] is parse_hermes
    with pytest.raises(ConfigError, match="max_assistant_turns"):
        tiny_config(tmp_path, "actor_rollout_ref.rollout.multi_turn.max_turns=3")


# A reward that needs the trajectory: 1 when the final answer repeats the calculator's result.
TRAJECTORY_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if not extra_info["tool_calls"]:
        return 0.0
    result = extra_info["tool_calls"][0]["response"]
    assert extra_info["messages"][-1]["content"] in solution_str
    # The decoded response is the whole episode: the call, the tool's response, the final answer.
    return float(solution_str.endswith(result + "answer " + result))
'''


def multi_turn_trainer(tmp_path: Path, *extra: str) -> PPOTrainer:
    tok_dir = tmp_path / "tool_tokenizer"
    tool_tokenizer().save_pretrained(tok_dir)
    (tmp_path / "tools.yaml").write_text("tools:\n  - class_name: calculator\n    config: {type: native}\n")
    (tmp_path / "reward.py").write_text(TRAJECTORY_REWARD)
    config = tiny_config(tmp_path, f"data.tokenizer={tok_dir}", f"actor_rollout_ref.model.config={MODEL}",
                         "actor_rollout_ref.rollout.multi_turn.enable=true",
                         f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tmp_path / 'tools.yaml'}",
                         f"custom_reward_function.path={tmp_path / 'reward.py'}", "data.max_response_length=160", *extra)
    return PPOTrainer(config)


def test_a_training_step_keeps_tool_tokens_out_of_scores_advantages_values_and_gradients(tmp_path):
    trainer = multi_turn_trainer(tmp_path, "actor_rollout_ref.actor.ppo_mini_batch_size=4", "trainer.balance_batch=false")
    try:
        rollout_engine = trainer.actor.rollout
        answers = iter(range(100))
        right = calculator_script("12*34")

        def script(conversation: str) -> str:  # every other episode answers wrong
            text = right(conversation)
            return text if TOOL not in conversation or next(answers) % 2 == 0 else "answer 0"

        rollout_engine.inner = ScriptedEngine(rollout_engine.tokenizer, script)
        batch, metrics = trainer.make_experience(next(trainer.prompt_batches))
        mask, width = batch["response_mask"].bool(), batch["responses"].shape[1]
        env = batch["attention_mask"][:, -width:].bool() & ~mask
        assert env.sum(-1).min() > 0
        assert batch["token_level_scores"].sum(-1).tolist() == [1.0, 0.0] * 4
        last_generated = torch.stack([row.nonzero().max() for row in mask])
        assert torch.equal(batch["token_level_scores"].nonzero()[:, 1], last_generated[batch["token_level_scores"].sum(-1) > 0])
        for key in ("advantages", "returns", "values"):
            assert batch[key][env].abs().sum() == 0, key
        assert batch["advantages"][mask].abs().sum() > 0

        # The actor's update: the loss's gradient reaches no logit that predicts a tool token.
        grads = []

        def keep_grad(module, inputs, output):
            if output.requires_grad:
                output.register_hook(grads.append)

        handle = trainer.actor.model.lm_head.register_forward_hook(keep_grad)
        try:
            trainer.global_step = 1
            trainer.update(batch)
        finally:
            handle.remove()
        assert len(grads) == 1
        predicts = grads[0][:, -width - 1:-1].abs().sum(-1)  # the logits at t-1 score response token t
        assert predicts[env].sum() == 0
        assert (predicts[mask] > 0).float().mean() > 0.9
    finally:
        trainer.close()


def test_two_training_steps_with_the_calculator_tool(tmp_path):
    trainer = multi_turn_trainer(tmp_path, "algorithm.adv_estimator=grpo", "trainer.total_training_steps=2")
    try:
        rollout_engine = trainer.actor.rollout
        rollout_engine.inner = ScriptedEngine(rollout_engine.tokenizer, calculator_script("2**10"))
        metrics = trainer.fit()
    finally:
        trainer.close()
    assert metrics["critic/score/mean"] == 1.0 and metrics["val/reward/mean"] == 1.0
    assert metrics["tool/calculator/calls"] == 8 and metrics["num_turns/mean"] == 4  # 4 prompts x 2 samples
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())


def test_a_training_step_of_the_real_model_with_multi_turn_enabled(tmp_path):
    trainer = multi_turn_trainer(tmp_path, "trainer.total_training_steps=1")
    try:
        assert isinstance(trainer.actor.rollout.inner, HFRollout)
        metrics = trainer.fit()
    finally:
        trainer.close()
    assert metrics["training/global_step"] == 1.0 and metrics["response_length/mean"] > 0
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())


USER = "<|user|>"


def interaction_rollout(script, interactions, extra_info, budget=300, **cfg):
    tok = tool_tokenizer()
    engine = MultiTurnRollout(ScriptedEngine(tok, script), tok, {}, MultiTurnConfig(enable=True, **cfg), [tok.eos_token_id],
                              interactions=interactions)
    return engine, engine.generate(prompts("what is 2+2?", extra_info=extra_info), SamplingParams(n=2, max_new_tokens=budget))


def test_an_interaction_answers_turns_without_tool_calls_as_user_turns_until_it_ends_the_episode(tmp_path):
    from rewardsmith.plugins.environments import load_interactions

    (tmp_path / "interaction.yaml").write_text("interaction:\n  - name: gsm8k\n"
                                               "    class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction\n    config: {}\n")
    interactions = load_interactions(tmp_path / "interaction.yaml")
    # Wrong first, right after the feedback.
    script = lambda text: "#### 4" if "incorrect" in text else "#### 3"  # noqa: E731
    engine, out = interaction_rollout(script, interactions, [{"interaction_kwargs": {"name": "gsm8k", "ground_truth": "4"}}])
    tok = engine.tokenizer
    for i in range(2):
        info = out.meta["extra_info"][i]
        assert [m["role"] for m in info["messages"]] == ["user", "assistant", "user", "assistant", "user"]
        assert info["messages"][-1]["content"] == "Your response is correct!"
        assert info["turn_scores"] == [0.0, 1.0] and info["stop_reason"] == "interaction_done" and info["num_turns"] == 5
        assert tok.decode(out["responses"][i][out["response_mask"][i].bool()]) == "#### 3<|end|>#### 4<|end|>"
        assert env_text(tok, out, i) == (f"{USER}Your response is incorrect! You need to reflect on your answer and try "
                                         f"again.<|end|><|assistant|>{USER}Your response is correct!<|end|><|assistant|>")
        assert out.meta["multi_turn"][i]["tokenization_mismatch"] is False
    assert interactions["gsm8k"]._instances == {}  # every episode's instance finalized


def test_max_user_turns_counts_the_interactions_turns():
    from rewardsmith.reward_fns.interactions.gsm8k import Gsm8kInteraction

    _, out = interaction_rollout(lambda text: "#### 3", {"gsm8k": Gsm8kInteraction({"name": "gsm8k"})},
                                 [{"interaction_kwargs": {"name": "gsm8k", "ground_truth": "4"}}], max_user_turns=2)
    info = out.meta["extra_info"][0]
    assert info["stop_reason"] == "max_user_turns" and info["turn_scores"] == [0.0, 0.0]
    assert out.meta["multi_turn"][0] == {**out.meta["multi_turn"][0], "assistant_turns": 3, "user_turns": 2}


def test_a_failing_interaction_ends_its_episode_and_a_row_without_one_is_named():
    from rewardsmith.reward_fns.interactions import BaseInteraction

    class Broken(BaseInteraction):
        async def generate_response(self, instance_id, messages, **kwargs):
            raise ConnectionError("user simulator down")

    _, out = interaction_rollout(lambda text: "hi", {"sim": Broken({"name": "sim"})}, [{"interaction_kwargs": {"name": "sim"}}])
    assert [info["stop_reason"] for info in out.meta["extra_info"]] == ["interaction_failed"] * 2
    with pytest.raises(ValueError, match=r"row 0: extra_info.interaction_kwargs.name is None.*one of: sim"):
        interaction_rollout(lambda text: "hi", {"sim": Broken({"name": "sim"})}, [{"other": 1}])


def _rank_episode(rank: int, port: int, results) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        tok = tool_tokenizer()
        # Rank 0's episodes answer at once; rank 1's call the tool twice first.
        calls = {0: 0, 1: 2}[rank]
        script = lambda text: "done" if text.count(TOOL) >= calls else calls_script("sleep", 1)("")  # noqa: E731

        class Sharded(ScriptedEngine):
            """Every generate call is a collective, as a sharded model's forward is."""

            def generate(self, prompts, params):
                dist.all_reduce(torch.ones(1))
                return super().generate(prompts, params)

        inner = Sharded(tok, script)
        engine = MultiTurnRollout(inner, tok, {"sleep": SleepTool({"name": "sleep", "seconds": 0})},
                                  MultiTurnConfig(enable=True), [tok.eos_token_id])
        out = engine.generate(prompts("q"), SamplingParams(n=1, max_new_tokens=300))
        results[rank] = (len(inner.calls), out.meta["multi_turn"][0]["assistant_turns"])
    finally:
        dist.destroy_process_group()


def test_ranks_whose_episodes_end_at_different_turns_generate_in_step():
    import torch.multiprocessing as mp
    from rewardsmith.sandbox.testing import free_port

    manager = mp.Manager()
    results = manager.dict()
    context = mp.start_processes(_rank_episode, args=(free_port(), results), nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + 120
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("the ranks hung: one stopped generating while the other still had live episodes")
    # Both ranks made three generate calls; rank 0's episode had one turn, rank 1's three.
    assert dict(results) == {0: (3, 1), 1: (3, 3)}


def test_a_row_offered_some_tools_sees_and_calls_only_those():
    tools = {"calculator": CalculatorTool(), "sleep": SleepTool({"name": "sleep", "seconds": 0})}
    tok = tool_tokenizer()
    engine = MultiTurnRollout(ScriptedEngine(tok, calculator_script("1+1")), tok, tools, MultiTurnConfig(enable=True),
                              [tok.eos_token_id])
    out = engine.generate(prompts("a", "b", extra_info=[{"tool_selection": ["sleep", "nope"]}, None]),
                          SamplingParams(n=1, max_new_tokens=200))
    shown = [tok.decode(row[row != tok.pad_token_id]).split("<|end|>")[0] for row in out["prompts"]]
    assert shown == ["<|system|>tools: sleep", "<|system|>tools: calculator sleep"]
    calls = [info["tool_calls"][0] for info in out.meta["extra_info"]]
    assert [(c["status"], c["response"]) for c in calls] == [
        ("unknown_tool", "Error when executing tool: no tool named 'calculator'; tools: sleep"), ("ok", "2")]


def test_a_chatml_template_gets_its_newline_after_the_models_end_of_turn_as_an_environment_token():
    from multi_turn_helpers import chatml_tokenizer

    tok = chatml_tokenizer()

    def script(conversation: str) -> str:  # two calls in one turn, then the answer
        if "<tool_response>" not in conversation:
            return ('<tool_call>\n{"name": "calculator", "arguments": {"expression": "6*7"}}\n</tool_call>\n'
                    '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6/0"}}\n</tool_call>')
        return "It is 42."

    engine = MultiTurnRollout(ScriptedEngine(tok, script), tok, {"calculator": CalculatorTool()},
                              MultiTurnConfig(enable=True, max_parallel_calls=2), [tok.eos_token_id])
    out = engine.generate(prompts("What is 6*7?"), SamplingParams(n=1, max_new_tokens=400))
    assert engine._chats[("calculator",)].separator == tok("\n", add_special_tokens=False)["input_ids"]
    assert env_text(tok, out, 0) == ("\n<|im_start|>user\n<tool_response>\n42\n</tool_response>\n<tool_response>\n"
                                     "Error when executing tool: division by zero\n</tool_response><|im_end|>\n"
                                     "<|im_start|>assistant\n")
    assert tok.decode(out["responses"][0][out["response_mask"][0].bool()]).endswith("</tool_call><|im_end|>It is 42.<|im_end|>")
    assert out.meta["multi_turn"][0]["tokenization_mismatch"] is False
    assert out.meta["extra_info"][0]["messages"][1]["tool_calls"][1]["function"]["arguments"] == {"expression": "6/0"}


def test_an_engines_sampling_log_probs_are_kept_for_generated_tokens_and_zero_for_the_environments():
    tok = tool_tokenizer()
    engine = MultiTurnRollout(ScriptedEngine(tok, calculator_script("1+2"), log_prob=-0.5), tok, {"calculator": CalculatorTool()},
                              MultiTurnConfig(enable=True), [tok.eos_token_id])
    out = engine.generate(prompts("q"), SamplingParams(n=1, max_new_tokens=150))
    expected = out["response_mask"].float() * -0.5
    assert out["rollout_log_probs"].shape == (1, 150) and torch.equal(out["rollout_log_probs"], expected)


def test_verls_gsm8k_tool_and_interaction_configs_run_an_episode_with_verls_row_format(tmp_path):
    from test_tools import GSM8K_INTERACTION_CONFIG, GSM8K_TOOL_CONFIG
    from rewardsmith.core.multi_turn import multi_turn_engine
    from rewardsmith.plugins.loader import get_registry

    (tmp_path / "tool.yaml").write_text(GSM8K_TOOL_CONFIG)
    (tmp_path / "interaction.yaml").write_text(GSM8K_INTERACTION_CONFIG)
    tok = tool_tokenizer()

    def script(conversation: str) -> str:  # a wrong answer to the tool, a right one, then the final answer
        checked = conversation.count("Current parsed answer")
        if checked < 2:
            return '<tool_call>{"name": "calc_gsm8k_reward", "arguments": {"answer": "%s"}}</tool_call>' % ("70", "72")[checked]
        return "#### 72"

    config = MultiTurnConfig(enable=True, tool_config_path=str(tmp_path / "tool.yaml"),
                             interaction_config_path=str(tmp_path / "interaction.yaml"))
    engine = multi_turn_engine(ScriptedEngine(tok, script), config, tok, get_registry(), None)
    # The row as verl's examples/data_preprocess/gsm8k_multiturn_w_tool.py (and _w_interaction.py) writes it.
    info = {"need_tools_kwargs": True, "tools_kwargs": {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": "72"}}},
            "interaction_kwargs": {"name": "gsm8k", "query": "q", "ground_truth": "72"}}
    out = engine.generate(prompts("Natalia sold clips...", extra_info=[info]), SamplingParams(n=1, max_new_tokens=400))
    got = out.meta["extra_info"][0]
    assert [c["response"] for c in got["tool_calls"]] == ["Current parsed answer='70' reward=0.0",
                                                          "Current parsed answer='72' reward=1.0"]
    assert got["tool_rewards"] == [-0.05, 0.0] and got["turn_scores"] == [1.0]
    assert got["stop_reason"] == "interaction_done" and got["num_turns"] == 7 and got["need_tools_kwargs"] is True


QUESTIONS = ("what is 12*34?", "what is 7*89?")


@pytest.fixture(scope="module")
def tool_model():
    """The tool tokenizer and a tiny model taught to call the calculator on QUESTIONS, then answer."""
    tok = tool_tokenizer()
    scripted = MultiTurnRollout(ScriptedEngine(tok, arithmetic_script), tok, {"calculator": CalculatorTool()},
                                MultiTurnConfig(enable=True), [tok.eos_token_id])
    return tok, tool_calling_model(tok, scripted.generate(prompts(*QUESTIONS), SamplingParams(max_new_tokens=120)))


def test_chunks_of_a_multi_turn_batch_sample_what_one_call_does(tool_model):
    """Each later turn is seeded by its episode and the turn, not by its row among the episodes still going."""
    tok, model = tool_model
    engine = MultiTurnRollout(HFRollout(model, tok.pad_token_id, [tok.eos_token_id]), tok, {"calculator": CalculatorTool()},
                              MultiTurnConfig(enable=True), [tok.eos_token_id])
    params = SamplingParams(n=3, max_new_tokens=120, seed=1)
    whole = engine.generate(prompts(*QUESTIONS), params)
    parts = [engine.generate(prompts(q), dataclasses.replace(params, first_prompt=i)) for i, q in enumerate(QUESTIONS)]
    turns = [info["num_turns"] for info in whole.meta["extra_info"]]
    assert max(turns) > 2 and min(turns) == 2  # some episodes called the tool, some did not
    for key in ("responses", "response_mask", "attention_mask"):
        width = whole[key].shape[1] if key != "attention_mask" else whole["responses"].shape[1]
        assert torch.equal(whole[key][:, -width:], torch.cat([p[key][:, -width:] for p in parts])), key
    assert [i["num_turns"] for p in parts for i in p.meta["extra_info"]] == turns


class SeedRecorder(ScriptedEngine):
    """A scripted engine that records the seed each row of each call samples with, by the row's text."""

    def __init__(self, tokenizer, script):
        super().__init__(tokenizer, script)
        self.seeds: list[tuple[str, int]] = []

    def generate(self, prompts, params):
        out = super().generate(prompts, params)
        self.seeds.extend(zip(self.calls[-1], prompt_seeds(params, len(prompts))))
        return out


def test_a_later_turn_is_seeded_by_its_episode_and_turn_not_by_its_row():
    def script(conversation: str) -> str:  # "what is 5?" is answered at once, the others through the calculator
        return "answer 5" if conversation.endswith("what is 5?<|end|><|assistant|>") else arithmetic_script(conversation)

    questions = ("what is 5?", "what is 2*3?", "what is 4*4?")
    tok = tool_tokenizer()
    params = SamplingParams(n=2, max_new_tokens=200, seed=11)
    seeds = []
    for batches in ([(questions, 0)], [(questions[:1], 0), (questions[1:2], 1), (questions[2:], 2)]):
        recorder = SeedRecorder(tok, script)
        engine = MultiTurnRollout(recorder, tok, {"calculator": CalculatorTool()}, MultiTurnConfig(enable=True),
                                  [tok.eos_token_id])
        for chunk, first in batches:
            engine.generate(prompts(*chunk), dataclasses.replace(params, first_prompt=first))
        seeds.append(sorted(recorder.seeds))
    whole, chunked = seeds
    assert whole == chunked and len(whole) == 3 + 4  # three first turns (n=2 in one request), four second turns
    assert len({seed for _, seed in whole}) == len(whole)
