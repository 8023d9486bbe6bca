"""``prime``: verl's PRIME reward manager (``verl/workers/reward_manager/prime.py``).

As in verl: every sample is scored in parallel in a process pool of up to 64
workers (here ``reward_model.num_workers``, else min(64, CPU count)), each
sample under a hard 300-second timeout (verl's fixed value; a hung scorer's
worker is killed and replaced; another ``reward_model.timeout`` is refused by
name), and the score lands on the last valid response token. verl also
stores the scores as the batch's ``acc``; here they are the per-sample extra
info ``acc`` (unless the scorer reports its own ``acc``).

A failed or timed-out sample is unscored, with ``reward_model.fallback_score``
(default 0.0, verl's value) as its placeholder score, and, unlike verl, is
counted (``reward_status``, ``reward/timeouts``, ``reward/errors``,
``reward/unscored``) and left out of the group statistics, as with every manager. Differences from
verl 0.9.1: a scorer that returns a tuple or list (verl takes its first item)
is an invalid return here, and one that returns a dict (which makes verl's
``prime`` score the whole batch 0.0) gives its ``score``.
"""
from __future__ import annotations

import os
from typing import Any

import torch

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import DEFAULT_TIMEOUT_S, RewardSettings
from rewardsmith.plugins.executors import Executor
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.plugins.managers.parallel import pool_executor
from rewardsmith.plugins.scoring_plan import ScoringPlan

# verl's PrimeRewardManager: ProcessPoolExecutor(max_workers=64), asyncio.wait_for(..., timeout=300.0).
PRIME_MAX_WORKERS = 64
PRIME_TIMEOUT_S = 300.0


class PrimeRewardManager(RewardManager):
    """verl's ``prime``: parallel scoring with a 300 s per-sample timeout; scores also as ``acc``."""

    name = "prime"

    def __init__(self, plan: ScoringPlan, settings: RewardSettings, **options: Any) -> None:
        # Its timeout is verl's fixed one: another reward_model.timeout would be silently ignored.
        if settings.reward_model.timeout != DEFAULT_TIMEOUT_S:
            raise ConfigError(
                f"reward_model.timeout={settings.reward_model.timeout:g}: the prime manager keeps verl's fixed "
                f"{PRIME_TIMEOUT_S:g} s per sample; drop the key, or use reward_model.reward_manager=parallel, "
                "which applies it")
        super().__init__(plan, settings, **options)

    def make_executor(self) -> Executor:
        workers = self.settings.reward_model.num_workers or min(PRIME_MAX_WORKERS, os.cpu_count() or 1)
        return pool_executor(self.settings, workers, timeout=PRIME_TIMEOUT_S)

    def postprocess(self, batch: RewardBatch, scores: torch.Tensor, extra_info: dict[str, list[Any]]) -> torch.Tensor:
        # verl stores the scores as `acc`; a scorer that reports its own acc (math_dapo) keeps it.
        extra_info.setdefault("acc", scores.tolist())
        return scores
