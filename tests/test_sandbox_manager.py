"""The ``sandbox`` reward manager: code rows of a batch scored through a real sandbox server."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests
import torch

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.sandbox.testing import free_port, isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()

SQUARE = json.dumps({"inputs": ["2\n", "3\n", "-4\n"], "outputs": ["4\n", "9\n", "16\n"]})


def server(*args: str):
    if NO_ISOLATION:
        pytest.skip(NO_ISOLATION)
    return running_server(*args)


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def manager_for(make_config, url: str, max_concurrent: int):
    return build_reward_manager((make_config(
        "reward_model.reward_manager=sandbox",
        f"reward_model.sandbox_fusion.url={url}/run_code",
        f"reward_model.sandbox_fusion.max_concurrent={max_concurrent}",
        "reward_model.fallback_score=-1",
        "reward_model.sandbox_fusion.retry_backoff=0.01",  # no real back-off waits in tests
    )).reward_settings())


def test_scores_code_rows_with_verdicts_and_token_level_rewards(make_config):
    responses = [
        fenced("print(int(input()) ** 2)"),
        fenced("print(abs(int(input())) * 2)"),  # right only for 2
        "no code at all",
        fenced("import sys\nsys.exit(1)"),
    ]
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]])
    batch = RewardBatch(["codecontests", "apps", "taco", "codeforces"], responses, [SQUARE] * 4,
                        response_mask=mask)
    with server("--workers", "3") as url, manager_for(make_config, url, 8) as manager:
        out = manager(batch)
    assert out.scores.tolist() == pytest.approx([1.0, 1 / 3, 0.0, 0.0])
    assert out.extra_info["verdicts"][0] == ["passed"] * 3
    assert out.extra_info["verdicts"][1] == ["passed", "wrong_answer", "wrong_answer"]
    assert out.extra_info["verdicts"][2] == ["no_code"] * 3
    assert out.extra_info["verdicts"][3] == ["runtime_error"] * 3
    assert out.extra_info["reward_status"] == ["ok"] * 4
    assert out.token_level_scores[0].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert out.token_level_scores[1, 1].item() == pytest.approx(1 / 3)


def test_requests_in_flight_follow_max_concurrent(make_config):
    sleeper = fenced("import time\ntime.sleep(0.3)\nprint(int(input()) ** 2)")
    # Distinct responses, so the manager's de-duplication does not merge them.
    responses = [sleeper + f"\n# variant {i}" for i in range(12)]
    batch = RewardBatch(["codecontests"] * 12, responses, [SQUARE] * 12)
    peaks = {}
    for max_concurrent in (1, 12):
        with server("--workers", "8") as url, manager_for(make_config, url, max_concurrent) as manager:
            out = manager(batch)
            peaks[max_concurrent] = requests.get(url + "/v1/status", timeout=10).json()["peak_busy_workers"]
        assert out.scores.tolist() == [1.0] * 12
    # One sample in flight still runs its three cases at once (the batch endpoint);
    # twelve samples in flight fill all eight workers.
    assert peaks[1] == 3
    assert peaks[12] == 8


def test_unreachable_sandbox_marks_rows_unavailable_not_wrong(make_config):
    dead = f"http://127.0.0.1:{free_port()}"
    batch = RewardBatch(["codecontests", "taco"], [fenced("print(1)"), fenced("print(2)")], [SQUARE] * 2)
    with manager_for(make_config, dead, 4) as manager:
        out = manager(batch)
    assert out.extra_info["reward_status"] == ["unavailable", "unavailable"]
    assert out.scores.tolist() == [-1.0, -1.0]
    assert out.metrics["reward/unavailable"] == 2.0
    assert f"sandbox at {dead} cannot be reached" in out.extra_info["reward_error"][0]


@pytest.mark.slow
def test_a_batch_of_1024_responses_keeps_every_worker_busy(make_config):
    gt = json.dumps({"inputs": ["7\n"], "outputs": ["49\n"]})
    responses = [fenced(f"print(int(input()) ** 2)  # sample {i}") for i in range(1024)]
    batch = RewardBatch(["codecontests"] * 1024, responses, [gt] * 1024)
    with server("--workers", "4") as url, manager_for(make_config, url, 64) as manager:
        out = manager(batch)
        status = requests.get(url + "/v1/status", timeout=10).json()
    assert out.scores.tolist() == [1.0] * 1024
    assert status["peak_busy_workers"] == 4 and status["runs_by_verdict"] == {"OK": 1024}


def test_rewardsmith_score_cli_with_the_sandbox_manager(tmp_path):
    rows = [
        {"data_source": "codecontests", "prompt": [{"role": "user", "content": "square"}], "ability": "code",
         "reward_model": {"style": "rule", "ground_truth": SQUARE}, "extra_info": {},
         "response": fenced("print(int(input()) ** 2)")},
        {"data_source": "taco", "prompt": [{"role": "user", "content": "square"}], "ability": "code",
         "reward_model": {"style": "rule", "ground_truth": json.loads(SQUARE)}, "extra_info": {},
         "response": fenced("print(int(input()) * 2)")},
    ]
    source, scored = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with server("--workers", "2") as url:
        done = subprocess.run([sys.executable, "-m", "rewardsmith", "score", str(source), "-o", str(scored),
                               "reward_model.reward_manager=sandbox",
                               f"reward_model.sandbox_fusion.url={url}/run_code"],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in scored.read_text().splitlines()]
    assert [row["score"] for row in out] == [1.0, pytest.approx(1 / 3)]
    assert out[1]["reward_extra_info"]["verdicts"] == ["passed", "wrong_answer", "wrong_answer"]
