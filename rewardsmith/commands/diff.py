"""``rewardsmith diff``: score the same responses two ways and report what changes."""
from __future__ import annotations

import argparse
import json

from rewardsmith.common.rows import read_rows


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="jsonl or parquet rows with responses: `rewardsmith score` output or a "
                                      "training rollout dump (trainer.rollout_data_dir)")
    parser.add_argument("a", metavar="A", help="side A: a scorer name, a .py file[:function], a .yaml config, "
                                              "key=value items, or 'recorded' (the rows' own scores); quote several items")
    parser.add_argument("b", metavar="B", help="side B, written like A")
    parser.add_argument("--config", help="a YAML config file for both sides")
    parser.add_argument("--threshold", type=float, default=0.5, help="a sample passes when its score is above this (default 0.5)")
    parser.add_argument("--examples", type=int, default=3, help="examples shown per flip direction (default 3)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides for both sides")


def run(args: argparse.Namespace) -> int:
    from rewardsmith.commands.score import _ProgressBar, _scorer_output_to_stderr
    from rewardsmith.diff import diff_rows, render

    rows = read_rows(args.input)
    if not rows:
        raise ValueError(f"{args.input} has no rows to compare")
    bar = _ProgressBar()
    try:
        with _scorer_output_to_stderr():
            report = diff_rows(rows, args.a, args.b, config_file=args.config, overrides=args.overrides,
                               threshold=args.threshold, examples=args.examples, source=args.input, progress=bar)
    finally:
        bar.close()
    print(json.dumps(report, indent=2, default=str) if args.json else render(report))
    return 0
