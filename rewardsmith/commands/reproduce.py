"""``rewardsmith score --reproduce SCORED``: score a scored file's responses again, with the
reward-side config its receipts recorded, and say what changed: plugin versions, custom files,
the config, and the rows whose score differs."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from rewardsmith.commands.score import samples_of, score_batch
from rewardsmith.common.config import load_config
from rewardsmith.common.rows import read_rows
from rewardsmith.core.schema import Config
from rewardsmith.plugins.receipts import receipt_changes, reward_config, run_receipt


def recorded(rows: list[dict[str, Any]], source: str) -> tuple[list[float], list[dict[str, Any]]]:
    """Each sample's recorded score and receipt, in ``samples_of`` order; raises naming a row without them."""
    scores, receipts = [], []
    for i, row in enumerate(rows):
        if "receipt" not in row or "score" not in row:
            raise ValueError(f"{source}: row {i} has no 'receipt' or 'score': --reproduce reads the output of "
                             "`rewardsmith score` (run it first)")
        many = isinstance(row.get("response"), list)
        scores += row["score"] if many else [row["score"]]
        receipts += row["receipt"] if many else [row["receipt"]]
    return scores, receipts


def config_file(receipts: list[dict[str, Any]], scored: Path) -> Path:
    """The reward-side config the receipts name: beside the scored file, else where it was written."""
    files = {r["config_file"] for r in receipts}
    if len(files) != 1:
        raise ValueError(f"{scored}: its receipts name {len(files)} reward configs ({', '.join(sorted(files))}); "
                         "--reproduce re-scores files written by one `rewardsmith score` run")
    written = Path(files.pop())
    for candidate in (scored.parent / written.name, written):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"the reward config {written.name} named by {scored}'s receipts is neither beside it "
                            f"nor at {written}")


def reproduce(args: argparse.Namespace) -> int:
    """Re-score ``args.input`` (a scored file) as its receipts say; 1 when any sample's score differs."""
    if args.config or args.scorer or args.output:
        raise ValueError("--reproduce reads the config its receipts recorded; it takes no --config, --scorer or -o "
                         "(key=value overrides apply on top, e.g. a moved sandbox URL)")
    scored = Path(args.input)
    rows = read_rows(scored)
    old_scores, old_receipts = recorded(rows, str(scored))
    if not rows:
        print(f"{scored} has no rows; nothing to reproduce", file=sys.stderr)
        return 0
    path = config_file(old_receipts, scored)
    config = load_config(Config, path, list(args.overrides))
    batch, owners = samples_of(rows, config.data.reward_fn_key, str(scored), config.data.prompt_key)
    run = run_receipt(reward_config(config.reward_settings(), config.data), Path(old_receipts[0]["config_file"]))
    out, new_receipts = score_batch(config, batch, run)
    changes = list(dict.fromkeys(line for old, new in zip(old_receipts, new_receipts)
                                 for line in receipt_changes(old, new)))
    for line in changes:
        print(f"changed: {line}")
    differ = [(k, old, new) for k, (old, new) in enumerate(zip(old_scores, out.scores.tolist()))
              if not math.isclose(old, new, rel_tol=1e-9, abs_tol=1e-9)]
    for k, old, new in differ:
        row, response = owners[k]
        where = f"row {row}" + (f" response {response}" if isinstance(rows[row]["response"], list) else "")
        print(f"differs: {where} ({batch.data_sources[k]}): {old:g} when scored, {new:g} now")
    print(f"reproduced {len(batch) - len(differ)} of {len(batch)} samples of {scored} with {path}; "
          f"{len(differ)} differ, {len(changes)} change(s) in what scored them")
    return 1 if differ else 0
