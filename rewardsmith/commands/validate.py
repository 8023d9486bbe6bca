"""``rewardsmith validate``: check a scorer against the contract before training with it."""
from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", help="a scorer name, a reward manager name, an installed plugin (entry-point "
                                                  "or distribution name), or file.py[:function]; default: every "
                                                  "third-party plugin's scorers and managers")
    parser.add_argument("--rows", help="jsonl/parquet rows whose 'response' is a correct answer: the gold cases")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds each probe may take (default 10)")
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config a reward manager is built with (custom_reward_function.path=batched.py) and "
                             "a scorer is called under (reward_model.sandbox_fusion.url=..., "
                             "custom_reward_function.reward_kwargs.x=1)")


def run(args: argparse.Namespace) -> int:
    from rewardsmith.common.rows import read_rows
    from rewardsmith.validate import render, validate

    target, overrides = args.target, list(args.overrides)
    if target and "=" in target:  # no target, only overrides
        target, overrides = None, [target, *overrides]
    rows = read_rows(args.rows) if args.rows else None
    # Progress goes to stderr, so that stdout is the report alone (--json stays parseable).
    reports = validate(target, rows=rows, timeout=args.timeout, overrides=overrides,
                       progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps([r.to_dict() for r in reports], indent=2, default=str) if args.json else render(reports))
    return 0 if all(r.ok for r in reports) else 1
