"""Checkpoint layout and the random state a run needs to continue exactly.

``<default_local_dir>/global_step_<N>/`` holds ``actor/`` and ``critic/``
(Hugging Face model directories plus ``optim.pt``) and ``trainer_state.pt``;
``latest_checkpointed_iteration.txt`` names the newest step, as in verl.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

LATEST = "latest_checkpointed_iteration.txt"


def step_dir(root: Path, step: int) -> Path:
    return root / f"global_step_{step}"


def latest_checkpoint(root: Path) -> Optional[Path]:
    """The newest complete checkpoint under ``root``, or None."""
    marker = root / LATEST
    if not marker.is_file():
        return None
    path = step_dir(root, int(marker.read_text().strip()))
    return path if (path / "trainer_state.pt").is_file() else None


def step_of(path: Path) -> int:
    """The global step of a ``global_step_<N>`` directory."""
    name = Path(path).name
    if not name.startswith("global_step_") or not name[len("global_step_"):].isdigit():
        raise ValueError(f"{path} is not a global_step_<N> checkpoint directory")
    return int(name[len("global_step_"):])


def rng_state() -> dict[str, Any]:
    """Every global generator a training step draws from."""
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def mark_latest(root: Path, step: int, keep: Optional[int]) -> None:
    """Point ``latest_checkpointed_iteration.txt`` at ``step``, then drop all but the newest ``keep``."""
    (root / LATEST).write_text(str(step))
    if keep is None:
        return
    steps = sorted(step_of(p) for p in root.glob("global_step_*") if p.is_dir())
    for old in steps[:-keep] if keep > 0 else steps:
        shutil.rmtree(step_dir(root, old), ignore_errors=True)
