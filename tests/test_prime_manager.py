"""verl's `prime` reward manager, and the start-up check for code rows without a sandbox."""
from __future__ import annotations

import json
import os

import pytest

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.executors import ProcessExecutor
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.managers import prime
from rewardsmith.reward_fns import geo3k, prime_math

SLOW_SCORER = '''
import os, time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if solution_str == "hang":
        time.sleep(60)
    return {"score": float(solution_str == ground_truth), "pid": os.getpid()}
'''


def test_prime_scores_numina_and_geo3k_rows_in_worker_processes(make_config):
    cfg = make_config("reward_model.reward_manager=prime", "reward_model.num_workers=2")
    rows = [("numina_olympiads", "so the answer is \\boxed{\\frac{1}{2}}", "0.5"),
            ("numina_cn_k12", "Answer: 7", "8"),
            ("hiyouga/geometry3k", "<think>angles</think> \\boxed{30}", "30"),
            ("hiyouga/geometry3k", "\\boxed{30}", "30")]
    batch = RewardBatch(*map(list, zip(*rows)))
    with build_reward_manager(cfg.reward_settings()) as manager:
        assert isinstance(manager.executor, ProcessExecutor)
        assert (manager.executor.num_workers, manager.executor.timeout) == (2, 300.0)
        out = manager(batch)
    expected = [prime_math.compute_score(*rows[0]), prime_math.compute_score(*rows[1]),
                geo3k.compute_score(*rows[2]), geo3k.compute_score(*rows[3])]
    assert expected == [1.0, 0.0, 1.0, 0.9]
    assert out.scores.tolist() == pytest.approx(expected)
    assert out.extra_info["acc"] == pytest.approx(expected)
    assert out.extra_info["reward_status"] == ["ok"] * 4


def test_prime_times_out_one_sample_and_keeps_the_rest(make_config, tmp_path, monkeypatch):
    # verl's 300 s, shortened so the test does not wait for it.
    monkeypatch.setattr(prime, "PRIME_TIMEOUT_S", 2.0)
    path = tmp_path / "slow.py"
    path.write_text(SLOW_SCORER)
    cfg = make_config("reward_model.reward_manager=prime", "reward_model.num_workers=2",
                      f"custom_reward_function.path={path}", "reward_model.fallback_score=-1")
    batch = RewardBatch(["src"] * 3, ["42", "hang", "7"], ["42"] * 3)
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch)
    assert out.extra_info["reward_status"] == ["ok", "timeout", "ok"]
    assert out.scores.tolist() == [1.0, -1.0, 0.0]  # the failed sample gets fallback_score (verl: 0.0)
    assert out.metrics["reward/timeouts"] == 1.0
    assert os.getpid() not in {out.extra_info["pid"][0], out.extra_info["pid"][2]}


CODE_TRUTH = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})


def test_code_rows_without_a_sandbox_url_fail_at_start_up(make_config):
    batch = RewardBatch(["openai/gsm8k", "codecontests"], ["#### 1", "```python\nprint(3)\n```"], ["1", CODE_TRUTH])
    with build_reward_manager(make_config().reward_settings()) as manager:
        with pytest.raises(ConfigError, match=r"dataset row 1: data_source 'codecontests' .*reward_model.sandbox_fusion.url"):
            manager.check_rows(batch)
    cfg = make_config("reward_model.sandbox_fusion.url=http://127.0.0.1:1/run_code")
    with build_reward_manager(cfg.reward_settings()) as manager:
        manager.check_rows(batch)  # the key is set: the run may start
