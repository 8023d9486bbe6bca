"""Issue 17 §4 and §6: failures of `rewardsmith score`, `train`, `sft` say why, in one line, and lose nothing."""
from __future__ import annotations

import socket

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
