"""The full rewardsmith config tree: one schema for training, SFT and offline scoring.

Key names follow verl's ``ppo_trainer.yaml`` wherever verl has one, so a verl
user's overrides (``actor_rollout_ref.rollout.n=8``, ``algorithm.adv_estimator=grpo``)
work unchanged. Defaults are sized for one process on a laptop CPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from rewardsmith.common.config import InvalidValue, exclusive, opt, require_positive, section
from rewardsmith.core.rollout_correction_options import parse_bounds, rejection_options
from rewardsmith.core.tracking_sinks import check_packages
from rewardsmith.core.verl_keys import check_verl_keys
from rewardsmith.core.verl_refusals import refuse_missing_features
from rewardsmith.plugins.config import CustomRewardFunctionConfig, PluginsConfig, RewardModelConfig, RewardSettings
from rewardsmith.plugins.verl_layout import map_reward_layout

Files = Union[str, list[str]]
DType = Literal["float32", "bfloat16", "float16"]



@dataclass
class DataConfig:
    reward_fn_key: str = opt("data_source", "Row field that routes a row to its scorer.")
    max_response_length: int = opt(512, "Maximum generated tokens per response.")
    train_files: Files = opt([], "Training rows: jsonl or parquet file(s) in verl's row schema.")
    val_files: Files = opt([], "Validation rows (held out), same schema.")
    tokenizer: Optional[str] = opt(None, "Tokenizer directory (from_pretrained); null = actor_rollout_ref.model.path.")
    prompt_key: str = opt("prompt", "Row field holding the prompt: a list of chat messages, or a plain string (sent as one user turn).")
    max_prompt_length: int = opt(512, "Maximum prompt tokens after the chat template.")
    truncation: Literal["error", "left", "right"] = opt("error", "A prompt longer than max_prompt_length: fail naming the row, or cut it from the left/right.")
    filter_overlong_prompts: bool = opt(False, "Drop rows whose prompt exceeds max_prompt_length (instead of applying `truncation`).")
    train_batch_size: int = opt(32, "Prompts per training step (each sampled actor_rollout_ref.rollout.n times).")
    val_batch_size: Optional[int] = opt(None, "Prompts per validation generate call; null = the whole validation set at once.")
    shuffle: bool = opt(True, "Shuffle training rows each epoch (seeded by data.seed and the epoch).")
    seed: int = opt(1, "Seed of the training data order.")
    gen_batch_size: Optional[int] = opt(None, "Prompts per generation batch (verl's DAPO): the data loader's batch; with algorithm.filter_groups.enable a step generates such batches until train_batch_size varied groups are kept, without it a step trains on one. null = train_batch_size.")
    filter_overlong_prompts_workers: Optional[int] = opt(None, "verl: processes that filter overlong prompts; rows are filtered in the trainer's process here (a notice: the same rows).")
    use_shm: bool = opt(False, "verl: copy the data files to /dev/shm first; a load-speed key (a notice: the same rows).")
    dataloader_num_workers: Optional[int] = opt(None, "verl: data-loader worker processes; a speed key (a notice: rows are loaded in the trainer's process, the same rows in the same order).")
    return_raw_chat: bool = opt(False, "verl's key, accepted either way: every row keeps its raw chat (verl 0.9.1's raw_prompt), and a reward model gets it plus the response as the assistant turn, rendered with the reward model's own chat template.")

    def __post_init__(self) -> None:
        require_positive("gen_batch_size", self.gen_batch_size)
        require_positive("max_response_length", self.max_response_length, allow_none=False)
        require_positive("max_prompt_length", self.max_prompt_length, allow_none=False)
        require_positive("train_batch_size", self.train_batch_size, allow_none=False)
        require_positive("val_batch_size", self.val_batch_size)


@dataclass
class ModelConfig:
    path: Optional[str] = opt(None, "Local Hugging Face model directory (from_pretrained). Null = build from `config` with random weights.")
    config: dict[str, Any] = opt({}, "Used when path is null: a transformers config as a mapping, e.g. {model_type: qwen2, hidden_size: 64, num_hidden_layers: 2, ...}; vocab_size and special token ids default to the tokenizer's.")
    dtype: DType = opt("float32", "Parameter dtype of the actor, reference and critic (float32 is fastest on CPU).")
    attn_implementation: Optional[str] = opt("sdpa", "transformers attention implementation (sdpa, eager, ...); null = the library's default.")
    enable_gradient_checkpointing: bool = opt(False, "Recompute activations in the backward pass to save memory.")
    trust_remote_code: bool = opt(False, "Allow custom modelling code shipped with a local model directory.")
    # LoRA on the actor, as verl (core/lora.py; docs/training.md#lora).
    lora_rank: int = opt(0, "LoRA rank of the actor's adapters: 0 = train every weight; > 0 = freeze the model and train rank-r adapters on target_modules.")
    lora_alpha: float = opt(16, "LoRA scale numerator: the adapters' output is multiplied by lora_alpha / lora_rank.")
    target_modules: Union[str, list[str]] = opt("all-linear", "Linear layers that get adapters: all-linear (every one but the output head), a list of name suffixes ([q_proj, v_proj]), or a regular expression matched against whole names.")
    exclude_modules: Optional[Union[str, list[str]]] = opt(None, "Linear layers target_modules would pick that get no adapter (same forms as target_modules).")
    # verl's model keys (core/verl_keys.py says which change nothing here).
    override_config: dict[str, Any] = opt({}, "Attributes set on the model's transformers config before it is built, as in verl (e.g. {max_position_embeddings: 4096, attention_dropout: 0.0}); each must be one the config has. The vLLM engine gets them too.")
    torch_dtype: Optional[DType] = opt(None, "verl's name for dtype; when set it wins over dtype.")
    use_remove_padding: bool = opt(False, "verl: packed (unpadded) forwards of the actor and reference (log-probs, updates): each micro-batch's attended tokens in one row, sequences kept apart by the attention mask transformers builds from the position ids. Works with attn_implementation sdpa, eager, flex_attention, flash_attention_2/3 (null = sdpa); with any other, a start-up notice and padded forwards. Same log-probs either way; faster with sdpa or flash attention, slower with eager (docs/training.md).")
    use_fused_kernels: bool = opt(False, "verl: fused log-prob/entropy kernels; a speed key (a notice: log-probs come from the full logits here).")
    use_shm: bool = opt(False, "verl: copy the model to /dev/shm before loading it; a load-speed key (a notice: the same weights).")
    enable_activation_offload: bool = opt(False, "verl: keep activations in CPU memory between forward and backward; a memory key (a notice: the same gradients).")
    use_liger: bool = opt(False, "verl: Liger's fused kernels; a speed and memory key (a notice: log-probs come from the full logits here).")
    tiled_mlp: dict[str, Any] = opt({}, "verl's tiled MLP ({enabled, num_shards}); a memory key (a notice: the MLP runs whole, with the same values).")

    def __post_init__(self) -> None:
        if self.path is None and self.config and "model_type" not in self.config:
            raise InvalidValue("config", "must name a model_type (e.g. qwen2, llama)")
        if self.lora_rank < 0:
            raise InvalidValue("lora_rank", f"must be 0 (no LoRA) or a positive rank, got {self.lora_rank}")
        require_positive("lora_alpha", self.lora_alpha, allow_none=False)
        if self.torch_dtype is not None:
            self.dtype = self.torch_dtype


@dataclass
class OptimConfig:
    lr: float = opt(1e-6, "AdamW learning rate.")
    betas: list[float] = opt([0.9, 0.999], "AdamW betas.")
    weight_decay: float = opt(0.01, "AdamW weight decay.")
    lr_warmup_steps: int = opt(-1, "Linear warmup steps; negative = use lr_warmup_steps_ratio.")
    lr_warmup_steps_ratio: float = opt(0.0, "Warmup as a fraction of the total training steps.")
    warmup_style: Literal["constant", "cosine"] = opt("constant", "LR after warmup: constant, or cosine decay to min_lr_ratio * lr.")
    min_lr_ratio: float = opt(0.0, "Final LR of the cosine schedule, as a fraction of lr.")
    lr_scheduler_type: Optional[Literal["constant", "cosine"]] = opt(None, "verl's newer name for warmup_style; when set it wins.")

    def __post_init__(self) -> None:
        require_positive("lr", self.lr, allow_none=False)
        if self.lr_scheduler_type is not None:
            self.warmup_style = self.lr_scheduler_type
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise InvalidValue("betas", f"must be two numbers in [0, 1), got {self.betas}")
        if not 0.0 <= self.lr_warmup_steps_ratio <= 1.0:
            raise InvalidValue("lr_warmup_steps_ratio", f"must be in [0, 1], got {self.lr_warmup_steps_ratio}")


@dataclass
class CriticOptimConfig(OptimConfig):
    lr: float = opt(1e-5, "AdamW learning rate of the critic.")


@dataclass
class MixedPrecisionConfig:
    param_dtype: DType = opt("float32", "dtype parameters are gathered in for forward and backward (bfloat16 is the usual choice on GPUs).")
    reduce_dtype: DType = opt("float32", "dtype gradients are reduced across ranks in.")


@dataclass
class FSDPConfig:
    offload_policy: bool = opt(False, "Keep parameters, gradients and optimizer state on the CPU between uses (FSDP2 CPUOffloadPolicy).")
    reshard_after_forward: bool = opt(True, "Free gathered parameters after the forward pass (less memory, one more all-gather in the backward).")
    mixed_precision: MixedPrecisionConfig = section(MixedPrecisionConfig, "FSDP2 mixed-precision policy.")
    param_offload: bool = opt(False, "verl: keep parameters in CPU memory between uses. On a CUDA device with strategy fsdp2 it turns on offload_policy; on the CPU there is nothing to move (a notice).")
    optimizer_offload: bool = opt(False, "verl: keep the optimizer state in CPU memory; as param_offload (offload_policy moves both).")
    forward_prefetch: bool = opt(False, "verl: prefetch the next FSDP all-gather during the forward; a speed key (a notice: the same results).")
    strategy: Optional[StrategyName] = opt(None, "verl >= 0.6's engine spelling of the role's strategy (its scripts for the new worker, trainer.use_legacy_worker_impl=disable): sets the role's strategy (a notice names that key); null = the role's own.")
    grad_offload: Optional[bool] = opt(None, "verl <= v0.2: keep gradients in CPU memory between uses; verl dropped it in v0.3 (a memory key: the same gradients; a notice).")
    wrap_policy: dict[str, Any] = opt({}, "verl's FSDP1 auto-wrap policy ({min_num_params: ...}); a memory and speed key (a notice: FSDP2 here shards each decoder layer, the same updates).")
    use_no_sync_for_gradient_accumulation: Optional[bool] = opt(None, "verl: skip gradient synchronisation on all but the last micro-batch; a speed key (a notice: the same accumulated gradients).")
    pad_to_length: Optional[bool] = opt(None, "verl 0.9: pad packed rows to fixed lengths for compiled kernels; a speed key (a notice: the same log-probs).")
    pad_to_length_bucket: Optional[int] = opt(None, "verl 0.9: the length multiple of pad_to_length (a notice).")
    fsdp_size: int = opt(-1, "verl: ranks each parameter is sharded over; negative or at least the world size = all of them (plain FSDP). A smaller number that divides the world size is hybrid sharding (HSDP), as verl: sharded within groups of that many ranks, replicated across the groups (docs/training.md).")

    def __post_init__(self) -> None:
        if self.fsdp_size == 0:
            raise InvalidValue("fsdp_size", "must be a number of ranks, or negative for all of them (as verl), got 0")


@dataclass
class OffloadConfig:
    """verl's per-role ``fsdp_config`` of the reference and the critic's model: offload switches only."""

    param_offload: bool = opt(False, "See actor_rollout_ref.actor.fsdp_config.param_offload.")
    optimizer_offload: bool = opt(False, "See actor_rollout_ref.actor.fsdp_config.optimizer_offload.")
    forward_prefetch: bool = opt(False, "See actor_rollout_ref.actor.fsdp_config.forward_prefetch (a notice).")
    grad_offload: Optional[bool] = opt(None, "verl <= v0.2: keep gradients in CPU memory between uses; verl dropped it in v0.3 (a memory key: the same gradients; a notice).")


StrategyName = Literal["local", "fsdp", "fsdp2"]
STRATEGY_HELP = ("local: the whole model in this process; fsdp2: sharded across the data-parallel ranks (see trainer.nnodes / "
                 "n_gpus_per_node); fsdp (verl's FSDP1) runs as fsdp2, the same sharded data parallelism (a notice).")
SP_HELP = "verl's Ulysses sequence parallelism: 1 = none (a notice: every rank holds whole sequences); > 1 is refused."
DYNAMIC_HELP = ("Cut micro-batches by tokens instead of samples: consecutive samples while their valid tokens (prompt + response) "
                "fit the token budget. The gradient is the same (docs/training.md#micro-batches).")

def engine_strategy(strategy: str, fsdp_config: "FSDPConfig") -> str:
    """The role's strategy once ``fsdp_config.strategy`` (verl's engine spelling) is applied: it sets a role
    left at ``local``, and must agree with one set otherwise (fsdp and fsdp2 are one strategy here)."""
    wanted = fsdp_config.strategy
    if wanted is None:
        return strategy
    sharded = {"fsdp", "fsdp2"}
    if strategy != "local" and not ({strategy, wanted} <= sharded or strategy == wanted):
        raise InvalidValue("fsdp_config.strategy", f"is {wanted!r} but the role's strategy is {strategy!r}: give one of them")
    return wanted if strategy == "local" else strategy



@dataclass
class AdaptiveEntropyConfig:
    enabled: bool = opt(False, "Skywork-OR1's adaptive entropy control: after each step the entropy coefficient (starting at actor.entropy_coeff) rises by delta_ent_coef when the step's entropy (the mean -log-prob of its sampled response tokens) was below target_entropy and falls by it otherwise, within [min_ent_coef, max_ent_coef]; the bonus applies only on steps after one below the target (docs/training.md#options-of-verl-forks).")
    max_ent_coef: float = opt(0.5, "Skywork-OR1: the largest entropy coefficient.")
    min_ent_coef: float = opt(0.0, "Skywork-OR1: the smallest entropy coefficient.")
    delta_ent_coef: float = opt(0.001, "Skywork-OR1: the coefficient's change per step.")
    target_entropy: float = opt(0.0, "Skywork-OR1: the entropy the control steers toward.")

    def __post_init__(self) -> None:
        if self.min_ent_coef > self.max_ent_coef:
            raise InvalidValue("min_ent_coef", f"is {self.min_ent_coef}, above max_ent_coef={self.max_ent_coef}")
        if self.delta_ent_coef < 0:
            raise InvalidValue("delta_ent_coef", f"must be >= 0, got {self.delta_ent_coef}")


@dataclass
class PolicyLossConfig:
    loss_mode: str = opt("vanilla", "Policy loss (docs/training.md#policy-losses): vanilla (PPO's clip with the dual clip), gspo, gpg, cispo, clip_cov, kl_cov, geo_mean (GMPO), sapo (verl 0.7.0), dppo_tv, dppo_kl, dro (verl 0.9.1), bypass_mode (rollout correction), or one a plugin registers.")
    clip_cov_ratio: float = opt(0.0002, "clip_cov: share of tokens whose gradient is cut.")
    clip_cov_lb: float = opt(1.0, "clip_cov: lower bound of the covariance of the tokens that may be cut.")
    clip_cov_ub: float = opt(5.0, "clip_cov: upper bound of that covariance.")
    kl_cov_ratio: float = opt(0.0002, "kl_cov: share of tokens that get the KL penalty.")
    ppo_kl_coef: float = opt(1.0, "kl_cov: coefficient of |logp - old_logp| on those tokens.")
    dro_beta: Optional[float] = opt(None, "dro: coefficient of the quadratic log-ratio penalty (needed, > 0; verl 0.9.1).")

    def __post_init__(self) -> None:
        require_positive("clip_cov_ratio", self.clip_cov_ratio, allow_none=False)
        require_positive("kl_cov_ratio", self.kl_cov_ratio, allow_none=False)
        if self.loss_mode == "dro":
            require_positive("dro_beta", self.dro_beta, allow_none=False)


@dataclass
class CheckpointContents:
    save_contents: Optional[list[str]] = opt(None, "verl: parts a checkpoint saves (model, optimizer, extra, hf_model).")
    load_contents: Optional[list[str]] = opt(None, "verl: parts a resume loads.")
    async_save: Optional[bool] = opt(None, "verl: write checkpoints in the background; a speed key (a notice: checkpoints are written before the next step here, the same contents).")


def require_sequence_parallel_size(size: Optional[int]) -> None:
    """verl's Ulysses sequence parallelism: 1 (none) is accepted, more is refused."""
    if size not in (None, 1):
        raise InvalidValue("ulysses_sequence_parallel_size", f"is {size}, but sequence parallelism is not supported: "
                           "set it to 1 (every rank holds whole sequences) and cap lengths with the *_max_token_len_per_gpu budgets")


@dataclass
class ActorConfig:
    strategy: StrategyName = opt("local", STRATEGY_HELP + " The reference follows the actor.")
    fsdp_config: FSDPConfig = section(FSDPConfig, "FSDP2 settings of the actor and the reference (strategy fsdp2).")
    ppo_mini_batch_size: int = opt(16, "Prompts per optimizer step (times rollout.n samples); a training batch gives train_batch_size / ppo_mini_batch_size updates per epoch.")
    ppo_micro_batch_size: Optional[int] = opt(None, "Samples per forward/backward over all ranks together (gradient accumulation; each rank takes it / world size, as verl); null = ppo_micro_batch_size_per_gpu.")
    ppo_micro_batch_size_per_gpu: Optional[int] = opt(None, "Samples per forward/backward on each rank; null with ppo_micro_batch_size null = a rank's whole share of the mini-batch.")
    use_dynamic_bsz: bool = opt(False, DYNAMIC_HELP)
    ppo_max_token_len_per_gpu: int = opt(16384, "Token budget of one micro-batch on one rank with use_dynamic_bsz.")
    ulysses_sequence_parallel_size: Optional[int] = opt(None, SP_HELP)
    entropy_checkpointing: bool = opt(False, "verl: recompute the entropy's softmax in the backward pass; memory only (a notice: the same entropy and gradient).")
    entropy_from_logits_with_chunking: bool = opt(False, "verl: compute the entropy in chunks of tokens; memory only (a notice: the same entropy).")
    entropy_from_logits_chunk_size: Optional[int] = opt(None, "verl: the chunk size of entropy_from_logits_with_chunking; memory only (a notice).")
    use_prefix_grouper: Optional[bool] = opt(None, "verl 0.9: share the prompt's forward among a group's samples; a speed key (a notice: the same log-probs).")
    pad_to_length: Optional[bool] = opt(None, "verl 0.9: see fsdp_config.pad_to_length (a notice).")
    use_torch_compile: Optional[bool] = opt(None, "verl: torch.compile its log-prob and entropy functions; a speed key (a notice: the same values uncompiled).")
    policy_loss: PolicyLossConfig = section(PolicyLossConfig, "The policy loss and its options, as verl's actor.policy_loss.")
    checkpoint: CheckpointContents = section(CheckpointContents, "verl's choice of what a checkpoint holds (a notice: here it always holds the Hugging Face model and what a resume needs).")
    ppo_epochs: int = opt(1, "Passes over each training batch.")
    shuffle: bool = opt(False, "Shuffle samples before splitting mini-batches.")
    grad_clip: float = opt(1.0, "Clip the gradient's global norm to this value.")
    clip_ratio: float = opt(0.2, "PPO clip range epsilon (both sides unless clip_ratio_low/high are set).")
    clip_ratio_low: Optional[float] = opt(None, "Lower clip range: ratio >= 1 - clip_ratio_low; null = clip_ratio.")
    clip_ratio_high: Optional[float] = opt(None, "Upper clip range: ratio <= 1 + clip_ratio_high; null = clip_ratio.")
    clip_ratio_c: float = opt(3.0, "Dual-clip bound for negative advantages (must be > 1).")
    calculate_sum_pi_squared: bool = opt(False, "Compute sum_v pi(v)^2 per response token with the old log-probs; algorithm.adv_estimator=optimal_token_baseline needs it (verl 0.9.1).")
    tau_pos: float = opt(1.0, "policy_loss.loss_mode=sapo: the soft gate's temperature on tokens with a positive advantage (verl 0.7.0).")
    tau_neg: float = opt(1.05, "policy_loss.loss_mode=sapo: the soft gate's temperature on tokens with a non-positive advantage (verl 0.7.0).")
    loss_agg_mode: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"] = opt("token-mean", "How per-token losses become one number.")
    entropy_coeff: float = opt(0.0, "Entropy bonus coefficient (loss -= coeff * entropy); with adaptive_entropy.enabled the first step's.")
    adaptive_entropy: AdaptiveEntropyConfig = section(AdaptiveEntropyConfig, "Skywork-OR1's adaptive entropy coefficient (its verl fork's actor.adaptive_entropy).")
    use_kl_loss: bool = opt(False, "Add a KL(policy || reference) loss term (GRPO style).")
    kl_loss_coef: float = opt(0.001, "Coefficient of the KL loss.")
    kl_loss_type: Literal["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"] = opt("low_var_kl", "KL estimator of the KL loss.")
    optim: OptimConfig = section(OptimConfig, "Actor optimizer.")

    def __post_init__(self) -> None:
        self.strategy = engine_strategy(self.strategy, self.fsdp_config)
        require_positive("ppo_mini_batch_size", self.ppo_mini_batch_size, allow_none=False)
        require_positive("ppo_micro_batch_size", self.ppo_micro_batch_size)
        require_positive("ppo_micro_batch_size_per_gpu", self.ppo_micro_batch_size_per_gpu)
        exclusive("ppo_micro_batch_size", self.ppo_micro_batch_size, "ppo_micro_batch_size_per_gpu", self.ppo_micro_batch_size_per_gpu)
        require_positive("ppo_max_token_len_per_gpu", self.ppo_max_token_len_per_gpu, allow_none=False)
        require_sequence_parallel_size(self.ulysses_sequence_parallel_size)
        require_positive("ppo_epochs", self.ppo_epochs, allow_none=False)
        if self.clip_ratio_c <= 1.0:
            raise InvalidValue("clip_ratio_c", f"must be > 1, got {self.clip_ratio_c}")
        require_positive("tau_pos", self.tau_pos, allow_none=False)
        require_positive("tau_neg", self.tau_neg, allow_none=False)


@dataclass
class LogProbBatching:
    """How a role cuts its log-prob forwards: verl's ``log_prob_*`` keys of ``rollout`` and ``ref``."""

    log_prob_micro_batch_size: Optional[int] = opt(None, "Samples per forward over all ranks together (each rank takes it / world size); null = log_prob_micro_batch_size_per_gpu.")
    log_prob_micro_batch_size_per_gpu: Optional[int] = opt(None, "Samples per forward on each rank; null with log_prob_micro_batch_size null = a rank's whole share at once.")
    log_prob_use_dynamic_bsz: Optional[bool] = opt(None, "Cut the forwards by tokens (see actor.use_dynamic_bsz); null = actor.use_dynamic_bsz.")
    log_prob_max_token_len_per_gpu: Optional[int] = opt(None, "Token budget of one forward on one rank with dynamic batch size; null = actor.ppo_max_token_len_per_gpu.")

    def __post_init__(self) -> None:
        getattr(super(), "__post_init__", lambda: None)()  # a mixin beside SamplingConfig in RolloutConfig
        require_positive("log_prob_micro_batch_size", self.log_prob_micro_batch_size)
        require_positive("log_prob_micro_batch_size_per_gpu", self.log_prob_micro_batch_size_per_gpu)
        exclusive("log_prob_micro_batch_size", self.log_prob_micro_batch_size,
                  "log_prob_micro_batch_size_per_gpu", self.log_prob_micro_batch_size_per_gpu)
        require_positive("log_prob_max_token_len_per_gpu", self.log_prob_max_token_len_per_gpu)


@dataclass
class RefConfig(LogProbBatching):
    strategy: Optional[StrategyName] = opt(None, "The reference's strategy (local, fsdp2; fsdp = fsdp2); null = the actor's.")
    fsdp_config: OffloadConfig = section(OffloadConfig, "verl's reference offload switch (the reference's other FSDP settings are the actor's).")
    ulysses_sequence_parallel_size: Optional[int] = opt(None, SP_HELP)
    entropy_checkpointing: bool = opt(False, "See actor_rollout_ref.actor.entropy_checkpointing (a notice).")
    entropy_from_logits_with_chunking: bool = opt(False, "See actor_rollout_ref.actor.entropy_from_logits_with_chunking (a notice).")
    entropy_from_logits_chunk_size: Optional[int] = opt(None, "See actor_rollout_ref.actor.entropy_from_logits_chunk_size (a notice).")
    pad_to_length: Optional[bool] = opt(None, "See actor_rollout_ref.actor.fsdp_config.pad_to_length (a notice).")
    use_torch_compile: Optional[bool] = opt(None, "See actor_rollout_ref.actor.use_torch_compile (a notice).")

    def __post_init__(self) -> None:
        super().__post_init__()
        require_sequence_parallel_size(self.ulysses_sequence_parallel_size)


@dataclass
class SamplingConfig:
    """How responses are sampled: the one definition of these settings.

    ``rollout`` and ``rollout.val_kwargs`` are this section (validation with
    greedy defaults), and the rollout engines' ``SamplingParams`` extends it
    with the number of new tokens.
    """

    n: int = opt(1, "Responses sampled per prompt (the group size of GRPO/RLOO).")
    do_sample: bool = opt(True, "Sample (false = greedy decoding).")
    temperature: float = opt(1.0, "Sampling temperature (used when do_sample).")
    top_p: float = opt(1.0, "Nucleus sampling threshold.")
    top_k: int = opt(-1, "Top-k sampling (-1 = off).")

    def __post_init__(self) -> None:
        require_positive("n", self.n, allow_none=False)
        if self.do_sample and self.temperature <= 0:
            raise InvalidValue("temperature", f"must be > 0 when do_sample is true, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise InvalidValue("top_p", f"must be in (0, 1], got {self.top_p}")

    @property
    def logit_temperature(self) -> float:
        """The temperature the sampled distribution had: ``temperature``, or 1 for greedy decoding."""
        return self.temperature if self.do_sample else 1.0


# The multi-turn rollout's tool-call parsers (core/multi_turn.py's TOOL_PARSERS), named here for the config check.
TOOL_CALL_FORMATS = ("hermes", "qwen")


@dataclass
class MultiTurnConfig:
    """verl's multi-turn (tool-calling) rollout: core/multi_turn.py, docs/environments.md#multi-turn-rollouts."""

    enable: bool = opt(False, "Multi-turn rollouts: the model's tool calls run and their responses join the conversation, in the sequence but out of the loss, on either engine (docs/environments.md#multi-turn-rollouts).")
    max_assistant_turns: Optional[int] = opt(None, "Most assistant turns per episode; null = no limit but the response length (data.max_response_length, tool responses included).")
    max_user_turns: Optional[int] = opt(None, "Most user turns per episode, each round of tool responses counting as one (as verl counts); null = no limit.")
    max_parallel_calls: int = opt(1, "Tool calls of one assistant turn that run (concurrently); the turn's further calls are dropped (counted).")
    max_tool_response_length: int = opt(256, "Characters of a tool response kept in the conversation; a longer one is cut as tool_response_truncate_side says.")
    tool_response_truncate_side: Literal["left", "middle", "right"] = opt("middle", "Which part of a long tool response is kept: its end (left: the start is cut), both ends (middle) or its start (right), with verl's (truncated) markers.")
    tool_config_path: Optional[str] = opt(None, "verl's tool config YAML (tools: [{class_name, config, tool_schema}]); its tools' schemas go into the prompt's chat template. null = no tools.")
    interaction_config_path: Optional[str] = opt(None, "verl's interaction config YAML (interaction: [{name, class_name, config}]): simulated users that answer every assistant turn without a tool call, as user turns; each row names its interaction in extra_info.interaction_kwargs.name. null = none.")
    format: str = opt("hermes", "The tool-call format the model writes: hermes (<tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>, verl's default); qwen, the spelling of verl's search example config for the same blocks (Qwen2.5's tool calls, SGLang's qwen parser), which verl's own parser registry no longer knows.")
    tokenization_sanity_check_mode: Literal["strict", "ignore_strippable", "disable"] = opt("strict", "Compare each episode's tokens, built turn by turn, with its conversation rendered whole and warn (counted) where they differ: strict (any token), ignore_strippable (not where only whitespace differs), disable.")
    turn_rewards_on_tokens: bool = opt(False, "rewardsmith's own: add each assistant turn's rewards (its tool calls' step rewards, the interaction's score of the reply to it) on the last token the turn generated, beside the sample's score on its last token; off (verl's behaviour): they count only through reward components (tool_step_rewards, interaction_score). docs/environments.md#rewards-of-an-episode.")
    tool_timeout_s: Optional[float] = opt(300.0, "rewardsmith's own (verl has no limit): seconds a tool's create, execute and release, or an interaction's reply, may each take, waits in a tool's own rate limiter included; a late tool call becomes an error result the model sees (counted as a timeout), a late reply ends its episode; null = no limit.")

    def __post_init__(self) -> None:
        require_positive("max_assistant_turns", self.max_assistant_turns)
        require_positive("max_user_turns", self.max_user_turns)
        require_positive("max_parallel_calls", self.max_parallel_calls, allow_none=False)
        require_positive("max_tool_response_length", self.max_tool_response_length, allow_none=False)
        require_positive("tool_timeout_s", self.tool_timeout_s)
        if self.turn_rewards_on_tokens and not self.enable:
            raise InvalidValue("turn_rewards_on_tokens", "places the turns of multi-turn episodes: it needs multi_turn.enable=true")
        if self.format not in TOOL_CALL_FORMATS:
            raise InvalidValue("format", f"{self.format!r} is not a tool-call format here; allowed: {', '.join(TOOL_CALL_FORMATS)}")


@dataclass
class ValKwargsConfig(SamplingConfig):
    n: int = opt(1, "Samples per validation prompt.")
    do_sample: bool = opt(False, "Sample in validation (false = greedy).")
    temperature: float = opt(0.0, "Validation temperature (used when do_sample).")


@dataclass
class CheckpointEngineConfig:
    backend: Optional[str] = opt(None, "verl 0.9: how weights travel from the trainer to the rollout engine (naive, nccl, nixl, hccl); here they reach the engine in memory in every case, the same weights (a notice).")
    update_weights_bucket_megabytes: Optional[int] = opt(None, "verl 0.9's place of rollout.update_weights_bucket_megabytes; when set it wins.")
    engine_kwargs: dict[str, Any] = opt({}, "verl 0.9: arguments of the weight-transfer backend; there is none to pass them to here (a notice).")
    custom_backend_module: Optional[str] = opt(None, "verl 0.9: a module that registers a weight-transfer backend; not imported here, where weights reach the engine in memory (a notice).")

    def __post_init__(self) -> None:
        require_positive("update_weights_bucket_megabytes", self.update_weights_bucket_megabytes)


@dataclass
class RolloutConfig(LogProbBatching, SamplingConfig):
    name: Literal["hf", "vllm", "sglang"] = opt("hf", "Rollout engine: hf (embedded Hugging Face generate) or vllm (a vLLM engine; docs/training.md#vllm-rollout). verl's sglang samples on the vllm engine here (a notice).")
    val_kwargs: ValKwargsConfig = section(ValKwargsConfig, "Sampling during validation.")
    gpu_memory_utilization: float = opt(0.5, "vllm: share of GPU memory for weights and KV cache; on CPU, the cap on the KV cache as a share of the memory free at start.")
    enforce_eager: bool = opt(True, "vllm: no torch.compile or CUDA graphs (faster start, no first-call warm-up).")
    max_num_seqs: int = opt(256, "vllm: sequences decoded at once; on CPU the KV cache holds this many of max_model_len tokens.")
    max_model_len: Optional[int] = opt(None, "vllm: longest prompt + response in tokens; null = data.max_prompt_length + data.max_response_length.")
    stream_chunks: int = opt(1, "Score each response as it is generated: each batch of prompts is generated in this many chunks of whole prompt groups, and a chunk is scored (on the reward thread, with reward_model.launch_reward_fn_async) while the next one generates; with algorithm.filter_groups, generation stops at the first chunk after which enough varied groups are scored. The samples, rewards and results are those of one call (each prompt samples from its own seed). 1 (default) = one generate call per batch: smaller calls use an accelerator less well, so raise it when rewards are slow (docs/training.md#streamed-scoring).")
    stream_requests: bool = opt(True, "Hand each prompt group to the rewards as soon as its n samples have all ended, while the engine still generates the rest of the batch in the same call (vllm: after each engine step; hf: from inside its one generate call); the same samples (each prompt has its own seed); false = score after the engine call. With algorithm.filter_groups generation stops once the first prompts' scored groups hold enough varied ones. The hf engine streams only where the rewards overlap (reward_model.launch_reward_fn_async) or algorithm.filter_groups can stop it: inline rewards would only be interleaved with its token steps, whose watch for ended groups costs each a host sync. Not on torchrun or Ray ranks, whose engines run in other processes (docs/training.md#streamed-scoring).")
    update_weights_bucket_megabytes: int = opt(512, "vllm: size of each bucket of weights sent to the engine on a weight sync.")
    # verl's engine keys: passed to vLLM with name=vllm; with name=hf they change nothing (a notice).
    tensor_model_parallel_size: Optional[int] = opt(None, "vllm: devices one engine shards the model over (vLLM's tensor_parallel_size); null = 1. At most the devices this process sees.")
    enable_chunked_prefill: Optional[bool] = opt(None, "vllm: prefill long prompts in chunks; null = vLLM's default.")
    max_num_batched_tokens: Optional[int] = opt(None, "vllm: tokens one engine step schedules; null = vLLM's default.")
    free_cache_engine: Optional[bool] = opt(None, "verl: free the engine's memory between rollouts; here the vllm engine sleeps between rollouts where the platform has sleep mode (a notice).")
    mode: Optional[Literal["sync", "async"]] = opt(None, "verl's rollout mode (async: its agent-loop servers); here one batched generate call per step, the same sampling (a notice).")
    load_format: Optional[str] = opt(None, "verl's engine load format; the vllm engine receives the actor's weights in memory here (a notice).")
    engine_kwargs: dict[str, dict[str, Any]] = opt({}, "verl: extra engine arguments by engine. engine_kwargs.vllm.* go to vLLM's engine as they are (e.g. {swap_space: 4}; a name vLLM does not know, or one rewardsmith sets itself, is refused at start-up); engine_kwargs.sglang.* change nothing (a notice: sglang samples on the vllm engine).")
    calculate_log_probs: Optional[bool] = opt(None, "verl: have the engine return the sampled tokens' log-probs; the vllm engine always does here (metric rollout_probs_diff) and the hf engine samples from the actor itself (a notice).")
    over_sample_rate: Optional[float] = opt(None, "verl: abort a rollout's last requests once (1 - over_sample_rate) of them are done; only verl 0.6.0's synchronous SGLang rollout read it, and no code of verl 0.7.0 or later does (a notice: every request completes, as in verl since 0.7.0).")
    multi_stage_wake_up: Optional[bool] = opt(None, "verl: wake the engine's weights and KV cache in two stages; a memory key of sleep mode (a notice).")
    enable_prefix_caching: Optional[bool] = opt(None, "verl: vLLM's prefix cache; a speed key not passed to vLLM here (a notice: vLLM's default applies, the same samples).")
    enable_sleep_mode: Optional[bool] = opt(None, "verl: vLLM's sleep mode; a memory key (a notice: the vllm engine sleeps between rollouts wherever the platform has sleep mode).")
    cudagraph_capture_sizes: Optional[list[int]] = opt(None, "verl: vLLM's CUDA-graph batch sizes; a speed key (a notice: enforce_eager decides whether graphs are used).")
    disable_log_stats: Optional[bool] = opt(None, "verl: vLLM's statistics logging; a logging key (a notice).")
    scheduling_policy: Optional[str] = opt(None, "verl: vLLM's request scheduling (fcfs, priority); a speed key (a notice: each request is sampled with its own seed, the same samples).")
    micro_rollout_batch_size: Optional[int] = opt(None, "SimpleRL-Zoo's fork: prompts per vLLM generate call; a memory key (a notice: one batched call per step here, the same samples).")
    data_parallel_size: Optional[int] = opt(None, "verl: vLLM engines per rollout replica (data parallelism); a speed key (a notice: one engine per rank here, the same samples).")
    expert_parallel_size: Optional[int] = opt(None, "verl: vLLM's MoE expert parallelism; a speed and memory key (a notice: the same samples).")
    pipeline_model_parallel_size: Optional[int] = opt(None, "verl: vLLM's pipeline parallelism; a speed and memory key (a notice: the same samples).")
    n_gpus_per_node: Optional[int] = opt(None, "verl 0.9: GPUs of a separate rollout pool; a device-layout key (a notice: the rollout shares the trainer's devices here, the same samples).")
    nnodes: Optional[int] = opt(None, "verl 0.9: machines of a separate rollout pool (a notice, as n_gpus_per_node).")
    moe_load_balance_metrics_interval: Optional[int] = opt(None, "verl: how often vLLM logs MoE load-balance metrics; a logging key (a notice).")
    layered_summon: Optional[bool] = opt(None, "verl's layer-by-layer weight gathering for the sync; weights go in buckets of update_weights_bucket_megabytes here (a notice).")
    multi_turn: MultiTurnConfig = section(MultiTurnConfig, "verl's multi-turn (tool-calling) rollout.")
    val_temperature: Optional[float] = opt(None, "the spelling of verl forks' scripts (projects built on older verl) for val_kwargs.temperature: sets it, and val_kwargs.do_sample to temperature > 0 (a notice names the new keys).")
    n_val: Optional[int] = opt(None, "verl forks' spelling of val_kwargs.n: sets it (a notice names the new key).")
    checkpoint_engine: CheckpointEngineConfig = section(CheckpointEngineConfig, "verl 0.9's weight transfer from the trainer to the rollout engine.")

    @property
    def engine(self) -> str:
        """The engine that samples: verl's ``sglang`` runs on vLLM, the same sampling from the same weights."""
        return "vllm" if self.name == "sglang" else self.name

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive("tensor_model_parallel_size", self.tensor_model_parallel_size)
        require_positive("max_num_batched_tokens", self.max_num_batched_tokens)
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise InvalidValue("gpu_memory_utilization", f"must be in (0, 1], got {self.gpu_memory_utilization}")
        require_positive("max_num_seqs", self.max_num_seqs, allow_none=False)
        require_positive("stream_chunks", self.stream_chunks, allow_none=False)
        if self.over_sample_rate is not None and not 0.0 <= self.over_sample_rate < 1.0:
            raise InvalidValue("over_sample_rate", f"must be in [0, 1), got {self.over_sample_rate}")
        require_positive("max_model_len", self.max_model_len)
        if self.val_temperature is not None:
            if self.val_temperature < 0:
                raise InvalidValue("val_temperature", f"must be >= 0, got {self.val_temperature}")
            self.val_kwargs.temperature = self.val_temperature
            self.val_kwargs.do_sample = self.val_temperature > 0
        require_positive("n_val", self.n_val)
        if self.n_val is not None:
            self.val_kwargs.n = self.n_val
        if self.checkpoint_engine.update_weights_bucket_megabytes is not None:
            self.update_weights_bucket_megabytes = self.checkpoint_engine.update_weights_bucket_megabytes
        require_positive("update_weights_bucket_megabytes", self.update_weights_bucket_megabytes, allow_none=False)
        for engine, kwargs in self.engine_kwargs.items():
            if engine not in ("vllm", "sglang") or not isinstance(kwargs, dict):
                raise InvalidValue(f"engine_kwargs.{engine}", "must be a mapping under engine_kwargs.vllm or engine_kwargs.sglang")


@dataclass
class ActorRolloutRefConfig:
    model: ModelConfig = section(ModelConfig, "The policy model (also the reference's starting point).")
    actor: ActorConfig = section(ActorConfig, "Policy updates.")
    ref: RefConfig = section(RefConfig, "The frozen reference policy (built only when a KL term is used).")
    rollout: RolloutConfig = section(RolloutConfig, "Generation.")
    hybrid_engine: Optional[bool] = opt(None, "verl: actor and rollout in the same workers, which is how every run here is laid out (true: a notice); false is refused.")
    nccl_timeout: Optional[int] = opt(None, "verl: seconds before a stuck NCCL collective fails; here the backend's default timeout applies (a notice).")

    def __post_init__(self) -> None:
        if self.hybrid_engine is False:
            raise InvalidValue("hybrid_engine", "is false (actor and rollout on separate workers), which is not supported: "
                               "set it to true or drop it")


@dataclass
class CriticModelConfig:
    path: Optional[str] = opt(None, "Critic backbone directory; null = the actor's model.path (or its config when that is null too).")
    config: dict[str, Any] = opt({}, "Critic transformers config when neither path is set; empty = the actor's model.config.")
    # verl's critic model keys.
    override_config: dict[str, Any] = opt({}, "Attributes set on the critic's transformers config (see actor_rollout_ref.model.override_config); empty = the actor's.")
    enable_gradient_checkpointing: Optional[bool] = opt(None, "Recompute the critic's activations in the backward pass; null = actor_rollout_ref.model.enable_gradient_checkpointing.")
    use_remove_padding: bool = opt(False, "Packed (unpadded) forwards of the critic (values, updates), as actor_rollout_ref.model.use_remove_padding (the critic uses the actor's attn_implementation).")
    use_fused_kernels: bool = opt(False, "See actor_rollout_ref.model.use_fused_kernels (a notice).")
    use_liger: bool = opt(False, "See actor_rollout_ref.model.use_liger (a notice).")
    use_shm: bool = opt(False, "See actor_rollout_ref.model.use_shm (a notice).")
    enable_activation_offload: bool = opt(False, "See actor_rollout_ref.model.enable_activation_offload (a notice).")
    tiled_mlp: dict[str, Any] = opt({}, "See actor_rollout_ref.model.tiled_mlp (a notice).")
    fsdp_config: OffloadConfig = section(OffloadConfig, "verl's critic offload switches (the critic's other FSDP settings are critic.fsdp_config).")


@dataclass
class CriticConfig:
    enable: Optional[bool] = opt(None, "Run a critic; null = when the advantage estimator needs values (gae) or algorithm.reward_source is critic.")
    strategy: StrategyName = opt("local", STRATEGY_HELP)
    fsdp_config: FSDPConfig = section(FSDPConfig, "FSDP2 settings of the critic (strategy fsdp2).")
    freeze: bool = opt(False, "Never update the critic (no optimizer); it still provides values. Logs critic/frozen=1.")
    model: CriticModelConfig = section(CriticModelConfig, "Critic backbone (a one-output token head is added).")
    ppo_mini_batch_size: Optional[int] = opt(None, "Prompts per critic optimizer step; null = the actor's.")
    ppo_micro_batch_size: Optional[int] = opt(None, "Samples per critic forward/backward over all ranks together (each rank takes it / world size); null = ppo_micro_batch_size_per_gpu.")
    ppo_micro_batch_size_per_gpu: Optional[int] = opt(None, "Samples per critic forward/backward on each rank; null with ppo_micro_batch_size null = a rank's whole share.")
    use_dynamic_bsz: Optional[bool] = opt(None, "Cut the critic's micro-batches by tokens (see actor.use_dynamic_bsz); null = actor.use_dynamic_bsz.")
    ppo_max_token_len_per_gpu: int = opt(32768, "Token budget of one critic micro-batch on one rank with dynamic batch size.")
    forward_max_token_len_per_gpu: Optional[int] = opt(None, "Token budget of one value forward (no gradient) on one rank with dynamic batch size, as verl; null = ppo_max_token_len_per_gpu.")
    ulysses_sequence_parallel_size: Optional[int] = opt(None, SP_HELP)
    ppo_epochs: Optional[int] = opt(None, "Critic passes over each batch; null = the actor's.")
    grad_clip: float = opt(1.0, "Clip the critic gradient's global norm.")
    cliprange_value: float = opt(0.5, "Value clip range around the old values.")
    loss_agg_mode: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"] = opt("token-mean", "Aggregation of the value loss.")
    optim: CriticOptimConfig = section(CriticOptimConfig, "Critic optimizer.")

    def __post_init__(self) -> None:
        self.strategy = engine_strategy(self.strategy, self.fsdp_config)
        require_positive("ppo_micro_batch_size", self.ppo_micro_batch_size)
        require_positive("ppo_micro_batch_size_per_gpu", self.ppo_micro_batch_size_per_gpu)
        exclusive("ppo_micro_batch_size", self.ppo_micro_batch_size, "ppo_micro_batch_size_per_gpu", self.ppo_micro_batch_size_per_gpu)
        require_positive("ppo_max_token_len_per_gpu", self.ppo_max_token_len_per_gpu, allow_none=False)
        require_positive("forward_max_token_len_per_gpu", self.forward_max_token_len_per_gpu)
        require_sequence_parallel_size(self.ulysses_sequence_parallel_size)


@dataclass
class KLCtrlConfig:
    type: Literal["fixed", "adaptive"] = opt("fixed", "KL coefficient controller for KL in the reward.")
    kl_coef: float = opt(0.001, "Initial (fixed: constant) KL coefficient beta.")
    horizon: int = opt(10000, "Adaptive controller horizon.")
    target_kl: float = opt(0.1, "Adaptive controller target KL.")

    def __post_init__(self) -> None:
        require_positive("horizon", self.horizon, allow_none=False)
        require_positive("target_kl", self.target_kl, allow_none=False)


@dataclass
class FilterGroupsConfig:
    enable: bool = opt(False, "DAPO dynamic sampling: keep only groups whose metric varies, generating batches of data.gen_batch_size prompts until data.train_batch_size groups are kept (docs/training.md).")
    metric: Optional[str] = opt(None, "Per-sample value whose variation keeps a group: seq_reward, seq_final_reward (the reward), score, or a key of the reward's extra info (acc, ...).")
    max_num_gen_batches: int = opt(0, "Stop with an error after this many generation batches in one step without enough groups; 0 = no limit.")

    def __post_init__(self) -> None:
        if self.enable and not self.metric:
            raise InvalidValue("metric", "must be set when algorithm.filter_groups.enable is true (e.g. acc, score, seq_reward)")
        if self.max_num_gen_batches < 0:
            raise InvalidValue("max_num_gen_batches", f"must be >= 0, got {self.max_num_gen_batches}")


@dataclass
class RolloutCorrectionConfig:
    rollout_is: Optional[Literal["token", "sequence"]] = opt(None, "Importance-sampling weights pi_old / pi_rollout on the policy loss, per token or per sequence; null = none (docs/training.md#rollout-correction, verl 0.6.1).")
    rollout_is_threshold: Union[float, str, None] = opt(2.0, "IS weights: an upper bound u truncates them (TIS); 'l_u' zeroes them outside [l, u] (IcePop).")
    rollout_is_batch_normalize: bool = opt(False, "Divide the IS weights by their batch mean (over tokens, or over sequences).")
    rollout_rs: Optional[str] = opt(None, "Rejection by the ratio: comma-separated token_k1..3, seq_sum_k1..3, seq_mean_k1..3, seq_max_k2/k3; rejected tokens (sequences) leave the advantages and the loss; null = none.")
    rollout_rs_threshold: Union[float, str, None] = opt(None, "Rejection thresholds, one per rollout_rs option or one for all: k1 'l_u' ratio bounds (a single u: l = 1/u), others an upper bound.")
    bypass_mode: bool = opt(False, "The rollout's log-probs are the old ones (no old-log-prob pass); the weights and rejection are taken against the current policy in the loss, whose mode becomes bypass_mode (loss_type); false = decoupled (the actor recomputes the old log-probs).")
    loss_type: Literal["ppo_clip", "reinforce"] = opt("ppo_clip", "bypass_mode's loss: ppo_clip (PPO's clip against the rollout, no weights) or reinforce (-w A logp).")

    def __post_init__(self) -> None:
        try:
            if self.rollout_is is not None:
                parse_bounds(self.rollout_is_threshold, "rollout_is_threshold", two_sided=True)
            if self.rollout_rs is not None:
                rejection_options(self.rollout_rs, self.rollout_rs_threshold)
        except ValueError as exc:
            key = "rollout_is_threshold" if "rollout_is_threshold" in str(exc) else "rollout_rs"
            raise InvalidValue(key, str(exc).split(": ", 1)[-1]) from None

    @property
    def enabled(self) -> bool:
        """Whether IS weights or rejection are asked for."""
        return self.rollout_is is not None or self.rollout_rs is not None

    @property
    def needs_rollout_log_probs(self) -> bool:
        """Whether the engine must return the sampled tokens' log-probs (rollout correction in either mode)."""
        return self.enabled or self.bypass_mode


@dataclass
class AlgorithmConfig:
    adv_estimator: str = opt("gae", "Advantage estimator (docs/training.md#algorithms): gae, grpo, rloo, reinforce_plus_plus, reinforce_plus_plus_baseline, gpg, remax, gdpo, optimal_token_baseline (both verl 0.9.1), or one a plugin registers.")
    gdpo_reward_keys: Optional[list[str]] = opt(None, "adv_estimator=gdpo (needed): keys of the reward function's returned dict, each a reward component GDPO normalises in its group on its own (verl 0.9.1).")
    gdpo_reward_weights: Optional[list[float]] = opt(None, "adv_estimator=gdpo: one weight per gdpo_reward_keys entry for the sum of the normalised components; null = 1 each (verl 0.9.1).")
    gamma: float = opt(1.0, "Discount factor.")
    lam: float = opt(1.0, "GAE lambda.")
    norm_adv_by_std_in_grpo: bool = opt(True, "GRPO: divide by the group's std (false = Dr. GRPO style mean-centring only).")
    use_kl_in_reward: bool = opt(False, "Subtract beta * KL(policy || reference) from the token rewards.")
    kl_penalty: Literal["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3"] = opt("kl", "KL estimator for the in-reward penalty.")
    kl_ctrl: KLCtrlConfig = section(KLCtrlConfig, "KL coefficient control.")
    reward_source: Literal["rule_based", "critic"] = opt("rule_based", "Where trajectory rewards come from: the reward managers, or the critic's value at the last valid token (advantage V(last) - V(t), whitened).")
    reward_mask_ratio: float = opt(0.0, "Probability that a trajectory's whole reward row is zeroed before advantages.")
    reward_mask_flip_adv_when_masked: bool = opt(True, "Multiply masked trajectories' advantages by -1 (rule_based rewards only).")
    filter_groups: FilterGroupsConfig = section(FilterGroupsConfig, "DAPO dynamic sampling (verl's algorithm.filter_groups).")
    mask_truncated_samples: bool = opt(False, "rllm/DeepScaleR's fork option (adv_estimator grpo only, as there): a response cut at data.max_response_length that scored 0 gets advantage 0; the group statistics keep it (docs/training.md#options-of-verl-forks).")
    clip_advantages: bool = opt(False, "rllm's fork option; true (clamping advantages) is refused: not implemented here.")
    rollout_correction: RolloutCorrectionConfig = section(RolloutCorrectionConfig, "Rollout correction: IS weights and rejection by the training / rollout probability ratio (verl's decoupled mode).")

    def __post_init__(self) -> None:
        if self.adv_estimator == "gdpo" and not self.gdpo_reward_keys:
            raise InvalidValue("gdpo_reward_keys", "must list the reward components (keys of the dict the reward function "
                               "returns, e.g. [format_reward, accuracy_reward]) when adv_estimator is gdpo")
        if self.gdpo_reward_weights is not None and len(self.gdpo_reward_weights) != len(self.gdpo_reward_keys or []):
            raise InvalidValue("gdpo_reward_weights", f"has {len(self.gdpo_reward_weights)} weights for "
                               f"{len(self.gdpo_reward_keys or [])} gdpo_reward_keys")
        if not 0.0 <= self.reward_mask_ratio <= 1.0:
            raise InvalidValue("reward_mask_ratio", f"must be in [0, 1], got {self.reward_mask_ratio}")
        for key in ("gamma", "lam"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise InvalidValue(key, f"must be in [0, 1], got {getattr(self, key)}")
        if self.mask_truncated_samples and self.adv_estimator != "grpo":
            raise InvalidValue("mask_truncated_samples", f"is rllm's (DeepScaleR's) GRPO option, which its fork applies "
                               f"only with adv_estimator=grpo, not {self.adv_estimator}: set it false, or use "
                               "trainer.remove_clip (SimpleRL-Zoo's: truncated samples leave the loss with any estimator)")
        if self.clip_advantages:
            raise InvalidValue("clip_advantages", "is true: rllm's advantage clamping is not implemented here; set it "
                               "false (the policy loss's clip_ratio and clip_ratio_c bound each token's update)")


@dataclass
class RayConfig:
    colocate: bool = opt(True, "Put rank r of every role (actor, reference, critic) on the same bundle (device) r; false = one placement group per role.")
    cpus_per_rank: float = opt(1.0, "CPUs reserved per rank bundle (shared by the colocated roles); on a small machine 0.5 leaves room for reward workers.")
    placement_timeout: float = opt(120.0, "Seconds to wait for the cluster to place the ranks before failing with what is missing.")


LoggerName = Literal["console", "jsonl", "tensorboard", "wandb", "mlflow", "swanlab"]


@dataclass
class TrainerConfig:
    project_name: str = opt("rewardsmith", "Project name (part of the default output directory).")
    experiment_name: str = opt("default", "Experiment name (part of the default output directory).")
    default_local_dir: Optional[str] = opt(None, "Output directory for checkpoints, metrics.jsonl and plots; null = outputs/<project_name>/<experiment_name>.")
    total_epochs: int = opt(1, "Passes over the training data.")
    total_training_steps: Optional[int] = opt(None, "Stop after this many steps; null = total_epochs passes.")
    logger: Union[list[LoggerName], LoggerName] = opt(["console", "jsonl"], "Metric sinks (a list, or one name as verl's scripts pass it); tensorboard, wandb, mlflow and swanlab need their package (pip install 'rewardsmith[wandb]', ...) and write as docs/training.md says.")
    progress_bar: bool = opt(True, "Show a progress bar over steps.")
    val_before_train: bool = opt(True, "Validate before the first step (logged as step 0).")
    test_freq: int = opt(-1, "Validate every N steps and after the last (-1 = only at the end).")
    save_freq: int = opt(-1, "Checkpoint every N steps and after the last (-1 = never).")
    resume_mode: Literal["auto", "disable", "resume_path"] = opt("auto", "auto: resume from the latest checkpoint in default_local_dir if any; resume_path: from resume_from_path.")
    resume_from_path: Optional[str] = opt(None, "A global_step_N checkpoint directory (with resume_mode=resume_path).")
    max_ckpt_to_keep: Optional[int] = opt(None, "Keep only this run's newest N checkpoints (another run's are set aside in stale_<time>/, never deleted); null or 0 = all.")
    remove_previous_ckpt: Optional[bool] = opt(None, "SimpleRL-Zoo's (and verl v0.2's remove_previous_ckpt_in_save) spelling of max_ckpt_to_keep=1: true keeps only the newest checkpoint (a notice names the new key); false keeps all.")
    remove_previous_ckpt_in_save: Optional[bool] = opt(None, "verl v0.2 to v0.3.0.rc0: as remove_previous_ckpt.")
    critic_warmup: int = opt(0, "Train only the critic for the first N steps.")
    val_only: bool = opt(False, "verl: validate before training, then stop (with val_before_train, as in verl; a notice says it does nothing without it). Needs data.val_files; after a resume it validates the resumed model.")
    default_hdfs_dir: Optional[str] = opt(None, "verl: a second place for checkpoints: each committed global_step_N is copied to <default_hdfs_dir>/global_step_N. A local or mounted directory; hdfs:// and other URLs are refused (no HDFS client here). Resumes read default_local_dir.")
    balance_batch: bool = opt(True, "verl's default: before the log-probs and updates, reorder each step's samples so that every data-parallel rank gets a like workload (Karmarkar-Karp over verl's per-sample cost estimate, index for index as verl 0.9.1, metrics global_seqlen/*). It reorders on one rank too, as verl, which changes which samples share a mini-batch; false keeps the rollout's order.")
    remove_clip: bool = opt(False, "SimpleRL-Zoo's fork option: responses cut at data.max_response_length leave the actor's and critic's losses (their tokens and counts); their scores stay in the group statistics (docs/training.md#options-of-verl-forks).")
    rejection_sample: bool = opt(False, "rllm/DeepScaleR's and Skywork-OR1's fork option: each step loads train_batch_size * rejection_sample_multiplier prompts, drops the groups whose rewards are all 0 or all 1 and trains on the rest, cut to a multiple of the rank count (the batch size varies; a batch that keeps nothing is skipped). docs/training.md#options-of-verl-forks; DAPO's algorithm.filter_groups keeps a fixed batch instead.")
    rejection_sample_multiplier: float = opt(2.0, "rllm/Skywork-OR1: prompts per step with rejection_sample, as a multiple of train_batch_size; unused while rejection_sample is false.")
    log_val_generations: int = opt(0, "Print this many validation samples (prompt, response, score) each validation.")
    rollout_data_dir: Optional[str] = opt(None, "Write each step's rollouts to <dir>/<step>.jsonl (verl's key): prompt, response, data_source, ground truth, score, reward, per-component scores; readable by `rewardsmith score` and `diff`. null = off.")
    seed: int = opt(1, "Seed of model initialisation, sampling and reward masking.")
    backend: Literal["local", "ray"] = opt("local", "local: this process (or torchrun's ranks) and local reward processes; ray: one controller here, the actor/reference/critic as worker groups of Ray actors (nnodes * n_gpus_per_node ranks each) and reward workers as Ray actors (ray.init joins RAY_ADDRESS, else starts a local cluster on 127.0.0.1).")
    ray: RayConfig = section(RayConfig, "Placement of the worker groups with trainer.backend=ray.")
    device: Literal["auto", "cpu", "cuda"] = opt("auto", "Where the embedded engine runs: auto = cuda when available.")
    cpu_threads: Optional[int] = opt(None, "torch threads on CPU; null = torch's default (one per core). 1 is much faster when other processes busy the same cores.")
    nnodes: int = opt(1, "Machines in a data-parallel run (launched with torchrun, or placed by Ray with backend=ray).")
    n_gpus_per_node: int = opt(1, "Data-parallel ranks per machine: its GPUs, or its CPU processes on a machine without GPUs.")
    use_legacy_worker_impl: Optional[str] = opt(None, "verl's choice between its two worker implementations; there is one here (a notice).")

    def __post_init__(self) -> None:
        # verl's launch scripts pass trainer.logger=console as well as [console,wandb].
        if isinstance(self.logger, str):
            self.logger = [self.logger]
        require_positive("total_epochs", self.total_epochs, allow_none=False)
        require_positive("total_training_steps", self.total_training_steps)
        require_positive("cpu_threads", self.cpu_threads)
        require_positive("nnodes", self.nnodes, allow_none=False)
        require_positive("n_gpus_per_node", self.n_gpus_per_node, allow_none=False)
        if self.default_hdfs_dir is not None and "://" in self.default_hdfs_dir:
            raise InvalidValue("default_hdfs_dir", f"is {self.default_hdfs_dir}: copying checkpoints to HDFS or another URL "
                               "needs its client, which rewardsmith does not run: use a local or mounted directory (or "
                               "copy default_local_dir yourself), or null")
        for key in ("remove_previous_ckpt", "remove_previous_ckpt_in_save"):
            if getattr(self, key):
                if self.max_ckpt_to_keep not in (None, 0, 1):
                    raise InvalidValue(key, f"is true, which keeps one checkpoint, but max_ckpt_to_keep is "
                                       f"{self.max_ckpt_to_keep}: set one of them")
                self.max_ckpt_to_keep = 1
        if self.rejection_sample_multiplier <= 0:
            raise InvalidValue("rejection_sample_multiplier", f"must be > 0, got {self.rejection_sample_multiplier}")
        if self.resume_mode == "resume_path" and not self.resume_from_path:
            raise InvalidValue("resume_from_path", "must be set when resume_mode is resume_path")
        check_packages(self.logger)


@dataclass
class SFTConfig:
    train_files: Files = opt([], "SFT rows: the row schema plus a response field (the target completion, or a multi-turn transcript).")
    response_key: str = opt("response", "Row field holding the target response: a string, or a list of assistant, tool and user messages (only the assistant turns are learned).")
    batch_size: int = opt(32, "Examples per optimizer step.")
    total_epochs: int = opt(3, "Passes over the SFT rows.")
    lr: float = opt(1e-3, "AdamW learning rate.")
    weight_decay: float = opt(0.0, "AdamW weight decay.")
    lr_warmup_steps_ratio: float = opt(0.1, "Linear warmup fraction, then cosine decay to 0.")
    save_dir: Optional[str] = opt(None, "Where the fine-tuned model and tokenizer are saved; null = <trainer.default_local_dir>/sft_model.")

    def __post_init__(self) -> None:
        require_positive("batch_size", self.batch_size, allow_none=False)
        require_positive("total_epochs", self.total_epochs, allow_none=False)
        require_positive("lr", self.lr, allow_none=False)


@dataclass
class Config:
    data: DataConfig = section(DataConfig, "Datasets and lengths.")
    actor_rollout_ref: ActorRolloutRefConfig = section(ActorRolloutRefConfig, "Policy model, its updates, the reference and generation.")
    critic: CriticConfig = section(CriticConfig, "Value model.")
    algorithm: AlgorithmConfig = section(AlgorithmConfig, "Advantages, KL and reward options.")
    trainer: TrainerConfig = section(TrainerConfig, "Run length, logging, validation and checkpoints.")
    sft: SFTConfig = section(SFTConfig, "Supervised warm start (`rewardsmith sft`).")
    custom_reward_function: CustomRewardFunctionConfig = section(CustomRewardFunctionConfig, "A user compute_score file, as in verl.")
    reward_model: RewardModelConfig = section(RewardModelConfig, "Reward managers, scorers and their execution.")
    plugins: PluginsConfig = section(PluginsConfig, "Plugin loading.")

    # verl's newer reward.* layout (reward.reward_model.enable, reward.custom_reward_function.path, ...) loads too;
    # a key of a verl feature missing here is refused naming the feature and what to do.
    @staticmethod
    def normalize_tree(tree: dict[str, Any]) -> dict[str, Any]:
        """The tree in rewardsmith's layout (verl's reward.* keys moved), after refusing missing verl features."""
        return map_reward_layout(refuse_missing_features(tree))

    def __post_init__(self) -> None:
        check_verl_keys(self)
        if self.algorithm.reward_source == "critic" and self.critic.enable is False:
            raise InvalidValue("algorithm.reward_source", "is critic, which needs a critic, but critic.enable is false")
        rollout, longest = self.actor_rollout_ref.rollout, self.data.max_prompt_length + self.data.max_response_length
        if rollout.max_model_len is None:
            rollout.max_model_len = longest
        elif rollout.max_model_len < longest:
            raise InvalidValue("actor_rollout_ref.rollout.max_model_len", f"is {rollout.max_model_len}, shorter than "
                               f"data.max_prompt_length + data.max_response_length = {longest}")

    def reward_settings(self) -> RewardSettings:
        """What the reward side reads of this config."""
        return RewardSettings(self.reward_model, self.custom_reward_function, self.plugins,
                              self.data.max_response_length, self.trainer.backend)
