"""The PPO trainer: one readable loop, like verl's ``fit``.

Per step: rollout (scored chunk by chunk as it is generated, see :meth:`PPOTrainer.generate_scored`)
-> old/reference log-probs and values -> rewards (reward
managers, or the critic) -> KL in the reward -> reward masking -> advantages
-> critic update -> actor update -> metrics, validation and checkpoints.
Models live inside workers, which build them; the trainer is the controller:
it moves CPU batches between workers, cuts updates into mini-batches (seeded
shuffle, global token counts) and syncs the rollout engine's weights after
each actor update.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import torch
from tqdm import tqdm

from rewardsmith.common.config import to_dict
from rewardsmith.core.batch import Batch, MiniBatch, chunk_ranges, mini_batches, prompt_order
from rewardsmith.core.checkpoint import (TRAINER_STATE, commit, copy_checkpoint, latest_checkpoint, partial_dir, prune,
                                         rng_state, set_aside, set_rng_state, step_of)
from rewardsmith.core.data import PromptDataset, PromptLoader, read_files
from rewardsmith.core.data_parallel import data_parallel
from rewardsmith.core.distributed import barrier, broadcast_object, init_distributed, release_process_group
from rewardsmith.core.dynamic_sampling import (GenerationBudgetExhausted, budget_message, concat_generated, concat_rewards,
                                               first_groups, keep_varied, leading_varied_groups, metric_values,
                                               select_reward)
from rewardsmith.core.fork_options import EntropyControl, mask_truncated_advantages, rejection_rows, sampled_entropy, truncated
from rewardsmith.core.kl import KLController, apply_kl_penalty
from rewardsmith.core.models import run_tokenizer
from rewardsmith.core.episode_rewards import place_turn_rewards
from rewardsmith.core.multi_turn import episode_metrics
from rewardsmith.core.reward_masking import (
    affected_groups,
    apply_reward_mask,
    critic_source_advantage,
    critic_token_level_scores,
    drop_unscored,
    flip_masked_advantages,
    loss_tokens,
    sample_reward_mask,
)
from rewardsmith.core.rollout import HandOver, SamplingParams, draw_seed, hand_over_at_once, rollout_probs_diff
from rewardsmith.core.rollout_correction import rollout_correction
from rewardsmith.core.reward_overlap import PendingReward, overlaps_by_default, slow_reward_line, worth_overlapping
from rewardsmith.core.rollout_dump import REWARD_CONFIG_FILE, dump_rollouts, rollout_records
from rewardsmith.core.seqlen_balancing import balance_order
from rewardsmith.core.strategy import pick_device
from rewardsmith.core.tracking import METRICS_FILE, Tracker
from rewardsmith.core.verl_keys import notices
from rewardsmith.core.workers import ActorRolloutWorker, CriticWorker, ReferenceWorker
from rewardsmith.plugins.batch import RewardBatch, scored_mean
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.loader import get_registry
from rewardsmith.plugins.receipts import Receipts, config_hash, reward_config, run_receipt, write_reward_config

# The Ray backend's rank actors sample with their own random streams, saved beside the controller's.
RAY_RNG_FILE = "actor_rank_rng.pt"

# Metrics that measure the machine, not the run (a resumed run differs only in these).
TIMING_PREFIXES = ("timing_s/", "perf/")
LATENCY_SUFFIXES = ("/latency_p50_ms", "/latency_p99_ms")


def measures_machine(key: str) -> bool:
    """Whether metric ``key`` measures the machine (a time, a speed, a latency) rather than the run."""
    return key.startswith(TIMING_PREFIXES) or key.endswith(LATENCY_SUFFIXES)


def output_dir(config: Any) -> Path:
    """``trainer.default_local_dir``, or ``outputs/<project_name>/<experiment_name>``."""
    t = config.trainer
    return Path(t.default_local_dir or Path("outputs") / t.project_name / t.experiment_name)


def setup_torch(trainer_cfg: Any) -> torch.device:
    """Seed torch, set its CPU threads and pick the device (``trainer.seed/cpu_threads/device``)."""
    torch.manual_seed(trainer_cfg.seed)
    if trainer_cfg.cpu_threads:
        torch.set_num_threads(trainer_cfg.cpu_threads)
    return pick_device(trainer_cfg.device)


def reward_batch(batch: Batch, texts: list[str], response_mask: Optional[torch.Tensor] = None,
                 response_lengths: Optional[list[int]] = None) -> RewardBatch:
    """What the reward managers see of a batch: its rows' reward fields and prompts, the decoded
    responses and their lengths in tokens (from ``response_mask``, or given)."""
    m = batch.meta
    return RewardBatch(data_sources=m["data_source"], solutions=texts, ground_truths=m["ground_truth"],
                       extra_infos=m["extra_info"], styles=m["style"], prompts=m["raw_prompt"],
                       response_mask=response_mask, response_lengths=response_lengths)


def response_lengths(batch: Batch) -> torch.Tensor:
    """(B,) each response's length in tokens: all it attends after the prompt, a multi-turn episode's tool
    responses included (its generated tokens alone are ``response_mask``, which may have gaps)."""
    return batch["attention_mask"][:, -batch["responses"].shape[1]:].sum(-1)


def _stats(prefix: str, values: torch.Tensor) -> dict[str, float]:
    if values.numel() == 0:
        return {}
    return {f"{prefix}/mean": values.float().mean().item(), f"{prefix}/max": values.max().item(), f"{prefix}/min": values.min().item()}


class PPOTrainer:
    """Builds the workers from a :class:`rewardsmith.core.schema.Config` and runs :meth:`fit`."""

    def __init__(self, config: Any, stream=None) -> None:
        self.config = config
        self.stream = stream
        c, t = config, config.trainer
        self.out_dir = output_dir(config)
        setup_torch(t)
        self.topology = init_distributed(t)
        self.is_main = self.topology.is_main

        self.tokenizer = run_tokenizer(c)
        self.train_set = PromptDataset(read_files(c.data.train_files, "data.train_files"), self.tokenizer, c.data)
        self.val_set = PromptDataset(read_files(c.data.val_files, "data.val_files"), self.tokenizer, c.data) if c.data.val_files else None
        # verl's loader batch is data.gen_batch_size when set (DAPO's generation batch); rllm's and Skywork-OR1's
        # rejection sampling loads rejection_sample_multiplier times train_batch_size prompts.
        loader_batch = c.data.gen_batch_size or c.data.train_batch_size
        if t.rejection_sample:
            loader_batch = int(c.data.train_batch_size * t.rejection_sample_multiplier)
        self.loader = PromptLoader(self.train_set, loader_batch, c.data.shuffle, c.data.seed)
        self.prompt_batches: Iterator[Batch] = iter(self.loader)  # lazy: reads the loader's position at each batch
        self.total_steps = t.total_training_steps or self.loader.batches_per_epoch * t.total_epochs

        algo = c.algorithm
        self.estimator = get_registry(c.plugins).advantage_estimator(algo.adv_estimator)
        needs_values = bool(getattr(self.estimator, "requires_values", False)) or algo.reward_source == "critic"
        self.use_critic = needs_values if c.critic.enable is None else c.critic.enable
        if needs_values and not self.use_critic:
            raise ValueError(f"algorithm.adv_estimator={algo.adv_estimator} needs a critic, but critic.enable is false")
        self.use_ref = algo.use_kl_in_reward or c.actor_rollout_ref.actor.use_kl_loss
        if algo.filter_groups.enable and (algo.use_kl_in_reward or algo.reward_source == "critic"):
            # verl's DAPO trainer filters before log-probs exist, so it cannot apply the in-reward KL either.
            raise ValueError("algorithm.filter_groups.enable filters groups on the reward before log-probs and values are "
                             "computed: it cannot be combined with algorithm.use_kl_in_reward or reward_source=critic")
        if t.rejection_sample and (algo.filter_groups.enable or c.data.gen_batch_size or algo.reward_source == "critic"
                                   or getattr(self.estimator, "requires_greedy_baseline", False)):
            raise ValueError("trainer.rejection_sample (rllm's, Skywork-OR1's) picks a step's groups by their scores from "
                             "train_batch_size * rejection_sample_multiplier prompts: it cannot be combined with "
                             "algorithm.filter_groups, data.gen_batch_size, reward_source=critic or a greedy baseline "
                             "(ReMax); use one of them")
        if getattr(self.estimator, "requires_sum_pi_squared", False) and not c.actor_rollout_ref.actor.calculate_sum_pi_squared:
            raise ValueError(f"algorithm.adv_estimator={algo.adv_estimator} weighs each token by sum_v pi(v)^2: set "
                             "actor_rollout_ref.actor.calculate_sum_pi_squared=true (as verl)")
        if algo.filter_groups.enable and getattr(self.estimator, "requires_greedy_baseline", False):
            raise ValueError(f"algorithm.adv_estimator={algo.adv_estimator} compares each sample with a greedy response to "
                             "its prompt, which a batch assembled by algorithm.filter_groups does not keep: use one or the other")

        actor_cfg, rollout_cfg = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout
        self.n = rollout_cfg.n
        self.world_size = t.nnodes * t.n_gpus_per_node
        self.actor_mini_batch_size = actor_cfg.ppo_mini_batch_size * self.n
        self.critic_mini_batch_size = (c.critic.ppo_mini_batch_size or actor_cfg.ppo_mini_batch_size) * self.n
        self.critic_epochs = c.critic.ppo_epochs or actor_cfg.ppo_epochs
        # The actor's mini-batch order; the critic's never shuffles.
        self.shuffle_generator = torch.Generator().manual_seed(t.seed)
        self.sampling = SamplingParams.from_config(rollout_cfg, c.data.max_response_length,
                                                   log_probs=algo.rollout_correction.needs_rollout_log_probs)
        self.val_sampling = SamplingParams.from_config(rollout_cfg.val_kwargs, c.data.max_response_length)
        self.kl_ctrl = KLController(algo.kl_ctrl.kl_coef, algo.kl_ctrl.type, algo.kl_ctrl.target_kl, algo.kl_ctrl.horizon)
        self.entropy_ctrl = EntropyControl(actor_cfg.entropy_coeff)  # Skywork-OR1's, used with actor.adaptive_entropy
        self.mask_generator = torch.Generator().manual_seed(t.seed + 7)
        # The generation batches' sampling seeds: a stream of their own, so that every torchrun rank, and one process,
        # draws the same seeds whatever else took from torch's global stream (model set-up, rank 0's scorers).
        self.rollout_generator = torch.Generator().manual_seed(t.seed + 11)
        # Validation's seed, the same at every validation: drawn from the training stream, a validation would
        # change the samples of every later step (and a run that validated before its checkpoint would resume
        # onto other samples than one that did not).
        self.val_seed = draw_seed(torch.Generator().manual_seed(t.seed + 13))
        self.global_step = 0
        self.own_steps: list[int] = []  # this run's checkpoints (and those it resumed after), oldest first
        self._reward_receipt: Optional[dict[str, str]] = None  # the run part of the rollout dump's receipts
        self._scoring: Optional[PendingReward] = None  # a reward call not yet joined (an interrupted step's)
        # Whether the last step's rewards were worth overlapping (reward_model.launch_reward_fn_async: null).
        self._rewards_worth_overlapping = True
        self.ray = None
        self.reward_manager = None
        # What starts processes comes last; a failure on the way stops whatever had started
        # (Ray ranks, a vLLM engine, reward workers), in reverse order, before the error propagates.
        with ExitStack() as started:
            self._start_workers(started)
            # Rank 0 scores and shares the verdict, so every rank's controller sees the same rewards.
            if self.is_main:
                self.reward_manager = build_reward_manager(config.reward_settings())
                started.callback(self.reward_manager.close)
                # Mistakes in the rows (no scorer, a model row without a model, a judge template field a
                # row lacks) fail now, naming the row, not in the middle of training.
                for dataset in (self.train_set, self.val_set):
                    if dataset is not None:
                        rows = dataset.reward_rows()
                        self.reward_manager.check_rows(reward_batch(rows, [""] * len(rows)))
                        self.reward_manager.check_data_sources(sorted(set(rows.meta["data_source"])))
            started.pop_all()  # all started: from here on close() stops them

    def _start_workers(self, started: ExitStack) -> None:
        """Build the actor (with its rollout engine), reference and critic workers, locally or as Ray
        rank actors; each thing started is registered on ``started`` to be stopped if a later step fails."""
        c, t = self.config, self.config.trainer
        if t.backend == "ray":
            from rewardsmith.core.ray_workers import RayBackend

            roles = ["actor"] + ["ref"] * self.use_ref + ["critic"] * self.use_critic
            self.ray = RayBackend(t, roles)
            started.callback(self.ray.shutdown)
            self.actor = self.ray.group("actor", ActorRolloutWorker, (c, self.total_steps))
            started.callback(self.actor.close)
            self.ref = self.ray.group("ref", ReferenceWorker, (c,)) if self.use_ref else None
            self.critic = self.ray.group("critic", CriticWorker, (c, self.total_steps)) if self.use_critic else None
        else:
            self.actor = data_parallel(ActorRolloutWorker(c, self.total_steps), self.topology)
            started.callback(self.actor.close)
            self.ref = data_parallel(ReferenceWorker(c), self.topology) if self.use_ref else None
            self.critic = data_parallel(CriticWorker(c, self.total_steps), self.topology) if self.use_critic else None

    # -- the loop ---------------------------------------------------------------
    def fit(self) -> dict[str, float]:
        """Train to ``total_steps``; returns the metrics of the last step (with its validation)."""
        t = self.config.trainer
        self._write(f"output directory: {self.out_dir.resolve()}")
        for line in notices(self.config):
            self._write(line)
        resumed = self.maybe_resume()
        if self.is_main and t.save_freq > 0:
            # Only this run's checkpoints stay beside it: pruning, the marker and new saves never touch another run's.
            self.own_steps, notes = set_aside(self.out_dir, self.global_step, resumed, records=[METRICS_FILE])
            for note in notes:
                self._write(note)
        barrier(self.topology)
        tracker = Tracker(self.out_dir, t.logger if self.is_main else [], resume_step=self.global_step, stream=self.stream,
                          project=t.project_name, experiment=t.experiment_name, config=to_dict(self.config))
        last: dict[str, float] = {}
        try:
            # verl's val_only validates the model it starts with (a resumed one too), then stops.
            if t.val_before_train and self.val_set is not None and (self.global_step == 0 or t.val_only):
                last = self.validate()
                tracker.log(self.global_step, last)
                if t.val_only:
                    return last
            self.prompt_batches = iter(self.loader)
            with tqdm(total=self.total_steps, initial=self.global_step, desc="training", disable=not (t.progress_bar and self.is_main),
                      file=self.stream, dynamic_ncols=True) as bar:
                while self.global_step < self.total_steps:
                    self.global_step += 1
                    last = self.train_step(next(self.prompt_batches))
                    done = self.global_step == self.total_steps
                    if self.val_set is not None and (done or (t.test_freq > 0 and self.global_step % t.test_freq == 0)):
                        last.update(self.validate())
                    tracker.log(self.global_step, last)
                    if t.save_freq > 0 and (done or self.global_step % t.save_freq == 0):
                        self.save_checkpoint()
                    bar.update(1)
                    if "critic/score/mean" in last:
                        bar.set_postfix(score=f"{last['critic/score/mean']:.3f}")
        finally:
            tracker.close()
        return last

    def train_step(self, prompts: Batch) -> dict[str, float]:
        """One PPO step on a batch of prompts; returns its metrics."""
        start = time.perf_counter()
        timing: dict[str, float] = {}
        batch, metrics = self.make_experience(prompts, timing)
        metrics.update(self.update(batch, timing))
        timing["step"] = time.perf_counter() - start
        self._rewards_worth_overlapping = worth_overlapping(timing)
        metrics.update(self._data_metrics(batch))
        if "multi_turn" in batch.meta:
            metrics.update(episode_metrics(batch))
        metrics.update({f"timing_s/{k}": v for k, v in timing.items()})
        tokens = batch["attention_mask"].sum().item()
        metrics["perf/total_num_tokens"] = float(tokens)
        metrics["perf/tokens_per_s"] = tokens / timing["step"]
        metrics["training/global_step"] = float(self.global_step)
        metrics["training/epoch"] = float(self.loader.epoch)
        line = slow_reward_line(metrics)
        if line:
            self._write(line)
        return metrics

    def make_experience(self, prompts: Batch, timing: Optional[dict[str, float]] = None) -> tuple[Batch, dict[str, float]]:
        """Rollout, log-probs, values, rewards and advantages for ``prompts`` (no update).

        The returned batch holds, besides the rollout's tensors,
        ``old_log_probs`` (unless the batch makes a single optimizer step, see
        :meth:`single_actor_step`), ``ref_log_prob`` (with a reference), ``values``
        (with a critic), ``token_level_scores``, ``token_level_rewards``,
        ``advantages``, ``returns``, ``reward_masked`` (B,) bool and
        ``unscored`` (B,) bool (samples no reward component could score, and
        with ReMax those whose greedy baseline is unscored: they leave the group
        statistics, the advantages, the losses and the critic/* metrics).
        """
        algo = self.config.algorithm
        timing = {} if timing is None else timing
        metrics: dict[str, float] = {}
        reward = None
        pending, order = None, None
        if algo.filter_groups.enable:
            batch, reward, filter_metrics = self.sample_varied_groups(prompts, timing)
            metrics.update(filter_metrics)
        elif self.config.trainer.rejection_sample:
            batch, reward, reject_metrics = self.reject_uniform_groups(prompts, timing)
            metrics.update(reject_metrics)
        else:
            # The rewards need only the responses: with overlap they run beside the generation
            # of the next chunk and the passes below.
            pending = self.open_scoring(self.overlap_rewards)
            batch = self.generate_scored(prompts, pending, timing)
        if self.config.trainer.balance_batch:
            order, balance = balance_order(batch, self.world_size, self.actor_mini_batch_size)
            batch = batch.select(order)
            reward = None if reward is None else select_reward(reward, order)
            metrics.update(balance)
        mask = batch["response_mask"].float()
        correction = algo.rollout_correction
        if correction.needs_rollout_log_probs and "rollout_log_probs" not in batch:
            raise ValueError(f"algorithm.rollout_correction needs the rollout's own log-probs, which the rollout engine "
                             f"{self.config.actor_rollout_ref.rollout.name!r} did not return (hf and vllm do)")
        sum_pi_squared = self.config.actor_rollout_ref.actor.calculate_sum_pi_squared
        # Skywork-OR1's adaptive entropy measures the step's entropy on the old log-probs.
        recompute = (algo.use_kl_in_reward or correction.enabled or self.config.actor_rollout_ref.actor.adaptive_entropy.enabled
                     or not self.single_actor_step(len(batch)))
        # In bypass mode the rollout's log-probs are the old ones: the pass runs only for sum_pi_squared.
        if (recompute and not correction.bypass_mode) or sum_pi_squared:
            with self._timer(timing, "old_log_prob"):
                if sum_pi_squared:
                    both = self.actor.compute_log_prob_and_sum_pi_squared(batch)
                    batch["old_log_probs"], batch["sum_pi_squared"] = both[:, 0], both[:, 1]
                else:
                    batch["old_log_probs"] = self.actor.compute_log_prob(batch)
            if "rollout_log_probs" in batch:
                metrics.update(rollout_probs_diff(batch["rollout_log_probs"], batch["old_log_probs"], batch["response_mask"]))
        if correction.bypass_mode:
            batch["old_log_probs"] = batch["rollout_log_probs"]
        elif correction.enabled:
            is_weights, batch["response_mask"], correction_metrics = rollout_correction(
                batch["old_log_probs"], batch["rollout_log_probs"], batch["response_mask"], correction)
            metrics.update(correction_metrics)
            if is_weights is not None:
                batch["rollout_is_weights"] = is_weights
            mask = batch["response_mask"].float()
        if self.ref is not None:
            with self._timer(timing, "ref"):
                batch["ref_log_prob"] = self.ref.compute_log_prob(batch)
        values = None
        if self.critic is not None:
            with self._timer(timing, "values"):
                values = batch["values"] = self.critic.compute_values(batch)

        if pending is not None:
            reward = self.finish_scoring(pending, timing)  # scored in the rollout's order
            reward = reward if order is None else select_reward(reward, order)
            metrics.update(pending.metrics)
        metrics.update(reward.metrics)
        if algo.reward_source == "critic":
            scores = critic_token_level_scores(values, batch["response_mask"])
        else:
            scores = reward.token_level_scores
            if self.config.actor_rollout_ref.rollout.multi_turn.turn_rewards_on_tokens:
                scores = place_turn_rewards(scores, batch.meta["multi_turn"])
        batch["token_level_scores"] = scores

        rewards = scores
        if algo.use_kl_in_reward:
            beta = self.kl_ctrl.value
            rewards, current_kl = apply_kl_penalty(scores, batch["old_log_probs"], batch["ref_log_prob"], mask, beta, algo.kl_penalty)
            self.kl_ctrl.update(current_kl, n_steps=len(batch))
            metrics["actor/reward_kl_penalty"] = current_kl
            metrics["actor/reward_kl_penalty_coeff"] = beta
        masked = torch.zeros(len(batch), dtype=torch.bool)
        if algo.reward_mask_ratio > 0:
            masked = sample_reward_mask(len(batch), algo.reward_mask_ratio, self.mask_generator)
            rewards = apply_reward_mask(rewards, masked)
            metrics["reward_mask/num_masked"] = float(masked.sum())
            metrics["reward_mask/mask_ratio_actual"] = float(masked.float().mean())
        batch["reward_masked"] = masked
        batch["token_level_rewards"] = rewards
        unscored = torch.zeros(len(batch), dtype=torch.bool)
        if reward.unscored is not None and algo.reward_source != "critic":  # the critic scores every sample
            unscored = reward.unscored
        baselines = {}
        if algo.reward_source != "critic" and getattr(self.estimator, "requires_greedy_baseline", False):
            baselines["reward_baselines"], no_baseline = self.greedy_baselines(prompts, batch.meta["uid"], timing)
            # A sample compared with an unscored greedy response has no advantage: it leaves the update as an
            # unscored one does (its own score, if it has one, still counts in the reward metrics).
            metrics["reward/unscored_baselines"] = float(affected_groups(batch.meta["uid"], no_baseline))
            unscored = unscored | no_baseline
        batch["unscored"] = unscored
        metrics["reward/unscored_groups"] = float(affected_groups(batch.meta["uid"], unscored))

        with self._timer(timing, "adv"):
            if algo.reward_source == "critic":
                advantages, returns = critic_source_advantage(rewards, values, mask)
            else:
                advantages, returns = self.estimator(
                    token_level_rewards=rewards, response_mask=mask, index=batch.meta["uid"], values=values,
                    gamma=algo.gamma, lam=algo.lam, norm_adv_by_std_in_grpo=algo.norm_adv_by_std_in_grpo,
                    scored=~unscored, reward_extra_info=reward.extra_info, gdpo_reward_keys=algo.gdpo_reward_keys,
                    gdpo_reward_weights=algo.gdpo_reward_weights, old_log_probs=batch.tensors.get("old_log_probs"),
                    sum_pi_squared=batch.tensors.get("sum_pi_squared"), rollout_is_weights=batch.tensors.get("rollout_is_weights"),
                    **baselines,
                )
                if algo.reward_mask_flip_adv_when_masked:
                    advantages = flip_masked_advantages(advantages, masked)
                if algo.mask_truncated_samples:
                    cut = truncated(batch["response_mask"], self.config.data.max_response_length)
                    advantages = mask_truncated_advantages(advantages, rewards.sum(-1), cut)
                    metrics["train/truncated_zero_advantage"] = float((cut & (rewards.sum(-1) == 0)).sum())
                if unscored.any():
                    advantages = drop_unscored(advantages, unscored)
        batch["advantages"], batch["returns"] = advantages, returns
        if self.config.trainer.rollout_data_dir and self.is_main:
            self.dump_rollouts(batch, reward)
        return batch, metrics

    def dump_rollouts(self, batch: Batch, reward: Any) -> Path:
        """Write this step's rollouts to ``trainer.rollout_data_dir`` (see :mod:`rewardsmith.core.rollout_dump`)."""
        inputs = [self.tokenizer.decode(row.tolist(), skip_special_tokens=True) for row in batch["prompts"]]
        responses = self.decode_responses(batch)
        if self._reward_receipt is None:  # the reward side is written once per run, beside the steps' files
            reward_side = reward_config(self.config.reward_settings(), self.config.data)
            path = Path(self.config.trainer.rollout_data_dir) / REWARD_CONFIG_FILE.format(hash=config_hash(reward_side))
            write_reward_config(reward_side, path)
            self._reward_receipt = run_receipt(reward_side, path)
        receipts = Receipts(self.reward_manager, self._reward_receipt).for_batch(reward_batch(batch, responses), reward.extra_info)
        records = rollout_records(
            self.global_step, batch.meta, self.config.data.reward_fn_key, inputs, responses,
            batch["token_level_scores"].sum(-1).tolist(), batch["token_level_rewards"].sum(-1).tolist(),
            (reward.unscored if reward.unscored is not None else torch.zeros(len(batch), dtype=torch.bool)).tolist(),
            reward.extra_info, receipts,
        )
        return dump_rollouts(self.config.trainer.rollout_data_dir, self.global_step, records)

    def sample_varied_groups(self, prompts: Batch, timing: dict[str, float]) -> tuple[Batch, Any, dict[str, float]]:
        """DAPO dynamic sampling (:mod:`rewardsmith.core.dynamic_sampling`): generate and score
        batches of prompts until ``data.train_batch_size`` groups whose metric varies are kept.

        With ``rollout.stream_chunks`` > 1 generation stops at the first chunk after which the
        scored chunks hold enough varied groups; the groups kept are the same as without it
        (the first ones, each prompt sampled from its own seed)."""
        fg, wanted = self.config.algorithm.filter_groups, self.config.data.train_batch_size
        batches, rewards, kept, generated = [], [], 0, 0
        while True:
            generated += 1
            pending = self.open_scoring(self.overlap_rewards)

            def enough(parts: list[tuple[list[int], Batch]], pending: PendingReward = pending) -> bool:
                # Only rank 0 scores; every rank must generate as many chunks.
                varied = kept + leading_varied_groups(parts, pending.scored(), fg.metric)
                return bool(broadcast_object(varied >= wanted, self.topology))

            batch = self.generate_scored(prompts, pending, timing, enough)
            reward = self.finish_scoring(pending, timing)
            batch, reward, groups = keep_varied(batch, reward, fg.metric)
            batches.append(batch)
            rewards.append(reward)
            kept += groups
            if kept >= wanted:
                break
            if 0 < fg.max_num_gen_batches <= generated:
                raise GenerationBudgetExhausted(budget_message(generated, fg.max_num_gen_batches, kept, wanted, fg.metric))
            prompts = next(self.prompt_batches)
        batch, reward = first_groups(concat_generated(batches, self.tokenizer.pad_token_id), concat_rewards(rewards), wanted)
        metrics = {"train/num_gen_batches": float(generated), "train/num_kept_groups": float(kept),
                   "train/kept_group_ratio": kept / (generated * self.loader.batch_size)}
        return batch, reward, metrics

    def reject_uniform_groups(self, prompts: Batch, timing: dict[str, float]) -> tuple[Batch, Any, dict[str, float]]:
        """rllm's / Skywork-OR1's rejection sampling (:func:`rewardsmith.core.fork_options.rejection_rows`): generate and
        score ``prompts``, keep the groups not all 0 and not all 1 (cut to a multiple of the rank count); a batch
        that keeps nothing is skipped for the next prompts, as the forks do, without counting a step."""
        while True:
            pending = self.open_scoring(self.overlap_rewards)
            batch = self.generate_scored(prompts, pending, timing)
            reward = self.finish_scoring(pending, timing)
            kept = rejection_rows(batch.meta["uid"], metric_values("seq_reward", reward), self.world_size)
            if kept.rows:
                break
            prompts = next(self.prompt_batches)
        groups = len(set(batch.meta["uid"]))
        metrics = {"batch/solve_none": float(kept.solve_none), "batch/solve_all": float(kept.solve_all),
                   "batch/solve_partial": float(groups - kept.solve_none - kept.solve_all),
                   "batch/kept_samples": float(len(kept.rows))}
        return batch.select(kept.rows), select_reward(reward, kept.rows), metrics

    def generate_scored(self, prompts: Batch, pending: PendingReward, timing: dict[str, float],
                        enough: Optional[Callable[[list[tuple[list[int], Batch]]], bool]] = None) -> Batch:
        """Generate ``prompts`` in ``rollout.stream_chunks`` chunks of whole prompt groups, handing the
        responses to ``pending`` as soon as they exist: each chunk once generated, or with
        ``rollout.stream_requests`` each prompt group the engine has finished (the hf engine only where the rewards
        overlap or ``enough`` can stop it). Before each further hand-over
        stop once ``enough(parts so far)``, a part being (its prompts' rows in ``prompts``, its samples).
        Each prompt samples from its own seed (:class:`SamplingParams`), so the samples are those of one call
        on all of ``prompts``, returned in the prompts' order (``pending`` reorders its scores alike)."""
        sampling = dataclasses.replace(self.sampling, seed=draw_seed(self.rollout_generator))
        # Streaming pays where scoring runs beside the engine (on the reward thread, or in this thread while vLLM's
        # engine steps in its own process) or can stop it early. The hf engine's inline rewards with no stop check
        # would only be interleaved with its token steps, whose watch for ended groups costs each a host sync (on a
        # GPU, 0.86x the step of one call with no costly reward).
        rollout = self.config.actor_rollout_ref.rollout
        streamed = rollout.stream_requests and (pending.overlap or enough is not None or rollout.engine == "vllm")
        parts: list[tuple[list[int], Batch]] = []
        taking = [0.0]

        def take(offset: int, rows: list[int], samples: Batch) -> bool:
            start = time.perf_counter()
            self.submit_scoring(pending, samples)
            parts.append(([offset + i for i in rows], samples))
            stop = enough is not None and enough(parts)
            taking[0] += time.perf_counter() - start
            return stop

        with self._rollout_phase():
            start = time.perf_counter()
            for rows in chunk_ranges(len(prompts), self.config.actor_rollout_ref.rollout.stream_chunks):
                params = dataclasses.replace(sampling, first_prompt=rows.start)
                if self._generated(prompts.select(rows), params, functools.partial(take, rows.start), streamed):
                    break
            # Generation time: what the hand-overs (inline scoring, the DAPO check) did not take.
            timing["gen"] = timing.get("gen", 0.0) + time.perf_counter() - start - taking[0]
        if len(parts) == 1:
            return parts[0][1]
        batch = Batch.concat([samples for _, samples in parts])
        order = prompt_order([rows for rows, _ in parts], sampling.n)
        if order != list(range(len(batch))):
            pending.order = order
            batch = batch.select(order)
        return batch

    def _generated(self, prompts: Batch, params: SamplingParams, take: HandOver, streamed: bool) -> bool:
        """Hand the samples of ``prompts`` to ``take`` as (rows, samples) parts: as the engine finishes them when
        ``streamed``, else in one part. True once ``take`` asked to stop."""
        if streamed:
            return self.actor.generate_stream(prompts, params, take)
        return hand_over_at_once(self.actor.generate, prompts, params, take)

    def single_actor_step(self, batch_size: int) -> bool:
        """Whether a batch of ``batch_size`` samples makes exactly one actor optimizer step.

        Then the policy being updated is the one that sampled the batch, its
        old log-probs equal the current ones, and recomputing them is skipped.
        """
        return self.config.actor_rollout_ref.actor.ppo_epochs == 1 and batch_size <= self.actor_mini_batch_size

    def actor_mini_batches(self, batch: Batch) -> list[MiniBatch]:
        """The actor update's mini-batches: ``ppo_epochs`` passes, shuffled with ``actor.shuffle``."""
        cfg = self.config.actor_rollout_ref.actor
        return mini_batches(batch, self.actor_mini_batch_size, cfg.ppo_epochs, cfg.shuffle, self.shuffle_generator)

    def critic_mini_batches(self, batch: Batch) -> list[MiniBatch]:
        """The critic update's mini-batches, in the batch's order."""
        return mini_batches(batch, self.critic_mini_batch_size, self.critic_epochs, False, self.shuffle_generator)

    def update(self, batch: Batch, timing: Optional[dict[str, float]] = None) -> dict[str, float]:
        """Critic update (unless frozen), then actor update (after ``trainer.critic_warmup`` steps)
        and the rollout engine's weight sync."""
        timing = {} if timing is None else timing
        metrics: dict[str, float] = {}
        left_out = batch["unscored"] if "unscored" in batch else torch.zeros(len(batch), dtype=torch.bool)
        if self.config.trainer.remove_clip:  # SimpleRL-Zoo's: truncated responses leave the losses
            cut = truncated(batch["response_mask"], self.config.data.max_response_length)
            metrics["train/removed_clipped"] = float(cut.sum())
            left_out = left_out | cut
        if left_out.any():
            # Unscored samples leave both losses and their token and sequence counts.
            batch = Batch({**batch.tensors, "response_mask": loss_tokens(batch["response_mask"], left_out)}, batch.meta)
        adaptive = self.config.actor_rollout_ref.actor.adaptive_entropy
        if self.critic is not None:
            if self.config.critic.freeze:
                metrics["critic/frozen"] = 1.0
            else:
                with self._timer(timing, "update_critic"):
                    metrics.update(self.critic.update(self.critic_mini_batches(batch)))
        if self.global_step > self.config.trainer.critic_warmup:
            with self._timer(timing, "update_actor"):
                if adaptive.enabled:
                    metrics.update(self.actor.update(self.actor_mini_batches(batch), self.entropy_ctrl.realized))
                else:
                    metrics.update(self.actor.update(self.actor_mini_batches(batch)))
            with self._timer(timing, "sync_weights"):
                self.actor.sync_rollout_weights()
        if adaptive.enabled:
            entropy = sampled_entropy(batch["old_log_probs"], batch["response_mask"].float())
            metrics["actor/entropy_coeff"] = self.entropy_ctrl.realized
            metrics["actor/sampled_entropy"] = entropy
            self.entropy_ctrl = self.entropy_ctrl.next(entropy, adaptive.target_entropy, adaptive.delta_ent_coef,
                                                       adaptive.min_ent_coef, adaptive.max_ent_coef)
        return metrics

    def greedy_baselines(self, prompts: Batch, uids: list, timing: dict[str, float]) -> tuple[torch.Tensor, torch.Tensor]:
        """ReMax's baseline, matched by uid: (B,) the reward of a greedy response to each sample's prompt,
        and (B,) bool, True where that greedy response is unscored (its reward is only a placeholder)."""
        greedy = dataclasses.replace(self.sampling, n=1, do_sample=False)
        with self._timer(timing, "gen_baseline"), self._rollout_phase():
            responses = self.actor.generate(prompts, greedy)
        reward = self.score(responses, timing)
        scores = reward.token_level_scores.sum(-1).tolist()
        unscored = reward.unscored.tolist() if reward.unscored is not None else [False] * len(scores)
        by_uid = {uid: (score, bad) for uid, score, bad in zip(responses.meta["uid"], scores, unscored)}
        return (torch.tensor([by_uid[uid][0] for uid in uids]), torch.tensor([by_uid[uid][1] for uid in uids], dtype=torch.bool))

    def score(self, batch: Batch, timing: Optional[dict[str, float]] = None):
        """The reward managers' verdict on a generated batch (decoded responses, token-level scores),
        under the step's budget (``reward_model.step_budget_s``)."""
        pending = self.open_scoring(overlap=False)
        self.submit_scoring(pending, batch)
        return self.finish_scoring(pending, {} if timing is None else timing)

    def open_scoring(self, overlap: bool) -> PendingReward:
        """A step's reward call, on a background thread when ``overlap``, for the chunks :meth:`submit_scoring`
        hands it; see :meth:`finish_scoring`."""
        self._scoring = PendingReward.open(self.reward_manager, overlap, self.config.reward_model.step_budget_s)
        return self._scoring

    def submit_scoring(self, pending: PendingReward, batch: Batch) -> None:
        """Have ``pending`` score the generated ``batch`` (rank 0 decodes and scores)."""
        if self.reward_manager is not None:
            pending.submit(reward_batch(batch, self.decode_responses(batch), batch["response_mask"],
                                        response_lengths(batch).tolist()))

    def finish_scoring(self, pending: PendingReward, timing: dict[str, float]):
        """Wait for ``pending`` (adding ``reward_wait``/``reward_total`` to ``timing``); rank 0 shares the verdict."""
        result = pending.join(timing)
        self._scoring = None
        return broadcast_object(result, self.topology)

    @property
    def overlap_rewards(self) -> bool:
        """``reward_model.launch_reward_fn_async``, its null resolved by :func:`overlaps_by_default` and,
        after the first step, by whether the last step's rewards were :func:`worth_overlapping`."""
        choice = self.config.reward_model.launch_reward_fn_async
        if choice is not None or self.reward_manager is None:
            return bool(choice)
        return overlaps_by_default(self.reward_manager) and self._rewards_worth_overlapping

    def decode_responses(self, batch: Batch) -> list[str]:
        """Each sample's response text (a multi-turn episode's with its tool responses), special tokens dropped."""
        lengths = response_lengths(batch).tolist()
        return [self.tokenizer.decode(row[:n].tolist(), skip_special_tokens=True) for row, n in zip(batch["responses"], lengths)]

    def score_texts(self, rows: Batch, texts: list[str], response_mask: Optional[torch.Tensor] = None,
                    response_lengths: Optional[list[int]] = None):
        """The reward managers' verdict on ``texts``, the responses to ``rows``; rank 0 scores and shares it."""
        result = None
        if self.reward_manager is not None:
            result = self.reward_manager(reward_batch(rows, texts, response_mask, response_lengths))
        return broadcast_object(result, self.topology)

    def _data_metrics(self, batch: Batch) -> dict[str, float]:
        """Statistics of the step's batch; the reward ones (score, rewards, advantages, returns) over the
        samples the update used: an unscored sample's score is a placeholder (counted in ``reward/unscored``)."""
        mask = batch["response_mask"].bool()
        lengths = response_lengths(batch).float()
        used = ~batch["unscored"]
        used_tokens = mask & used.unsqueeze(-1)
        metrics = {}
        metrics.update(_stats("critic/score", batch["token_level_scores"].sum(-1)[used]))
        metrics.update(_stats("critic/rewards", batch["token_level_rewards"].sum(-1)[used]))
        metrics.update(_stats("critic/advantages", batch["advantages"][used_tokens]))
        metrics.update(_stats("critic/returns", batch["returns"][used_tokens]))
        if "values" in batch:
            metrics.update(_stats("critic/values", batch["values"][mask]))
        metrics.update(_stats("response_length", lengths))
        metrics["response_length/clip_ratio"] = (lengths == batch["responses"].shape[1]).float().mean().item()
        metrics.update(_stats("prompt_length", batch["prompts"].ne(self.tokenizer.pad_token_id).sum(-1).float()))
        return metrics

    # -- validation ---------------------------------------------------------------
    def validate(self) -> dict[str, float]:
        """Generate for every validation prompt with ``rollout.val_kwargs`` and score it.

        Returns ``val/reward/mean``, ``val/reward/<data_source>/mean`` (over
        the scored samples; none scored: absent), ``val/response_length/mean``
        and the reward managers' own metrics under ``val/`` (``val/reward/unscored``,
        per component, per data_source, failures), model rows included, and a
        multi-turn rollout's episode metrics (``val/num_turns/mean``, ``val/tool/...``).
        """
        assert self.val_set is not None
        size = self.config.data.val_batch_size or len(self.val_set)
        # One seed for the whole set: each prompt samples by its place in it, whatever val_batch_size cuts it into.
        sampling = dataclasses.replace(self.val_sampling, seed=self.val_seed)
        with self._rollout_phase():
            batches = [self.actor.generate(self.val_set.collate(range(start, min(start + size, len(self.val_set))), uid_prefix="val-"),
                                           dataclasses.replace(sampling, first_prompt=start))
                       for start in range(0, len(self.val_set), size)]
        texts = [text for b in batches for text in self.decode_responses(b)]
        lengths = [int(n) for b in batches for n in response_lengths(b).tolist()]
        prompts = [row for b in batches for row in b["prompts"]]
        # One reward call for the whole set, so its metrics (counts, means) cover all of it.
        rows = Batch(meta={k: [v for b in batches for v in b.meta[k]] for k in batches[0].meta})
        # The lengths, not the masks: the batches' widths may differ, and the dapo
        # manager's overlong penalty needs them in validation as in training.
        out = self.score_texts(rows, texts, response_lengths=lengths)
        scores, sources = out.scores.tolist(), rows.meta["data_source"]
        unscored = out.unscored.tolist() if out.unscored is not None else [False] * len(scores)
        for i in range(min(self.config.trainer.log_val_generations, len(texts))):
            prompt = self.tokenizer.decode(prompts[i].tolist(), skip_special_tokens=True)
            self._write(f"[val] {prompt!r} -> {texts[i]!r} " + ("unscored" if unscored[i] else f"score={scores[i]:.3g}"))
        # The manager's own metrics (``val/reward/mean``, ``val/reward/unscored``, per source and component).
        metrics = {f"val/{k}": v for k, v in out.metrics.items()}
        if "multi_turn" in rows.meta:
            metrics.update({f"val/{k}": v for k, v in episode_metrics(batches).items()})
        metrics["val/response_length/mean"] = sum(lengths) / len(lengths)
        for source in sorted(set(sources)):
            picked = [i for i, src in enumerate(sources) if src == source]
            mean = scored_mean([scores[i] for i in picked], [unscored[i] for i in picked])
            if mean is not None:
                metrics[f"val/reward/{source}/mean"] = mean
        return metrics

    # -- checkpoints ---------------------------------------------------------------
    def save_checkpoint(self) -> Path:
        """Models, optimizers, data position, KL controller and RNG of the current step.

        Every rank saves its workers' shards and its own RNG (``rng_rank<r>.pt``) into
        ``global_step_<N>.partial``; rank 0 writes the rest, renames it to
        ``global_step_<N>`` and marks it the latest (core/checkpoint.py: a crash at any
        point leaves the previous checkpoint or this one, whole), then prunes this run's
        older ones to ``trainer.max_ckpt_to_keep``. Returns the partial path on other ranks.
        """
        path = partial_dir(self.out_dir, self.global_step)
        self.actor.save_checkpoint(path / "actor")
        if self.critic is not None:
            self.critic.save_checkpoint(path / "critic")
        if self.topology.distributed:
            torch.save(rng_state(), path / f"rng_rank{self.topology.rank}.pt")
        if self.ray is not None:
            torch.save(self.actor.rng_states(), path / RAY_RNG_FILE)
        barrier(self.topology)
        if not self.is_main:
            return path
        self.tokenizer.save_pretrained(path / "actor")
        torch.save({
            "global_step": self.global_step,
            "loader": self.loader.state_dict(),
            "kl_ctrl": self.kl_ctrl.state_dict(),
            "entropy_ctrl": dataclasses.asdict(self.entropy_ctrl),
            "mask_generator": self.mask_generator.get_state(),
            "shuffle_generator": self.shuffle_generator.get_state(),
            "rollout_generator": self.rollout_generator.get_state(),
            "rng": rng_state(),
            "world_size": self.world_size,
        }, path / TRAINER_STATE)
        path = commit(self.out_dir, self.global_step)
        if self.config.trainer.default_hdfs_dir:
            copy_checkpoint(path, Path(self.config.trainer.default_hdfs_dir).expanduser())
        self.own_steps = prune(self.out_dir, [*self.own_steps, self.global_step], self.config.trainer.max_ckpt_to_keep)
        return path

    def maybe_resume(self) -> Optional[Path]:
        """Restore from ``trainer.resume_mode``'s checkpoint, if there is one."""
        t = self.config.trainer
        if t.resume_mode == "disable":
            return None
        if t.resume_mode == "resume_path":
            path = Path(t.resume_from_path)
            step_of(path)
            if not (path / TRAINER_STATE).is_file():
                raise FileNotFoundError(f"trainer.resume_from_path={path} holds no {TRAINER_STATE}")
        else:
            path = latest_checkpoint(self.out_dir)
            if path is None:
                return None
        state = torch.load(path / TRAINER_STATE, weights_only=False)
        saved_world = state.get("world_size", 1)
        if saved_world != self.world_size:
            raise ValueError(f"checkpoint {path} was written by {saved_world} ranks; resume it with as many "
                             f"(this run has {self.world_size})")
        self.actor.load_checkpoint(path / "actor")
        if self.critic is not None:
            if not (path / "critic").is_dir():
                raise FileNotFoundError(f"checkpoint {path} has no critic/ but this run uses a critic")
            self.critic.load_checkpoint(path / "critic")
        self.global_step = int(state["global_step"])
        self.loader.load_state_dict(state["loader"])
        self.kl_ctrl.load_state_dict(state["kl_ctrl"])
        if "entropy_ctrl" in state:  # checkpoints written before the adaptive entropy control have none
            self.entropy_ctrl = EntropyControl(**state["entropy_ctrl"])
        self.mask_generator.set_state(state["mask_generator"])
        self.shuffle_generator.set_state(state["shuffle_generator"])
        if "rollout_generator" in state:  # absent from checkpoints written before it existed
            self.rollout_generator.set_state(state["rollout_generator"])
        # Last: loading models above may have drawn from the global generators.
        set_rng_state(torch.load(path / f"rng_rank{self.topology.rank}.pt", weights_only=False)
                      if self.topology.distributed else state["rng"])
        if self.ray is not None:
            self.actor.set_rng_states(torch.load(path / RAY_RNG_FILE, weights_only=False))
        self._write(f"resumed from {path} at step {self.global_step}")
        return path

    def close(self) -> None:
        """Stop the reward workers, the rollout engines and, on Ray, every rank (the cluster itself stays up)."""
        if self._scoring is not None:
            self._scoring.cancel()  # an interrupted step's rewards: the manager is closed under them
        if self.reward_manager is not None:
            self.reward_manager.close()
        try:
            self.actor.close()
        finally:
            if self.ray is not None:
                self.ray.shutdown()
            release_process_group()

    def _write(self, text: str) -> None:
        if self.is_main:
            tqdm.write(text, file=self.stream)

    @contextmanager
    def _rollout_phase(self) -> Iterator[None]:
        """Generation: the rollout engine is awake inside, asleep outside."""
        self.actor.wake_rollout()
        try:
            yield
        finally:
            self.actor.sleep_rollout()

    @staticmethod
    @contextmanager
    def _timer(timing: dict[str, float], name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        timing[name] = time.perf_counter() - start
