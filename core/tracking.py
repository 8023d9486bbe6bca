"""Metric sinks: console, metrics.jsonl, and the trackers of :mod:`tracking_sinks` (TensorBoard, W&B, MLflow, SwanLab)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from tqdm import tqdm

from rewardsmith.core.tracking_sinks import open_sinks

METRICS_FILE = "metrics.jsonl"
# Console lines show these first, then the rest is in metrics.jsonl.
CONSOLE_KEYS = ("critic/score/mean", "val/reward/mean", "response_length/mean", "actor/pg_loss", "actor/entropy",
                "actor/ppo_kl", "critic/vf_loss", "perf/tokens_per_s", "timing_s/step", "timing_s/reward_wait")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Tracker:
    """Writes one record per step to every configured sink."""

    def __init__(self, out_dir: Path, loggers: Sequence[str], resume_step: int = 0, stream=None,
                 project: str = "rewardsmith", experiment: str = "default", config: Optional[dict[str, Any]] = None) -> None:
        """``resume_step``: the step a resumed run continues from (0 = a fresh run, which starts a new metrics.jsonl).
        ``project``, ``experiment`` and ``config`` name the run in the trackers (wandb, mlflow, swanlab)."""
        self.loggers = set(loggers)
        self.stream = stream or sys.stdout
        self.path = out_dir / METRICS_FILE
        out_dir.mkdir(parents=True, exist_ok=True)
        if "jsonl" in self.loggers:
            self._truncate_after(resume_step)
        self.sinks = open_sinks(list(loggers), out_dir, project, experiment, config)

    def _truncate_after(self, step: int) -> None:
        """A resumed run rewrites the steps after its checkpoint, so drop their old lines."""
        if not self.path.is_file():
            return
        if step == 0:
            self.path.unlink()
            return
        kept = [line for line in self.path.read_text().splitlines() if line.strip() and json.loads(line).get("step", 0) <= step]
        self.path.write_text("".join(line + "\n" for line in kept))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        if "jsonl" in self.loggers:
            record = {"step": step, **{k: _clean(v) for k, v in sorted(metrics.items())}}
            with self.path.open("a") as f:
                f.write(json.dumps(record) + "\n")
        if "console" in self.loggers:
            shown = [f"{k}={metrics[k]:.4g}" for k in CONSOLE_KEYS if k in metrics]
            tqdm.write(f"step {step}: " + "  ".join(shown), file=self.stream)
        for sink in self.sinks:
            sink.log(step, metrics)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
