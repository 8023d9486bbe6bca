"""Users' own reward files, in the shapes public repositories write them.

Batched files (verl's ``batch`` manager), files importing from the launch
directory, async files reading verl's injected keys, wrong signatures, and
files whose own network call fails — through the managers, ``rewardsmith score``
(the real console script) and every spelling of ``custom_reward_function.path``.
"""
from __future__ import annotations

import json

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import rewardsmith

from rewardsmith.common.config import load_config
from rewardsmith.common.errors import CustomFunctionError, RewardError, SystematicScorerError
from rewardsmith.common.rows import read_rows, write_rows
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.custom import load_custom_function
from rewardsmith.plugins.factory import build_reward_manager

CONSOLE_SCRIPT = Path(sys.executable).parent / "rewardsmith"

BATCHED = '''
def compute_score(data_sources, solution_strs, ground_truths, extra_infos, bonus=0.0, **kwargs):
    # Scores each sample against its batch: a public shape (group-relative rewards).
    correct = [float(s.strip() == str(g)) for s, g in zip(solution_strs, ground_truths)]
    share = sum(correct) / len(correct)
    out = []
    for c, extra in zip(correct, extra_infos):
        out.append({"score": c + bonus, "batch_share": share, "turns": extra["num_turns"],
                    "scale": kwargs.get("scale"), "rollout": extra["rollout_reward_scores"]})
    return out
'''

BATCHED_BROKEN = '''
import time

def compute_score(data_sources, solution_strs, ground_truths, extra_infos):
    if solution_strs[0] == "hang":
        time.sleep(60)
    if solution_strs[0] == "short":
        return [1.0]
    if solution_strs[0] == "raise":
        raise KeyError("answer")
    return [float(s == g) for s, g in zip(solution_strs, ground_truths)]
'''

ASYNC_FILE = '''
import asyncio

async def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, weight=1.0, **kwargs):
    await asyncio.sleep(0)
    correct = solution_str.strip() == ground_truth
    # verl's retool recipe: (num_turns - 2) / 2 * 0.1 is the tool-call bonus, 0 for one turn
    tool_bonus = (extra_info["num_turns"] - 2) / 2 * 0.1
    return {"score": weight * float(correct) + tool_bonus, "seen": sorted(extra_info)}
'''


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def config(*overrides):
    return load_config(Config, None, list(overrides)).reward_settings()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- batched files ----------------------------------------------------------------

def test_batched_file_in_the_batch_manager(tmp_path):
    path = write(tmp_path, "batched.py", BATCHED)
    settings = config(f"custom_reward_function.path={path}", "custom_reward_function.reward_kwargs.bonus=0.5",
                      "reward_model.reward_manager=batch", "reward_model.reward_kwargs.scale=3")
    batch = RewardBatch(["a"] * 4, ["1", "1", "2", "x"], ["1", "1", "1", "2"], [None, {"k": 1}, None, None])
    with build_reward_manager(settings) as manager:
        out = manager(batch)
    assert out.scores.tolist() == [1.5, 1.5, 0.5, 0.5]
    assert out.extra_info["batch_share"] == [0.5] * 4  # duplicates are passed, as verl passes them
    assert out.extra_info["turns"] == [2] * 4 and out.extra_info["rollout"] == [{}] * 4
    assert out.extra_info["scale"] == [3] * 4  # reward_model.reward_kwargs reach the function, as in verl
    assert out.extra_info["reward_status"] == ["ok"] * 4


def test_batched_call_that_hangs_times_out_per_sample_counted(tmp_path):
    path = write(tmp_path, "broken.py", BATCHED_BROKEN)
    settings = config(f"custom_reward_function.path={path}", "reward_model.reward_manager=batch",
                      "reward_model.timeout=0.5", "reward_model.fallback_score=-1")
    with build_reward_manager(settings) as manager:
        out = manager(RewardBatch(["a"] * 2, ["hang", "x"], ["x", "x"]))
        assert out.scores.tolist() == [-1.0, -1.0]
        assert out.extra_info["reward_status"] == ["timeout", "timeout"]
        assert out.metrics["reward/timeouts"] == 2.0
        assert "timed out after 1s" in out.extra_info["reward_error"][0]  # 0.5 s per sample
        # the worker was replaced: the next batch scores
        assert manager(RewardBatch(["a"] * 2, ["x", "y"], ["x", "x"])).scores.tolist() == [1.0, 0.0]
        short = manager(RewardBatch(["a"] * 2, ["short", "y"], ["x", "x"]))
        assert short.extra_info["reward_status"] == ["invalid", "invalid"]
        assert "returned 1 items for a batch of 2" in short.extra_info["reward_error"][0]


def test_batched_call_that_raises_stops_the_run_unless_opted_out(tmp_path):
    path = write(tmp_path, "broken.py", BATCHED_BROKEN)
    batch = RewardBatch(["a"] * 3, ["raise", "x", "y"], ["x", "x", "x"])
    with build_reward_manager(config(f"custom_reward_function.path={path}", "reward_model.reward_manager=batch")) as m:
        with pytest.raises(SystematicScorerError, match=r"broken\.py:compute_score\).*3 samples.*KeyError: 'answer'"):
            m(batch)
    settings = config(f"custom_reward_function.path={path}", "reward_model.reward_manager=batch",
                      "reward_model.stop_when_all_fail=false")
    with build_reward_manager(settings) as manager:
        out = manager(batch)
    assert out.extra_info["reward_status"] == ["error"] * 3 and out.metrics["reward/errors"] == 3.0


def test_batch_manager_checks_the_shape_of_the_function(tmp_path):
    per_sample = write(tmp_path, "per_sample.py", "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n")
    with pytest.raises(CustomFunctionError, match="looks like a per-sample compute_score"):
        build_reward_manager(config(f"custom_reward_function.path={per_sample}", "reward_model.reward_manager=batch"))
    batched = write(tmp_path, "batched.py", BATCHED)
    with pytest.raises(CustomFunctionError, match="looks like a batched compute_score: use reward_model.reward_manager=batch"):
        build_reward_manager(config(f"custom_reward_function.path={batched}"))
    with pytest.raises(RewardError, match="set custom_reward_function.path"):
        build_reward_manager(config("reward_model.reward_manager=batch"))


# -- signatures and files that fail on every sample -----------------------------------

def test_wrong_signature_is_refused_at_load_with_the_expected_one(tmp_path):
    path = write(tmp_path, "old.py", "def compute_score(solution_str, ground_truth):\n    return 1.0\n")
    with pytest.raises(CustomFunctionError) as info:
        load_custom_function(str(path))
    message = str(info.value)
    assert "old.py" in message and "unexpected keyword argument 'data_source'" in message
    assert "its signature is compute_score(solution_str, ground_truth)" in message
    assert "expected compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)" in message


def test_reward_kwargs_the_function_cannot_take_are_named(tmp_path):
    path = write(tmp_path, "plain.py", "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n")
    with pytest.raises(CustomFunctionError, match=r"reward_kwargs \['bonus'\].*unexpected keyword argument 'bonus'"):
        build_reward_manager(config(f"custom_reward_function.path={path}", "custom_reward_function.reward_kwargs.bonus=1"))


def test_a_trl_style_function_gets_a_hint(tmp_path):
    path = write(tmp_path, "trl_style.py", "def reward_len(completions, **kwargs):\n    return [1.0 for _ in completions]\n")
    with pytest.raises(CustomFunctionError, match="looks like a TRL reward function.*scorer_from_trl"):
        load_custom_function(str(path), "reward_len")


def test_a_file_failing_every_sample_the_same_way_stops_the_run(tmp_path):
    path = write(tmp_path, "lazy_import.py", '''
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            import module_that_is_not_installed  # imported lazily, so loading succeeds
            return 1.0
    ''')
    batch = RewardBatch(["a"] * 3, ["1", "2", "3"], ["1"] * 3)
    with build_reward_manager(config(f"custom_reward_function.path={path}")) as manager:
        with pytest.raises(SystematicScorerError, match="every one of its 3 samples.*No module named 'module_that_is_not_installed'"):
            manager(batch)


LAZY_IMPORT = '''
    def compute_score(data_source, solution_str, ground_truth, extra_info=None):
        import module_that_is_not_installed  # imported lazily, so loading succeeds
        return 1.0
'''


def test_one_failing_input_shared_by_many_samples_is_not_a_broken_scorer(tmp_path):
    """A GRPO group of identical responses is one input: its failure costs those samples, counted."""
    path = write(tmp_path, "lazy_import.py", LAZY_IMPORT)
    with build_reward_manager(config(f"custom_reward_function.path={path}", "reward_model.fallback_score=-1")) as manager:
        out = manager(RewardBatch(["a"] * 8, ["same"] * 8, ["1"] * 8))
        assert out.metrics["reward/errors"] == 8.0 and out.metrics["reward/unique_calls_ratio"] == 1 / 8
        # A rare data_source, one row per batch: the failures add up across batches, as samples.
        manager(RewardBatch(["rare"], ["other"], ["1"]))
        with pytest.raises(SystematicScorerError, match=r"every one of its 10 samples \(3\+ distinct inputs\)"):
            manager(RewardBatch(["rare"], ["third"], ["1"]))


def test_a_scored_sample_between_failures_clears_the_count(tmp_path):
    path = write(tmp_path, "picky_import.py", '''
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            if solution_str != "fine":
                import module_that_is_not_installed
            return 1.0
    ''')
    with build_reward_manager(config(f"custom_reward_function.path={path}")) as manager:
        for batch in (["a", "b"], ["fine", "c"], ["d", "e"]):
            manager(RewardBatch(["s"] * 2, batch, ["1"] * 2))
        with pytest.raises(SystematicScorerError, match="every one of its 3 samples"):
            manager(RewardBatch(["s"], ["f"], ["1"]))


def test_samples_failing_differently_are_hard_samples_not_a_broken_file(tmp_path):
    path = write(tmp_path, "picky.py", '''
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            return float(int(solution_str) == int(ground_truth))
    ''')
    with build_reward_manager(config(f"custom_reward_function.path={path}")) as manager:
        out = manager(RewardBatch(["a"] * 3, ["x", "y", "1"], ["1"] * 3))
    assert out.extra_info["reward_status"] == ["error", "error", "ok"]


# -- async files with injected keys; network failures ----------------------------------

@pytest.mark.parametrize("manager", ["naive", "dapo"])
def test_async_file_reads_verl_keys_and_reward_kwargs(tmp_path, manager):
    path = write(tmp_path, "async_reward.py", ASYNC_FILE)
    settings = config(f"custom_reward_function.path={path}", "custom_reward_function.reward_kwargs.weight=2",
                      f"reward_model.reward_manager={manager}")
    with build_reward_manager(settings) as m:
        out = m(RewardBatch(["a", "a"], ["1", "2"], ["1", "1"], [{"index": 3}, None]))
    assert out.scores.tolist() == [2.0, 0.0]
    assert out.extra_info["seen"] == [["index", "num_turns", "rollout_reward_scores"], ["num_turns", "rollout_reward_scores"]]


def test_a_files_failed_network_call_is_unavailable_not_an_error(tmp_path):
    port = closed_port()
    path = write(tmp_path, "judge.py", f'''
        import urllib.request
        import requests

        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            if solution_str == "urllib":
                urllib.request.urlopen("http://127.0.0.1:{port}/judge", timeout=2)
            if solution_str == "requests":
                requests.post("http://127.0.0.1:{port}/judge", timeout=2)
            if solution_str == "wrapped":
                try:
                    requests.get("http://127.0.0.1:{port}/judge", timeout=2)
                except Exception as exc:
                    raise RuntimeError(f"judge call failed: {{exc}}")
            if solution_str == "bug":
                raise ValueError("a bug")
            return 1.0
    ''')
    with build_reward_manager(config(f"custom_reward_function.path={path}", "reward_model.fallback_score=-1")) as m:
        out = m(RewardBatch(["a"] * 5, ["urllib", "requests", "wrapped", "bug", "ok"], ["x"] * 5))
    assert out.extra_info["reward_status"] == ["unavailable", "unavailable", "unavailable", "error", "ok"]
    assert out.metrics["reward/unavailable"] == 3.0 and out.metrics["reward/errors"] == 1.0
    # a judge that is down for every sample is not a broken file: no stop, counted unavailable
    with build_reward_manager(config(f"custom_reward_function.path={path}")) as m:
        out = m(RewardBatch(["a"] * 2, ["requests", "requests"], ["x", "y"]))
    assert out.extra_info["reward_status"] == ["unavailable"] * 2


# -- every spelling of custom_reward_function.path -------------------------------------

def test_every_verl_spelling_of_the_path(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "my_rewards" / "math"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "exact.py").write_text(
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return float(solution_str == ground_truth)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    file = pkg / "exact.py"
    for spelling in (str(file), f"file://{file}", "pkg://my_rewards.math.exact", "pkg://my_rewards/math/exact"):
        fn = load_custom_function(spelling)
        assert fn("s", "7", "7") == 1.0, spelling
    # hydra's +key=value, as verl scripts write it
    settings = config(f"+custom_reward_function.path=file://{file}", "+custom_reward_function.name=compute_score")
    with build_reward_manager(settings) as manager:
        assert manager(RewardBatch(["s"], ["7"], ["7"])).scores.tolist() == [1.0]


# -- the launch directory is importable, through the console script --------------------

def _launch_dir(tmp_path):
    repo = tmp_path / "my_repo"
    tasks = repo / "recipe" / "r1"
    tasks.mkdir(parents=True)
    (repo / "recipe" / "__init__.py").write_text("")
    (tasks / "__init__.py").write_text("")
    (tasks / "tasks.py").write_text("def exact(a, b):\n    return float(a.strip() == b.strip())\n")
    (repo / "rewards").mkdir()
    (repo / "rewards" / "reward.py").write_text(
        "from recipe.r1.tasks import exact\n\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return exact(solution_str, ground_truth)\n")
    write_rows(repo / "rows.jsonl", [
        {"data_source": "mine", "reward_model": {"ground_truth": "4"}, "response": ["4", "5"]},
        {"data_source": "mine", "reward_model": {"ground_truth": "6"}, "response": "6"},
    ])
    return repo


@pytest.mark.slow
@pytest.mark.parametrize("manager", ["naive", "parallel"])
def test_a_file_importing_from_the_launch_directory(tmp_path, manager):
    if not CONSOLE_SCRIPT.exists():
        pytest.skip(f"the rewardsmith console script is not installed next to {sys.executable}")
    repo = _launch_dir(tmp_path)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [str(CONSOLE_SCRIPT), "score", "rows.jsonl", "-o", "out.jsonl", "custom_reward_function.path=rewards/reward.py",
         f"reward_model.reward_manager={manager}", "reward_model.num_workers=2"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [r["score"] for r in read_rows(repo / "out.jsonl")] == [[1.0, 0.0], 1.0]


@pytest.mark.slow
def test_rewardsmith_score_exits_non_zero_on_a_broken_file(tmp_path):
    path = write(tmp_path, "old.py", '''
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            from recipe.nowhere import grader
            return 1.0
    ''')
    write_rows(tmp_path / "rows.jsonl", [{"data_source": "x", "reward_model": {"ground_truth": "1"}, "response": ["1", "2"]}])
    proc = subprocess.run([sys.executable, "-m", "rewardsmith", "score", "rows.jsonl", f"custom_reward_function.path={path}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    # Two distinct inputs are too few to call the file broken (issue 26 item 12); nothing scored is
    # still a non-zero exit saying why, and every row keeps its error.
    assert proc.returncode != 0
    assert "No module named 'recipe'" in proc.stderr
    assert "every one of the 2 samples is unscored (2 error)" in proc.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "rows.scored.jsonl").read_text().splitlines()]
    assert all("No module named 'recipe'" in info["reward_error"] for info in row["reward_extra_info"])


# -- the same files in training and through the TRL adapter --------------------------

@pytest.mark.slow
def test_batched_file_trains_and_a_broken_file_stops_before_the_update(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from core_helpers import tiny_config

    from rewardsmith.core.trainer import PPOTrainer

    batched = write(tmp_path, "digits_batched.py", '''
        def compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
            return [sum(c.isdigit() for c in s) / max(1, len(s)) for s in solution_strs]
    ''')
    trainer = PPOTrainer(tiny_config(tmp_path / "ok", f"custom_reward_function.path={batched}",
                                     "reward_model.reward_manager=batch"))
    try:
        trainer.global_step = 1
        metrics = trainer.train_step(next(iter(trainer.loader)))
        assert metrics["reward/errors"] == 0.0 and "reward/mean" in metrics
    finally:
        trainer.close()

    broken = write(tmp_path, "broken.py", '''
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            from recipe.nowhere import grader
            return 1.0
    ''')
    trainer = PPOTrainer(tiny_config(tmp_path / "broken", f"custom_reward_function.path={broken}"))
    try:
        before = [p.detach().clone() for p in trainer.actor.model.parameters()]
        trainer.global_step = 1
        with pytest.raises(SystematicScorerError, match="No module named 'recipe'"):
            trainer.train_step(next(iter(trainer.loader)))
        assert all(torch.equal(a, b.detach()) for a, b in zip(before, trainer.actor.model.parameters()))
    finally:
        trainer.close()


def test_trl_adapter_runs_batched_and_stops_on_broken_files(tmp_path):
    batched = write(tmp_path, "batched.py", BATCHED)
    reward = rewardsmith.trl_reward_func(overrides=[f"custom_reward_function.path={batched}",
                                                    "reward_model.reward_manager=batch"])
    try:
        assert reward.__name__.startswith("batched.compute_score")
        assert reward(prompts=["p", "p"], completions=["1", "2"], data_source=["a", "a"], ground_truth=["1", "1"]) == [1.0, 0.0]
    finally:
        reward.close()
    broken = write(tmp_path, "lazy.py", '''
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            import module_that_is_not_installed
    ''')
    reward = rewardsmith.trl_reward_func(overrides=[f"custom_reward_function.path={broken}"])
    try:
        with pytest.raises(SystematicScorerError, match="module_that_is_not_installed"):
            reward(prompts=["p"] * 3, completions=["1", "2", "3"], data_source=["a"] * 3, ground_truth=["1"] * 3)
    finally:
        reward.close()
