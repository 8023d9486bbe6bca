"""Checkpoint layout, how a checkpoint is written so a crash never leaves a broken one,
and the random state a run needs to continue exactly.

``<default_local_dir>/global_step_<N>/`` holds ``actor/`` and ``critic/``
(Hugging Face model directories plus ``optim.pt``) and ``trainer_state.pt``;
``latest_checkpointed_iteration.txt`` names the newest step, as in verl.

A checkpoint is written into ``global_step_<N>.partial/``, flushed to disk,
renamed to ``global_step_<N>/`` and only then named by the marker (itself
written to a temporary file and renamed): a run killed at any point leaves the
marker naming the previous complete checkpoint or the new one, never a
half-written one. The marker is the commit point: a checkpoint it does not name
yet does not count.
"""
from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np
import torch

LATEST = "latest_checkpointed_iteration.txt"
TRAINER_STATE = "trainer_state.pt"
PARTIAL = ".partial"
STEP_PREFIX = "global_step_"


class CheckpointError(RuntimeError):
    """A checkpoint directory's marker or contents cannot be trusted; the message names the file."""


def step_dir(root: Path, step: int) -> Path:
    return root / f"{STEP_PREFIX}{step}"


def partial_dir(root: Path, step: int) -> Path:
    """Where step ``step``'s checkpoint is written before it is complete."""
    return root / f"{STEP_PREFIX}{step}{PARTIAL}"


def read_marker(root: Path) -> Optional[int]:
    """The step ``latest_checkpointed_iteration.txt`` names, or None without a marker.

    Raises :class:`CheckpointError` naming the file when it is unreadable, empty or
    not a step number (left by another tool, or by a crash of a version that wrote it in place).
    """
    marker = root / LATEST
    if not marker.exists():
        return None
    try:
        text = marker.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read the checkpoint marker {marker}: {exc}") from None
    if not text.strip().isdigit():
        raise CheckpointError(f"the checkpoint marker {marker} holds {text[:40]!r}, not a step number: fix it to name "
                              f"a complete {STEP_PREFIX}<N> directory, remove it to start afresh, or set "
                              "trainer.resume_mode=resume_path with trainer.resume_from_path")
    return int(text.strip())


def latest_checkpoint(root: Path) -> Optional[Path]:
    """The checkpoint the marker names, or None without a marker.

    Raises :class:`CheckpointError` when the marker is garbled or names a checkpoint
    that is missing or incomplete (rather than silently starting afresh).
    """
    step = read_marker(root)
    if step is None:
        return None
    path = step_dir(root, step)
    if not (path / TRAINER_STATE).is_file():
        raise CheckpointError(f"the checkpoint marker {root / LATEST} names step {step}, but {path} "
                              f"{'has no ' + TRAINER_STATE if path.is_dir() else 'does not exist'}: remove the marker to "
                              "start afresh, or set trainer.resume_mode=resume_path with trainer.resume_from_path")
    return path


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


def step_dirs(root: Path) -> dict[int, Path]:
    """Every ``global_step_<N>`` directory under ``root`` (complete or not), by step."""
    found = {}
    for path in root.glob(f"{STEP_PREFIX}*"):
        suffix = path.name[len(STEP_PREFIX):]
        if path.is_dir() and suffix.isdigit():
            found[int(suffix)] = path
    return found


def set_aside(root: Path, start_step: int, resumed_from: Optional[Path],
              records: Iterable[str] = ()) -> tuple[list[int], list[str]]:
    """Make ``root`` hold only the checkpoints of the run that starts now at ``start_step``.

    Checkpoints of other runs (every one newer than ``start_step``; all of them when
    the run did not resume from a checkpoint in ``root``) move, with the marker that
    named them, to ``root/stale_<UTC time>/``: nothing is deleted, and the new run
    neither overwrites nor prunes them. Half-written ``.partial`` directories (a crash
    during a save) are removed. The files named in ``records`` (the metrics log,
    which the new run rewrites) are copied along. Returns the steps of the checkpoints left (this run's
    earlier ones, which ``max_ckpt_to_keep`` may prune) and what was done, for the console.
    """
    notes = []
    for partial in sorted(root.glob(f"{STEP_PREFIX}*{PARTIAL}")):
        shutil.rmtree(partial)
        notes.append(f"removed {partial}, a checkpoint whose save did not finish")
    ours = resumed_from is not None and resumed_from.resolve().parent == root.resolve()
    dirs = step_dirs(root)
    stale = sorted(step for step in dirs if step > start_step or not ours)
    marker_stale = (root / LATEST).exists() and (not ours or _marker_or_none(root) in [None, *stale])
    if not stale and not marker_stale:
        return sorted(dirs), notes
    folder = root / time.strftime("stale_%Y%m%dT%H%M%SZ", time.gmtime())
    while folder.exists():
        folder = folder.with_name(folder.name + "_")
    folder.mkdir()
    for step in stale:
        os.replace(dirs[step], folder / dirs[step].name)
    if marker_stale:
        os.replace(root / LATEST, folder / LATEST)
    for name in records:
        if (root / name).is_file():
            shutil.copy2(root / name, folder / name)
    why = (f"this run resumed from step {start_step}" if ours else
           f"this run starts at step {start_step} without resuming from them" if resumed_from is None else
           f"this run resumed from {resumed_from}")
    moved = [dirs[s].name for s in stale] + [LATEST] * marker_stale
    notes.append(f"moved {', '.join(moved)} of an earlier run to {folder} ({why}); nothing there is deleted or overwritten")
    return sorted(set(dirs) - set(stale)), notes


def _marker_or_none(root: Path) -> Optional[int]:
    try:
        return read_marker(root)
    except CheckpointError:
        return None


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(path: Path) -> None:
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            _fsync(Path(dirpath) / name)
        _fsync(Path(dirpath))


def write_marker(root: Path, step: int) -> None:
    """Point ``latest_checkpointed_iteration.txt`` at ``step``, atomically (temporary file, fsync, rename)."""
    tmp = root / (LATEST + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(str(step))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / LATEST)
    _fsync(root)


def commit(root: Path, step: int) -> Path:
    """Make the complete ``global_step_<step>.partial`` the checkpoint of ``step`` and name it in the marker."""
    partial, final = partial_dir(root, step), step_dir(root, step)
    _fsync_tree(partial)  # the data reaches the disk before the rename that publishes it
    if final.exists():  # set_aside moved every later step away: someone else is writing here
        raise CheckpointError(f"{final} appeared while this run was saving step {step} (is another run writing into "
                              f"{root}?); this run's checkpoint is left in {partial}")
    os.replace(partial, final)
    _fsync(root)
    write_marker(root, step)
    return final


def copy_checkpoint(checkpoint: Path, destination: Path) -> Path:
    """Copy the committed ``checkpoint`` (a ``global_step_<N>`` directory) to ``destination/global_step_<N>``
    (verl's ``trainer.default_hdfs_dir`` on a local path); an earlier copy of that step is replaced.

    The copy is made under a ``.partial`` name and renamed, so ``destination`` never holds half a checkpoint.
    """
    destination.mkdir(parents=True, exist_ok=True)
    final = destination / checkpoint.name
    partial = final.with_name(final.name + PARTIAL)
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(checkpoint, partial)
    _fsync_tree(partial)
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    _fsync(destination)
    return final


def prune(root: Path, steps: Iterable[int], keep: Optional[int]) -> list[int]:
    """Delete all but the newest ``keep`` of ``steps`` (this run's checkpoints); returns the steps kept.

    ``keep`` null or 0 keeps all, as in verl. The marker's checkpoint is never deleted.
    """
    steps = sorted(set(steps))
    if not keep or keep <= 0:
        return steps
    latest = read_marker(root)
    for old in steps[:-keep]:
        if old != latest:
            shutil.rmtree(step_dir(root, old), ignore_errors=True)
    return steps[-keep:]
