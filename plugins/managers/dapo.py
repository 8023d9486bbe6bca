"""``dapo``: DAPO's overlong penalty on top of rule scores."""
from __future__ import annotations

from typing import Any, Optional

import torch

from rewardsmith.common.errors import ConfigError
from rewardsmith.common.config import build
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.config import OverlongBufferConfig, RewardSettings
from rewardsmith.plugins.executors import Executor
from rewardsmith.plugins.managers.base import RewardManager, serial_executor
from rewardsmith.plugins.managers.parallel import pool_executor
from rewardsmith.plugins.scoring_plan import ScoringPlan


def overlong_penalty(lengths: torch.Tensor, max_resp_len: int, buffer_len: int, penalty_factor: float) -> torch.Tensor:
    """DAPO's soft overlong punishment per response.

    ``penalty = min(-(L - (max_resp_len - buffer_len)) / buffer_len * penalty_factor, 0)``:
    zero up to ``max_resp_len - buffer_len`` tokens, then falling linearly to
    ``-penalty_factor`` at ``max_resp_len``.
    """
    expected = max_resp_len - buffer_len
    return torch.clamp(-(lengths.float() - expected) / buffer_len * penalty_factor, max=0.0)


class DapoRewardManager(RewardManager):
    """Rule scores plus the overlong penalty of ``reward_model.overlong_buffer``.

    verl's spelling also works: ``reward_model.reward_kwargs.overlong_buffer_cfg``
    and ``reward_model.reward_kwargs.max_resp_len``. With
    ``reward_model.num_workers`` > 1 it scores in a process pool as ``parallel``
    does, else one sample after another as ``naive`` does; both within
    ``reward_model.timeout``.
    """

    name = "dapo"

    def __init__(self, plan: ScoringPlan, settings: RewardSettings, overlong_buffer_cfg: Optional[dict] = None,
                 max_resp_len: Optional[int] = None, **options: Any) -> None:
        super().__init__(plan, settings, **options)
        rm = settings.reward_model
        self.buffer = rm.overlong_buffer if overlong_buffer_cfg is None else build(
            OverlongBufferConfig, dict(overlong_buffer_cfg), "reward_model.reward_kwargs.overlong_buffer_cfg.")
        self.max_resp_len = max_resp_len or rm.max_resp_len or settings.max_response_length
        if self.buffer.enable and not self.max_resp_len:
            raise ConfigError("the dapo overlong penalty needs reward_model.max_resp_len (or data.max_response_length)")
        if self.buffer.enable and self.buffer.len > self.max_resp_len:
            raise ConfigError(
                f"reward_model.overlong_buffer.len ({self.buffer.len}) must not exceed max_resp_len ({self.max_resp_len})"
            )

    @property
    def needs_response_lengths(self) -> bool:
        """Whether scoring reads ``batch.response_lengths``: the overlong penalty counts tokens."""
        return self.buffer.enable

    def make_executor(self) -> Executor:
        workers = self.settings.reward_model.num_workers
        if workers is not None and workers > 1:
            return pool_executor(self.settings, workers)
        return serial_executor(self.settings)

    def postprocess(self, batch: RewardBatch, scores: torch.Tensor, extra_info: dict[str, list]) -> torch.Tensor:
        if not self.buffer.enable:
            return scores
        if batch.response_lengths is None:
            raise ValueError(
                "the dapo overlong penalty needs response lengths in tokens: train with a response mask, "
                "or give each offline row a 'response_length' field"
            )
        penalty = overlong_penalty(torch.tensor(batch.response_lengths), self.max_resp_len,
                                   self.buffer.len, self.buffer.penalty_factor)
        if self.buffer.log:
            extra_info["overlong_reward"] = penalty.tolist()
            extra_info["overlong"] = (penalty < 0).tolist()
        return scores + penalty
