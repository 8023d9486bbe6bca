"""The multi-turn demo (`rewardsmith demo --multi-turn`): its calculator problems, the warm start on
tool-use transcripts (tokenized as the multi-turn rollout builds an episode) and its table (the full
run and its 0.8 target are in test_train_learning.py, slow)."""
from __future__ import annotations

import argparse
import asyncio

import pytest
import torch

from rewardsmith import compute_score
from multi_turn_helpers import ScriptedEngine, chatml_tokenizer, tool_tokenizer
from rewardsmith.core.batch import Batch
from rewardsmith.core.multi_turn import MultiTurnRollout, parse_hermes
from rewardsmith.core.rollout import SamplingParams
from rewardsmith.core.schema import MultiTurnConfig
from rewardsmith.core.sft import collate_sft, encode_example
from rewardsmith.commands import demo as demo_command
from rewardsmith.demo import format_table, tool_rows
from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.demo.tool_problems import TOOL_SHARE, make_dataset, tool_call_text
from rewardsmith.reward_fns.tools import call_tools
from rewardsmith.reward_fns.tools.calculator import CalculatorTool

torch.set_num_threads(1)

TRANSCRIPT = [{"role": "assistant", "content": tool_call_text("3678*616")}, {"role": "tool", "content": "2265648"},
              {"role": "assistant", "content": "#### 2265648"}]


def test_the_problems_need_the_calculator_and_its_transcripts_reach_the_answer():
    data = make_dataset(n_sft=200, n_train=50, n_val=50)
    assert not {r["prompt"][0]["content"] for r in data["val"]} & {r["prompt"][0]["content"] for r in data["sft"] + data["train"]}
    calling = [r for r in data["sft"] if len(r["response"]) == 3]
    assert abs(len(calling) / len(data["sft"]) - TOOL_SHARE) < 0.1
    for row in data["sft"]:
        truth = row["reward_model"]["ground_truth"]
        a, b = row["extra_info"]["expression"].split("*")
        assert (len(a), len(b), len(truth)) == (4, 3, 7) and int(a) * int(b) == int(truth)
        assert compute_score(row["data_source"], row["response"][-1]["content"], truth) == 1.0
    for row in calling:
        _, calls, malformed = parse_hermes(row["response"][0]["content"])
        assert malformed == 0 and [c.name for c in calls] == ["calculator"]
        [result] = asyncio.run(call_tools({"calculator": CalculatorTool()}, calls))
        assert result.status == "ok" and result.response.text == row["response"][1]["content"] == row["reward_model"]["ground_truth"]


@pytest.mark.parametrize("make_tokenizer", [build_char_tokenizer, tool_tokenizer, chatml_tokenizer],
                         ids=["demo", "tool-template", "chatml"])
def test_an_sft_transcript_is_tokenized_as_the_multi_turn_rollout_builds_the_episode(make_tokenizer):
    tok = make_tokenizer()
    prompt = [{"role": "user", "content": "What is 3678*616?"}]
    schemas = [CalculatorTool().tool_schema.model_dump(exclude_unset=True, exclude_none=True)]
    ids, mask = encode_example({"prompt": prompt, "response": TRANSCRIPT, "tools": schemas}, tok, "prompt", "response")

    # The same episode played by the rollout: the transcript's assistant turns, the real calculator's result.
    def script(conversation: str) -> str:
        return TRANSCRIPT[2]["content"] if "2265648" in conversation else TRANSCRIPT[0]["content"]

    engine = MultiTurnRollout(ScriptedEngine(tok, script), tok, {"calculator": CalculatorTool()},
                              MultiTurnConfig(enable=True), [tok.eos_token_id])
    out = engine.generate(Batch(meta={"raw_prompt": [prompt], "extra_info": [None], "uid": ["0"]}),
                          SamplingParams(n=1, max_new_tokens=300))
    width = out["prompts"].shape[1]
    attended = out["attention_mask"][0].bool()
    assert ids == out["input_ids"][0][attended].tolist()
    assert mask == [0] * int(attended[:width].sum()) + out["response_mask"][0][attended[width:]].tolist()
    assert out.meta["multi_turn"][0]["tokenization_mismatch"] is False
    # Only the assistant turns (each with its end-of-turn token) are learned.
    learned = tok.decode([t for t, m in zip(ids, mask) if m])
    assert learned == TRANSCRIPT[0]["content"] + tok.eos_token + TRANSCRIPT[2]["content"] + tok.eos_token
    _, _, labels = collate_sft([(ids, mask)], tok.pad_token_id)
    assert labels[0].ne(-100).tolist() == [bool(m) for m in mask]


@pytest.mark.parametrize("response, message", [
    ([{"role": "assistant", "content": "x"}, {"role": "tool", "content": "1"}], "must end with an assistant turn"),
    ([{"role": "robot", "content": "x"}], "[0]: each turn is"),
    ([{"role": "assistant", "content": 3}], "[0]: each turn is"),
    ([], "must be a string or a non-empty list"),
    (None, "must be a string or a non-empty list"),
])
def test_a_bad_transcript_is_an_error_naming_the_row_and_the_field(response, message):
    row = {"_where": "calc_sft.jsonl:7", "prompt": "What is 2*3?", "response": response}
    with pytest.raises(ValueError, match=r"calc_sft\.jsonl:7: field 'response'.*") as info:
        encode_example(row, build_char_tokenizer(), "prompt", "response")
    assert message in str(info.value)


def test_the_multi_turn_table_adds_tool_calls_per_episode_and_the_tool_error_rate():
    before = {"val/reward/mean": 0.1, "val/reward/openai/gsm8k/mean": 0.1, "val/multi_turn/tool_calls_per_episode": 0.0}
    after = {"val/reward/mean": 0.9, "val/reward/openai/gsm8k/mean": 0.9, "val/multi_turn/tool_calls_per_episode": 1.25,
             "val/tool/calculator/calls": 160.0, "val/tool/calculator/failures": 8.0}
    lines = format_table(before, after, {"openai/gsm8k": 128}, tool_rows(before, after)).splitlines()
    assert [line.split() for line in lines] == [
        ["data_source", "rows", "before", "after"], ["openai/gsm8k", "128", "0.100", "0.900"], ["all", "128", "0.100", "0.900"],
        ["tool", "calls/episode", "0.000", "1.250"], ["tool", "error", "rate", "-", "0.050"]]


def test_the_demo_command_takes_the_multi_turn_switch():
    parser = argparse.ArgumentParser()
    demo_command.configure(parser)
    args = parser.parse_args(["--multi-turn", "trainer.total_training_steps=3"])
    assert args.multi_turn is True and args.overrides == ["trainer.total_training_steps=3"]
    assert parser.parse_args([]).multi_turn is False
