"""Tokenizer, models and the Hugging Face rollout, with real (tiny) transformers models."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from rewardsmith.core.batch import Batch
from rewardsmith.demo.char_tokenizer import CHAT_TEMPLATE, build_char_tokenizer
from rewardsmith.common.config import load_config
from rewardsmith.core.models import (
    build_causal_lm,
    build_value_model,
    load_tokenizer,
    response_logprobs,
    response_values,
)
from rewardsmith.core.rollout import HFRollout, PromptSeededSampling, SamplingParams, response_mask_from_eos
from rewardsmith.core.schema import Config

ROOT = Path(__file__).resolve().parents[1]

from core_helpers import TINY_MODEL

TEXT = "Ann has 3 pens, gets 4 more. How many? Use \\boxed"


@pytest.fixture(scope="module")
def tokenizer():
    return build_char_tokenizer()


@pytest.fixture(scope="module")
def model_cfg():
    return load_config(Config, None, [f"actor_rollout_ref.model.config={TINY_MODEL}"]).actor_rollout_ref.model


def test_char_tokenizer_round_trip_and_chat_template(tokenizer):
    ids = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(TEXT)  # one token per character, spaces included
    assert tokenizer.decode(ids) == TEXT
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "2+3?"}], tokenize=False, add_generation_prompt=True)
    assert prompt == "<|user|>2+3?<|end|><|assistant|>"
    assert tokenizer.chat_template == CHAT_TEMPLATE
    assert tokenizer.padding_side == "left"


def test_tokenizer_saved_beside_a_model_loads_unchanged(tmp_path, tokenizer, model_cfg):
    # AutoTokenizer would load a Qwen2 tokenizer class here and drop the spaces.
    model = build_causal_lm(model_cfg, tokenizer)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = load_tokenizer(str(tmp_path))
    assert loaded(TEXT, add_special_tokens=False)["input_ids"] == tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    assert (loaded.eos_token_id, loaded.pad_token_id) == (tokenizer.eos_token_id, tokenizer.pad_token_id)


def test_shipped_tokenizer_is_the_built_one(tokenizer):
    from pathlib import Path

    shipped = load_tokenizer(str(Path(__file__).resolve().parents[1] / "examples" / "data" / "arith_tokenizer"))
    assert shipped.get_vocab() == tokenizer.get_vocab()
    assert shipped.chat_template == tokenizer.chat_template


def test_causal_lm_from_config_and_from_path(tmp_path, tokenizer, model_cfg):
    torch.manual_seed(0)
    model = build_causal_lm(model_cfg, tokenizer)
    assert model.config.vocab_size == len(tokenizer)
    assert model.config.model_type == "qwen2"
    model.save_pretrained(tmp_path)
    again = build_causal_lm(model_cfg, tokenizer, path=str(tmp_path))
    ids = torch.tensor([tokenizer(TEXT)["input_ids"]])
    assert torch.allclose(model(input_ids=ids).logits, again(input_ids=ids).logits)
    with pytest.raises(ValueError, match="path .* or config"):
        build_causal_lm(load_config(Config).actor_rollout_ref.model, tokenizer)


def left_padded(tokenizer, texts):
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    width = max(map(len, ids))
    input_ids = torch.full((len(ids), width), tokenizer.pad_token_id)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, width - len(row):] = torch.tensor(row)
        mask[i, width - len(row):] = 1
    return input_ids, mask


def test_log_probs_do_not_depend_on_left_padding(tokenizer, model_cfg):
    torch.manual_seed(0)
    model = build_causal_lm(model_cfg, tokenizer)
    input_ids, mask = left_padded(tokenizer, ["a short one", "a much longer prompt than that"])
    alone = torch.tensor([tokenizer("a short one", add_special_tokens=False)["input_ids"]])
    batched, _ = response_logprobs(model, input_ids, mask, 5)
    single, _ = response_logprobs(model, alone, torch.ones_like(alone), 5)
    assert torch.allclose(batched[0], single[0], atol=1e-5)
    # temperature divides the logits the log-probs come from
    hot, entropy = response_logprobs(model, alone, torch.ones_like(alone), 5, temperature=2.0, with_entropy=True)
    logits = model(input_ids=alone).logits[:, -6:-1] / 2.0
    expected = torch.log_softmax(logits, -1).gather(-1, alone[:, -5:].unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(hot, expected, atol=1e-5)
    assert entropy.shape == (1, 5) and (entropy > 0).all()


def test_value_model_reads_v_t_before_token_t(tmp_path, tokenizer, model_cfg):
    torch.manual_seed(0)
    build_causal_lm(model_cfg, tokenizer).save_pretrained(tmp_path)
    critic = build_value_model(model_cfg, tokenizer, path=str(tmp_path))
    assert critic.config.num_labels == 1
    input_ids, mask = left_padded(tokenizer, ["short", "a longer text"])
    values = response_values(critic, input_ids, mask, 3)
    assert values.shape == (2, 3)
    full = critic(input_ids=input_ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits[..., 0]
    assert torch.allclose(values, full[:, -4:-1])  # V(t) is read at position t - 1
    from_config = build_value_model(model_cfg, tokenizer)
    assert from_config.config.num_labels == 1


def test_response_mask_ends_at_the_first_eos():
    responses = torch.tensor([[5, 1, 7, 1], [5, 5, 5, 5], [1, 0, 0, 0]])
    assert response_mask_from_eos(responses, [1]).tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]


def test_hf_rollout_generates_n_samples_per_prompt(tokenizer, model_cfg):
    torch.manual_seed(0)
    model = build_causal_lm(model_cfg, tokenizer)
    input_ids, mask = left_padded(tokenizer, ["<|user|>1+1<|end|><|assistant|>", "<|user|>a longer prompt<|end|><|assistant|>"])
    prompts = Batch({"input_ids": input_ids, "attention_mask": mask}, {"uid": ["a", "b"]})
    engine = HFRollout(model, tokenizer.pad_token_id, [tokenizer.eos_token_id])
    out = engine.generate(prompts, SamplingParams(n=3, do_sample=True, temperature=1.0, max_new_tokens=6))
    assert len(out) == 6 and out.meta["uid"] == ["a"] * 3 + ["b"] * 3
    assert out["responses"].shape == (6, 6)
    assert torch.equal(out["input_ids"], torch.cat([out["prompts"], out["responses"]], dim=1))
    assert torch.equal(out["attention_mask"][:, -6:], out["response_mask"])
    # nothing but padding after a response's mask ends
    after = out["responses"][out["response_mask"] == 0]
    assert (after == tokenizer.pad_token_id).all()
    greedy = engine.generate(prompts, SamplingParams(n=2, do_sample=False, max_new_tokens=6))
    assert torch.equal(greedy["responses"][0], greedy["responses"][1])


def test_gradient_checkpointing_gives_the_same_gradients(tokenizer, model_cfg):
    checkpointed_cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={TINY_MODEL}",
                                                  "actor_rollout_ref.model.enable_gradient_checkpointing=true"]).actor_rollout_ref.model
    torch.manual_seed(0)
    checkpointed = build_causal_lm(checkpointed_cfg, tokenizer)
    torch.manual_seed(0)
    plain = build_causal_lm(model_cfg, tokenizer)
    assert checkpointed.model.gradient_checkpointing and checkpointed.training
    ids = torch.randint(10, 100, (2, 12))
    for model in (checkpointed, plain):
        logp, _ = response_logprobs(model, ids, torch.ones_like(ids), 5)
        logp.sum().backward()
    assert torch.allclose(checkpointed.model.embed_tokens.weight.grad, plain.model.embed_tokens.weight.grad, atol=1e-6)


def test_shared_prefix_generation_equals_generating_each_copy(tokenizer, model_cfg):
    torch.manual_seed(0)
    model = build_causal_lm(model_cfg, tokenizer)
    input_ids, mask = left_padded(tokenizer, ["<|user|>1+1<|end|><|assistant|>", "<|user|>a longer prompt<|end|><|assistant|>"])
    engine = HFRollout(model, tokenizer.pad_token_id, [tokenizer.eos_token_id])
    with warnings.catch_warnings():
        # The cache goes under the keyword this transformers takes (no `past_key_values` deprecation warning).
        warnings.simplefilter("error", FutureWarning)
        shared = engine.generate(Batch({"input_ids": input_ids, "attention_mask": mask}), SamplingParams(n=3, do_sample=False, max_new_tokens=8))
    copies = Batch({"input_ids": input_ids.repeat_interleave(3, 0), "attention_mask": mask.repeat_interleave(3, 0)})
    each = engine.generate(copies, SamplingParams(n=1, do_sample=False, max_new_tokens=8))
    assert torch.equal(shared["input_ids"], each["input_ids"])


def test_rollout_with_gradient_checkpointing_uses_the_cache_and_keeps_training_mode(tokenizer, model_cfg):
    cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={TINY_MODEL}",
                                     "actor_rollout_ref.model.enable_gradient_checkpointing=true"]).actor_rollout_ref.model
    torch.manual_seed(0)
    checkpointed = build_causal_lm(cfg, tokenizer)
    torch.manual_seed(0)
    plain = build_causal_lm(model_cfg, tokenizer)
    input_ids, mask = left_padded(tokenizer, ["<|user|>1+1<|end|><|assistant|>", "<|user|>hi<|end|><|assistant|>"])
    prompts = Batch({"input_ids": input_ids, "attention_mask": mask})
    params = SamplingParams(n=2, do_sample=False, max_new_tokens=6)
    a = HFRollout(checkpointed, tokenizer.pad_token_id, [tokenizer.eos_token_id]).generate(prompts, params)
    b = HFRollout(plain, tokenizer.pad_token_id, [tokenizer.eos_token_id]).generate(prompts, params)
    assert torch.equal(a["responses"], b["responses"])
    assert checkpointed.training and not any(m.training for m in checkpointed.modules() if isinstance(m, torch.nn.Dropout))


def test_llama_models_work_the_same_way(tokenizer):
    llama = ("{model_type: llama, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
             "num_key_value_heads: 2, max_position_embeddings: 128}")
    cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={llama}"]).actor_rollout_ref.model
    torch.manual_seed(0)
    policy, critic = build_causal_lm(cfg, tokenizer), build_value_model(cfg, tokenizer)
    assert policy.config.model_type == critic.config.model_type == "llama"
    input_ids, mask = left_padded(tokenizer, ["<|user|>1+1<|end|><|assistant|>", "<|user|>hi<|end|><|assistant|>"])
    out = HFRollout(policy, tokenizer.pad_token_id, [tokenizer.eos_token_id]).generate(
        Batch({"input_ids": input_ids, "attention_mask": mask}), SamplingParams(n=2, max_new_tokens=4))
    logp, _ = response_logprobs(policy, out["input_ids"], out["attention_mask"], 4)
    assert logp.shape == (4, 4) and torch.isfinite(logp).all()
    assert response_values(critic, out["input_ids"], out["attention_mask"], 4).shape == (4, 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_prompt_seeded_sampling_adds_each_prompts_own_gumbel_noise(dtype):
    """Bit for bit the textbook Gumbel-max noise (a uniform draw per prompt from its own generator, -log(-log u)),
    so the in-place arithmetic that keeps it cheap samples what the plain formula samples."""
    seeds, n, vocab = [3, 70, 2**31 - 2], 2, 97
    sampler = PromptSeededSampling(seeds, n, torch.device("cpu"))
    reference = [torch.Generator().manual_seed(seed) for seed in seeds]
    for _ in range(3):  # each call takes the next draws of every prompt's stream
        scores = (torch.randn(len(seeds) * n, vocab) * 4).to(dtype)
        scores[0, :40] = -float("inf")  # top-k/top-p's masked logits stay masked
        uniform = torch.cat([torch.rand((n, vocab), generator=g) for g in reference])
        gumbel = -torch.log(-torch.log(uniform.clamp(min=torch.finfo(torch.float32).tiny, max=1.0 - 1e-7)))
        noisy = sampler(None, scores.clone())
        assert noisy.dtype == torch.float32
        assert torch.equal(noisy, scores.float() + gumbel)


def test_sampling_params_come_from_the_one_sampling_section():
    from rewardsmith.common.errors import ConfigError
    from rewardsmith.core.rollout import build_rollout_engine

    config = load_config(Config, None, ["actor_rollout_ref.rollout.temperature=0.7", "actor_rollout_ref.rollout.top_k=5"])
    rollout = config.actor_rollout_ref.rollout
    train = SamplingParams.from_config(rollout, 12)
    assert (train.n, train.do_sample, train.temperature, train.top_p, train.top_k, train.max_new_tokens) == (1, True, 0.7, 1.0, 5, 12)
    val = SamplingParams.from_config(rollout.val_kwargs, 12)
    assert not val.do_sample and val.temperature == 1.0  # greedy: the log-prob temperature is 1
    with pytest.raises(ConfigError, match=r"val_kwargs\.top_p must be in \(0, 1\]"):
        load_config(Config, None, ["actor_rollout_ref.rollout.val_kwargs.top_p=0"])
    with pytest.raises(ValueError, match="max_new_tokens must be > 0"):
        SamplingParams(max_new_tokens=0)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        SamplingParams(temperature=0.0)
    assert build_rollout_engine(rollout, None, build_char_tokenizer(), None).eos_token_ids == [build_char_tokenizer().eos_token_id]


_CRITIC_FROM_A_CAUSAL_LM = """
import sys, yaml
sys.path.insert(0, "tests")
from core_helpers import TINY_MODEL
from rewardsmith.common.config import load_config
from rewardsmith.core.models import build_causal_lm, build_value_model, load_tokenizer
from rewardsmith.core.schema import Config
model_cfg = load_config(Config, None, []).actor_rollout_ref.model
model_cfg.config = yaml.safe_load(TINY_MODEL)
tokenizer = load_tokenizer("examples/data/arith_tokenizer")
build_causal_lm(model_cfg, tokenizer).save_pretrained(sys.argv[1])
print("building the critic", file=sys.stderr)
build_value_model(model_cfg, tokenizer, path=sys.argv[1])
"""


def test_a_critic_from_a_causal_lm_says_its_new_head_in_one_line(tmp_path):
    # A fresh process, as `rewardsmith train` is: transformers' logging writes to the stderr it starts with.
    done = subprocess.run([sys.executable, "-c", _CRITIC_FROM_A_CAUSAL_LM, str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, env={**os.environ, "HF_HUB_DISABLE_PROGRESS_BARS": "1"})
    assert done.returncode == 0, done.stderr
    err = done.stderr.split("building the critic\n", 1)[1]
    assert "LOAD REPORT" not in err and "\x1b[" not in err and "MISSING" not in err, err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line and not line.startswith("Loading weights")]
    assert lines == [f"critic: a new value head (score.bias, score.weight) on the weights of {tmp_path}, starting "
                     "from random values (expected when the checkpoint has no such head, e.g. a causal LM)"]
