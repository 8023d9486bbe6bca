"""Packed (unpadded) forwards, ``use_remove_padding`` (core/packing.py): the same log-probs, entropy, values and
gradients as the padded forward, on tiny random fp32 Qwen2 models."""
import dataclasses

import pytest
import torch
from transformers.masking_utils import find_packed_sequence_indices

from core_helpers import TINY_MODEL

from rewardsmith.common.config import load_config
from rewardsmith.core.models import build_causal_lm, build_value_model, response_logprobs, response_values
from rewardsmith.core.packed_attention import packs
from rewardsmith.core.packing import pack
from rewardsmith.core.schema import Config
from rewardsmith.demo.char_tokenizer import build_char_tokenizer

torch.set_num_threads(1)
PROMPT, RESPONSE = 9, 6
# (prompt tokens, response tokens) per row: left padding before the prompt, right padding after the response.
LENGTHS = [(9, 6), (4, 6), (7, 2), (2, 1)]


@pytest.fixture(scope="module")
def tokenizer():
    return build_char_tokenizer()


def model_cfg(attn: str):
    cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={TINY_MODEL}"]).actor_rollout_ref.model
    # Two layers: the second reads what the first mixed across positions, so any leak between sequences compounds.
    return dataclasses.replace(cfg, attn_implementation=attn, config={**cfg.config, "num_hidden_layers": 2})


def padded_batch(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A (B, PROMPT + RESPONSE) batch laid out as the rollout lays it out, with random tokens and pad id 0."""
    gen = torch.Generator().manual_seed(1)
    ids = torch.zeros(len(LENGTHS), PROMPT + RESPONSE, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, (p, r) in enumerate(LENGTHS):
        mask[row, PROMPT - p: PROMPT + r] = 1
    ids[mask.bool()] = torch.randint(1, vocab, (int(mask.sum()),), generator=gen)
    return ids, mask


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_log_probs_entropy_and_values_equal_the_padded_forward(tokenizer, attn):
    torch.manual_seed(0)
    policy = build_causal_lm(model_cfg(attn), tokenizer)
    critic = build_value_model(model_cfg(attn), tokenizer)
    # eager keeps packed sequences apart too (the workers leave it padded only because that is faster).
    assert policy.config._attn_implementation == attn
    ids, mask = padded_batch(len(tokenizer))
    scored = mask[:, -RESPONSE:].bool()
    with torch.no_grad():
        padded = response_logprobs(policy, ids, mask, RESPONSE, temperature=0.7, with_entropy=True)
        packed = response_logprobs(policy, ids, mask, RESPONSE, temperature=0.7, with_entropy=True, packed=True)
        values = [response_values(critic, ids, mask, RESPONSE, packed=p) for p in (False, True)]
    for a, b in (*zip(padded, packed), values):
        torch.testing.assert_close(b[scored], a[scored], atol=1e-5, rtol=1e-5)
        assert b.shape == a.shape == (len(LENGTHS), RESPONSE)
    # Response padding gets fixed numbers (uniform logits, value 0), never another sequence's output.
    assert (values[1][~scored] == 0).all()
    torch.testing.assert_close(packed[0][~scored], torch.full_like(packed[0][~scored], -torch.log(torch.tensor(len(tokenizer)))))


def test_the_packed_row_keeps_sequences_apart(tokenizer):
    """transformers reads the boundaries from the restarting position ids; without them the sequences would
    attend to each other and the log-probs would differ (so the equality above is not vacuous)."""
    torch.manual_seed(0)
    policy = build_causal_lm(model_cfg("sdpa"), tokenizer)
    ids, mask = padded_batch(len(tokenizer))
    row, positions, index = pack(ids, mask)
    lengths = mask.sum(-1).tolist()
    assert row.shape == positions.shape == (1, sum(lengths))
    assert positions[0].tolist() == [p for n in lengths for p in range(n)]
    expected = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    assert find_packed_sequence_indices(positions)[0].tolist() == expected.tolist()
    assert (row[0][index[mask.bool()]] == ids[mask.bool()]).all()
    with torch.no_grad():
        packed = policy(input_ids=row, position_ids=positions).logits
        one_sequence = policy(input_ids=row, position_ids=torch.arange(row.shape[1]).unsqueeze(0)).logits
    first = slice(0, lengths[0])  # the first sequence sees nothing before it either way
    torch.testing.assert_close(one_sequence[:, first], packed[:, first])
    # Tiny random weights mix little, but the leak is far above the 1e-5 the equality tests allow.
    assert (one_sequence[:, lengths[0]:] - packed[:, lengths[0]:]).abs().max() > 1e-4


@pytest.mark.parametrize("entropy_coeff", [0.0, 0.01])
def test_packed_actor_and_critic_losses_have_the_padded_gradients(tokenizer, entropy_coeff):
    ids, mask = padded_batch(len(tokenizer))
    weights = mask[:, -RESPONSE:].float()
    advantages = torch.linspace(-1, 1, weights.numel()).view_as(weights)

    def grads(build, packed):
        torch.manual_seed(0)
        model = build(model_cfg("sdpa"), tokenizer)
        if build is build_causal_lm:
            logp, entropy = response_logprobs(model, ids, mask, RESPONSE, temperature=0.7, with_entropy=True,
                                              entropy_grad=entropy_coeff != 0, packed=packed)
            loss = -(logp.exp() * advantages * weights).sum() - entropy_coeff * (entropy * weights).sum()
        else:
            loss = ((response_values(model, ids, mask, RESPONSE, packed=packed) - advantages) ** 2 * weights).sum()
        loss.backward()
        return {name: p.grad for name, p in model.named_parameters()}

    for build in (build_causal_lm, build_value_model):
        padded, packed = grads(build, False), grads(build, True)
        assert padded.keys() == packed.keys()
        for name, grad in padded.items():
            torch.testing.assert_close(packed[name], grad, atol=1e-5, rtol=1e-4, msg=name)
        assert any(g.abs().max() > 0 for g in padded.values())


def test_attention_implementations_that_pack():
    assert packs("sdpa") and packs(None)  # null: the library's default, sdpa
    assert not packs("eager")  # it would keep sequences apart, but score the whole packed row: slower than padding
    # Paged attention and hub kernels get no packed-sequence mask from transformers.
    assert not packs("paged|eager") and not packs("kernels-community/flash-attn")


@pytest.mark.parametrize("model_type, options, says", [
    ("mamba", {"state_size": 4}, "MambaModel does not build its attention mask with transformers' masking_utils"),
    ("jamba", {"num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 64, "attn_layer_period": 2,
               "attn_layer_offset": 1, "expert_layer_period": 2, "num_experts": 1, "mamba_d_state": 4},
     "JambaModel has linear_attention layers"),
])
def test_a_model_whose_code_would_mix_packed_sequences_is_refused_by_key(model_type, options, says):
    from transformers import AutoConfig, AutoModelForCausalLM

    from rewardsmith.core.workers import packed_forward

    config = AutoConfig.for_model(model_type, hidden_size=32, num_hidden_layers=2, vocab_size=50, **options)
    model = AutoModelForCausalLM.from_config(config)
    # As if its attention implementation packed (sdpa, flash): the attention implementation alone would pass.
    model.config._attn_implementation = "sdpa"
    assert packs(model.config._attn_implementation)
    key = "critic.model.use_remove_padding"
    with pytest.raises(ValueError, match=f"{key}=true: {says}.*set {key}=false"):
        packed_forward(True, model, key)
    assert packed_forward(False, model, key) is False
