"""``rewardsmith score --reproduce SCORED``: score a scored file's responses again, with the
reward-side config its receipts recorded, and say what changed (:mod:`rewardsmith.reproduce`)."""
from __future__ import annotations

import argparse
from pathlib import Path

from rewardsmith.commands.score import _ProgressBar, _scorer_output_to_stderr
from rewardsmith.common.rows import read_rows
from rewardsmith.reproduce import reproduce_rows


def reproduce(args: argparse.Namespace) -> int:
    """Re-score ``args.input`` (a scored file) as its receipts say; 1 when any sample's score differs."""
    if args.config or args.scorer or args.output:
        raise ValueError("--reproduce reads the config its receipts recorded; it takes no --config, --scorer or -o "
                         "(key=value overrides apply on top, e.g. a moved sandbox URL)")
    scored = Path(args.input)
    rows = read_rows(scored)
    bar = _ProgressBar()
    try:
        with _scorer_output_to_stderr():
            report = reproduce_rows(rows, scored, args.overrides, progress=bar)
    finally:
        bar.close()
    for line in report.changes:
        print(f"changed: {line}")
    for d in report.differ:
        where = f"row {d['row']}" + (f" response {d['response']}" if d["response"] is not None else "")
        print(f"differs: {where} ({d['data_source']}): {d['recorded']:g} when scored, {d['now']:g} now")
    print(f"reproduced {report.samples - len(report.differ)} of {report.samples} samples of {scored} with "
          f"{report.config_file}; {len(report.differ)} differ, {len(report.changes)} change(s) in what scored them")
    return 1 if report.differ else 0
