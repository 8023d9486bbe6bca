"""Issue 17 §4 and §6: failures of `rewardsmith score`, `train`, `sft` say why, in one line, and lose nothing."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsmith.cli import main
from rewardsmith.common.rows import read_rows, write_rows

ROW = {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "1+1?"}],
       "reward_model": {"style": "rule", "ground_truth": "2"}, "extra_info": {"index": 0}, "response": "#### 2"}


def _refused_port() -> int:
    """A loopback port nothing listens on: bound then closed, so connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_yaml_syntax_error_is_one_line_with_file_and_line(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("reward_model:\n  num_workers: 2\n  timeout: [1, 2\n")
    src = tmp_path / "in.jsonl"
    write_rows(src, [ROW])
    assert main(["score", str(src), "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rewardsmith score: error: ")
    assert f"{config}:4" in err[0] and "YAML" in err[0]


@pytest.mark.parametrize("key,value", [
    ("reward_model.sandbox_fusion.url", "127.0.0.1:8080/run_code"),
    ("reward_model.remote.urls", "[localhost:5000/get_reward]"),
    ("reward_model.judge.base_url", "ftp://127.0.0.1/v1"),
    ("reward_model.sandbox_fusion.url", "http://127.0.0.1:99999/run_code"),
])
def test_url_without_scheme_or_malformed_is_rejected_at_config_check(tmp_path, capsys, key, value):
    src = tmp_path / "in.jsonl"
    write_rows(src, [ROW])
    assert main(["score", str(src), f"{key}={value}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0]
    assert key.replace("reward_model.remote.urls", "reward_model.remote.urls[0]") in err[0]
    assert not (tmp_path / "in.scored.jsonl").exists()


def test_score_refuses_output_equal_to_input_unless_asked(tmp_path, capsys):
    src = tmp_path / "rows.jsonl"
    write_rows(src, [ROW, {**ROW, "response": "#### 3"}])
    before = src.read_text()
    assert main(["score", str(src), "-o", str(src)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--overwrite-input" in err[0]
    assert src.read_text() == before
    assert main(["score", str(src), "-o", str(src), "--overwrite-input"]) == 0
    assert [r["score"] for r in read_rows(src)] == [1.0, 0.0]


def test_row_that_cannot_be_serialized_names_row_and_field_and_keeps_the_old_file(tmp_path):
    out = tmp_path / "rows.jsonl"
    rows = [dict(ROW, extra_info={"index": i}) for i in range(6)]
    write_rows(out, rows)
    before = out.read_text()
    bad = [dict(r) for r in rows]
    bad[3]["extra_info"] = {(1, 2): "a tuple key json cannot write"}
    with pytest.raises(ValueError, match=r"row 3: field 'extra_info'"):
        write_rows(out, bad)
    assert out.read_text() == before and len(read_rows(out)) == 6
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]  # no temporary file left behind


def test_parquet_output_holds_a_column_mixing_strings_and_dicts(tmp_path, capsys):
    rows = [ROW, {**ROW, "reward_model": {"style": "rule", "ground_truth": {"target": "2", "alias": ["two"]}}}]
    src = tmp_path / "in.jsonl"
    write_rows(src, rows)
    out = tmp_path / "out.parquet"
    assert main(["score", str(src), "-o", str(out), "--scorer", "gsm8k"]) == 0
    assert "column 'reward_model'" in capsys.readouterr().err
    back = read_rows(out)
    assert [r["reward_model"] for r in back] == [r["reward_model"] for r in rows]
    assert [r["prompt"] for r in back] == [r["prompt"] for r in rows]
    assert back[0]["score"] == 1.0


CODE_ROW = {"data_source": "codecontests", "prompt": [{"role": "user", "content": "Print the sum."}],
            "reward_model": {"style": "rule", "ground_truth": '{"inputs": ["1 2\\n"], "outputs": ["3\\n"]}'},
            "response": "```python\na, b = map(int, input().split())\nprint(a + b)\n```"}
MODEL_ROW = {"data_source": "chat", "prompt": [{"role": "user", "content": "hi"}],
             "reward_model": {"style": "model", "ground_truth": ""}, "response": "hello"}


@pytest.mark.parametrize("row,component,overrides", [
    (CODE_ROW, "sandbox_code", ["reward_model.sandbox_fusion.url=http://user:s3cret@127.0.0.1:{port}/run_code",
                                "reward_model.sandbox_fusion.retry_backoff=5"]),
    (MODEL_ROW, "remote_rm", ["reward_model.enable=true", "reward_model.route_by_style=true", "reward_model.remote.urls=[http://user:s3cret@127.0.0.1:{port}/get_reward]",
                              "reward_model.remote.backoff=5"]),
    (MODEL_ROW, "judge", ["reward_model.enable=true", "reward_model.route_by_style=true", "reward_model.judge.base_url=http://user:s3cret@127.0.0.1:{port}/v1",
                          "reward_model.judge.model=m", "reward_model.judge.backoff=5"]),
])
def test_unreachable_service_is_named_on_the_console_and_fails_the_run(tmp_path, capfd, row, component, overrides):
    port = _refused_port()
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_rows(src, [row, {**row, "response": row["response"] + " "}, ROW])
    start = time.monotonic()
    code = main(["score", str(src), "-o", str(out), *(o.format(port=port) for o in overrides)])
    # A server that never answered is not retried: no 5 s back-off (at least 2.5 s with jitter) before failing.
    assert time.monotonic() - start < 2.5
    stdout, stderr = capfd.readouterr()
    assert code != 0
    header = stdout.splitlines()[0].split()
    assert "unavailable" in header and component in header
    line = next(l for l in stdout.splitlines() if l.startswith(row["data_source"])).split()
    assert line[header.index("unavailable")] == "2"
    # One line says it all (the service, the URL, why); no urllib3 connection-pool text, no line per data_source.
    lines = [l for l in stderr.replace("\r", "\n").splitlines() if l.strip() and not l.startswith("scoring:")]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"rewardsmith score: error: every sample of component '{component}' (")
    assert f"127.0.0.1:{port}" in lines[0] and "Connection refused" in lines[0]
    assert "HTTPConnectionPool" not in stderr and "Max retries" not in stderr
    assert "s3cret" not in stdout + stderr
    errors = [r["reward_extra_info"]["reward_error"] for r in read_rows(out)[:2]]
    assert all("Connection refused" in e and f"127.0.0.1:{port}" in e for e in errors)
    assert [r["score"] for r in read_rows(out)][2] == 1.0  # what could be scored was, and written


def test_a_component_failing_on_some_samples_is_named_but_does_not_fail_the_run(tmp_path, capfd):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    good = {**ROW, "reward_model": {"style": "rule", "ground_truth": {"target": "2"}}}
    write_rows(src, [good, ROW])  # search_r1_qa_em wants a dict ground truth: row 1 fails
    assert main(["score", str(src), "-o", str(out), "--scorer", "search_r1_qa_em"]) == 0
    stderr = capfd.readouterr().err
    assert "component 'search_r1_qa_em' on data_source 'openai/gsm8k': 1 of 2 samples failed; first (error): TypeError" in stderr
    assert "every sample" not in stderr


def test_model_row_with_model_scoring_off_names_the_key_and_row(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    write_rows(src, [ROW, MODEL_ROW])
    assert main(["score", str(src)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reward_model.enable" in err[0] and "row 1" in err[0]


def test_summary_table_fits_long_component_names(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    write_rows(src, [{**ROW, "data_source": "a_data_source_name_longer_than_thirty_two_chars",
                      "reward_model": {"style": "rule", "ground_truth": {"target": "2"}}}])
    assert main(["score", str(src), "--scorer", "search_r1_qa_em"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert "search_r1_qa_em" in header and "a_data_source_name_longer_than_thirty_two_chars" in lines[2]
    assert len({len(line) for line in lines[:4]}) == 1  # every row as wide as the header


@pytest.mark.parametrize("argv,key", [
    (["train", "examples/configs/arith_grpo.yaml", "actor_rollout_ref.model.path={missing}"], "actor_rollout_ref.model.path"),
    (["train", "examples/configs/arith_grpo.yaml", "actor_rollout_ref.model.path=examples/data/arith_tokenizer",
      "critic.model.path={missing}"], "critic.model.path"),
    (["sft", "examples/configs/arith_sft.yaml", "data.tokenizer={missing}"], "data.tokenizer"),
    (["rm", "train", "model.path={missing}"], "model.path"),
])
def test_missing_model_directory_is_one_line_naming_the_key(tmp_path, capsys, monkeypatch, argv, key):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    missing = str(tmp_path / "outputs" / "sft_model")
    assert main([a.format(missing=missing) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{key}: directory {missing} does not exist" in err[0]


@pytest.mark.parametrize("value,local", [
    ("Qwen/Qwen2.5-0.5B", False), ("gpt2", False), ("./gpt2", True), ("/abs/model", True), ("~/model", True),
    ("outputs/arith/sft_model", True), ("examples/nope", True),  # examples/ exists here: a path
])
def test_what_counts_as_a_local_path(value, local, monkeypatch):
    from rewardsmith.commands.config_args import looks_like_local_path

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert looks_like_local_path(value) is local


BAD_EXTRAS = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if extra_info["index"] == 3:
        return {"score": 1.0, "detail": {(1, 2): "a tuple key json cannot write"}}
    return 1.0
'''


def test_overwriting_the_input_with_an_unwritable_row_loses_nothing(tmp_path, capsys):
    src = tmp_path / "rows.jsonl"
    write_rows(src, [dict(ROW, extra_info={"index": i}) for i in range(6)])
    before = src.read_text()
    fn = tmp_path / "bad_extras.py"
    fn.write_text(BAD_EXTRAS)
    assert main(["score", str(src), "-o", str(src), "--overwrite-input", f"custom_reward_function.path={fn}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rewardsmith score: error: ") and "row 3: field 'reward_extra_info'" in err[-1]
    assert src.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad_extras.py", "rows.jsonl"]


def test_a_hub_id_that_is_neither_local_nor_on_the_hub_is_one_line(tmp_path):
    """``sftout/model`` could be a hub id, so it is not refused up front; transformers' chained
    error when the hub cannot give it becomes one line naming it."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "rewardsmith", "train", str(root / "examples/configs/arith_grpo.yaml"),
                           f"data.train_files={root / 'examples/data/arith_train.jsonl'}",
                           f"data.val_files={root / 'examples/data/arith_val.jsonl'}",
                           "actor_rollout_ref.model.path=sftout/model", f"trainer.default_local_dir={tmp_path / 'run'}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "rewardsmith train: error: tokenizer sftout/model: no such local directory, and the Hugging Face hub could not give it")


@pytest.mark.parametrize("hydra_args", [["--config-path=./config", "--config-name=ppo_trainer"],
                                        ["--config-name=ppo_trainer"]])
def test_verls_stock_config_arguments_are_a_notice(tmp_path, capsys, monkeypatch, hydra_args):
    # verl's own scripts pass Hydra's --config-path/--config-name for its stock PPO config; the run goes on
    # (here to the next check, the missing model directory) after one notice.
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    missing = str(tmp_path / "model")
    assert main(["train", *hydra_args, "examples/configs/arith_grpo.yaml", f"actor_rollout_ref.model.path={missing}"]) == 2
    captured = capsys.readouterr()
    assert "is verl's stock PPO config" in captured.out and "changes nothing here" in captured.out
    assert f"actor_rollout_ref.model.path: directory {missing} does not exist" in captured.err


@pytest.mark.parametrize("hydra_args, says", [
    (["--config-path=./config", "--config-name=ppo_megatron_trainer"], "Megatron-LM"),
    (["--config-path=/my/configs", "--config-name=mine"], "pass it as a YAML config file"),
])
def test_other_hydra_configs_are_refused_saying_what_to_do(capsys, hydra_args, says):
    assert main(["train", *hydra_args, "data.train_files=x.parquet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--config-name=" in err[0] and says in err[0]
