"""verl keys of features rewardsmith does not have: each refused by name, saying what to do instead.

verl's example and recipe scripts (core/verl_script_keys.txt) pass keys of
engines, entry points and recipes that are not here: Megatron-LM, the SFT and
generation trainers, the fully-async and embodied recipes, multi-turn agent
loops, profilers. Without this table such a key would fail as an unknown key
listing the allowed ones; with it the error says which verl feature the key
belongs to and what to do. Each entry is a glob over dotted keys
(:func:`fnmatch.fnmatchcase`); no key the schema has matches one
(tests/test_verl_keys.py checks it).
"""
from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any, Optional

from rewardsmith.common.errors import ConfigError

_MEGATRON = ("a key of verl's Megatron-LM engine, which is not an engine here: use actor_rollout_ref.actor.strategy=fsdp2 "
             "(sharded data parallelism) and drop the Megatron keys")
_SFT = ("a key of verl's SFT trainer (verl.trainer.fsdp_sft_trainer), not of its PPO trainer: run `rewardsmith sft` with its "
        "sft.* keys (docs/training.md)")
_GENERATION = ("a key of verl's offline generation/evaluation entry point (main_generation, main_eval): score saved responses "
               "with `rewardsmith score` (docs/scoring.md)")
_ASYNC = ("a key of verl's fully-async / one-step-off recipes (their own entry points, with a separate rollout cluster): "
          "`rewardsmith train` runs verl's synchronous main_ppo loop; drop the key")
_EMBODIED = "a key of verl's vision-language / embodied (VLA) recipes: only text causal LMs train here; drop the key"
_MULTI_TURN = ("a key of verl's multi-turn agent loop (tools, interactions, traces): multi-turn rollouts are not supported "
               "here; drop the key (single-turn rollouts)")
_PROFILER = ("a key of verl's built-in profilers (nsys, npu, torch memory): none is built in here; drop the key and profile "
             "`rewardsmith train` from outside (py-spy, torch.profiler)")
_PRIME = ("a key of verl's PRIME recipe (an implicit process reward model trained online, recipe/prime's own trainer): not "
          "supported; drop the key")
_DISTILL = "a key of verl's GKD distillation recipe (a teacher server): not supported; drop the key"

# (glob, why and what to do). Order matters only for readability: a key matches at most one family.
REFUSALS: tuple[tuple[str, str], ...] = (
    ("*.megatron.*", _MEGATRON),
    ("engine.*", _MEGATRON),
    ("actor_rollout_ref.actor.optim.override_optimizer_config.*", _MEGATRON),
    ("actor_rollout_ref.actor.optim.clip_grad", _MEGATRON + " (the gradient clip is actor_rollout_ref.actor.grad_clip)"),
    ("actor_rollout_ref.actor.optim.lr_decay_*", _MEGATRON + " (the schedule is actor_rollout_ref.actor.optim.lr_scheduler_type)"),
    ("actor_rollout_ref.*.load_weight", _MEGATRON),
    ("actor_rollout_ref.actor.router_replay.*", _MEGATRON),
    ("model.*", _SFT),
    ("optim.*", _SFT),
    ("checkpoint.*", _SFT),
    ("data.micro_batch_size*", _SFT),
    ("data.max_token_len_per_gpu", _SFT),
    ("data.use_dynamic_bsz", _SFT),
    ("data.prompt_dict_keys", _SFT),
    ("data.response_dict_keys", _SFT),
    ("data.response_key", _SFT),
    ("data.messages_key", _SFT),
    ("data.multiturn.*", _SFT),
    ("data.max_length", _SFT),
    ("data.pad_mode", _SFT),
    ("data.path", _GENERATION),
    ("data.n_samples", "responses per prompt: in verl's offline generation entry point (main_generation) score saved "
                       "responses with `rewardsmith score` (docs/scoring.md); in a training script (verl's PRIME recipe) "
                       "set actor_rollout_ref.rollout.n instead"),
    ("data.output_path", _GENERATION),
    ("data.batch_size", _GENERATION),
    ("async_training.*", _ASYNC),
    ("rollout.*", _ASYNC),
    ("trainer.n_rollout_gpus_per_node", _ASYNC),
    ("env.*", _EMBODIED),
    ("trainer.n_env_gpus_per_node", _EMBODIED),
    ("data.image_key", _EMBODIED),
    ("actor_rollout_ref.actor.num_images_in_input", _EMBODIED),
    ("actor_rollout_ref.actor.freeze_vision_tower", _EMBODIED),
    ("actor_rollout_ref.rollout.engine_kwargs.vllm.disable_mm_preprocessor_cache", _EMBODIED),
    # multi_turn.enable (false) and .format are schema keys; the loop's own settings are refused.
    ("actor_rollout_ref.rollout.multi_turn.*_config_path", _MULTI_TURN),
    ("actor_rollout_ref.rollout.multi_turn.max_*", _MULTI_TURN),
    ("actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts", _MULTI_TURN),
    ("actor_rollout_ref.rollout.agent.*", _MULTI_TURN),
    ("actor_rollout_ref.rollout.trace.*", _MULTI_TURN),
    ("*.profiler.*", _PROFILER),
    ("global_profiler.*", _PROFILER),
    ("reward_model.model.update", _PRIME),
    ("reward_model.model.beta_train", _PRIME),
    ("reward_model.model.optim.*", _PRIME),
    ("reward_model.model.input_tokenizer", _PRIME),
    ("reward_model.mini_batch_size", _PRIME),
    ("data.filter_accuracy", _PRIME),
    ("data.accuracy_*_bound", _PRIME),
    ("data.oversample_factor", _PRIME),
    ("teacher.*", _DISTILL),
    ("actor_rollout_ref.teacher.*", _DISTILL),
    ("algorithm.rollout_correction.*",
     "verl's rollout importance-sampling / rejection correction (TIS, MIS): not implemented here; drop the key (the vllm "
     "engine's log-probs match the actor's, metric rollout_probs_diff)"),
    ("algorithm.use_pf_ppo", "verl's preference-feedback PPO reweighting: not implemented here; drop the key"),
    ("algorithm.pf_ppo.*", "verl's preference-feedback PPO reweighting: not implemented here; drop the key"),
    ("actor_rollout_ref.actor.tau_*", "SAPO's soft-gate temperatures (verl's sapo loss): not implemented here; use a "
                                       "policy_loss.loss_mode from docs/training.md#policy-losses"),
    ("actor_rollout_ref.actor.clip_cov_*", "verl's old place of the clip_cov options: use actor_rollout_ref.actor.policy_loss.clip_cov_*"),
    ("actor_rollout_ref.actor.loss_mode", "verl's old place of the loss mode: use actor_rollout_ref.actor.policy_loss.loss_mode"),
    ("actor_rollout_ref.actor.micro_batch_size", "use actor_rollout_ref.actor.ppo_micro_batch_size"),
    ("actor_rollout_ref.actor.max_token_len", "use actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
    ("actor_rollout_ref.model.lora.*", "verl's nested LoRA layout: use actor_rollout_ref.model.lora_rank, lora_alpha and "
                                       "target_modules (docs/training.md#lora)"),
    ("actor_rollout_ref.model.lora_adapter_path", "loading saved LoRA adapters is not supported: merge them into the model "
                                                  "directory (peft's merge_and_unload) and point model.path at it"),
    ("actor_rollout_ref.model.fused_kernel_options.*", "verl's fused-kernel backends (triton, torch): there are no fused "
                                                       "kernels here; drop the key (use_fused_kernels is a notice)"),
    ("actor_rollout_ref.model.use_liger", "Liger kernels are not used here: drop the key"),
    ("actor_rollout_ref.actor.fsdp_config.strategy", "use actor_rollout_ref.actor.strategy (fsdp, fsdp2 or local)"),
    ("actor_rollout_ref.actor.fsdp_config.model_dtype", "use actor_rollout_ref.model.torch_dtype"),
    ("actor_rollout_ref.actor.fsdp_config.use_orig_params", "an FSDP1 setting; FSDP2 (strategy fsdp/fsdp2 here) always "
                                                            "keeps the original parameters: drop the key"),
    ("actor_rollout_ref.actor.fsdp_config.mixed_precision.buffer_dtype",
     "buffers stay in the model's dtype here: drop the key (param_dtype and reduce_dtype are supported)"),
    ("actor_rollout_ref.rollout.dtype", "the engine runs in the actor's dtype: set actor_rollout_ref.model.torch_dtype"),
    ("actor_rollout_ref.rollout.prompt_length", "set data.max_prompt_length (the rollout's prompt length)"),
    ("actor_rollout_ref.rollout.response_length", "set data.max_response_length (the rollout's response length)"),
    ("actor_rollout_ref.rollout.data_parallel_size", "one vLLM engine per rank here, no engine data parallelism: drop the key"),
    ("actor_rollout_ref.rollout.expert_parallel_size", "vLLM expert parallelism is not supported (no MoE sharding): drop the key"),
    ("actor_rollout_ref.rollout.over_sample_rate", "verl's agent-loop oversampling (aborting the slowest requests) changes "
                                                   "which samples train: not supported; drop the key"),
    ("actor_rollout_ref.rollout.quantization", "a quantized rollout engine samples from other weights than the actor's: not "
                                               "supported; drop the key"),
    ("actor_rollout_ref.rollout.enable_prefix_caching", "not passed to vLLM here: drop the key (vLLM's default applies)"),
    ("actor_rollout_ref.rollout.enable_sleep_mode", "the vllm engine sleeps between rollouts wherever the platform has "
                                                    "sleep mode: drop the key"),
    ("critic.forward_max_token_len_per_gpu", "use critic.ppo_max_token_len_per_gpu (the critic's value forwards use it)"),
    ("data.trust_remote_code", "the tokenizer is the model's: set actor_rollout_ref.model.trust_remote_code"),
    ("critic.model.trust_remote_code", "the critic follows the actor: set actor_rollout_ref.model.trust_remote_code"),
    ("data.custom_cls.*", "custom dataset classes are not supported: write rows in verl's schema (parquet or jsonl)"),
    ("data.sampler.*", "custom samplers (curriculum) are not supported: data.shuffle and data.seed order the rows"),
    ("data.dataloader_num_workers", "rows are loaded in the trainer's process: drop the key"),
    ("data.apply_chat_template_kwargs.*", "extra chat-template arguments are not passed here: drop the key, or bake them "
                                          "into the tokenizer's chat template"),
    ("trainer.max_*_ckpt_to_keep", "use trainer.max_ckpt_to_keep (one checkpoint holds actor and critic)"),
    ("trainer.log_freq", "metrics are logged every step: drop the key"),
    ("trainer.ref_update_freq", "the reference is frozen here: drop the key"),
    ("trainer.scheduler", "verl's alternative schedulers are not here: drop the key"),
    ("trainer.tensorboard_dir", "use trainer.logger (its sinks, docs/training.md); drop the key"),
    ("trainer.rl_logging_board_dir", "use trainer.logger (its sinks, docs/training.md); drop the key"),
    ("trainer.dump_high_diff_*", "not supported: the metric rollout_probs_diff reports engine/actor differences; drop the key"),
    ("reward_model.enable_resource_pool", "the reward model shares the trainer's devices here: drop the key"),
    ("reward_model.n_gpus_per_node", "the reward model shares the trainer's devices here: drop the key"),
    ("reward_model.nnodes", "the reward model shares the trainer's devices here: drop the key"),
)


def refusal(key: str) -> Optional[str]:
    """Why ``key`` (dotted, no ``+``) is refused, or None when it is not one of verl's features missing here."""
    for pattern, why in REFUSALS:
        if fnmatchcase(key, pattern):
            return why
    return None


def _leaves(tree: Any, prefix: str = "") -> list[str]:
    if isinstance(tree, dict) and tree:
        return [leaf for key, value in tree.items() for leaf in _leaves(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


def refuse_missing_features(tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` unchanged, or a :class:`ConfigError` naming its first key of a verl feature missing here and why."""
    for key in _leaves(tree):
        why = refusal(key)
        if why is not None:
            raise ConfigError(f"{key}: {why}")
    return tree
