"""The reward manager: a batch of rollouts in, rewards and everything said about them out.

Subclasses choose where rule scorers run (:meth:`RewardManager.make_executor`)
and may reshape the final scores (:meth:`RewardManager.postprocess`, e.g.
DAPO's overlong penalty). Everything else, shared by every manager, lives
here: routing each row by its ``reward_model.style`` to its components (rule
scorers, a reward model, a judge, a multi-turn episode's environment rewards),
leaving unscored the episodes whose tools were unavailable, scoring identical samples once, gates,
failure policies, combining weighted components, the union of extra info, and
metrics per component and per data_source.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

import torch

from rewardsmith.plugins.config import ENVIRONMENT_KINDS, RewardSettings
from rewardsmith.plugins.batch import RewardBatch, RewardOutput, scored_mean, token_level_scores
from rewardsmith.common.canonical import canonical_json
from rewardsmith.common.errors import RewardError
from rewardsmith.plugins.executors import BrokenScorerCheck, Executor, ProcessExecutor, Progress, ScoreJob, SerialExecutor
from rewardsmith.plugins.episode_rewards import environment_outcome, unavailable_tools
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.scoring_plan import Component, ScoringPlan
from rewardsmith.plugins.scoring import ABSTAIN, CRASH, ERROR, INVALID, OK, TIMEOUT, UNAVAILABLE, ScoreOutcome, is_undecided

# A component not asked because its gate did not pass; its score is the gate's value.
GATED = "gated"
# When a sample has several components, its status is the most serious of theirs.
_SEVERITY = [OK, GATED, ABSTAIN, INVALID, ERROR, UNAVAILABLE, CRASH, TIMEOUT]
_FAILED = (INVALID, ERROR, UNAVAILABLE, CRASH, TIMEOUT)


def serial_executor(settings: RewardSettings) -> Executor:
    """One sample at a time: in one worker process under the hard per-sample ``reward_model.timeout``
    (a hang costs that sample, and the worker is replaced), or in this process when it is null."""
    timeout = settings.reward_model.timeout
    return SerialExecutor() if timeout is None else ProcessExecutor(1, timeout)


class RewardManager:
    """Base reward manager: serial scoring within ``reward_model.timeout`` (:func:`serial_executor`).

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
        self.broken_scorers = BrokenScorerCheck()

    def make_executor(self) -> Executor:
        """Where scorer calls run: by default one after another, each within ``reward_model.timeout``."""
        return serial_executor(self.settings)

    def check_data_sources(self, data_sources: list[str]) -> None:
        """Raise, listing the known data sources, if any of ``data_sources`` has no scorer."""
        self.plan.check(data_sources)

    def check_rows(self, batch: RewardBatch) -> None:
        """Raise, naming the row, if a row has no components or lacks a field the judge's template names."""
        self.plan.check_rows(batch.data_sources, batch.styles)
        judge = self.plan.models.get("judge")
        if judge is None:
            return
        for i in range(len(batch)):
            if any(c.kind == "judge" for c in self.plan.components_for(batch.data_sources[i], batch.styles[i])):
                judge.check(self._request(batch, i), f"row {i} (data_source '{batch.data_sources[i]}')")

    def close(self) -> None:
        """Release worker processes, threads and model scorers."""
        self.executor.close()
        self.plan.close()

    def __enter__(self) -> "RewardManager":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipeline ----------------------------------------------------------
    def __call__(self, batch: RewardBatch, progress: Optional[Progress] = None) -> RewardOutput:
        """Score ``batch``; ``progress`` counts scorer and model calls (identical samples are scored once).

        Components run in rounds: those without a gate first, then those whose
        gate has been decided, so a judge is asked only where its gate passed
        (or, for a fallback, only where its gate has no value). A multi-turn
        episode whose tools were unavailable is not scored: every component is
        ``unavailable`` and the sample unscored, whatever the failure policies.
        """
        plans = self._route(batch)
        results: list[dict[str, ScoreOutcome]] = [{} for _ in plans]
        blocked = {i: f"tool {', '.join(map(repr, tools))} was unavailable in the episode"
                   for i in range(len(batch)) if (tools := unavailable_tools(batch.extra_infos[i]))}
        for i, why in blocked.items():
            results[i] = {c.name: ScoreOutcome(UNAVAILABLE, error=why) for c in plans[i]}
        plans_to_run = [[] if i in blocked else comps for i, comps in enumerate(plans)]
        depth = [{c.name: _depth(c, comps) for c in comps} for comps in plans]
        unique = {self._key(batch, i, c) for i, comps in enumerate(plans_to_run) for c in comps}
        calls = sum(len(p) for p in plans_to_run)
        if progress is not None:
            progress.reset(total=len(unique))
        asked: set = set()
        for level in range(max((max(d.values()) for d in depth if d), default=-1) + 1):
            todo = []
            for i, comps in enumerate(plans_to_run):
                for c in comps:
                    if depth[i][c.name] != level:
                        continue
                    gated = self._gate(c, results[i], comps)
                    if gated is None:
                        todo.append((i, c))
                    else:
                        results[i][c.name] = gated
            for (i, c), outcome in zip(todo, self._run(batch, todo, progress, asked)):
                results[i][c.name] = outcome
        if progress is not None and len(asked) < len(unique):
            progress.update(len(unique) - len(asked))  # gated away: never asked

        scores = torch.zeros(len(batch), dtype=torch.float32)
        unscored = torch.zeros(len(batch), dtype=torch.bool)
        per_sample: list[dict[str, Any]] = []
        for i, comps in enumerate(plans):
            if i in blocked:  # the environment failed the episode: no failure policy makes that a score
                value, info = None, {"reward_status": UNAVAILABLE, "reward_error": blocked[i],
                                     "reward_seconds": 0.0, "reward_components": {c.name: None for c in comps}}
            else:
                value, info = self._combine(batch, i, comps, [results[i][c.name] for c in comps])
            unscored[i] = value is None
            scores[i] = self.fallback_score if value is None else value
            per_sample.append(info)

        extra_info = _union(per_sample)
        scores = self.postprocess(batch, scores, extra_info)
        extra_info["score"] = scores.tolist()
        extra_info["unscored"] = unscored.tolist()
        metrics = self._metrics(batch, scores, unscored, extra_info["reward_status"], plans, results, len(asked) / max(1, calls))
        if any("tool_calls" in (info or {}) for info in batch.extra_infos):  # a multi-turn batch
            metrics["reward/tools_unavailable"] = float(len(blocked))
        out = RewardOutput(scores=scores, extra_info=extra_info, metrics=metrics, unscored=unscored)
        if batch.response_mask is not None:
            out.token_level_scores = token_level_scores(scores, batch.response_mask)
        return out

    def postprocess(self, batch: RewardBatch, scores: torch.Tensor, extra_info: dict[str, list]) -> torch.Tensor:
        """Adjust final scores (and add extra info) after scoring; the base keeps them."""
        return scores

    def components_of(self, batch: RewardBatch) -> list[list[Component]]:
        """Each sample's components, as this manager routes them when it scores ``batch``."""
        return self._route(batch)

    def _route(self, batch: RewardBatch) -> list[list[Component]]:
        plans = []
        for i, (source, style) in enumerate(zip(batch.data_sources, batch.styles)):
            try:
                plans.append(self.plan.components_for(source, style))
            except RewardError as exc:
                raise type(exc)(f"row {i}: {exc}") from None
        return plans

    @staticmethod
    def _request(batch: RewardBatch, i: int) -> ModelRequest:
        prompt = batch.prompts[i] if batch.prompts is not None else None
        return ModelRequest(batch.data_sources[i], prompt, batch.solutions[i], batch.ground_truths[i], batch.extra_infos[i])

    def _key(self, batch: RewardBatch, i: int, c: Component) -> tuple:
        """Samples with equal keys get one call: same component, row fields and (for models) prompt."""
        who = c.scorer.name if c.scorer is not None else f"{c.kind}:{c.tool}"
        if not self.score_identical_once:
            return (c.kind, who, i)
        where = f"row {i} (data_source '{batch.data_sources[i]}')"
        prompt = canonical_json(batch.prompts[i], f"{where} prompt") if c.kind != "rule" and batch.prompts is not None else None
        return (c.kind, who, batch.data_sources[i], batch.solutions[i], canonical_json(batch.ground_truths[i], f"{where} ground_truth"),
                canonical_json(batch.extra_infos[i], f"{where} extra_info"), prompt)

    @staticmethod
    def _gate(c: Component, done: dict[str, ScoreOutcome], comps: list[Component]) -> Optional[ScoreOutcome]:
        """None when ``c`` is to be asked; otherwise its outcome without asking (the gate did not pass)."""
        if c.gate is None:
            return None
        gate = done[c.gate]
        if c.stands_in:
            gate_component = next(x for x in comps if x.name == c.gate)
            if _value(gate_component, gate) is not None:
                return ScoreOutcome(GATED)  # the gate decided: the fallback has no say
            return None
        if gate.status in (OK, GATED) and gate.score is not None and gate.score >= c.gate_threshold:
            return None
        value = c.gate_value if c.gate_value is not None else gate.score
        return ScoreOutcome(GATED, value)

    def _run(self, batch: RewardBatch, todo: list[tuple[int, Component]], progress: Optional[Progress],
             asked: set) -> list[ScoreOutcome]:
        """Outcomes of ``todo``: rule jobs on the executor, model requests batched per model."""
        index: dict[tuple, int] = {}
        rule_jobs: list[ScoreJob] = []
        rule_keys: list[tuple] = []
        copies: dict[tuple, int] = defaultdict(int)  # samples per distinct key
        model_jobs: dict[str, list[ModelRequest]] = defaultdict(list)
        where: list[tuple[str, int]] = []
        environment: list[ScoreOutcome] = []  # read from the episode's extra_info, here
        for i, c in todo:
            key = self._key(batch, i, c)
            copies[key] += 1
            if key not in index:
                if c.kind in ENVIRONMENT_KINDS:
                    index[key] = len(where)
                    where.append(("environment", len(environment)))
                    environment.append(environment_outcome(c.kind, c.tool, batch.extra_infos[i]))
                elif c.kind == "rule":
                    ws = c.scorer
                    index[key] = len(where)
                    where.append(("rule", len(rule_jobs)))
                    rule_jobs.append(ScoreJob(ws.name, ws.fn, batch.data_sources[i], batch.solutions[i],
                                              batch.ground_truths[i], batch.extra_infos[i], ws.kwargs))
                    rule_keys.append(key)
                else:
                    index[key] = len(where)
                    where.append((c.kind, len(model_jobs[c.kind])))
                    model_jobs[c.kind].append(self._request(batch, i))
                asked.add(key)
        outcomes: dict[str, list[ScoreOutcome]] = {"environment": environment}
        if progress is not None and environment:
            progress.update(len(environment))
        if rule_jobs:
            outcomes["rule"] = self.executor.run(rule_jobs, progress)
            if self.settings.reward_model.stop_when_all_fail:
                self.broken_scorers.check(rule_jobs, outcomes["rule"], [copies[k] for k in rule_keys])
        for kind, requests in model_jobs.items():
            outcomes[kind] = self.plan.models[kind].score(requests)
            if progress is not None:
                progress.update(len(requests))
        return [outcomes[k][j] for k, j in (where[index[self._key(batch, i, c)]] for i, c in todo)]

    def _combine(self, batch: RewardBatch, i: int, comps: list[Component],
                 results: list[ScoreOutcome]) -> tuple[Optional[float], dict[str, Any]]:
        """Weighted sum of the components' values; None when no component has a value.

        ``reward = W * sum_i w_i v_i / sum_i w_i`` over the components that have a
        value, ``W`` being the total weight. A fallback (``gate_when: abstained``)
        votes only where its gate has none, with its gate's weight, and is not
        part of ``W``: the pair counts as one component. A component has a value when it
        scored, when its gate did not pass (the gate's value), or when it failed
        under ``on_failure`` zero (0) or fallback (its fallback value); it has none
        when it abstained (returned None) or failed under ``abstain``; a failure
        under ``raise`` stops the run, naming the row and the component.
        """
        status = max((r.status for r in results), key=_SEVERITY.index)
        errors = [f"{c.name}: {r.error}" for c, r in zip(comps, results) if r.error]
        info: dict[str, Any] = {
            "reward_status": OK if status == GATED else status,
            "reward_error": "; ".join(errors) or None,
            "reward_seconds": sum(r.seconds for r in results),
            "reward_components": {c.name: r.score for c, r in zip(comps, results)},
        }
        single = len(comps) == 1
        voting: list[tuple[float, float]] = []
        for c, r in zip(comps, results):
            for key, value in r.extras.items():
                info[key if single else f"{c.name}/{key}"] = value
            if not single:
                info[f"{c.name}/score"] = r.score
                if r.status != OK:
                    info[f"{c.name}/status"] = r.status
                if r.error:
                    info[f"{c.name}/error"] = r.error
            if r.status in _FAILED and c.on_failure == "raise":
                raise RewardError(f"row {i} (data_source '{batch.data_sources[i]}'): component '{c.name}' "
                                  f"failed ({r.status}: {r.error}) and its on_failure is raise")
            value = _value(c, r)
            if value is not None:
                voting.append((_weight(c, comps), value))
        if not voting:
            return None, info
        if status == ABSTAIN:  # the others decided: an abstention whose weight went to them is no failure
            info["reward_status"] = OK
        total = sum(c.weight for c in comps if not c.stands_in)
        weight = sum(w for w, _ in voting)
        if weight == 0:
            return 0.0, info
        return total * sum(w * v for w, v in voting) / weight, info

    def _metrics(self, batch: RewardBatch, scores: torch.Tensor, unscored_mask: torch.Tensor, statuses: list[str],
                 plans: list[list[Component]], results: list[dict[str, ScoreOutcome]], unique_ratio: float) -> dict[str, float]:
        """Means over the scored samples only (an unscored sample's score is a placeholder), with the
        unscored and undecided samples counted beside them, overall and per data_source."""
        metrics: dict[str, float] = {}
        values, unscored = scores.tolist(), unscored_mask.tolist()
        undecided = [any(is_undecided(results[i][c.name]) for c in comps) for i, comps in enumerate(plans)]
        by_source: dict[str, list[int]] = defaultdict(list)
        for i, source in enumerate(batch.data_sources):
            by_source[source].append(i)
        counted = {"errors": (ERROR, INVALID, CRASH), "timeouts": (TIMEOUT,), "unavailable": (UNAVAILABLE,), "abstained": (ABSTAIN,)}
        for source, rows in sorted(by_source.items()):
            prefix = f"reward/source/{source}"
            mean = scored_mean([values[i] for i in rows], [unscored[i] for i in rows])
            if mean is not None:
                metrics[f"{prefix}/mean"] = mean
            metrics[f"{prefix}/count"] = float(len(rows))
            metrics[f"{prefix}/unscored"] = float(sum(unscored[i] for i in rows))
            metrics[f"{prefix}/undecided"] = float(sum(undecided[i] for i in rows))
            for name, kinds in counted.items():
                metrics[f"{prefix}/{name}"] = float(sum(statuses[i] in kinds for i in rows))
        for name, kinds in counted.items():
            metrics[f"reward/{name}"] = float(sum(s in kinds for s in statuses))
        metrics["reward/unscored"] = float(sum(unscored))
        metrics["reward/undecided"] = float(sum(undecided))
        metrics.update(_component_metrics(batch, plans, results))
        for kind, model in self.plan.models.items():
            metrics.update({f"reward/{kind}/{k}": v for k, v in model.metrics().items()})
        mean = scored_mean(values, unscored)
        if mean is not None:
            metrics["reward/mean"] = mean
        if len(batch):
            metrics["reward/unique_calls_ratio"] = unique_ratio
        return metrics


def _value(c: Component, r: ScoreOutcome) -> Optional[float]:
    """What component ``c`` contributes for outcome ``r``: its score (or gate value), its failure policy's
    value (0 for zero, ``fallback`` for fallback), or None (it abstained, was undecided, or failed under abstain)."""
    if r.status in _FAILED:
        return None if c.on_failure in ("abstain", "raise") else (0.0 if c.on_failure == "zero" else c.fallback)
    return r.score


def _weight(c: Component, comps: list[Component]) -> float:
    """A component's weight in the sum; a fallback carries the weight of the component it stands in for."""
    by_name = {x.name: x for x in comps}
    while c.stands_in:
        c = by_name[c.gate]  # type: ignore[index]
    return c.weight


def _depth(c: Component, comps: list[Component]) -> int:
    """0 for a component without a gate, else one more than its gate's."""
    by_name = {x.name: x for x in comps}
    n = 0
    while c.gate is not None:
        c, n = by_name[c.gate], n + 1
    return n


def _component_metrics(batch: RewardBatch, plans: list[list[Component]],
                       results: list[dict[str, ScoreOutcome]]) -> dict[str, float]:
    """Per component, overall and per data_source: the mean of its scores (over samples it scored)
    and counts of failures, timeouts, abstentions and gated samples."""
    values: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, float] = defaultdict(float)
    multi_source = len(set(batch.data_sources)) > 1
    for i, comps in enumerate(plans):
        source = batch.data_sources[i]
        for c in comps:
            r = results[i][c.name]
            kind = {OK: None, GATED: "gated", ABSTAIN: "abstained", TIMEOUT: "timeouts"}.get(r.status, "failed")
            scopes = [f"reward/{c.name}"] + ([f"reward/source/{source}/{c.name}"] if multi_source or len(comps) > 1 else [])
            for scope in scopes:
                for name in ("failed", "timeouts", "abstained", "gated"):
                    counts.setdefault(f"{scope}/{name}", 0.0)
                if r.status == OK:
                    values[scope].append(r.score)  # type: ignore[arg-type]
                else:
                    counts[f"{scope}/{kind}"] += 1
                counts[f"{scope}/count"] += 1
    metrics = {f"{scope}/mean": sum(v) / len(v) for scope, v in values.items()}
    metrics.update(counts)
    return metrics


def _union(samples: list[dict[str, Any]]) -> dict[str, list]:
    """Column-wise extra info: every key any sample has, ``None`` where a sample lacks it."""
    keys: dict[str, None] = {}
    for info in samples:
        keys.update(dict.fromkeys(info))
    return {k: [info.get(k) for info in samples] for k in keys}

