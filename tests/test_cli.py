"""The rewardsmith CLI end to end, as real subprocesses."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsmith.common.rows import read_rows, write_rows

ROOT = Path(__file__).resolve().parents[1]
MATH = ROOT / "examples" / "data" / "math_responses.jsonl"


def rewardsmith(*args, cwd=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "rewardsmith", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"rewardsmith {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_score_jsonl_writes_scores_and_prints_table(tmp_path):
    out = tmp_path / "scored.jsonl"
    proc = rewardsmith("score", MATH, "-o", out)
    rows = read_rows(out)
    gsm8k = next(r for r in rows if r["data_source"] == "openai/gsm8k")
    assert gsm8k["score"] == [1.0, 0.0, 0.0]  # verl's strict gsm8k: only "#### 72" counts
    assert gsm8k["reward_extra_info"][0]["reward_status"] == "ok"
    dapo = next(r for r in rows if r["data_source"] == "math_dapo")
    assert dapo["score"] == [1.0, -1.0, -1.0]
    for column in ("data_source", "samples", "mean", "errors", "timeouts", "p50 ms", "p99 ms"):
        assert column in proc.stdout
    assert "openai/gsm8k" in proc.stdout and "(all)" in proc.stdout


def test_score_parquet_with_named_scorer_and_parallel_manager(tmp_path):
    src = tmp_path / "in.parquet"
    write_rows(src, [
        {"data_source": "custom/unknown", "prompt": [{"role": "user", "content": "1+1?"}],
         "reward_model": {"style": "rule", "ground_truth": "2"}, "extra_info": {"index": 0}, "response": "#### 2"},
        {"data_source": "custom/unknown", "prompt": [{"role": "user", "content": "2+2?"}],
         "reward_model": {"style": "rule", "ground_truth": "4"}, "extra_info": {"index": 1}, "response": "#### 5"},
    ])
    out = tmp_path / "out.parquet"
    rewardsmith("score", src, "-o", out, "--scorer", "gsm8k", "reward_model.reward_manager=parallel",
                "reward_model.num_workers=2", "reward_model.timeout=30")
    assert [r["score"] for r in read_rows(out)] == [1.0, 0.0]


def test_score_with_custom_function_override(tmp_path):
    out = tmp_path / "scored.jsonl"
    rewardsmith("score", MATH, "-o", out,
                f"custom_reward_function.path={ROOT / 'examples/custom_reward/length_aware.py'}",
              "custom_reward_function.reward_kwargs.max_words=5")
    rows = read_rows(out)
    first = rows[0]["reward_extra_info"][0]
    assert first["words"] > 5 and rows[0]["score"][0] == pytest.approx(0.9)


def test_score_bad_input_names_row_and_field(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps({"data_source": "openai/gsm8k", "reward_model": {"ground_truth": "1"}}) + "\n")
    proc = rewardsmith("score", src, check=False)
    assert proc.returncode != 0
    assert "row 0: missing 'response'" in proc.stderr


def test_score_unknown_config_key_is_named(tmp_path):
    proc = rewardsmith("score", MATH, "reward_model.num_wrkers=2", check=False)
    assert proc.returncode != 0
    assert "unknown config key 'reward_model.num_wrkers'" in proc.stderr


def test_plugins_json_lists_builtins():
    records = json.loads(rewardsmith("plugins", "--json").stdout)
    keys = {"name", "distribution", "version", "scorers", "reward_managers", "error"}
    assert all(keys <= set(r) for r in records)
    builtin = next(r for r in records if r["name"] == "rewardsmith.reward_fns")
    assert {"gsm8k", "math_reward", "math_dapo", "math_verify", "search_r1_qa_em", "math_answer"} <= set(builtin["scorers"])
    assert builtin["distribution"] == "rewardsmith"


def test_the_command_ends_as_python_does_waiting_for_threads_and_running_atexit(tmp_path):
    """console() skips only the interpreter's native teardown (os._exit): what Python's own exit
    does first still happens, and the status is kept."""
    (tmp_path / "sitecustomize.py").write_text(f"""
import atexit, threading, time
from pathlib import Path
out = Path({str(tmp_path)!r})
def late():  # works on after the command's own code has returned
    while threading.main_thread().is_alive():
        time.sleep(0.05)
    time.sleep(0.3)
    (out / "thread").write_text("done")
threading.Thread(target=late).start()  # not a daemon: exit waits for it
atexit.register(lambda: (out / "atexit").write_text((out / "thread").read_text()))
""")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    ok = subprocess.run([sys.executable, "-m", "rewardsmith", "plugins", "--json"], capture_output=True, text=True,
                        env=env, timeout=300)
    assert ok.returncode == 0 and json.loads(ok.stdout), ok.stderr
    assert (tmp_path / "atexit").read_text() == "done"  # the thread ended before the atexit callbacks ran
    failed = subprocess.run([sys.executable, "-m", "rewardsmith", "score", str(tmp_path / "missing.jsonl")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert failed.returncode == 2 and "missing.jsonl" in failed.stderr


def test_score_empty_input_writes_an_empty_output(tmp_path):
    src = tmp_path / "empty.jsonl"
    src.write_text("")
    proc = rewardsmith("score", src, "-o", tmp_path / "out.jsonl")
    assert "has no rows" in proc.stderr and read_rows(tmp_path / "out.jsonl") == []


PRINTING = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    print("scorer says", solution_str, flush=True)
    return float(solution_str == ground_truth)
'''


@pytest.mark.parametrize("manager", ["naive", pytest.param("parallel", marks=pytest.mark.slow)])
def test_score_scorer_prints_stay_out_of_the_table(tmp_path, manager):
    (tmp_path / "printing.py").write_text(PRINTING)
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "a", "reward_model": {"ground_truth": "1"}, "response": ["1", "2", "3"]},
                     {"data_source": "b", "reward_model": {"ground_truth": "1"}, "response": "1"}])
    proc = rewardsmith("score", src, f"custom_reward_function.path={tmp_path / 'printing.py'}",
                       f"reward_model.reward_manager={manager}", "reward_model.num_workers=2")
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["data_source", "samples", "mean"]
    assert [line.split()[:2] for line in lines[2:5]] == [["a", "3"], ["b", "1"], ["(all)", "4"]]
    assert lines[5].startswith("wrote 2 scored rows (4 samples)") and len(lines) == 6
    assert proc.stderr.count("scorer says") == 4
    assert proc.stderr.count(" 0/4 ") == 1  # the progress bar starts once


def test_score_batched_file_with_the_batch_manager(tmp_path):
    (tmp_path / "batched.py").write_text(
        "def compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):\n"
        "    return [float(s == g) for s, g in zip(solution_strs, ground_truths)]\n")
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "a", "reward_model": {"ground_truth": "1"}, "response": ["1", "2"]}])
    rewardsmith("score", src, "-o", tmp_path / "out.jsonl", f"custom_reward_function.path={tmp_path / 'batched.py'}",
                "reward_model.reward_manager=batch")
    assert read_rows(tmp_path / "out.jsonl")[0]["score"] == [1.0, 0.0]


def test_score_with_the_batched_example_file(tmp_path):
    out = tmp_path / "scored.jsonl"
    rewardsmith("score", MATH, "-o", out, "reward_model.reward_manager=batch",
                f"custom_reward_function.path={ROOT / 'examples/custom_reward/batched_rarity.py'}",
              "custom_reward_function.reward_kwargs.rarity_bonus=0.5")
    first = read_rows(out)[0]  # gsm8k: one of three responses right -> bonus 0.5 * (1 - 1/3)
    assert first["score"] == [pytest.approx(1 + 0.5 * 2 / 3), 0.0, 0.0]
    assert first["reward_extra_info"][0]["solved_share"] == pytest.approx(1 / 3)


SLEEPY_SCORER = '''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if solution_str.startswith("sleep"):
        time.sleep(30)
    if solution_str == "abstain":
        return None
    return 1.0
'''


def _sleepy_rows(tmp_path: Path, responses: list[str]) -> tuple[Path, Path]:
    scorer = tmp_path / "sleepy.py"
    scorer.write_text(SLEEPY_SCORER)
    src = tmp_path / "in.jsonl"
    write_rows(src, [{"data_source": "x", "prompt": "p", "reward_model": {"ground_truth": "1"}, "response": r}
                     for r in responses])
    return scorer, src


@pytest.mark.parametrize("manager", ["naive", "dapo"])
def test_score_serial_managers_enforce_reward_model_timeout(tmp_path, manager):
    scorer, src = _sleepy_rows(tmp_path, ["sleep 1", "fast", "sleep 2"])
    out = tmp_path / "out.jsonl"
    start = time.monotonic()
    proc = rewardsmith("score", src, "-o", out, f"custom_reward_function.path={scorer}",
                       f"reward_model.reward_manager={manager}", "reward_model.timeout=1")
    assert time.monotonic() - start < 25  # two 30 s sleeps cut at 1 s each
    statuses = [r["reward_extra_info"]["reward_status"] for r in read_rows(out)]
    assert statuses == ["timeout", "ok", "timeout"]
    assert "2 of 3 samples failed; first (timeout): timed out after 1s" in proc.stderr


def test_prime_refuses_another_reward_model_timeout(tmp_path):
    scorer, src = _sleepy_rows(tmp_path, ["fast"])
    proc = rewardsmith("score", src, f"custom_reward_function.path={scorer}", "reward_model.reward_manager=prime",
                       "reward_model.timeout=1", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "rewardsmith score: error: reward_model.timeout=1: the prime manager keeps verl's fixed 300 s per sample")


@pytest.mark.parametrize("manager, responses, why", [
    ("parallel", ["sleep 1", "sleep 2"], "2 timeout"),
    ("naive", ["abstain", "sleep"], "1 abstain, 1 timeout"),
])
def test_score_with_no_sample_scored_exits_non_zero_in_one_line(tmp_path, manager, responses, why):
    scorer, src = _sleepy_rows(tmp_path, responses)
    out = tmp_path / "out.jsonl"
    proc = rewardsmith("score", src, "-o", out, f"custom_reward_function.path={scorer}",
                       f"reward_model.reward_manager={manager}", "reward_model.timeout=1", check=False)
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [f"rewardsmith score: error: every one of the 2 samples is unscored ({why}); their scores "
                      f"in {out} are reward_model.fallback_score, not results"]
    assert len(read_rows(out)) == 2  # the rows and their reward_error are still written


def test_rm_subcommands_have_a_description_and_show_their_defaults():
    serve = rewardsmith("rm", "serve", "--help").stdout
    assert "Serve a local reward model with OpenRLHF's /get_reward protocol." in serve.split("positional arguments")[0]
    assert "port to listen on (default: 5000)" in " ".join(serve.split())
    train = rewardsmith("rm", "train", "--help").stdout
    assert "Train a reward model on preference pairs" in train.split("positional arguments")[0]
    assert "examples/data/rm_pairs.jsonl" in " ".join(train.split())
