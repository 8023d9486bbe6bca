"""Nothing is lost: checkpoints of another run are set aside, not pruned or overwritten; a garbled
marker is an error naming it; and a run killed (SIGKILL, a real subprocess) at any point of a save
resumes from a whole checkpoint, the previous one or the new one."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core_helpers import tiny_config

from rewardsmith.core.checkpoint import LATEST, CheckpointError, latest_checkpoint
from rewardsmith.core.trainer import PPOTrainer, measures_machine

TESTS = Path(__file__).resolve().parent
SAVING = ("trainer.save_freq=1", "algorithm.adv_estimator=grpo")


def fit(config) -> tuple[dict[int, dict], str]:
    """Train to the end: metrics.jsonl by step (timings left out) and what the trainer said."""
    stream = io.StringIO()
    trainer = PPOTrainer(config, stream=stream)
    try:
        trainer.fit()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (trainer.out_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: {k: v for k, v in r.items() if not measures_machine(k)} for r in records}, stream.getvalue()


def names(path: Path, pattern: str = "global_step_*") -> list[str]:
    return sorted(p.name for p in path.glob(pattern))


def test_a_fresh_run_sets_aside_an_earlier_runs_checkpoints_and_prunes_only_its_own(tmp_path):
    out = tmp_path / "run"
    fit(tiny_config(tmp_path, *SAVING, "trainer.total_training_steps=3", "trainer.max_ckpt_to_keep=2"))
    assert names(out) == ["global_step_2", "global_step_3"]

    # the demo's way: the same directory again, without resuming
    _, said = fit(tiny_config(tmp_path, *SAVING, "trainer.total_training_steps=2", "trainer.max_ckpt_to_keep=2",
                              "trainer.resume_mode=disable"))
    [stale] = names(out, "stale_*")
    assert f"moved global_step_2, global_step_3, {LATEST} of an earlier run to {out / stale}" in said
    assert names(out / stale) == ["global_step_2", "global_step_3"] and (out / stale / LATEST).read_text() == "3"
    assert (out / stale / "global_step_3" / "trainer_state.pt").is_file()  # untouched
    assert [json.loads(line)["step"] for line in (out / stale / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    assert names(out) == ["global_step_1", "global_step_2"]  # this run's two, kept
    assert (out / LATEST).read_text() == "2"

    # auto resumes the second run's last checkpoint, and prunes only its own older ones
    metrics, said = fit(tiny_config(tmp_path, *SAVING, "trainer.total_training_steps=3", "trainer.max_ckpt_to_keep=2"))
    assert f"resumed from {out / 'global_step_2'} at step 2" in said and sorted(metrics)[-1] == 3
    assert names(out) == ["global_step_2", "global_step_3"]
    assert names(out / stale) == ["global_step_2", "global_step_3"]


def test_resuming_an_older_checkpoint_sets_aside_the_newer_ones(tmp_path):
    out = tmp_path / "run"
    fit(tiny_config(tmp_path, *SAVING, "trainer.total_training_steps=3"))
    _, said = fit(tiny_config(tmp_path, *SAVING, "trainer.total_training_steps=2", "trainer.resume_mode=resume_path",
                              f"trainer.resume_from_path={out / 'global_step_1'}"))
    [stale] = names(out, "stale_*")
    assert f"moved global_step_2, global_step_3, {LATEST} of an earlier run to {out / stale}" in said
    assert names(out) == ["global_step_1", "global_step_2"] and (out / LATEST).read_text() == "2"


@pytest.mark.parametrize("text, problem", [("", "holds ''"), ("1x", "holds '1x'"), ("\x00\x00", "holds"),
                                           ("7", "names step 7, but .*global_step_7 does not exist")])
def test_a_garbled_marker_or_one_naming_a_missing_checkpoint_is_an_error_naming_it(tmp_path, text, problem):
    out = tmp_path / "run"
    out.mkdir()
    (out / LATEST).write_text(text)
    with pytest.raises(CheckpointError, match=f"{out / LATEST}.* {problem}"):
        latest_checkpoint(out)
    trainer = PPOTrainer(tiny_config(tmp_path))  # resume_mode=auto: refuses rather than starting afresh
    try:
        with pytest.raises(CheckpointError, match=str(out / LATEST)):
            trainer.fit()
    finally:
        trainer.close()


# A training run that SIGKILLs itself just before the K-th file-system write of its second save
# (a file opened for writing, torch.save, a rename, a tree removal), having opened the file
# (truncated it) when the write is an open: the moment a crash hurts most.
CRASHING_RUN = r'''
import builtins, io, os, shutil, signal, sys
import torch
from core_helpers import tiny_config
from rewardsmith.core.trainer import PPOTrainer

root, kill_at = sys.argv[1], int(sys.argv[2])
armed, count = [False], [0]

def event(what):
    if armed[0]:
        count[0] += 1
        if count[0] == kill_at:
            print("killed at", what, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

def wrap(module, name):
    real = getattr(module, name)
    def hooked(*args, **kwargs):
        event(f"{name} " + " ".join(str(a).replace(root, "") for a in args if isinstance(a, (str, os.PathLike))))
        return real(*args, **kwargs)
    setattr(module, name, hooked)

for module, name in ((os, "replace"), (os, "rename"), (shutil, "rmtree"), (torch, "save")):
    wrap(module, name)
real_open = builtins.open
def opening(file, mode="r", *args, **kwargs):
    handle = real_open(file, mode, *args, **kwargs)
    if any(c in mode for c in "wax+"):
        event(f"writing {str(file).replace(root, '')}")
    return handle
builtins.open = io.open = opening

real_save = PPOTrainer.save_checkpoint
def save(self):
    armed[0] = self.global_step == 2
    return real_save(self)
PPOTrainer.save_checkpoint = save

trainer = PPOTrainer(tiny_config(__import__("pathlib").Path(root), *sys.argv[3:]))
try:
    trainer.fit()
finally:
    trainer.close()
print("events", count[0], flush=True)
'''


@pytest.mark.slow
def test_a_run_killed_at_any_point_of_a_save_resumes_from_a_whole_checkpoint(tmp_path):
    options = (*SAVING, "trainer.max_ckpt_to_keep=1")
    script = tmp_path / "crashing_run.py"
    script.write_text(CRASHING_RUN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}

    def crashing_run(root: Path, kill_at: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), str(root), str(kill_at), *options, "trainer.total_training_steps=2"],
                              capture_output=True, text=True, timeout=300, env=env)

    straight, _ = fit(tiny_config(tmp_path / "straight", *options, "trainer.total_training_steps=3"))
    whole = crashing_run(tmp_path / "whole", 10 ** 6)
    assert whole.returncode == 0, whole.stderr[-3000:]
    events = int(whole.stdout.split("events ")[1])
    assert events >= 8  # the save really was watched: model files, optimizer, trainer state, renames, the marker

    resumed_from = {}
    for k in range(1, events + 1):
        root = tmp_path / f"kill{k}"
        done = crashing_run(root, k)
        assert done.returncode == -9, f"kill point {k} did not kill: {done.stdout[-500:]} {done.stderr[-2000:]}"
        where = done.stdout.split("killed at ", 1)[1].strip()
        # resume_mode=auto, as a user would after the crash: never a crash, never a mix
        metrics, said = fit(tiny_config(root, *options, "trainer.total_training_steps=3"))
        step = int(said.split(" at step ")[1].split()[0])
        assert step in (1, 2), f"kill at {where}: {said}"
        resumed_from[where] = step
        for s in range(step + 1, 4):
            assert metrics[s] == straight[s], f"kill at {where}: resumed from step {step}, step {s} differs"
        out = root / "run"
        assert not names(out, "*.partial") and (out / LATEST).read_text() == "3"
    # both outcomes happened: before the commit the previous checkpoint, after it the new one
    assert set(resumed_from.values()) == {1, 2}, resumed_from
