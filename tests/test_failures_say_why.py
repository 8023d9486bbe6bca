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
