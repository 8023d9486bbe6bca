"""Accuracy of ``math_answer`` against verl's math scorers and plain math-verify.

Every judge scores every case of a labelled set (default:
``tests/data/math_answer_cases.jsonl``: response, gold, data_source, whether
the response is correct) and is graded on agreement with the label:

* ``math_answer``         rewardsmith's verifier
* ``verl (by source)``    verl's ``default_compute_score`` routing: gsm8k for
                          ``openai/gsm8k``, math_reward for MATH sources,
                          math_dapo for DAPO / AIME sources
* ``gsm8k`` / ``math_reward`` / ``math_dapo`` / ``math_verify``
                          each verl port applied to every case
* ``math-verify (plain)`` ``verify(parse(gold), parse(response))`` with
                          math-verify's default extraction

A judge accepts, refuses or (``math_answer`` only) leaves a case
undecided: undecided is no wrong verdict, and no agreement either; it is
counted on its own. The table gives each judge's accuracy overall, then per category of case
(a row per category: math_answer, verl's routing, each verl port, plain
math-verify).

Usage: ``python benchmarks/math_accuracy.py [CASES.jsonl] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

from rewardsmith.reward_fns import gsm8k, math_answer, math_dapo, math_reward, math_verify_port
from rewardsmith.reward_fns.math_verify_lib import parse, verify

DEFAULT_CASES = Path(__file__).resolve().parent.parent / "tests" / "data" / "math_answer_cases.jsonl"
VERL_ROUTES = {"openai/gsm8k": gsm8k, "lighteval/MATH": math_reward, "DigitalLearningGmbH/MATH-lighteval": math_reward,
               "HuggingFaceH4/MATH-500": math_reward}

Case = dict[str, Any]


def load_cases(path: Path) -> list[Case]:
    """The labelled cases of a jsonl file (keys: id, category, data_source, response, gold, correct)."""
    cases = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if line.strip():
                case = json.loads(line)
                missing = {"id", "category", "data_source", "response", "gold", "correct"} - case.keys()
                if missing:
                    raise ValueError(f"{path}:{line_no}: case lacks {sorted(missing)}")
                cases.append(case)
    return cases


def _accepts(result: float | dict) -> bool | None:
    """Whether a judge accepts the case; ``None`` when it leaves it undecided."""
    if isinstance(result, dict) and result.get("verdict") == "undecided":
        return None
    return (result["score"] if isinstance(result, dict) else result) > 0


def _verl_by_source(case: Case) -> bool | None:
    source = case["data_source"]
    module = VERL_ROUTES.get(source, math_dapo)  # math_dapo / math / aime* (the rest of the set)
    return _accepts(module.compute_score(source, case["response"], case["gold"]))


def _plain_math_verify(case: Case) -> bool:
    from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig

    default = (LatexExtractionConfig(), ExprExtractionConfig())
    return verify(parse(case["gold"], default), parse(case["response"], default))


def _scorer(module: Any) -> Callable[[Case], bool | None]:
    return lambda case: _accepts(module.compute_score(case["data_source"], case["response"], case["gold"]))


JUDGES: dict[str, Callable[[Case], bool | None]] = {
    "math_answer": _scorer(math_answer),
    "verl (by source)": _verl_by_source,
    "gsm8k": _scorer(gsm8k),
    "math_reward": _scorer(math_reward),
    "math_dapo": _scorer(math_dapo),
    "math_verify": _scorer(math_verify_port),
    "math-verify (plain)": _plain_math_verify,
}


def evaluate(cases: list[Case]) -> dict[str, dict[str, Any]]:
    """Per judge: accuracy, false accepts / rejects, undecided, the ids it missed, ms per case (mean and p99)."""
    report = {}
    for name, accepts in JUDGES.items():
        verdicts, times = [], []
        for case in cases:
            started = time.perf_counter()
            verdicts.append(accepts(case))
            times.append(time.perf_counter() - started)
        wrong = [case for case, verdict in zip(cases, verdicts) if verdict != case["correct"]]
        undecided = {case["id"] for case, verdict in zip(cases, verdicts) if verdict is None}
        per_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for case in cases:
            per_category[case["category"]][1] += 1
        for case in wrong:
            per_category[case["category"]][0] += 1
        report[name] = {
            "accuracy": 1 - len(wrong) / len(cases),
            "false_accepts": sum(not case["correct"] for case in wrong if case["id"] not in undecided),
            "false_rejects": sum(case["correct"] for case in wrong if case["id"] not in undecided),
            "undecided": len(undecided),
            "wrong_ids": [case["id"] for case in wrong],
            "ms_per_case": 1000 * sum(times) / len(cases),
            "p99_ms": 1000 * sorted(times)[int(0.99 * (len(times) - 1))],
            "by_category": {cat: 1 - bad / total for cat, (bad, total) in sorted(per_category.items())},
        }
    return report


def print_table(report: dict[str, dict[str, Any]], cases: list[Case], timing: bool = True) -> None:
    """The comparison table (with the time per case unless not ``timing``), then accuracy per category."""
    baseline = max(v["accuracy"] for k, v in report.items() if k != "math_answer")
    print(f"{len(cases)} labelled cases\n")
    print(f"{'judge':<22}{'accuracy':>10}{'false acc.':>12}{'false rej.':>12}{'undecided':>11}"
          f"{'vs best baseline':>18}" + (f"{'ms/case':>9}{'p99 ms':>8}" if timing else ""))
    for name, row in report.items():
        ratio = row["accuracy"] / baseline if baseline else float("inf")
        print(f"{name:<22}{row['accuracy']:>10.1%}{row['false_accepts']:>12}{row['false_rejects']:>12}{row['undecided']:>11}"
              f"{ratio:>17.2f}x" + (f"{row['ms_per_case']:>9.2f}{row['p99_ms']:>8.1f}" if timing else ""))
    categories = list(next(iter(report.values()))["by_category"])
    sizes = Counter(case["category"] for case in cases)
    print("\naccuracy by category (math_answer vs verl's scorers vs math-verify)")
    names = list(report)
    print(f"{'category':<18}{'cases':>6}" + "".join(f"{_short(name):>11}" for name in names))
    for category in categories:
        print(f"{category:<18}{sizes[category]:>6}"
              + "".join(f"{report[name]['by_category'][category]:>11.0%}" for name in names))


def _short(name: str) -> str:
    return {"verl (by source)": "verl", "math-verify (plain)": "mv plain"}.get(name, name)[:10]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="?", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-timing", action="store_true",
                        help="leave out the time per case (it varies run to run; the docs paste the verdicts)")
    args = parser.parse_args(argv)
    cases = load_cases(args.cases)
    report = evaluate(cases)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_table(report, cases, timing=not args.no_timing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
