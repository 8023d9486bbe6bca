"""Score a scored file's responses again, as its receipts say: ``rewardsmith score --reproduce`` from Python.

The reward-side config the receipts name is loaded (with any ``key=value``
overrides on top), the same responses are scored, and today's receipts are
compared with the recorded ones (:func:`rewardsmith.plugins.receipts.receipt_changes`):
plugin versions, custom files, judge settings, the config's hash. Scores are
compared sample by sample.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from rewardsmith.commands.score import samples_of
from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins.executors import Progress
from rewardsmith.plugins.receipts import receipt_changes, reward_config, run_receipt, score_with_receipts


@dataclass
class Reproduction:
    """What re-scoring found: ``changes`` in what scored the samples (one line each) and the samples
    whose score ``differ`` (``row``, ``response`` (None for a row with one response), ``data_source``,
    ``recorded``, ``now``)."""

    config_file: Path
    samples: int
    changes: list[str] = field(default_factory=list)
    differ: list[dict[str, Any]] = field(default_factory=list)


def recorded(rows: list[dict[str, Any]], source: str) -> tuple[list[float], list[dict[str, Any]]]:
    """Each sample's recorded score and receipt, in ``samples_of`` order; raises naming a row without them."""
    scores, receipts = [], []
    for i, row in enumerate(rows):
        if "receipt" not in row or "score" not in row:
            raise ValueError(f"{source}: row {i} has no 'receipt' or 'score': --reproduce reads the output of "
                             "`rewardsmith score` or a training rollout dump")
        many = isinstance(row.get("response"), list)
        scores += row["score"] if many else [row["score"]]
        receipts += row["receipt"] if many else [row["receipt"]]
    return scores, receipts


def config_file(receipts: list[dict[str, Any]], scored: Path) -> Path:
    """The reward-side config the receipts name: beside the scored file, else where it was written."""
    files = {r["config_file"] for r in receipts}
    if len(files) != 1:
        raise ValueError(f"{scored}: its receipts name {len(files)} reward configs ({', '.join(sorted(files))}); "
                         "--reproduce re-scores a file written by one `rewardsmith score` run")
    written = Path(files.pop())
    for candidate in (scored.parent / written.name, written):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"the reward config {written.name} named by {scored}'s receipts is neither beside it "
                            f"nor at {written}")


def reproduce_rows(rows: list[dict[str, Any]], scored: Path, overrides: Sequence[str] = (),
                   progress: Optional[Progress] = None) -> Reproduction:
    """Re-score ``rows`` (read from the scored file ``scored``) with the reward config their receipts name."""
    old_scores, old_receipts = recorded(rows, str(scored))
    if not rows:
        return Reproduction(scored, 0)
    path = config_file(old_receipts, scored)
    config = load_config(Config, path, list(overrides))
    batch, owners = samples_of(rows, config.data.reward_fn_key, str(scored), config.data.prompt_key)
    run = run_receipt(reward_config(config.reward_settings(), config.data), Path(old_receipts[0]["config_file"]))
    out, new_receipts = score_with_receipts(config.reward_settings(), batch, run, progress)
    report = Reproduction(path, len(batch))
    report.changes = list(dict.fromkeys(line for old, new in zip(old_receipts, new_receipts)
                                        for line in receipt_changes(old, new)))
    for k, (old, new) in enumerate(zip(old_scores, out.scores.tolist())):
        if not math.isclose(old, new, rel_tol=1e-9, abs_tol=1e-9):
            row, response = owners[k]
            report.differ.append({"row": row, "response": response if isinstance(rows[row]["response"], list) else None,
                                  "data_source": batch.data_sources[k], "recorded": old, "now": new})
    return report
