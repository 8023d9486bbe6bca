"""``batch``: verl's batched ``compute_score`` files, one call per batch."""
from __future__ import annotations

from typing import Any

from rewardsmith.common.errors import RewardError
from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.custom import BATCHED, check_signature
from rewardsmith.plugins.executors import BatchCallExecutor, Executor
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.plugins.scoring_plan import Component, ScoringPlan, WeightedScorer


class BatchRewardManager(RewardManager):
    """Calls ``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=, **kwargs)``
    once per batch and reads back one float or dict per sample, as verl's
    ``reward_manager=batch`` does.

    The function is ``custom_reward_function`` (or ``reward_model.scorer``);
    ``kwargs`` are ``custom_reward_function.reward_kwargs`` plus
    ``reward_model.reward_kwargs`` (verl passes the manager's options on to the
    function). Every sample is passed, duplicates included, since a batched
    function may score a sample against the rest of its batch. The call runs in
    a worker process with a hard timeout of ``reward_model.timeout`` per
    sample; a timeout, crash or exception gives each sample its fallback score
    and is counted, and the same exception on every sample stops the run
    (``reward_model.stop_when_all_fail``).
    """

    name = "batch"
    scorer_call = BATCHED
    score_identical_once = False

    def __init__(self, plan: ScoringPlan, settings: RewardSettings, **options: Any) -> None:
        super().__init__(plan, settings)
        try:
            (scorer,) = plan.scorers_for("")
        except Exception:  # noqa: BLE001 - routing by data_source gives no single function
            raise RewardError(
                "the batch reward manager calls one batched function for the whole batch: set "
                "custom_reward_function.path (and .name) to a file with compute_score(data_sources, "
                "solution_strs, ground_truths, extra_infos, **kwargs)"
            ) from None
        kwargs = {**scorer.kwargs, **options}
        check_signature(scorer.fn, BATCHED, kwargs, f"reward function '{scorer.name}'")
        ws = WeightedScorer(scorer.name, scorer.fn, 1.0, kwargs)
        self._fixed = [Component(ws.name, "rule", 1.0, "fallback", self.fallback_score, scorer=ws)]

    def make_executor(self) -> Executor:
        return BatchCallExecutor(self.settings.reward_model.timeout)

    def _route(self, batch) -> list[list]:
        super()._route(batch)  # the row checks (style, ...) of every manager
        return [self._fixed] * len(batch)
