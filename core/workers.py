"""Workers: the actor with its rollout engine, the reference and the critic.

Each worker builds its own model, optimizer and LR schedule from the config
and its role, so that a distributed backend can host the same classes in
other processes, one per rank, with its strategy sharding the model
(:mod:`rewardsmith.core.strategy`). The trainer (the controller) hands workers
CPU batches and, for updates, the mini-batches it cut with their global sizes
(:class:`MiniBatch`); it gets CPU tensors and metrics back. A worker moves
data to wherever its model lives.

Model initialisation depends only on the config and the role, never on what
was built before in the same process: the actor's model is the first draw of
the generator seeded with ``trainer.seed`` (whose stream its rollout then
continues), the reference builds under the same seed in a forked generator
(so a config-built reference equals the actor's initial weights), and the
critic under ``trainer.seed + 1``, also forked.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, TypeVar

import torch

from rewardsmith.core.batch import Batch, MiniBatch
from rewardsmith.core.distributed import Topology, init_distributed
from rewardsmith.core.kl import kl_penalty
from rewardsmith.core.lora import add_lora, has_adapters, merged_weights
from rewardsmith.core.losses import agg_loss, micro_batch_weight, value_loss
from rewardsmith.core.policy_losses import LossContext
from rewardsmith.core.micro_batches import MicroBatching, micro_batches, micro_batching
from rewardsmith.core.models import (build_causal_lm, build_value_model, response_logprobs,
                                     response_logprobs_and_sum_pi_squared, response_values, run_tokenizer)
from rewardsmith.core.optim import build_optimizer
from rewardsmith.core.packed_attention import packs
from rewardsmith.core.packing import unpackable
from rewardsmith.core.multi_turn import multi_turn_engine
from rewardsmith.core.rollout import HandOver, SamplingParams, build_rollout_engine, hand_over_at_once
from rewardsmith.core.strategy import LocalStrategy, Strategy
from rewardsmith.core.tensor_ops import masked_mean
from rewardsmith.plugins.loader import get_registry

T = TypeVar("T")


def build_strategy(name: str, fsdp_cfg: Any, topology: Topology) -> Strategy:
    """The strategy named by a role's ``strategy`` key, on this process's device (verl's ``fsdp`` runs as fsdp2)."""
    if name in ("fsdp", "fsdp2"):
        from rewardsmith.core.fsdp import FSDP2Strategy  # torch.distributed's FSDP only when asked for

        return FSDP2Strategy(topology.device, fsdp_cfg)
    if topology.distributed:
        raise ValueError(f"this run has {topology.world_size} data-parallel ranks but a worker's strategy is local: "
                         "set actor_rollout_ref.actor.strategy=fsdp2 (and critic.strategy=fsdp2)")
    return LocalStrategy(topology.device)


def _forked_seed(seed: int, build: Callable[[], T]) -> T:
    """``build()`` drawing from a generator seeded with ``seed``, leaving the global one untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def _mean_metrics(collected: dict[str, list[float]]) -> dict[str, float]:
    return {k: sum(v) / len(v) for k, v in collected.items() if v}


def packed_forward(use_remove_padding: bool, model: torch.nn.Module, key: str) -> bool:
    """Whether ``model`` runs its forwards packed: ``use_remove_padding`` (config key ``key``) where its
    attention implementation packs (:func:`packs`); elsewhere the key's start-up notice said the forwards
    stay padded. A model whose own code would mix packed sequences (:func:`unpackable`) is an error naming
    ``key``, not a silent difference."""
    if not (use_remove_padding and packs(model.config._attn_implementation)):
        return False
    reason = unpackable(model)
    if reason:
        raise ValueError(f"{key}=true: {reason}; set {key}=false (padded forwards give the same results)")
    return True


def log_prob_batching(config: Any, role: str, world_size: int) -> MicroBatching:
    """How ``role`` (``rollout`` or ``ref``) cuts its log-prob forwards: its ``log_prob_*`` keys, the actor's by default."""
    arr = config.actor_rollout_ref
    cfg = getattr(arr, role)
    dynamic = arr.actor.use_dynamic_bsz if cfg.log_prob_use_dynamic_bsz is None else cfg.log_prob_use_dynamic_bsz
    budget_key = f"actor_rollout_ref.{role}.log_prob_max_token_len_per_gpu"
    if cfg.log_prob_max_token_len_per_gpu is None:
        budget_key = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"
    return micro_batching(cfg.log_prob_micro_batch_size_per_gpu, cfg.log_prob_micro_batch_size, world_size, dynamic,
                          cfg.log_prob_max_token_len_per_gpu or arr.actor.ppo_max_token_len_per_gpu, budget_key)


@torch.no_grad()
def policy_log_probs(model: torch.nn.Module, batch: Batch, temperature: float, how: MicroBatching,
                     packed: bool = False, with_sum_pi_squared: bool = False,
                     device: Optional[torch.device] = None) -> torch.Tensor:
    """(B, R) log-probs of ``batch["responses"]`` under ``model``, in micro-batches (each ``packed`` or
    padded, :func:`response_logprobs`), on the CPU; ``with_sum_pi_squared``: (B, 2, R), the log-probs and
    ``sum_v pi(v)^2`` per token (:func:`response_logprobs_and_sum_pi_squared`). ``device``: where the
    forwards run (the strategy's; an FSDP2 model offloaded to the CPU computes on the GPU), by default
    where the parameters are."""
    device = device or next(model.parameters()).device
    width = batch["responses"].shape[1]
    outs = []
    for micro in micro_batches(batch, how):
        ids, mask = micro["input_ids"].to(device), micro["attention_mask"].to(device)
        if with_sum_pi_squared:
            logp, sum_sq = response_logprobs_and_sum_pi_squared(model, ids, mask, width, temperature, packed=packed)
            outs.append(torch.stack([logp, sum_sq], dim=1).cpu())
        else:
            outs.append(response_logprobs(model, ids, mask, width, temperature, packed=packed)[0].cpu())
    return torch.cat(outs)


MicroLoss = Callable[[Batch, torch.Tensor, MiniBatch, dict[str, list[float]]], torch.Tensor]


def _update(model: torch.nn.Module, strategy: Strategy, optimizer: torch.optim.Optimizer, scheduler: Any,
            minis: Iterable[MiniBatch], *, micro: MicroBatching, grad_clip: float,
            prefix: str, micro_loss: MicroLoss) -> dict[str, float]:
    """The update actor and critic run: one optimizer step per mini-batch, then one LR-schedule step.

    A mini-batch's gradient accumulates over its micro-batches, each loss
    weighted by its share of the whole mini-batch (:func:`micro_batch_weight`
    with the mini-batch's global counts). ``micro_loss(micro, response_mask,
    mini, stats)`` returns a micro-batch's loss so weighted (on the model's
    device) and appends its own metrics to ``stats``.
    """
    device = strategy.device  # the compute device: FSDP2's CPU offload keeps the parameters elsewhere
    stats: dict[str, list[float]] = defaultdict(list)
    for mini in minis:
        optimizer.zero_grad(set_to_none=True)
        for part in micro_batches(mini.batch, micro):
            part = part.to(device)
            micro_loss(part, part["response_mask"].float(), mini, stats).backward()
        # A non-finite gradient norm (fp16 overflow, a bad batch) skips the step
        # instead of writing NaN into the weights; it is counted, not hidden.
        grad_norm = strategy.clip_grad_norm(model, grad_clip)
        if torch.isfinite(grad_norm):
            optimizer.step()
        else:
            stats[f"{prefix}/nonfinite_grad_steps"].append(1.0)
        stats[f"{prefix}/grad_norm"].append(float(grad_norm))
    optimizer.zero_grad(set_to_none=True)
    metrics = _mean_metrics(stats)
    metrics[f"{prefix}/lr"] = scheduler.get_last_lr()[0]
    scheduler.step()
    return metrics


class ActorRolloutWorker:
    """The policy (role actor + rollout): generation, log-probs and clipped-PPO updates."""

    def __init__(self, config: Any, total_steps: int) -> None:
        arr = config.actor_rollout_ref
        self.cfg = arr.actor
        topology = init_distributed(config.trainer)
        self.strategy = build_strategy(arr.actor.strategy, arr.actor.fsdp_config, topology)
        tokenizer = run_tokenizer(config)
        torch.manual_seed(config.trainer.seed)
        model = build_causal_lm(arr.model, tokenizer)
        self.packed = packed_forward(arr.model.use_remove_padding, model, "actor_rollout_ref.model.use_remove_padding")
        if arr.model.lora_rank:
            model = add_lora(model, arr.model.lora_rank, arr.model.lora_alpha, arr.model.target_modules,
                             arr.model.exclude_modules)
        self.model = self.strategy.wrap(model)
        if topology.distributed:
            # Every rank built the same initial weights; each samples its share of the prompts with its own stream.
            torch.manual_seed(config.trainer.seed + topology.rank)
        self.temperature = arr.rollout.logit_temperature
        self.log_prob_batching = log_prob_batching(config, "rollout", topology.world_size)
        self.update_batching = micro_batching(
            self.cfg.ppo_micro_batch_size_per_gpu, self.cfg.ppo_micro_batch_size, topology.world_size,
            self.cfg.use_dynamic_bsz, self.cfg.ppo_max_token_len_per_gpu, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu")
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer, self.scheduler = build_optimizer(trainable, self.cfg.optim, total_steps)
        self.rollout_correction = config.algorithm.rollout_correction
        # verl's bypass mode replaces the configured loss with its own (the old log-probs are the rollout's).
        loss_mode = "bypass_mode" if self.rollout_correction.bypass_mode else self.cfg.policy_loss.loss_mode
        self.policy_loss = get_registry(config.plugins).policy_loss(loss_mode)
        # An engine with its own copy reads only the model's config: the actor's own (null path) when
        # override_config changed it.
        self.rollout = build_rollout_engine(arr.rollout, self.model, tokenizer,
                                            None if arr.model.override_config else arr.model.path)
        if arr.rollout.multi_turn.enable:
            self.rollout = multi_turn_engine(self.rollout, arr.rollout.multi_turn, tokenizer, get_registry(config.plugins),
                                             config.data.max_prompt_length)
        # An engine with its own copy of the weights (vllm) starts without them.
        self.sync_rollout_weights()

    # -- rollout ------------------------------------------------------------------
    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        """Sampled responses for ``prompts`` (see :meth:`RolloutEngine.generate`)."""
        return self.rollout.generate(prompts, params)

    def generate_stream(self, prompts: Batch, params: SamplingParams, take: HandOver) -> bool:
        """:meth:`generate`'s samples handed to ``take`` as they finish: (rows of ``prompts``, their samples),
        each prompt's ``n`` samples together, until ``take`` returns True (then True); an engine that cannot
        stream (multi-turn) hands the whole batch over at once."""
        stream = getattr(self.rollout, "generate_stream", None)
        if stream is None:
            return hand_over_at_once(self.generate, prompts, params, take)
        return stream(prompts, params, take)

    def sync_rollout_weights(self) -> None:
        """Hand the rollout engine the actor's current full weights (after each update)."""
        weights = self.strategy.full_weights(self.model)
        self.rollout.update_weights(merged_weights(self.model, weights) if has_adapters(self.model) else weights)

    def sleep_rollout(self) -> None:
        self.rollout.sleep()

    def wake_rollout(self) -> None:
        self.rollout.wake()

    def close(self) -> None:
        """Stop the rollout engine (a vLLM engine's processes)."""
        self.rollout.shutdown()

    # -- training -----------------------------------------------------------------
    def compute_log_prob(self, batch: Batch) -> torch.Tensor:
        """(B, R) log-probs of ``responses`` under the current policy."""
        return policy_log_probs(self.model, batch, self.temperature, self.log_prob_batching, self.packed,
                                device=self.strategy.device)

    def compute_log_prob_and_sum_pi_squared(self, batch: Batch) -> torch.Tensor:
        """(B, 2, R): the log-probs of ``responses`` under the current policy and ``sum_v pi(v)^2`` per token."""
        return policy_log_probs(self.model, batch, self.temperature, self.log_prob_batching, self.packed,
                                with_sum_pi_squared=True, device=self.strategy.device)

    def update(self, minis: list[MiniBatch], entropy_coeff: Optional[float] = None) -> dict[str, float]:
        """One optimizer step per mini-batch with the configured policy loss (:mod:`rewardsmith.core.policy_losses`).

        Needs ``advantages``, ``ref_log_prob`` with ``use_kl_loss``, and
        ``old_log_probs`` unless there is a single mini-batch (then the policy
        being updated is the one that sampled, and its detached log-probs are
        the old ones). Loss = pg_loss - entropy_coeff * entropy + kl_loss_coef * kl_loss;
        the entropy comes from this forward pass. ``entropy_coeff`` (the adaptive
        control's, when on) replaces ``actor.entropy_coeff`` for this update.
        """
        cfg = self.cfg
        coeff = cfg.entropy_coeff if entropy_coeff is None else entropy_coeff
        low = cfg.clip_ratio if cfg.clip_ratio_low is None else cfg.clip_ratio_low
        high = cfg.clip_ratio if cfg.clip_ratio_high is None else cfg.clip_ratio_high
        if len(minis) > 1 and any("old_log_probs" not in m.batch for m in minis):
            raise ValueError("old_log_probs are needed when a batch makes more than one optimizer step")

        def micro_loss(micro: Batch, mask: torch.Tensor, mini: MiniBatch, stats: dict[str, list[float]]) -> torch.Tensor:
            weight = micro_batch_weight(mask, mini.tokens, mini.samples, cfg.loss_agg_mode)
            ctx = LossContext(low, high, cfg.clip_ratio_c, cfg.loss_agg_mode, weight,
                              micro_batch_weight(mask, mini.tokens, mini.samples, "seq-mean-token-mean"), cfg.policy_loss,
                              cfg.tau_pos, cfg.tau_neg, micro["rollout_is_weights"] if "rollout_is_weights" in micro else None,
                              self.rollout_correction)
            logp, entropy = response_logprobs(
                self.model, micro["input_ids"], micro["attention_mask"], micro["responses"].shape[1], self.temperature,
                with_entropy=True, entropy_grad=coeff != 0, packed=self.packed,
            )
            old = micro["old_log_probs"] if "old_log_probs" in micro else logp.detach()
            pg, pg_stats = self.policy_loss(logp, old, micro["advantages"], mask, ctx)
            ent = agg_loss(entropy, mask, cfg.loss_agg_mode, weight)
            loss = pg - coeff * ent if coeff != 0 else pg
            if cfg.use_kl_loss:
                kl = agg_loss(kl_penalty(logp, micro["ref_log_prob"], cfg.kl_loss_type), mask, cfg.loss_agg_mode, weight)
                loss = loss + cfg.kl_loss_coef * kl
                stats["actor/kl_loss"].append(kl.item() / max(weight, 1e-12))
            stats["actor/entropy"].append(ent.item() / max(weight, 1e-12))
            stats["actor/pg_loss"].append(pg.item() / max(weight, 1e-12))
            for name, value in pg_stats.items():
                # A stat with its own section (rollout_corr/...) keeps verl's name.
                stats[name if "/" in name else f"actor/{'pg_' if name.startswith('clipfrac') else ''}{name}"].append(value.item())
            return loss

        return _update(self.model, self.strategy, self.optimizer, self.scheduler, minis,
                       micro=self.update_batching, grad_clip=cfg.grad_clip, prefix="actor", micro_loss=micro_loss)

    # -- checkpoints --------------------------------------------------------------
    def save_checkpoint(self, path: Path) -> None:
        self.strategy.save(path, self.model, self.optimizer, self.scheduler)

    def load_checkpoint(self, path: Path) -> None:
        self.strategy.load(path, self.model, self.optimizer, self.scheduler)
        self.sync_rollout_weights()


class ReferenceWorker:
    """The frozen reference policy: the actor's initial weights, built by itself."""

    def __init__(self, config: Any) -> None:
        arr = config.actor_rollout_ref
        topology = init_distributed(config.trainer)
        fsdp_cfg = dataclasses.replace(arr.actor.fsdp_config, param_offload=arr.ref.fsdp_config.param_offload,
                                       optimizer_offload=False)  # the reference has no optimizer
        self.strategy = build_strategy(arr.ref.strategy or arr.actor.strategy, fsdp_cfg, topology)
        tokenizer = run_tokenizer(config)
        model = _forked_seed(config.trainer.seed, lambda: build_causal_lm(arr.model, tokenizer))
        self.packed = packed_forward(arr.model.use_remove_padding, model, "actor_rollout_ref.model.use_remove_padding")
        self.model = self.strategy.wrap(model.requires_grad_(False))
        self.temperature = arr.rollout.logit_temperature
        self.batching = log_prob_batching(config, "ref", topology.world_size)

    def compute_log_prob(self, batch: Batch) -> torch.Tensor:
        """(B, R) log-probs of ``responses`` under the reference."""
        return policy_log_probs(self.model, batch, self.temperature, self.batching, self.packed,
                                device=self.strategy.device)


class CriticWorker:
    """The value model; with ``critic.freeze`` it has no optimizer and only provides values."""

    def __init__(self, config: Any, total_steps: int) -> None:
        self.cfg = config.critic
        own = self.cfg.model
        # The actor's model settings, with the critic's own where verl gives it one.
        model_cfg = dataclasses.replace(
            config.actor_rollout_ref.model,
            override_config=own.override_config or config.actor_rollout_ref.model.override_config,
            enable_gradient_checkpointing=(config.actor_rollout_ref.model.enable_gradient_checkpointing
                                           if own.enable_gradient_checkpointing is None else own.enable_gradient_checkpointing))
        topology = init_distributed(config.trainer)
        fsdp_cfg = dataclasses.replace(self.cfg.fsdp_config,
                                       param_offload=self.cfg.fsdp_config.param_offload or own.fsdp_config.param_offload,
                                       optimizer_offload=self.cfg.fsdp_config.optimizer_offload or own.fsdp_config.optimizer_offload)
        self.strategy = build_strategy(self.cfg.strategy, fsdp_cfg, topology)
        dynamic = config.actor_rollout_ref.actor.use_dynamic_bsz if self.cfg.use_dynamic_bsz is None else self.cfg.use_dynamic_bsz
        self.batching = micro_batching(self.cfg.ppo_micro_batch_size_per_gpu, self.cfg.ppo_micro_batch_size,
                                       topology.world_size, dynamic, self.cfg.ppo_max_token_len_per_gpu,
                                       "critic.ppo_max_token_len_per_gpu")
        # verl gives the value forwards (no gradient, less memory) a budget of their own.
        forward_key = "critic.forward_max_token_len_per_gpu" if self.cfg.forward_max_token_len_per_gpu else \
            "critic.ppo_max_token_len_per_gpu"
        self.forward_batching = micro_batching(self.cfg.ppo_micro_batch_size_per_gpu, self.cfg.ppo_micro_batch_size,
                                               topology.world_size, dynamic,
                                               self.cfg.forward_max_token_len_per_gpu or self.cfg.ppo_max_token_len_per_gpu,
                                               forward_key)
        tokenizer = run_tokenizer(config)
        model = _forked_seed(config.trainer.seed + 1, lambda: build_value_model(
            model_cfg, tokenizer, path=own.path or model_cfg.path, config=own.config or model_cfg.config,
        ))
        self.packed = packed_forward(own.use_remove_padding, model, "critic.model.use_remove_padding")
        self.frozen = self.cfg.freeze
        if self.frozen:
            model.requires_grad_(False)
        self.model = self.strategy.wrap(model)
        self.optimizer, self.scheduler = (None, None) if self.frozen else build_optimizer(
            self.model.parameters(), self.cfg.optim, total_steps)

    @torch.no_grad()
    def compute_values(self, batch: Batch) -> torch.Tensor:
        """(B, R) values ``V(t)``, zero outside ``response_mask``."""
        device = self.strategy.device
        width = batch["responses"].shape[1]
        out = []
        for micro in micro_batches(batch, self.forward_batching):
            values = response_values(self.model, micro["input_ids"].to(device), micro["attention_mask"].to(device), width,
                                     self.packed)
            out.append(values.cpu())
        return torch.cat(out) * batch["response_mask"].float()

    def update(self, minis: list[MiniBatch]) -> dict[str, float]:
        """Clipped value-loss regression of ``V`` onto ``returns``, one step per mini-batch (see :func:`value_loss`)."""
        if self.frozen:
            raise RuntimeError("critic.freeze is true: the critic is never updated")
        cfg = self.cfg

        def micro_loss(micro: Batch, mask: torch.Tensor, mini: MiniBatch, stats: dict[str, list[float]]) -> torch.Tensor:
            weight = micro_batch_weight(mask, mini.tokens, mini.samples, cfg.loss_agg_mode)
            vpreds = response_values(self.model, micro["input_ids"], micro["attention_mask"], micro["responses"].shape[1],
                                     self.packed)
            loss, v_stats = value_loss(vpreds, micro["values"], micro["returns"], mask, cfg.cliprange_value,
                                       cfg.loss_agg_mode, weight)
            stats["critic/vf_loss"].append(loss.item() / max(weight, 1e-12))
            stats["critic/vf_clipfrac"].append(v_stats["vf_clipfrac"].item())
            stats["critic/vpred_mean"].append(masked_mean(vpreds.detach(), mask).item())
            return loss

        return _update(self.model, self.strategy, self.optimizer, self.scheduler, minis,
                       micro=self.batching, grad_clip=cfg.grad_clip, prefix="critic", micro_loss=micro_loss)

    def save_checkpoint(self, path: Path) -> None:
        self.strategy.save(path, self.model, self.optimizer, self.scheduler)

    def load_checkpoint(self, path: Path) -> None:
        self.strategy.load(path, self.model, self.optimizer, self.scheduler)
