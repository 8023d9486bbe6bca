"""Ctrl-C (a real SIGINT to a real `rewardsmith` process, or to its process group as a terminal sends it)
during score, sft, train and sandbox serve: one line, no traceback, exit status 130, and for training
where the last checkpoint is."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from core_helpers import TINY_MODEL, write_inputs

from rewardsmith.common.rows import write_rows
from rewardsmith.sandbox.testing import free_port, isolation_unavailable

SLOW_SCORER = '''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    time.sleep(60)
    return 1.0
'''


def interrupt_when(args: list[str], ready, cwd: Path, timeout: float = 120, group: bool = False) -> tuple[int, str]:
    """Run ``rewardsmith ARGS``, send SIGINT once ``ready(stderr so far)`` holds; (exit status, stderr).

    ``group``: send it to the command's whole process group, as a terminal's Ctrl-C does (every
    child process not in a group of its own gets it too), not to the command alone.
    """
    err_path = cwd / "stderr.txt"
    with err_path.open("w") as err:
        # As from a terminal: SIGINT at its default, even where this test runs with it ignored (a job started
        # in the background by a non-interactive shell inherits SIGINT ignored, and Python then never raises
        # KeyboardInterrupt).
        proc = subprocess.Popen([sys.executable, "-m", "rewardsmith", *args], stdout=subprocess.DEVNULL, stderr=err,
                                cwd=cwd, env={**os.environ, "PYTHONWARNINGS": "ignore"},
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                                process_group=0 if group else None)
        deadline = time.monotonic() + timeout
        try:
            while not ready(err_path.read_text()):
                assert proc.poll() is None, f"exited {proc.returncode} before it was interrupted:\n{err_path.read_text()}"
                assert time.monotonic() < deadline, err_path.read_text()
                time.sleep(0.1)
            if group:
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, err_path.read_text()


def last_line(stderr: str) -> str:
    return stderr.replace("\r", "\n").strip().splitlines()[-1]


@pytest.mark.parametrize("manager", ["naive", "parallel"])
def test_ctrl_c_during_score(tmp_path, manager):
    scorer = tmp_path / "slow.py"
    scorer.write_text(SLOW_SCORER)
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "x", "prompt": "p", "reward_model": {"ground_truth": "1"}, "response": "r"}] * 2)
    code, stderr = interrupt_when(["score", str(src), f"custom_reward_function.path={scorer}",
                                   f"reward_model.reward_manager={manager}", "reward_model.num_workers=2"],
                                  lambda err: "scoring:" in err, tmp_path)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert last_line(stderr) == "rewardsmith score: interrupted"
    assert not (tmp_path / "in.scored.jsonl").exists()


# One slow sample: the worker that scored the fast ones waits idle for work when Ctrl-C comes.
ONE_SLOW_SCORER = '''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if solution_str == "slow":
        time.sleep(60)
    open(f"scored.{solution_str}", "w").close()
    return 1.0
'''


def _scored_fast_ones(cwd: Path) -> bool:
    if len(list(cwd.glob("scored.*"))) < 2:
        return False
    time.sleep(0.5)  # the worker's reply is sent, and it waits for work
    return True


def test_ctrl_c_at_the_terminal_during_score_stops_pool_workers_quietly(tmp_path):
    scorer = tmp_path / "one_slow.py"
    scorer.write_text(ONE_SLOW_SCORER)
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "x", "prompt": "p", "reward_model": {"ground_truth": "1"}, "response": r}
                     for r in ("fast", "quick", "slow")])
    code, stderr = interrupt_when(["score", str(src), f"custom_reward_function.path={scorer}",
                                   "reward_model.reward_manager=parallel", "reward_model.num_workers=2"],
                                  lambda err: _scored_fast_ones(tmp_path), tmp_path, group=True)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert last_line(stderr) == "rewardsmith score: interrupted"


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).ok
    except requests.RequestException:
        return False


@pytest.mark.skipif(isolation_unavailable() is not None, reason=str(isolation_unavailable()))
def test_ctrl_c_at_the_terminal_stops_sandbox_serve_in_one_line(tmp_path):
    port = free_port()
    code, stderr = interrupt_when(["sandbox", "serve", "--port", str(port), "--workers", "2", "--allow-weak-isolation"],
                                  lambda err: _answers(f"http://127.0.0.1:{port}/v1/ping"), tmp_path, group=True)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert last_line(stderr) == "rewardsmith sandbox: interrupted"


# A library object whose finalizer is running when Ctrl-C comes (the SIGINT is
# raised inside __del__, where Python only prints an exception).
FINALIZER_SCORER = '''
import signal
import time

class Finalized:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):  # the KeyboardInterrupt surfaces here, inside the finalizer
            pass

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    Finalized()
    time.sleep(30)  # the command goes on: a lost Ctrl-C would let it finish
    return 1.0
'''


def test_ctrl_c_inside_a_finalizer_still_stops_the_command(tmp_path):
    scorer = tmp_path / "finalizer.py"
    scorer.write_text(FINALIZER_SCORER)
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "x", "prompt": "p", "reward_model": {"ground_truth": "1"}, "response": "r"}])
    # reward_model.timeout=null: naive scores in this process, where the finalizer must not swallow the Ctrl-C.
    done = subprocess.run([sys.executable, "-m", "rewardsmith", "score", str(src), f"custom_reward_function.path={scorer}",
                           "reward_model.timeout=null"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.returncode == 130, done.stderr
    assert last_line(done.stderr) == "rewardsmith score: interrupted"
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "in.scored.jsonl").exists()


def _config(tmp_path: Path, **trainer) -> Path:
    paths = write_inputs(tmp_path)
    config = {
        "data": {"tokenizer": str(paths["tokenizer"]), "train_files": str(paths["train"]),
                 "max_prompt_length": 96, "max_response_length": 8, "train_batch_size": 4},
        "actor_rollout_ref": {"model": {"config": yaml.safe_load(TINY_MODEL)}, "rollout": {"n": 2},
                              "actor": {"ppo_mini_batch_size": 2}},
        "algorithm": {"adv_estimator": "grpo"},
        "trainer": {"default_local_dir": str(tmp_path / "run"), "total_training_steps": 10000, "save_freq": 1,
                    "progress_bar": True, **trainer},
        "sft": {"train_files": str(paths["sft"]), "total_epochs": 100000, "batch_size": 8, "save_dir": str(tmp_path / "sft")},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_ctrl_c_during_train_names_the_last_checkpoint(tmp_path):
    config = _config(tmp_path)
    code, stderr = interrupt_when(["train", str(config)], lambda err: (tmp_path / "run" / "global_step_2").is_dir(),
                                  tmp_path)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    line = last_line(stderr)
    match = re.fullmatch(r"rewardsmith train: interrupted; last checkpoint: (\S+) \(the same command resumes from it\)", line)
    assert match, line
    assert re.fullmatch(r"global_step_\d+", Path(match.group(1)).name) and Path(match.group(1)).is_dir()


def test_ctrl_c_during_train_before_any_checkpoint(tmp_path):
    config = _config(tmp_path, save_freq=-1)
    code, stderr = interrupt_when(["train", str(config)], lambda err: "it/s" in err, tmp_path, group=True)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert last_line(stderr) == f"rewardsmith train: interrupted; no checkpoint was written under {tmp_path / 'run'}"


def test_ctrl_c_during_sft(tmp_path):
    config = _config(tmp_path)
    code, stderr = interrupt_when(["sft", str(config)], lambda err: "sft:" in err, tmp_path)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert last_line(stderr) == ("rewardsmith sft: interrupted; no checkpoint was written "
                                 "(sft saves its model only when it finishes)")
    assert not (tmp_path / "sft").exists()


HANGING_SCORER = '''
import os, time

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    with open(os.path.join(PID_DIR, str(os.getpid())), "w"):
        pass
    time.sleep(60)
    return 1.0
'''


@pytest.mark.parametrize("chunks", [1, 2])
def test_ctrl_c_while_rewards_overlap_the_passes(tmp_path, chunks):
    """The parallel manager scores on a background thread (launch_reward_fn_async's default); Ctrl-C
    in the middle stops the run at once, and the workers stuck in the scorer are killed. With
    rollout.stream_chunks=2 the first chunk is being scored while the second one generates."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    scorer = tmp_path / "hanging.py"
    scorer.write_text(f"PID_DIR = {str(pid_dir)!r}\n" + HANGING_SCORER)
    config = _config(tmp_path, save_freq=-1)
    tree = yaml.safe_load(config.read_text())
    tree["reward_model"] = {"reward_manager": "parallel", "num_workers": 2, "timeout": 120}
    tree["custom_reward_function"] = {"path": str(scorer)}
    tree["actor_rollout_ref"]["rollout"]["stream_chunks"] = chunks
    config.write_text(yaml.safe_dump(tree))
    start = [0.0]

    def scoring(err: str) -> bool:
        start[0] = time.monotonic()
        return any(pid_dir.iterdir())

    code, stderr = interrupt_when(["train", str(config)], scoring, tmp_path)
    assert time.monotonic() - start[0] < 30, "the stuck scorers were waited for"
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert last_line(stderr) == f"rewardsmith train: interrupted; no checkpoint was written under {tmp_path / 'run'}"
    time.sleep(1)
    for pid in (int(p.name) for p in pid_dir.iterdir()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
