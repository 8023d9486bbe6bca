"""The rewardkit CLI end to end, as real subprocesses."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.common.rows import read_rows, write_rows

ROOT = Path(__file__).resolve().parents[1]
MATH = ROOT / "examples" / "data" / "math_responses.jsonl"


def rewardkit(*args, cwd=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "rewardkit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"rewardkit {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_score_jsonl_writes_scores_and_prints_table(tmp_path):
    out = tmp_path / "scored.jsonl"
    proc = rewardkit("score", MATH, "-o", out)
    rows = read_rows(out)
    gsm8k = next(r for r in rows if r["data_source"] == "openai/gsm8k")
    assert gsm8k["score"] == [1.0, 0.0, 0.0]  # verl's strict gsm8k: only "#### 72" counts
    assert gsm8k["reward_extra_info"][0]["reward_status"] == "ok"
    dapo = next(r for r in rows if r["data_source"] == "math_dapo")
    assert dapo["score"] == [1.0, -1.0, -1.0]
    for column in ("data_source", "rows", "mean", "errors", "timeouts", "p50 ms", "p99 ms"):
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
    rewardkit("score", src, "-o", out, "--scorer", "gsm8k", "reward_model.reward_manager=parallel",
              "reward_model.num_workers=2", "reward_model.timeout=30")
    assert [r["score"] for r in read_rows(out)] == [1.0, 0.0]


def test_score_with_custom_function_override(tmp_path):
    out = tmp_path / "scored.jsonl"
    rewardkit("score", MATH, "-o", out,
              f"custom_reward_function.path={ROOT / 'examples/custom_reward/length_aware.py'}",
              "custom_reward_function.reward_kwargs.max_words=5")
    rows = read_rows(out)
    first = rows[0]["reward_extra_info"][0]
    assert first["words"] > 5 and rows[0]["score"][0] == pytest.approx(0.9)


def test_score_bad_input_names_row_and_field(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps({"data_source": "openai/gsm8k", "reward_model": {"ground_truth": "1"}}) + "\n")
    proc = rewardkit("score", src, check=False)
    assert proc.returncode != 0
    assert "row 0: missing 'response'" in proc.stderr


def test_score_unknown_config_key_is_named(tmp_path):
    proc = rewardkit("score", MATH, "reward_model.num_wrkers=2", check=False)
    assert proc.returncode != 0
    assert "unknown config key 'reward_model.num_wrkers'" in proc.stderr


def test_plugins_json_lists_builtins():
    records = json.loads(rewardkit("plugins", "--json").stdout)
    keys = {"name", "distribution", "version", "scorers", "reward_managers", "error"}
    assert all(keys <= set(r) for r in records)
    builtin = next(r for r in records if r["name"] == "rewardkit.reward_fns")
    assert {"gsm8k", "math_reward", "math_dapo", "math_verify", "search_r1_qa_em", "math_answer"} <= set(builtin["scorers"])
    assert builtin["distribution"] == "rewardkit"
