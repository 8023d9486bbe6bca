"""Check a scorer against the contract before anyone trains with it: ``rewardsmith validate`` from Python.

For each *case* (a data_source, a ground truth and a correct response in the
data source's canonical format) the scorer is called on a set of probes:
the gold response, an empty one, unrelated text, the gold wrapped in
non-ASCII text, the gold after ~100 KB of filler, a ``None`` response and a
``None`` ground truth. Every probe runs in a worker process under a hard
timeout, as the ``parallel`` manager runs it: twice in one process and once
in another (hash seeds differ), so that the checks below are measured, not
assumed. The probes run kind by kind (:data:`PROBE_KINDS`), and the first
timeout of a kind ends that kind.

Checks: the signature takes the managers' call; the scorer can be re-imported
by worker processes (what the process pool pickles); the gold response
scores the maximum and strictly above the empty one; the empty response
scores the minimum; every score is finite and within ``score_range`` when
one is declared; scores are the same across two calls and across processes;
the empty, unrelated, non-ASCII and very long probes return a score (or
abstain) within the timeout; ``None`` inputs do not hang or crash the worker
(raising counts as a warning: the manager would count a failed sample).
A check that could not run (every probe hung: nothing to compare) is
skipped, with why; only a check that ran and held passes.

Where cases come from, first found: the ``cases`` argument (``--rows``), the
scorer's own ``examples`` attribute (a list of dicts with ``data_source``,
``ground_truth``, ``response``), or the built-in scorers' canonical formats
(:data:`BUILTIN_CASES`). A scorer may declare ``score_range = (lo, hi)``.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from rewardsmith.common.function_refs import FunctionRef
from rewardsmith.common.hard_timeout_pool import Task, TaskResult, WorkerPool
from rewardsmith.plugins.scoring import INVALID

LONG_FILLER_CHARS = 100_000
UNRELATED = "The weather was pleasant and nobody mentioned numbers."
MAX_CASES = 5
_SCORE_BY_REF = FunctionRef("rewardsmith.plugins.scoring", "score_by_ref")

# The built-in scorers' canonical answers: (ground truth, its response template, score range).
BUILTIN_CASES: dict[str, tuple[Any, str, tuple[float, float]]] = {
    "gsm8k": ("72", "48 + 24 = 72\n#### {}", (0.0, 1.0)),
    "math_reward": ("\\frac{5}{6}", "So the answer is $\\boxed{{{}}}$.", (0.0, 1.0)),
    "math_dapo": ("34", "The sum is 34.\nAnswer: {}", (-1.0, 1.0)),
    "math_verify": ("\\frac{5}{6}", "So the answer is $\\boxed{{{}}}$.", (0.0, 1.0)),
    "math_answer": ("\\frac{5}{6}", "So the answer is $\\boxed{{{}}}$.", (0.0, 1.0)),
    "search_r1_qa_em": ({"target": ["Paris"]}, "<answer>{}</answer>", (0.0, 1.0)),
}


@dataclass
class Case:
    """A correct response to one row: the gold answer in the data source's canonical format."""

    data_source: str
    ground_truth: Any
    response: str
    extra_info: Optional[dict] = None


@dataclass
class Check:
    """One check's verdict; a ``warn`` check never fails the scorer. A ``skipped`` check could not
    run (``detail`` says why): it is not ``ok``, and the check that stopped it fails the report."""

    name: str
    ok: bool
    detail: str = ""
    level: str = "fail"
    skipped: bool = False


@dataclass
class Report:
    """Every check of one scorer."""

    target: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures()

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok and c.level != "warn" and not c.skipped]

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "ok": self.ok, "checks": [asdict(c) for c in self.checks]}


@dataclass
class Target:
    """A scorer to validate and what validation needs to know about it."""

    label: str
    fn: Any  # a scorer function, or a reward manager's name
    data_sources: tuple[str, ...] = ()
    builtin_name: Optional[str] = None
    kind: str = "scorer"  # or "manager"
    file: Optional[tuple[str, str]] = None  # (path, function name) of a custom file


def _probes(case: Case) -> list[tuple[str, Any, Any]]:
    """(probe name, solution_str, ground_truth) for one case."""
    gold, truth = case.response, case.ground_truth
    return [
        ("gold", gold, truth),
        ("empty", "", truth),
        ("unrelated", UNRELATED, truth),
        ("non-ASCII", f"Réponse — 答案 ✓ 🙂 {gold}", truth),
        ("very long", "lorem ipsum " * (LONG_FILLER_CHARS // 12) + gold, truth),
        ("None response", None, truth),
        ("None ground truth", gold, None),
    ]


MUST_SCORE = ("gold", "empty", "unrelated", "non-ASCII", "very long")
# Probes grouped by what they test; a timeout in a group ends that group's probing.
PROBE_KINDS = {"gold": ("gold",), "odd inputs": ("empty", "unrelated", "non-ASCII", "very long"),
               "None inputs": ("None response", "None ground truth")}
NOT_RUN = "not run"


def default_cases(fn: Callable[..., Any], data_sources: Sequence[str], builtin_name: Optional[str]) -> list[Case]:
    """The scorer's own ``examples``, else a built-in scorer's canonical case; [] if neither."""
    examples = getattr(fn, "examples", None)
    if examples:
        return [Case(e["data_source"], e["ground_truth"], e["response"], e.get("extra_info")) for e in examples]
    if builtin_name in BUILTIN_CASES:
        truth, template, _range = BUILTIN_CASES[builtin_name]
        answer = truth["target"][0] if isinstance(truth, dict) else truth
        sources = [s for s in data_sources if not any(ch in s for ch in "*?[")] or \
            [s.replace("*", "2024") for s in data_sources] or [builtin_name]
        return [Case(sources[0], truth, template.format(answer))]
    return []


def score_range_of(fn: Callable[..., Any], builtin_name: Optional[str]) -> Optional[tuple[float, float]]:
    """``fn.score_range``, else a built-in scorer's known range, else None."""
    declared = getattr(fn, "score_range", None)
    if declared is not None:
        lo, hi = declared
        return float(lo), float(hi)
    if builtin_name in BUILTIN_CASES:
        return BUILTIN_CASES[builtin_name][2]
    return None


def _run(pool: WorkerPool, ref: FunctionRef, calls: list[tuple[str, Any, Any, Optional[dict]]], kwargs: dict[str, Any],
         timeout: float) -> list[TaskResult]:
    tasks = [Task(_SCORE_BY_REF, (ref, ds, sol, truth, extra, kwargs)) for ds, sol, truth, extra in calls]
    return pool.map(tasks, timeout=timeout)


def _probe_kinds(pool: WorkerPool, ref: FunctionRef, calls: list[tuple[str, Any, Any, Optional[dict]]],
                 names: list[tuple[int, str]], kwargs: dict[str, Any], timeout: float,
                 say: Callable[[str], None]) -> list[Optional[TaskResult]]:
    """Every probe once, kind by kind (:data:`PROBE_KINDS`); the first timeout of a kind ends that kind,
    so a scorer that hangs costs one timeout per kind, not one per probe. Probes not run are None."""
    results: list[Optional[TaskResult]] = [None] * len(calls)
    for kind, probes in PROBE_KINDS.items():
        todo = [i for i, (_k, name) in enumerate(names) if name in probes]
        cases = len({names[i][0] for i in todo})
        listed = f" ({', '.join(probes)})" if probes != (kind,) else ""
        say(f"probing {kind}{listed} on {cases} case(s), {timeout:g}s each")
        for n, i in enumerate(todo):
            (results[i],) = _run(pool, ref, [calls[i]], kwargs, timeout)
            if results[i].status == "timeout":
                left = len(todo) - n - 1
                say(f"case {names[i][0]} probe '{names[i][1]}' timed out after {timeout:g}s"
                    + (f": the other {left} {kind} probe(s) are not run" if left else ""))
                break
    return results


def _verdict(result: Optional[TaskResult]) -> tuple[str, Optional[float], str]:
    """(status, score, error) of one probe: the scorer's outcome, the worker's timeout/crash, or not run."""
    if result is None:
        return NOT_RUN, None, "not run: an earlier probe of its kind timed out"
    if result.status != "ok":
        return result.status, None, result.error or ""
    outcome = result.value
    return outcome.status, outcome.score, outcome.error or ""


def _quiet(_message: str) -> None:
    """The default progress sink: the Python API prints nothing."""


def validate_scorer(fn: Callable[..., Any], *, label: str = "", data_sources: Sequence[str] = (),
                    cases: Optional[Sequence[Case]] = None, score_range: Optional[tuple[float, float]] = None,
                    timeout: float = 10.0, builtin_name: Optional[str] = None,
                    kwargs: Optional[dict[str, Any]] = None,
                    progress: Callable[[str], None] = _quiet) -> Report:
    """Run every check on ``fn`` (see the module docstring) and return the report; ``kwargs``
    are the keyword arguments the managers pass it (:func:`scorer_kwargs`); ``progress`` gets a
    line as each stage of probing starts and for each timeout."""
    from rewardsmith.plugins.custom import PER_SAMPLE, CustomFunctionError, check_signature

    label = label or getattr(fn, "__name__", repr(fn))
    kwargs = dict(kwargs or {})
    report = Report(label)

    def say(message: str) -> None:
        progress(f"validate {label}: {message}")

    try:
        check_signature(fn, PER_SAMPLE, kwargs, f"scorer '{label}'")
        report.checks.append(Check("signature", True, "takes (data_source, solution_str, ground_truth, extra_info=None, **kwargs)"))
    except CustomFunctionError as exc:
        report.checks.append(Check("signature", False, str(exc)))
        return report
    try:
        ref = FunctionRef.of(fn)
    except ValueError as exc:
        report.checks.append(Check("picklable", False, str(exc)))
        return report
    cases = list(cases) if cases else default_cases(fn, data_sources, builtin_name)
    if not cases:
        report.checks.append(Check("cases", False, "no gold case to check against: give rows with correct responses "
                                   "(--rows), or set the scorer's `examples` attribute"))
        return report
    score_range = score_range or score_range_of(fn, builtin_name)

    calls, names = [], []
    for k, case in enumerate(cases[:MAX_CASES]):
        for name, solution, truth in _probes(case):
            calls.append((case.data_source, solution, truth, case.extra_info))
            names.append((k, name))
    with WorkerPool(1, preload=[ref.module]) as first, WorkerPool(1, preload=[ref.module]) as second:
        results = _probe_kinds(first, ref, calls, names, kwargs, timeout, say)
        # Probes that hung, crashed or did not run are not asked again.
        again = [i for i, r in enumerate(results) if r is not None and r.status in ("ok", "error")]
        repeat, other = [], []
        if again:
            say(f"calling the {len(again)} probe(s) that returned again, in the same process")
            repeat = _run(first, ref, [calls[i] for i in again], kwargs, timeout)
            say("calling them in a second process")
            other = _run(second, ref, [calls[i] for i in again], kwargs, timeout)
    verdicts = [_verdict(r) for r in results]

    def where(i: int) -> str:
        k, name = names[i]
        return f"case {k} ({cases[k].data_source}) probe '{name}'"

    # Picklable: confirmed only by a probe that came back from a worker without an import failure.
    returned = [r for r in results if r is not None and r.status in ("ok", "error")]
    unloaded = [r for r in returned if r.status == "error" and isinstance(r.exception, (ImportError, AttributeError))]
    if unloaded:
        report.checks.append(Check("picklable", False, f"a worker process could not import it: {unloaded[0].error}"))
    elif returned:
        report.checks.append(Check("picklable", True, f"re-imported by worker processes as {ref.module}:{ref.name}"))
    else:
        report.checks.append(_skip("picklable", "no probe came back from a worker process (each hung or crashed), "
                                                "so its import there is unconfirmed"))

    # Survives: the probes that must score return a score or abstain within the timeout.
    dead = [f"{where(i)}: {error or status}" for i, (status, _, error) in enumerate(verdicts)
            if names[i][1] in MUST_SCORE and status not in ("ok", "abstain", NOT_RUN)]
    not_run = sum(status == NOT_RUN and names[i][1] in MUST_SCORE for i, (status, _, _) in enumerate(verdicts))
    if not_run:
        dead.append(f"{not_run} probe(s) not run after a timeout of their kind")
    report.checks.append(Check("survives odd inputs", not dead, "; ".join(dead) or
                               f"empty, unrelated, non-ASCII and {LONG_FILLER_CHARS // 1000} KB inputs scored within {timeout:g}s"))

    # None inputs neither hang nor crash the worker. A TypeError or ValueError is a deliberate
    # refusal; anything else on None is a bug waiting for a bad row (a warning: the manager counts it).
    nones = [i for i in range(len(calls)) if names[i][1] not in MUST_SCORE]
    hung = [f"{where(i)}: {verdicts[i][2] or verdicts[i][0]}" for i in nones
            if verdicts[i][0] in ("timeout", "crash", NOT_RUN)]
    refused = [i for i in nones if verdicts[i][0] not in ("ok", "abstain", "timeout", "crash", NOT_RUN)]
    careless = [f"{where(i)}: {verdicts[i][2]}" for i in refused if not verdicts[i][2].startswith(("TypeError", "ValueError"))]
    if hung:
        report.checks.append(Check("None inputs", False, "; ".join(hung)))
    else:
        report.checks.append(Check("None inputs", not careless, "; ".join(careless) or
                                   (f"{len(refused)} None probe(s) refused with a TypeError/ValueError (the manager counts a failed sample)"
                                    if refused else "None response and ground truth scored"), level="warn"))

    # Finite and in range: every score, and every return value that was no score at all (NaN, a string).
    scores = [(i, s) for i, (status, s, _) in enumerate(verdicts) if status == "ok"]
    bad = [f"{where(i)}: {s}" for i, s in scores if not math.isfinite(s)
           or (score_range is not None and not score_range[0] <= s <= score_range[1])]
    bad += [f"{where(i)}: {error}" for i, (status, _, error) in enumerate(verdicts) if status == INVALID]
    if bad or scores:
        report.checks.append(Check("finite and in range", not bad, "; ".join(bad) or
                                   (f"{len(scores)} score(s), every one in [{score_range[0]:g}, {score_range[1]:g}]"
                                    if score_range else f"{len(scores)} score(s), every one finite (no score_range declared)")))
    else:
        report.checks.append(_skip("finite and in range", "no probe returned a score"))

    extremes = []
    for k in range(min(len(cases), MAX_CASES)):
        got = {names[i][1]: verdicts[i] for i in range(len(calls)) if names[i][0] == k}
        ok_scores = [v[1] for v in got.values() if v[0] == "ok"]
        gold, empty = got["gold"], got["empty"]
        if gold[0] != "ok":
            extremes.append(f"case {k}: the gold response did not score ({gold[2] or gold[0]})")
            continue
        if empty[0] != "ok":
            extremes.append(f"case {k}: the empty response did not score ({empty[2] or empty[0]})")
            continue
        top = score_range[1] if score_range else max(ok_scores)
        bottom = score_range[0] if score_range else min(ok_scores)
        if gold[1] <= empty[1]:
            extremes.append(f"case {k}: gold {cases[k].response!r} scored {gold[1]:g}, no more than the empty "
                            f"response ({empty[1]:g}): the scorer does not tell a right answer from none")
        elif gold[1] < top:
            extremes.append(f"case {k}: gold {cases[k].response!r} scored {gold[1]:g}, expected the maximum {top:g}")
        if empty[1] > bottom:
            extremes.append(f"case {k}: the empty response scored {empty[1]:g}, expected the minimum {bottom:g}")
    report.checks.append(Check("gold scores max, empty scores min", not extremes, "; ".join(extremes) or
                               f"on {min(len(cases), MAX_CASES)} case(s)"))

    # Determinism: only probes that scored or abstained the first time can be compared.
    compared = [(i, r) for i, r in zip(again, repeat) if verdicts[i][0] in ("ok", "abstain")]
    for check, run, agree in (("deterministic across calls", repeat, "two calls agree"),
                              ("deterministic across processes", other, "a second process agrees")):
        if not compared:
            report.checks.append(_skip(check, "no probe scored or abstained, so there was nothing to compare"))
            continue
        differ = [f"{where(i)}: {verdicts[i][:2]} then {_verdict(r)[:2]}" for i, r in zip(again, run)
                  if verdicts[i][0] in ("ok", "abstain") and _verdict(r)[:2] != verdicts[i][:2]]
        report.checks.append(Check(check, not differ, "; ".join(differ) or f"{agree} on {len(compared)} probe(s)"))
    return report


def _skip(name: str, why: str) -> Check:
    """A check that could not run: never a pass."""
    return Check(name, False, why, skipped=True)


# Data sources the built-in scorers answer for: the rows a reward manager is checked on by default.
MANAGER_SOURCES = {"gsm8k": "openai/gsm8k", "math_reward": "lighteval/MATH", "math_dapo": "math_dapo"}


def manager_cases() -> list[Case]:
    """A gold case for each of :data:`MANAGER_SOURCES`."""
    cases = []
    for scorer, source in MANAGER_SOURCES.items():
        truth, template, _range = BUILTIN_CASES[scorer]
        cases.append(Case(source, truth, template.format(truth)))
    return cases


def validate_manager(manager: Union[str, type], *, cases: Optional[Sequence[Case]] = None,
                     overrides: Sequence[str] = (), label: str = "") -> Report:
    """Check a reward manager (a registered name, or the class) on a batch of gold, empty and
    unrelated responses: it builds from the config, scores the batch, returns one finite score
    per sample, token-level scores on each response's last valid token, per-sample extra info
    and ``unscored``, pays gold above empty, and gives the same scores twice."""
    import torch

    from rewardsmith.common.config import load_config
    from rewardsmith.core.schema import Config
    from rewardsmith.plugins.batch import RewardBatch, token_level_scores
    from rewardsmith.plugins.factory import build_reward_manager

    by_name = isinstance(manager, str)
    report = Report(label or (f"reward manager '{manager}'" if by_name else f"reward manager {manager.__name__}"))
    try:
        config = load_config(Config, None, [*([f"reward_model.reward_manager={manager}"] if by_name else []), *overrides])
        built = build_reward_manager(config.reward_settings(), None if by_name else manager)
    except Exception as exc:  # noqa: BLE001 - the verdict is the report
        report.checks.append(Check("builds", False, f"{type(exc).__name__}: {exc}"))
        return report
    report.checks.append(Check("builds", True, "from the config, through the plugin factory"))
    cases = list(cases or manager_cases())
    rows = [(case, text) for case in cases for text in (case.response, "", UNRELATED)]
    texts = [text for _case, text in rows]
    lengths = torch.tensor([max(1, len(t.split())) for t in texts])  # whitespace words stand in for tokens
    mask = (torch.arange(int(lengths.max())).expand(len(texts), -1) < lengths.unsqueeze(-1)).long()
    batch = RewardBatch([c.data_source for c, _ in rows], texts, [c.ground_truth for c, _ in rows],
                        [c.extra_info for c, _ in rows], response_mask=mask)
    try:
        with built:
            built.check_rows(batch)
            built.check_data_sources(sorted(set(batch.data_sources)))
            first, second = built(batch), built(batch)
    except Exception as exc:  # noqa: BLE001
        report.checks.append(Check("scores a batch", False, f"{type(exc).__name__}: {exc}"))
        return report
    n = len(batch)
    shape = []
    if tuple(first.scores.shape) != (n,) or not torch.isfinite(first.scores.float()).all():
        shape.append(f"scores must be {n} finite values, got shape {tuple(first.scores.shape)}")
    if first.token_level_scores is None or not torch.equal(first.token_level_scores.float(),
                                                           token_level_scores(first.scores, mask)):
        shape.append("token_level_scores must hold each score on its response's last valid token, zeros elsewhere")
    short = [k for k, v in first.extra_info.items() if len(v) != n]
    if short:
        shape.append(f"extra_info lists must have one entry per sample ({n}): {', '.join(short)}")
    if first.unscored is not None and tuple(first.unscored.shape) != (n,):
        shape.append(f"unscored must have shape ({n},)")
    report.checks.append(Check("scores a batch", not shape, "; ".join(shape) or
                               f"{n} samples: scores, token-level scores, extra info and unscored all line up"))
    if shape:
        for name in ("gold scores above empty and unrelated", "deterministic across calls"):
            report.checks.append(_skip(name, "the manager's output does not line up with the batch"))
        return report
    scores = first.scores.tolist()
    # An unscored sample's score is only the fallback placeholder: nothing to compare.
    unscored, again_unscored = ([False] * n if out.unscored is None else out.unscored.tolist() for out in (first, second))
    statuses = first.extra_info.get("reward_status") or [None] * n
    low = []
    for k in range(len(cases)):
        missing = [f"{what} unscored ({statuses[3 * k + j]})" for j, what in enumerate(("gold", "empty", "unrelated"))
                   if unscored[3 * k + j]]
        if missing:
            low.append(f"case {k} ({cases[k].data_source}): {', '.join(missing)}")
        elif not scores[3 * k] > max(scores[3 * k + 1], scores[3 * k + 2]):
            low.append(f"case {k} ({cases[k].data_source}): gold {scores[3 * k]:g}, empty {scores[3 * k + 1]:g}")
    report.checks.append(Check("gold scores above empty and unrelated", not low, "; ".join(low) or f"on {len(cases)} case(s)"))
    scored = [i for i in range(n) if not unscored[i]]
    if not scored:
        report.checks.append(_skip("deterministic across calls", "no sample was scored, so there was nothing to compare"))
        return report
    again = second.scores.tolist()
    differ = [f"sample {i}: {scores[i]:g} then {'unscored' if again_unscored[i] else f'{again[i]:g}'}"
              for i in scored if again_unscored[i] or again[i] != scores[i]]
    report.checks.append(Check("deterministic across calls", not differ, "; ".join(differ) or
                               f"two calls agree on {len(scored)} scored sample(s)"))
    return report


def resolve_targets(target: Optional[str], plugins_config: Any = None) -> list[Target]:
    """What ``rewardsmith validate TARGET`` checks: a ``file.py[:name]``, a registered scorer,
    every scorer of an installed plugin (by entry-point or distribution name), or, with no
    target, every scorer of every third-party plugin."""
    from rewardsmith.plugins.loader import get_registry

    if target and target.split(":", 1)[0].endswith(".py"):
        from rewardsmith.plugins.custom import load_custom_function

        path, _, name = target.partition(":")
        if not Path(path).is_file():
            raise FileNotFoundError(f"validate: no such file {path}")
        fn = load_custom_function(path, name or "compute_score")
        return [Target(target, fn, file=(path, name or "compute_score"))]
    registry = get_registry(plugins_config)
    scorers = {n for p in registry.plugins for n in p.scorers}
    managers = {n for p in registry.plugins for n in p.reward_managers}
    plugins = [p for p in registry.plugins if target in (p.name, p.distribution)] if target else \
        [p for p in registry.plugins if not p.builtin]
    if target and not plugins:
        if target in managers and target not in scorers:
            return [Target(f"reward manager '{target}'", target, kind="manager")]
        fn = registry.scorer(target)  # raises, listing the known scorers
        return [Target(target, fn, registry.scorer_data_sources(target), _builtin_name(registry, target))]
    for p in plugins:
        if p.error:
            raise ValueError(f"{p.label} is broken: {p.error}")
    targets = [Target(name, registry.scorer(name), registry.scorer_data_sources(name), _builtin_name(registry, name))
               for p in plugins for name in p.scorers]
    targets += [Target(f"reward manager '{name}'", name, kind="manager") for p in plugins for name in p.reward_managers]
    if not targets:
        what = f"plugin {target!r} registers no scorer or manager" if target else "no third-party plugin is installed"
        raise ValueError(f"{what}; name a scorer, a reward manager, a plugin or a file (file.py[:function])")
    return targets


def scorer_kwargs(target: Target, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The keyword arguments the reward managers would pass ``target``'s scorer under the config
    ``overrides``: the service settings it accepts (the sandbox URL, a judge's address) and a
    custom file's ``reward_kwargs``."""
    from rewardsmith.common.config import load_config
    from rewardsmith.core.schema import Config
    from rewardsmith.plugins.loader import get_registry
    from rewardsmith.plugins.scoring_plan import ScoringPlan

    pick = [f"custom_reward_function.path={target.file[0]}", f"custom_reward_function.name={target.file[1]}"] \
        if target.file else [f"reward_model.scorer={target.label}"]
    settings = load_config(Config, None, [*overrides, *pick]).reward_settings()
    plan = ScoringPlan(get_registry(settings.plugins), settings)
    try:
        return dict(plan.scorers_for("validate")[0].kwargs)
    finally:
        plan.close()


def _builtin_name(registry: Any, name: str) -> Optional[str]:
    builtin = {n for p in registry.plugins if p.builtin for n in p.scorers}
    return name if name in builtin else None


def cases_from_rows(rows: Sequence[dict[str, Any]], reward_fn_key: str = "data_source", source: str = "rows") -> list[Case]:
    """Cases from rows in verl's schema whose ``response`` is a correct answer (the first, when a list)."""
    cases = []
    for i, row in enumerate(rows):
        response = row.get("response")
        if isinstance(response, list):
            response = response[0] if response else None
        if not isinstance(response, str):
            raise ValueError(f"{source}: row {i}: 'response' must be the correct answer (a string) for validate")
        truth = (row.get("reward_model") or {}).get("ground_truth")
        if reward_fn_key not in row:
            raise ValueError(f"{source}: row {i}: missing '{reward_fn_key}'")
        cases.append(Case(row[reward_fn_key], truth, response, row.get("extra_info")))
    return cases


def validate(target: Optional[str] = None, *, rows: Optional[Sequence[dict[str, Any]]] = None,
             timeout: float = 10.0, plugins_config: Any = None, overrides: Sequence[str] = (),
             progress: Callable[[str], None] = _quiet) -> list[Report]:
    """Validate ``target`` (see :func:`resolve_targets`); ``rows`` with correct responses give the cases
    (those of each scorer's data sources, or all rows when it names none); ``overrides`` are the
    config a reward manager is built with and a scorer called under (its service settings,
    a custom file's ``reward_kwargs``); ``progress`` gets a line per stage of a scorer's probing."""
    reports = []
    all_cases = cases_from_rows(rows) if rows else None
    for t in resolve_targets(target, plugins_config):
        if t.kind == "manager":
            reports.append(validate_manager(t.fn, cases=all_cases, overrides=overrides, label=t.label))
            continue
        cases = None
        if all_cases:
            cases = [c for c in all_cases if not t.data_sources or any(fnmatch.fnmatchcase(c.data_source, p) for p in t.data_sources)] \
                or all_cases
        reports.append(validate_scorer(t.fn, label=t.label, data_sources=t.data_sources, cases=cases, timeout=timeout,
                                       builtin_name=t.builtin_name, kwargs=scorer_kwargs(t, overrides),
                                       progress=progress))
    return reports


def render(reports: Sequence[Report]) -> str:
    """The console form: one line per check, PASS / FAIL / WARN / SKIP."""
    lines = []
    for report in reports:
        lines.append(f"{report.target}: {'ok' if report.ok else 'FAILED'}")
        for c in report.checks:
            mark = "PASS" if c.ok else "SKIP" if c.skipped else ("WARN" if c.level == "warn" else "FAIL")
            lines.append(f"  {mark}  {c.name}: {c.detail}")
    return "\n".join(lines)
