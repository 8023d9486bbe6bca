"""Workers: the actor, reference and critic, each owning its model (and optimizer).

The trainer hands workers CPU batches and gets CPU tensors and metrics back;
a worker moves data to wherever its model lives. A distributed backend
replaces these classes with worker groups that keep the same methods.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Optional

import torch
from transformers import PreTrainedModel

from rewardkit.core.batch import Batch
from rewardkit.core.tensor_ops import masked_mean
from rewardkit.core.kl import kl_penalty
from rewardkit.core.losses import agg_loss, micro_batch_weight, policy_loss, value_loss
from rewardkit.core.models import response_logprobs, response_values
from rewardkit.core.optim import build_optimizer


def _device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def _mean_metrics(collected: dict[str, list[float]]) -> dict[str, float]:
    return {k: sum(v) / len(v) for k, v in collected.items() if v}


def _mini_batches(batch: Batch, size: int, shuffle: bool, generator: torch.Generator) -> list[Batch]:
    order = torch.randperm(len(batch), generator=generator) if shuffle else torch.arange(len(batch))
    return list(batch.select(order).chunks(size))


MicroLoss = Callable[[Batch, torch.Tensor, float, dict[str, list[float]]], torch.Tensor]


def _update(model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, batch: Batch, *,
            epochs: int, mini_batch_size: int, shuffle: bool, generator: torch.Generator,
            micro_batch_size: Optional[int], loss_agg_mode: str, grad_clip: float, prefix: str,
            micro_loss: MicroLoss) -> dict[str, float]:
    """The update both actor and critic run: ``epochs`` passes of one optimizer step per mini-batch.

    Each mini-batch's gradient accumulates over its micro-batches, each loss
    weighted by its share of the mini-batch (:func:`micro_batch_weight`).
    ``micro_loss(micro, response_mask, weight, stats)`` returns a micro-batch's
    loss (on the model's device) and appends its own metrics to ``stats``.
    """
    device = _device_of(model)
    stats: dict[str, list[float]] = defaultdict(list)
    for _epoch in range(epochs):
        for mini in _mini_batches(batch, mini_batch_size, shuffle, generator):
            optimizer.zero_grad(set_to_none=True)
            mask_sum = float(mini["response_mask"].sum())
            for micro in mini.chunks(micro_batch_size or len(mini)):
                micro = micro.to(device)
                mask = micro["response_mask"].float()
                weight = micro_batch_weight(mask, mask_sum, len(mini), loss_agg_mode)
                micro_loss(micro, mask, weight, stats).backward()
            _clip_and_step(model, optimizer, grad_clip, stats, prefix)
    return _finish_update(optimizer, scheduler, stats, prefix)


def _clip_and_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, grad_clip: float,
                   stats: dict[str, list[float]], prefix: str) -> None:
    # A non-finite gradient norm (fp16 overflow, a bad batch) skips the step
    # instead of writing NaN into the weights; it is counted, not hidden.
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    if torch.isfinite(grad_norm):
        optimizer.step()
    else:
        stats[f"{prefix}/nonfinite_grad_steps"].append(1.0)
    stats[f"{prefix}/grad_norm"].append(float(grad_norm))


def _finish_update(optimizer: torch.optim.Optimizer, scheduler: Any, stats: dict[str, list[float]],
                   prefix: str) -> dict[str, float]:
    """Release gradients, average the update's stats and advance the LR schedule (one step per update)."""
    optimizer.zero_grad(set_to_none=True)
    metrics = _mean_metrics(stats)
    metrics[f"{prefix}/lr"] = scheduler.get_last_lr()[0]
    scheduler.step()
    return metrics


def _save_model(model: PreTrainedModel, path: Path) -> None:
    model.save_pretrained(path)


def _load_model_weights(model: PreTrainedModel, path: Path) -> None:
    """Copy weights saved by :func:`_save_model` into ``model`` in place (it stays where it lives)."""
    loaded = type(model).from_pretrained(path, dtype=next(model.parameters()).dtype)
    model.load_state_dict(loaded.state_dict())


class PolicyWorker:
    """Log-probs of responses under a causal LM (the reference, and the base of the actor)."""

    def __init__(self, model: PreTrainedModel, temperature: float, micro_batch_size: Optional[int]) -> None:
        self.model = model
        self.temperature = temperature
        self.micro_batch_size = micro_batch_size

    @torch.no_grad()
    def compute_log_prob(self, batch: Batch) -> torch.Tensor:
        """(B, R) log-probs of ``responses`` under this model."""
        device = _device_of(self.model)
        width = batch["responses"].shape[1]
        logps = []
        for micro in batch.chunks(self.micro_batch_size or len(batch)):
            logp, _ = response_logprobs(self.model, micro["input_ids"].to(device), micro["attention_mask"].to(device), width, self.temperature)
            logps.append(logp.cpu())
        return torch.cat(logps)


class ActorWorker(PolicyWorker):
    """The policy: log-probs plus PPO updates with gradient accumulation."""

    def __init__(self, model: PreTrainedModel, actor_cfg: Any, temperature: float, log_prob_micro_batch_size: Optional[int],
                 samples_per_prompt: int, total_steps: int, seed: int) -> None:
        super().__init__(model, temperature, log_prob_micro_batch_size)
        self.cfg = actor_cfg
        self.mini_batch_size = actor_cfg.ppo_mini_batch_size * samples_per_prompt
        self.optimizer, self.scheduler = build_optimizer(model.parameters(), actor_cfg.optim, total_steps)
        self.generator = torch.Generator().manual_seed(seed)

    def single_update(self, batch_size: int) -> bool:
        """Whether a batch of ``batch_size`` samples makes exactly one optimizer step.

        Then the policy being updated is the one that sampled the batch, its
        old log-probs equal the current ones, and recomputing them is skipped.
        """
        return self.cfg.ppo_epochs == 1 and batch_size <= self.mini_batch_size

    def update(self, batch: Batch) -> dict[str, float]:
        """``ppo_epochs`` passes of clipped-PPO updates over ``batch`` (see :func:`policy_loss`).

        Needs ``advantages``, and ``old_log_probs`` unless :meth:`single_update`
        holds (then the current log-probs, detached, are the old ones), and
        ``ref_log_prob`` with ``use_kl_loss``.
        Loss = pg_loss - entropy_coeff * entropy + kl_loss_coef * kl_loss.
        """
        cfg = self.cfg
        low = cfg.clip_ratio if cfg.clip_ratio_low is None else cfg.clip_ratio_low
        high = cfg.clip_ratio if cfg.clip_ratio_high is None else cfg.clip_ratio_high
        width = batch["responses"].shape[1]
        if "old_log_probs" not in batch and not self.single_update(len(batch)):
            raise ValueError("old_log_probs are needed when a batch makes more than one optimizer step")

        def micro_loss(micro: Batch, mask: torch.Tensor, weight: float, stats: dict[str, list[float]]) -> torch.Tensor:
            logp, entropy = response_logprobs(
                self.model, micro["input_ids"], micro["attention_mask"], width, self.temperature,
                with_entropy=True, entropy_grad=cfg.entropy_coeff != 0,
            )
            old = micro["old_log_probs"] if "old_log_probs" in micro else logp.detach()
            pg, pg_stats = policy_loss(
                logp, old, micro["advantages"], mask, low, high, cfg.clip_ratio_c, cfg.loss_agg_mode, weight
            )
            ent = agg_loss(entropy, mask, cfg.loss_agg_mode, weight)
            loss = pg - cfg.entropy_coeff * ent if cfg.entropy_coeff != 0 else pg
            if cfg.use_kl_loss:
                kl = agg_loss(kl_penalty(logp, micro["ref_log_prob"], cfg.kl_loss_type), mask, cfg.loss_agg_mode, weight)
                loss = loss + cfg.kl_loss_coef * kl
                stats["actor/kl_loss"].append(kl.item() / max(weight, 1e-12))
            stats["actor/entropy"].append(ent.item() / max(weight, 1e-12))
            stats["actor/pg_loss"].append(pg.item() / max(weight, 1e-12))
            stats["actor/pg_clipfrac"].append(pg_stats["clipfrac"].item())
            stats["actor/pg_clipfrac_lower"].append(pg_stats["clipfrac_lower"].item())
            stats["actor/ppo_kl"].append(pg_stats["ppo_kl"].item())
            return loss

        return _update(self.model, self.optimizer, self.scheduler, batch, epochs=cfg.ppo_epochs,
                       mini_batch_size=self.mini_batch_size, shuffle=cfg.shuffle, generator=self.generator,
                       micro_batch_size=cfg.ppo_micro_batch_size, loss_agg_mode=cfg.loss_agg_mode,
                       grad_clip=cfg.grad_clip, prefix="actor", micro_loss=micro_loss)

    def save(self, path: Path) -> None:
        _save_model(self.model, path)
        torch.save({"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                    "generator": self.generator.get_state()}, path / "optim.pt")

    def load(self, path: Path) -> None:
        _load_model_weights(self.model, path)
        state = torch.load(path / "optim.pt", weights_only=False)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.generator.set_state(state["generator"])


class CriticWorker:
    """The value model; with ``freeze`` it has no optimizer and only provides values."""

    def __init__(self, model: PreTrainedModel, critic_cfg: Any, mini_batch_size: int, ppo_epochs: int,
                 total_steps: int, seed: int) -> None:
        self.model = model
        self.cfg = critic_cfg
        self.mini_batch_size = mini_batch_size
        self.ppo_epochs = ppo_epochs
        self.frozen = critic_cfg.freeze
        if self.frozen:
            model.requires_grad_(False)
            self.optimizer = self.scheduler = None
        else:
            self.optimizer, self.scheduler = build_optimizer(model.parameters(), critic_cfg.optim, total_steps)
        self.generator = torch.Generator().manual_seed(seed + 1)

    @torch.no_grad()
    def compute_values(self, batch: Batch) -> torch.Tensor:
        """(B, R) values ``V(t)``, zero outside ``response_mask``."""
        device = _device_of(self.model)
        width = batch["responses"].shape[1]
        out = []
        for micro in batch.chunks(self.cfg.ppo_micro_batch_size or len(batch)):
            values = response_values(self.model, micro["input_ids"].to(device), micro["attention_mask"].to(device), width)
            out.append(values.cpu())
        return torch.cat(out) * batch["response_mask"].float()

    def update(self, batch: Batch) -> dict[str, float]:
        """Clipped value-loss regression of ``V`` onto ``returns`` (see :func:`value_loss`)."""
        if self.frozen:
            raise RuntimeError("critic.freeze is true: the critic is never updated")
        cfg = self.cfg
        width = batch["responses"].shape[1]

        def micro_loss(micro: Batch, mask: torch.Tensor, weight: float, stats: dict[str, list[float]]) -> torch.Tensor:
            vpreds = response_values(self.model, micro["input_ids"], micro["attention_mask"], width)
            loss, v_stats = value_loss(vpreds, micro["values"], micro["returns"], mask, cfg.cliprange_value,
                                       cfg.loss_agg_mode, weight)
            stats["critic/vf_loss"].append(loss.item() / max(weight, 1e-12))
            stats["critic/vf_clipfrac"].append(v_stats["vf_clipfrac"].item())
            stats["critic/vpred_mean"].append(masked_mean(vpreds.detach(), mask).item())
            return loss

        return _update(self.model, self.optimizer, self.scheduler, batch, epochs=self.ppo_epochs,
                       mini_batch_size=self.mini_batch_size, shuffle=False, generator=self.generator,
                       micro_batch_size=cfg.ppo_micro_batch_size, loss_agg_mode=cfg.loss_agg_mode,
                       grad_clip=cfg.grad_clip, prefix="critic", micro_loss=micro_loss)

    def save(self, path: Path) -> None:
        _save_model(self.model, path)
        if not self.frozen:
            torch.save({"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}, path / "optim.pt")

    def load(self, path: Path) -> None:
        _load_model_weights(self.model, path)
        if not self.frozen:
            state = torch.load(path / "optim.pt", weights_only=False)
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
