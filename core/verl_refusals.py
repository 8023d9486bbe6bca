"""verl keys of features rewardsmith does not have: each refused by name, saying what to do instead.

verl's example and recipe scripts (core/verl_script_keys.txt) and its trainer
config across releases (core/verl_release_keys.tsv) have keys of engines,
entry points and recipes that are not here: Megatron-LM, the SFT and
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
from rewardsmith.plugins.verl_layout import KEY_MAP

_MEGATRON = ("a key of verl's Megatron-LM engine, which is not an engine here: use actor_rollout_ref.actor.strategy=fsdp2 "
             "(sharded data parallelism) and drop the Megatron keys")
_SFT = ("a key of verl's SFT trainer (verl.trainer.fsdp_sft_trainer), not of its PPO trainer: run `rewardsmith sft` with its "
        "sft.* keys (docs/training.md)")
_GENERATION = ("a key of verl's offline generation/evaluation entry point (main_generation, main_eval): score saved responses "
               "with `rewardsmith score` (docs/scoring.md)")
_ASYNC = ("a key of verl's fully-async / one-step-off recipes (their own entry points, with a separate rollout cluster): "
          "`rewardsmith train` runs verl's synchronous main_ppo loop; drop the key")
_EMBODIED = "a key of verl's vision-language / embodied (VLA) recipes: only text causal LMs train here; drop the key"
_MULTI_TURN = ("a key of verl's agent loops that the multi-turn rollout here does not have (function tools, custom agent "
               "loops, traces, repeated rollouts): drop the key (docs/environments.md#multi-turn-rollouts)")
_PROFILER = ("a key of verl's built-in profilers (nsys, npu, torch memory): none is built in here; drop the key and profile "
             "`rewardsmith train` from outside (py-spy, torch.profiler)")
_PRIME = ("a key of verl's PRIME recipe (an implicit process reward model trained online, recipe/prime's own trainer): not "
          "supported; drop the key")
_DISTILL = "a key of verl's GKD distillation recipe (a teacher server): not supported; drop the key"
# Families of verl's trainer config (every release's, core/verl_release_keys.tsv) with no counterpart here.
_QAT = ("verl's quantization-aware training / quantized rollout: not supported (training and sampling use the model's "
        "dtype); drop the key")
_TURBO = ("a setting of verl's alternative FSDP implementation (fsdp_config.turbo_config): strategy fsdp/fsdp2 shard with "
          "torch's FSDP2 here; drop the key")
_MTP = "verl's multi-token-prediction layers and speculative decoding: not supported; drop the key"
_TRANSFER_QUEUE = ("verl's TransferQueue (a data store shared by its workers): the controller moves the batches here; drop "
                   "the key")
_SKIP = "verl's rollout skipping (reusing dumped rollouts while debugging later stages): not supported; drop the key"
_ENGINE_COPY = ("verl's engine-worker copy of a setting of its role: set the role's own key ({}), or drop the key")
_SHARED_FSDP = ("the reference's FSDP settings are the actor's here (actor_rollout_ref.actor.fsdp_config.*) and the critic's are "
                "critic.fsdp_config.* (FSDP2) and critic.model.fsdp_config.* (offload): set them there")
_FILLED_IN = "filled in by verl from another key ({}): set that key"
_NO_DETERMINISM = ("verl's per-engine seed / deterministic-kernels switch: trainer.seed seeds the whole run here; drop the "
                   "key")
_DTYPE = "the models' dtype is actor_rollout_ref.model.torch_dtype here (actor, reference and critic): set that key"
_RM_WORKER = ("a setting of verl's reward-model worker with no counterpart here: drop the key (the reward model's settings are "
              "in docs/reward_models.md)")
_RAY_INIT = ("Ray's start-up arguments: rewardsmith's ray.init joins RAY_ADDRESS or starts a local cluster "
             "(trainer.ray.* place the workers); drop the key")
_MULTIMODAL = "a key of verl's multimodal data (images, video, audio): only text causal LMs train here; drop the key"
_OPTIMIZER = ("the optimizer here is AdamW with a constant or cosine schedule (optim.lr_scheduler_type), verl's defaults: "
              "drop the key")
_ROLLOUT_IS = ("verl's older rollout importance-sampling keys: use their successors algorithm.rollout_correction.* "
               "(docs/training.md#rollout-correction)")


# verl's FSDP settings of the reference and the critic's model that rewardsmith takes from the actor's / critic's own.
_ROLE_FSDP = ("dtype", "model_dtype", "fsdp_size", "offload_policy", "reshard_after_forward", "strategy", "use_orig_params",
              "seed", "full_determinism", "forward_only", "pad_to_length", "pad_to_length_bucket",
              "use_no_sync_for_gradient_accumulation", "wrap_policy.min_num_params", "entropy_checkpointing",
              "entropy_from_logits_with_chunking", "entropy_from_logits_chunk_size", "use_torch_compile",
              "ulysses_sequence_parallel_size")
# vLLM settings of verl's reward-model server that rewardsmith's reward loop does not take.
_RM_ENGINE = ("cudagraph_capture_sizes", "data_parallel_size", "disable_log_stats", "dtype", "enable_chunked_prefill",
              "enable_prefix_caching", "enforce_eager", "engine_kwargs", "expert_parallel_size", "limit_images", "load_format",
              "max_model_len", "max_num_batched_tokens", "max_num_seqs", "skip_tokenizer_init")


def _engine_copies() -> tuple[tuple[str, str], ...]:
    """verl 0.6+ repeats some of a role's keys under its fsdp_config for its engine workers."""
    rows = []
    for role in ("actor_rollout_ref.actor", "actor_rollout_ref.ref"):
        for name in ("entropy_checkpointing", "entropy_from_logits_with_chunking", "entropy_from_logits_chunk_size",
                     "use_torch_compile", "ulysses_sequence_parallel_size"):
            rows.append((f"{role}.fsdp_config.{name}", _ENGINE_COPY.format(f"{role}.{name}")))
    return tuple(rows)

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
    # The multi-turn rollout's own keys are the schema's (core/multi_turn.py); these are of verl's other agent loops.
    ("actor_rollout_ref.rollout.multi_turn.max_turns", "verl 0.4.0's key: use actor_rollout_ref.rollout.multi_turn."
                                                       "max_assistant_turns"),
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
    ("algorithm.rollout_correction.rollout_rs_threshold_lower", "verl 0.6/0.7's lower rejection bound: give "
     "algorithm.rollout_correction.rollout_rs_threshold as 'lower_upper' (k1 options), as verl 0.9"),
    ("algorithm.rollout_correction.rollout_token_veto_threshold", "verl 0.6/0.7's per-token veto: use "
     "algorithm.rollout_correction.rollout_rs=token_k1 with rollout_rs_threshold, as verl 0.9"),
    ("algorithm.rollout_correction.use_policy_gradient", "verl 0.6.1's switch: use algorithm.rollout_correction."
     "bypass_mode=true with loss_type=reinforce, as verl 0.9"),
    ("algorithm.use_pf_ppo", "verl's preference-feedback PPO reweighting: not implemented here; drop the key"),
    ("algorithm.pf_ppo.*", "verl's preference-feedback PPO reweighting: not implemented here; drop the key"),
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
    ("actor_rollout_ref.actor.fsdp_config.model_dtype", "use actor_rollout_ref.model.torch_dtype"),
    ("actor_rollout_ref.actor.fsdp_config.use_orig_params", "an FSDP1 setting; FSDP2 (strategy fsdp/fsdp2 here) always "
                                                            "keeps the original parameters: drop the key"),
    ("actor_rollout_ref.actor.fsdp_config.mixed_precision.buffer_dtype",
     "buffers stay in the model's dtype here: drop the key (param_dtype and reduce_dtype are supported)"),
    ("actor_rollout_ref.rollout.dtype", "the engine runs in the actor's dtype: set actor_rollout_ref.model.torch_dtype"),
    ("actor_rollout_ref.rollout.prompt_length", "set data.max_prompt_length (the rollout's prompt length)"),
    ("actor_rollout_ref.rollout.response_length", "set data.max_response_length (the rollout's response length)"),
    ("actor_rollout_ref.rollout.quantization", "a quantized rollout engine samples from other weights than the actor's: not "
                                               "supported; drop the key"),
    ("data.trust_remote_code", "the tokenizer is the model's: set actor_rollout_ref.model.trust_remote_code"),
    ("critic.model.trust_remote_code", "the critic follows the actor: set actor_rollout_ref.model.trust_remote_code"),
    ("data.custom_cls.*", "custom dataset classes are not supported: write rows in verl's schema (parquet or jsonl)"),
    ("data.sampler.*", "custom samplers (curriculum) are not supported: data.shuffle and data.seed order the rows"),
    ("data.apply_chat_template_kwargs.*", "extra chat-template arguments are not passed here: drop the key, or bake them "
                                          "into the tokenizer's chat template"),
    ("trainer.max_*_ckpt_to_keep", "use trainer.max_ckpt_to_keep (one checkpoint holds actor and critic)"),
    ("trainer.log_freq", "metrics are logged every step: drop the key"),
    ("trainer.ref_update_freq", "the reference is frozen here: drop the key"),
    ("trainer.scheduler", "verl's alternative schedulers are not here: drop the key"),
    ("trainer.tensorboard_dir", "use trainer.logger (its sinks, docs/training.md); drop the key"),
    ("trainer.rl_logging_board_dir", "use trainer.logger (its sinks, docs/training.md); drop the key"),
    ("trainer.dump_high_diff_*", "not supported: the metric rollout_probs_diff reports engine/actor differences; drop the key"),
    # Families of verl's trainer config across its releases (core/verl_release_keys.tsv).
    ("*.qat.*", _QAT),
    ("*.qat", _QAT),
    ("*.quantization_config_file", _QAT),
    ("reward.reward_model.rollout.quantization", _QAT),
    ("*.turbo_config.*", _TURBO),
    ("*.mtp.*", _MTP),
    ("*.mtp", _MTP),
    ("distillation.*", _DISTILL),
    ("transfer_queue.*", _TRANSFER_QUEUE),
    ("skip.*", _SKIP),
    ("actor_rollout_ref.rollout.skip_*", _SKIP),
    ("trainer.v1.*", _ASYNC),
    ("trainer.use_v1", _ASYNC),
    ("trainer.npu_profile.*", _PROFILER),
    ("trainer.*nsight_options.*", _PROFILER),
    ("trainer.profile_steps", _PROFILER),
    *_engine_copies(),
    *((f"{role}.fsdp_config.{name}", _SHARED_FSDP) for role in ("actor_rollout_ref.ref", "critic.model")
      for name in _ROLE_FSDP),
    ("critic.fsdp.*", "verl 0.9's engine-worker FSDP settings of the critic: " + _SHARED_FSDP),
    ("actor_rollout_ref.actor.fsdp_config.dtype", _DTYPE),
    ("actor_rollout_ref.actor.fsdp_config.seed", _NO_DETERMINISM),
    ("actor_rollout_ref.actor.fsdp_config.full_determinism", _NO_DETERMINISM),
    ("actor_rollout_ref.rollout.full_determinism", _NO_DETERMINISM),
    ("actor_rollout_ref.rollout.seed", _NO_DETERMINISM),
    ("actor_rollout_ref.actor.fsdp_config.forward_only", "an internal flag of verl's engine workers: drop the key"),
    ("actor_rollout_ref.ref.router_replay.*", _MEGATRON),
    ("actor_rollout_ref.rollout.enable_rollout_routing_replay", _MEGATRON),
    ("actor_rollout_ref.ref.model", "verl's separate reference model: the reference is the actor's starting weights here; "
                                    "drop the key"),
    ("actor_rollout_ref.actor.rollout_n", _FILLED_IN.format("actor_rollout_ref.rollout.n")),
    ("actor_rollout_ref.ref.rollout_n", _FILLED_IN.format("actor_rollout_ref.rollout.n")),
    ("critic.rollout_n", _FILLED_IN.format("actor_rollout_ref.rollout.n")),
    ("*.optim.total_training_steps", _FILLED_IN.format("trainer.total_training_steps")),
    ("actor_rollout_ref.actor.data_loader_seed", "the mini-batch shuffle is seeded by trainer.seed here: set that key"),
    ("critic.data_loader_seed", "the critic's mini-batches are not shuffled here: drop the key"),
    ("actor_rollout_ref.actor.checkpoint.contents", "verl <= 0.4's name of actor_rollout_ref.actor.checkpoint.save_contents "
                                                    "(which changes nothing here): drop the key"),
    ("actor_rollout_ref.actor.checkpoint.strict", "a resume here always loads every tensor of the checkpoint: drop the key"),
    ("critic.checkpoint.*", "a checkpoint here always holds the critic's model and what a resume needs: drop the key"),
    ("actor_rollout_ref.actor.use_fused_kernels", "use actor_rollout_ref.model.use_fused_kernels"),
    ("actor_rollout_ref.actor.use_remove_padding", "use actor_rollout_ref.model.use_remove_padding"),
    ("critic.model.fused_kernel_options.*", "there are no fused kernels here: drop the key"),
    ("critic.model.lora*", "LoRA on the critic is not supported: drop the key (the actor's is "
                           "actor_rollout_ref.model.lora_rank)"),
    ("critic.model.target_modules", "LoRA on the critic is not supported: drop the key"),
    ("critic.model.exclude_modules", "LoRA on the critic is not supported: drop the key"),
    ("*.model.custom_chat_template", "a chat template other than the tokenizer's is not supported: put it in the tokenizer's "
                                     "chat_template (tokenizer_config.json)"),
    ("*.model.external_lib", "verl imports this module to register custom model classes; not done here: use a model "
                             "directory transformers loads (trust_remote_code for its own code)"),
    ("*.model.hf_config_path", "the model's config is read from its path here: drop the key (model.override_config sets "
                               "attributes)"),
    ("*.model.tokenizer_path", "use data.tokenizer (the tokenizer of the run)"),
    ("critic.optim.clip_grad", _MEGATRON + " (the critic's gradient clip is critic.grad_clip)"),
    ("critic.optim.override_optimizer_config*", _MEGATRON),
    ("*.optim.override_optimizer_config", _MEGATRON),
    ("*.optim.optimizer", _OPTIMIZER),
    ("*.optim.optimizer_impl", _OPTIMIZER),
    ("*.optim.num_cycles", _OPTIMIZER + " (the cosine schedule is verl's default half cycle)"),
    ("*.optim.zero_indexed_step", _OPTIMIZER),
    ("*.loss_scale_factor", "verl 0.9's fixed loss scale: not implemented; drop the key (loss_agg_mode chooses the "
                            "normalisation)"),
    ("actor_rollout_ref.actor.calculate_entropy", "the entropy is computed here whenever the loss or the metrics use it: "
                                                  "drop the key"),
    ("actor_rollout_ref.rollout.chat_scheduler", _MULTI_TURN),
    *((f"actor_rollout_ref.rollout.multi_turn.{name}", _MULTI_TURN) for name in
      ("completion_callback", "function_tool_path", "use_inference_chat_template")),
    ("data.function_tool_path", _MULTI_TURN),
    ("data.tool_config_path", _MULTI_TURN),
    ("actor_rollout_ref.rollout.prometheus.*", "vLLM's Prometheus metrics server is not started here: drop the key"),
    ("actor_rollout_ref.rollout.router_config_path", "verl's router between rollout servers: one engine per rank here; "
                                                     "drop the key"),
    ("*.disaggregation.*", "verl's prefill/decode disaggregation: not supported; drop the key"),
    ("actor_rollout_ref.rollout.ignore_eos", "sampling past the end-of-sequence token is not supported: drop the key"),
    ("actor_rollout_ref.rollout.logprobs_mode", "set by rewardsmith itself (the engine returns the sampled tokens' "
                                                "log-probs after temperature): drop the key"),
    ("actor_rollout_ref.rollout.skip_tokenizer_init", "set by rewardsmith itself: drop the key"),
    ("actor_rollout_ref.rollout.use_fire_sampling", "FIRE sampling (a hotter first token) is not implemented: drop the key"),
    ("algorithm.filter_groups.max_inflight_gen_batches", "generation batches are generated one after the other here: drop "
                                                         "the key"),
    ("algorithm.rollout_is*", _ROLLOUT_IS),
    ("critic.forward_micro_batch_size*", "use critic.ppo_micro_batch_size or ppo_micro_batch_size_per_gpu (the critic's "
                                         "value forwards use it)"),
    ("critic.shuffle", "the critic's mini-batches keep the batch's order here (verl's default, shuffle=false): drop the key"),
    ("data.apply_chat_template_kwargs", "extra chat-template arguments are not passed here: drop the key, or bake them into "
                                        "the tokenizer's chat template"),
    ("data.audio_key", _MULTIMODAL),
    ("data.video_key", _MULTIMODAL),
    ("data.image_patch_size", _MULTIMODAL),
    ("data.mm_processor_kwargs", _MULTIMODAL),
    ("data.return_multi_modal_inputs", _MULTIMODAL),
    ("data.datagen.*", "verl's dynamic data generation: not supported; write the rows to files (data.train_files)"),
    ("data.return_full_prompt", "a dataset output switch of verl's: rows keep their raw chat here (data.return_raw_chat); "
                                "drop the key"),
    ("data.return_raw_input_ids", "a dataset output switch of verl's for reward models with another tokenizer: the reward "
                                  "model gets the chat and renders it with its own template here; drop the key"),
    ("data.*_max_samples", "not supported: cut the data files to the rows you want"),
    ("data.validation_shuffle", "validation rows are read in order here: drop the key"),
    ("ray_init.*", _RAY_INIT),
    ("ray_kwargs.*", _RAY_INIT),
    ("reward.reward_manager.module.*", "custom reward-manager modules: register a reward manager through a plugin "
                                       "(docs/plugins.md)"),
    ("reward_manager.module.*", "custom reward-manager modules: register a reward manager through a plugin "
                                "(docs/plugins.md)"),
    ("reward.reward_manager.source", "reward managers come from plugins here: drop the key"),
    ("reward_manager.source", "reward managers come from plugins here: drop the key"),
    ("reward_manager.name", "use reward_model.reward_manager (or reward.reward_manager.name)"),
    ("sandbox_fusion.*", "use reward_model.sandbox_fusion.* (or reward.sandbox_fusion.*)"),
    ("reward.reward_model.rollout.free_cache_engine", "set it in verl's older layout, reward_model.rollout.free_cache_engine "
                                                      "(accepted there with a notice); the reward.* layout here does not "
                                                      "carry it"),
    ("reward.reward_model.rollout.*", _RM_WORKER),
    *((f"reward_model.rollout.{name}", _RM_WORKER) for name in _RM_ENGINE),
    ("reward_model.forward_max_token_len_per_gpu", _RM_WORKER),
    ("reward_model.max_length", _RM_WORKER),
    ("reward_model.micro_batch_size", _RM_WORKER),
    ("reward_model.strategy", _RM_WORKER),
    ("reward_model.ulysses_sequence_parallel_size", _RM_WORKER),
    ("reward_model.use_dynamic_bsz", _RM_WORKER),
    ("reward_model.model.override_config", _RM_WORKER),
    ("reward_model.model.use_fused_kernels", _RM_WORKER),
    ("reward_model.reward_loop_*", "a custom reward-loop class of verl's: register a reward manager through a plugin "
                                   "(docs/plugins.md)"),
    ("trainer.checkpoint_callback_class", "verl's checkpoint callback hook: not here; drop the key"),
    ("trainer.del_local_ckpt_after_load", "checkpoints are kept after a resume here: drop the key"),
    ("trainer.esi_redundant_time", "verl's save deadline before an elastic instance expires: not here; drop the key"),
    ("trainer.ray_wait_register_center_timeout", _RAY_INIT),
    ("trainer.val_generations_to_log_to_wandb", "verl <= 0.3's name of trainer.log_val_generations: use that key"),
    ("trainer.validation_data_dir", "validation generations are not written to files here: use trainer.log_val_generations "
                                    "(printed), or `rewardsmith score` on saved responses"),
    # Keys of verl forks (core/verl_fork_keys.py records the projects and how many public scripts pass each).
    ("rllm.*", "a key of rllm's own trainer (rllm.trainer.verl.train_agent_ppo: agent workflows, its own rllm.* "
               "section), not of verl's main_ppo: drop the rllm.* keys; rllm's older fork spelled the one algorithm "
               "option of this family algorithm.mask_truncated_samples, which is implemented here"),
    ("trainer.stats_path", "Skywork-OR1's per-step statistics files: not written here; each step's metrics go to "
                           "metrics.jsonl and trainer.rollout_data_dir writes its samples; drop the key"),
    ("trainer.stats_save_freq", "Skywork-OR1's per-step statistics files: not written here; each step's metrics go "
                                "to metrics.jsonl and trainer.rollout_data_dir writes its samples; drop the key"),
)


def refusal(key: str) -> Optional[str]:
    """Why ``key`` (dotted, no ``+``) is refused, or None when it is not one of verl's features missing here."""
    if key in KEY_MAP:  # verl's reward.* layout, moved onto rewardsmith's keys (plugins/verl_layout.py)
        return None
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
