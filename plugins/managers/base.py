"""The reward manager: a batch of rollouts in, rewards and everything said about them out.

Subclasses choose where scorers run (:meth:`RewardManager.make_executor`) and
may reshape the final scores (:meth:`RewardManager.postprocess`, e.g. DAPO's
overlong penalty). Everything else, shared by every manager, lives here:
routing each row to its scorers, scoring identical samples once, combining
weighted scorers, fallback scores for failures, the union of extra info, and
metrics per data_source.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Optional

import torch

from rewardkit.plugins.config import RewardSettings
from rewardkit.plugins.batch import RewardBatch, RewardOutput, token_level_scores
from rewardkit.common.errors import RewardError, NotRegistered
from rewardkit.plugins.executors import Executor, Progress, ScoreJob, SerialExecutor, raise_if_all_failed
from rewardkit.plugins.scoring_plan import ScoringPlan
from rewardkit.plugins.scoring import ABSTAIN, CRASH, ERROR, INVALID, OK, TIMEOUT, UNAVAILABLE, ScoreOutcome

# When a sample has several scorers, its status is the most serious of theirs.
_SEVERITY = [OK, ABSTAIN, INVALID, ERROR, UNAVAILABLE, CRASH, TIMEOUT]



def _freeze(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


class RewardManager:
    """Base reward manager: serial, in-process scoring.

    ``settings`` are the run's reward settings; ``options`` are
    ``reward_model.reward_kwargs`` (verl passes those to the manager), and a
    manager that takes none rejects them by name.
    """

    name = "base"
    # How scorers are called: "per_sample" (verl's compute_score) or "batched" (the batch manager).
    scorer_call = "per_sample"
    # Score identical samples once; a batched function sees every sample, as in verl.
    score_identical_once = True

    def __init__(self, plan: ScoringPlan, settings: RewardSettings, **options: Any) -> None:
        if options:
            raise RewardError(
                f"reward manager '{self.name}' does not take reward_model.reward_kwargs "
                f"{', '.join(sorted(options))}"
            )
        self.plan = plan
        self.settings = settings
        self.fallback_score = float(settings.reward_model.fallback_score)
        self.executor: Executor = self.make_executor()

    def make_executor(self) -> Executor:
        """Where scorer calls run."""
        return SerialExecutor()

    def check_data_sources(self, data_sources: list[str]) -> None:
        """Raise, listing the known data sources, if any of ``data_sources`` has no scorer."""
        self.plan.check(data_sources)

    def close(self) -> None:
        """Release worker processes or threads."""
        self.executor.close()

    def __enter__(self) -> "RewardManager":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipeline ----------------------------------------------------------
    def __call__(self, batch: RewardBatch, progress: Optional[Progress] = None) -> RewardOutput:
        """Score ``batch``; ``progress`` counts scorer calls (identical samples are scored once)."""
        plans = self._route(batch)
        jobs: list[ScoreJob] = []
        index: dict[tuple, int] = {}
        job_of: list[list[int]] = []
        for i, scorers in enumerate(plans):
            ids = []
            for ws in scorers:
                key = (ws.name, batch.data_sources[i], batch.solutions[i],
                       _freeze(batch.ground_truths[i]), _freeze(batch.extra_infos[i])) if self.score_identical_once else (ws.name, i)
                if key not in index:
                    index[key] = len(jobs)
                    jobs.append(ScoreJob(ws.name, ws.fn, batch.data_sources[i], batch.solutions[i],
                                         batch.ground_truths[i], batch.extra_infos[i], ws.kwargs))
                ids.append(index[key])
            job_of.append(ids)
        if progress is not None:
            progress.reset(total=len(jobs))
        outcomes = self.executor.run(jobs, progress) if jobs else []
        if self.settings.reward_model.stop_when_all_fail:
            raise_if_all_failed(jobs, outcomes)

        scores = torch.zeros(len(batch), dtype=torch.float32)
        per_sample: list[dict[str, Any]] = []
        scorer_values: dict[str, list[float]] = defaultdict(list)
        for i, scorers in enumerate(plans):
            results = [outcomes[j] for j in job_of[i]]
            scores[i], info = self._combine(scorers, results)
            for ws, r in zip(scorers, results):
                if r.status == OK:
                    scorer_values[ws.name].append(r.score)  # type: ignore[arg-type]
            per_sample.append(info)

        extra_info = _union(per_sample)
        scores = self.postprocess(batch, scores, extra_info)
        extra_info["score"] = scores.tolist()
        calls = sum(len(p) for p in plans)
        metrics = self._metrics(batch, scores, extra_info["reward_status"], scorer_values, len(jobs) / max(1, calls))
        out = RewardOutput(scores=scores, extra_info=extra_info, metrics=metrics)
        if batch.response_mask is not None:
            out.token_level_scores = token_level_scores(scores, batch.response_mask)
        return out

    def postprocess(self, batch: RewardBatch, scores: torch.Tensor, extra_info: dict[str, list]) -> torch.Tensor:
        """Adjust final scores (and add extra info) after scoring; the base keeps them."""
        return scores

    def _route(self, batch: RewardBatch) -> list[list]:
        plans = []
        for i, (source, style) in enumerate(zip(batch.data_sources, batch.styles)):
            if style not in ("rule", "model"):
                raise RewardError(f"row {i}: reward_model.style is {style!r}; expected 'rule' or 'model'")
            if style == "model":
                raise RewardError(
                    f"row {i} (data_source '{source}'): reward_model.style is 'model' but the "
                    f"'{self.name}' manager scores rule rows only; model-based scoring needs a reward model"
                )
            try:
                plans.append(self.plan.scorers_for(source))
            except NotRegistered as exc:
                raise NotRegistered(f"row {i}: {exc}") from None
        return plans

    def _combine(self, scorers: list, results: list[ScoreOutcome]) -> tuple[float, dict[str, Any]]:
        """Weighted sum of the scorers' scores.

        ``reward = W * sum_i w_i s_i / sum_i w_i`` over scorers that did not
        abstain, where ``W`` is the total weight and a failed scorer counts as
        ``fallback_score``; if every scorer abstains, ``reward = fallback_score``.
        """
        status = max((r.status for r in results), key=_SEVERITY.index)
        errors = [f"{ws.name}: {r.error}" for ws, r in zip(scorers, results) if r.error]
        info: dict[str, Any] = {
            "reward_status": status,
            "reward_error": "; ".join(errors) or None,
            "reward_seconds": sum(r.seconds for r in results),
        }
        single = len(scorers) == 1
        for ws, r in zip(scorers, results):
            for key, value in r.extras.items():
                info[key if single else f"{ws.name}/{key}"] = value
            if not single:
                info[f"{ws.name}/score"] = r.score
        voting = [(ws.weight, r) for ws, r in zip(scorers, results) if r.status != ABSTAIN]
        if not voting:
            return self.fallback_score, info
        total = sum(ws.weight for ws in scorers)
        weight = sum(w for w, _ in voting)
        if weight == 0:
            return 0.0, info
        value = sum(w * (r.score if r.status == OK else self.fallback_score) for w, r in voting)
        return total * value / weight, info

    def _metrics(self, batch: RewardBatch, scores: torch.Tensor, statuses: list[str],
                 scorer_values: dict[str, list[float]], unique_ratio: float) -> dict[str, float]:
        metrics: dict[str, float] = {}
        by_source: dict[str, list[int]] = defaultdict(list)
        for i, source in enumerate(batch.data_sources):
            by_source[source].append(i)
        counted = {"errors": (ERROR, INVALID, CRASH), "timeouts": (TIMEOUT,), "unavailable": (UNAVAILABLE,), "abstained": (ABSTAIN,)}
        for source, rows in sorted(by_source.items()):
            prefix = f"reward/source/{source}"
            metrics[f"{prefix}/mean"] = float(scores[rows].mean())
            metrics[f"{prefix}/count"] = float(len(rows))
            for name, kinds in counted.items():
                metrics[f"{prefix}/{name}"] = float(sum(statuses[i] in kinds for i in rows))
        for name, kinds in counted.items():
            metrics[f"reward/{name}"] = float(sum(s in kinds for s in statuses))
        for name, values in sorted(scorer_values.items()):
            metrics[f"reward/{name}/mean"] = sum(values) / len(values)
        if len(batch):
            metrics["reward/mean"] = float(scores.mean())
            metrics["reward/unique_calls_ratio"] = unique_ratio
        return metrics


def _union(samples: list[dict[str, Any]]) -> dict[str, list]:
    """Column-wise extra info: every key any sample has, ``None`` where a sample lacks it."""
    keys: dict[str, None] = {}
    for info in samples:
        keys.update(dict.fromkeys(info))
    return {k: [info.get(k) for info in samples] for k in keys}

