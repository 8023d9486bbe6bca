"""Reward managers: routing, failures that cost one sample, dedup, weights, extra info, DAPO."""
from __future__ import annotations

import pytest
import torch

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.batch import RewardBatch, token_level_scores
from rewardsmith.common.errors import RewardError, NotRegistered
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.executors import SerialExecutor
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.plugins.managers.dapo import overlong_penalty

FAULTY = '''
import ctypes, os, time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    log = kwargs.get("call_log")
    if log:
        with open(log, "a") as f:
            f.write(solution_str + "\\n")
    if solution_str == "raise":
        raise ValueError("scorer bug")
    if solution_str == "hang":
        time.sleep(120)
    if solution_str == "segfault":
        ctypes.string_at(0)
    if solution_str == "exit":
        os._exit(7)
    if solution_str == "nan":
        return float("nan")
    if solution_str == "none":
        return None
    if solution_str == "str":
        return "1.0"
    if solution_str == "dict":
        return {"score": 1.0, "acc": True}
    if solution_str == "other":
        return {"score": 0.5, "pred": "x"}
    return float(solution_str == ground_truth)
'''


@pytest.fixture
def faulty(tmp_path):
    path = tmp_path / "faulty_reward.py"
    path.write_text(FAULTY)
    return path


def batch_of(solutions, truths=None, sources=None, **kw):
    n = len(solutions)
    return RewardBatch(sources or ["src/a"] * n, list(solutions), truths or ["42"] * n, **kw)


def test_naive_survives_raise_nan_none_and_wrong_type(make_config, faulty):
    cfg = make_config(f"custom_reward_function.path={faulty}", "reward_model.fallback_score=-1")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch_of(["42", "raise", "nan", "none", "str", "7", "dict", "other"]))
    assert out.scores.tolist() == [1.0, -1.0, -1.0, -1.0, -1.0, 0.0, 1.0, 0.5]
    status = out.extra_info["reward_status"]
    assert status == ["ok", "error", "invalid", "abstain", "invalid", "ok", "ok", "ok"]
    assert "ValueError: scorer bug" in out.extra_info["reward_error"][1]
    assert "non-finite" in out.extra_info["reward_error"][2]
    assert "returned str" in out.extra_info["reward_error"][4]
    # union of extra keys, missing values filled with None, nothing dropped
    assert out.extra_info["acc"] == [None] * 6 + [True, None]
    assert out.extra_info["pred"] == [None] * 7 + ["x"]
    assert out.metrics["reward/source/src/a/errors"] == 3.0
    assert out.metrics["reward/source/src/a/abstained"] == 1.0


@pytest.mark.slow
def test_parallel_hang_and_crashes_cost_one_sample_each(make_config, faulty):
    cfg = make_config(f"custom_reward_function.path={faulty}", "reward_model.reward_manager=parallel",
                      "reward_model.num_workers=2", "reward_model.timeout=2", "reward_model.fallback_score=-1")
    solutions = ["42", "hang", "segfault", "exit", "raise", "42", "7", "dict"]
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch_of(solutions, sources=["src/a"] * 4 + ["src/b"] * 4))
        assert out.scores.tolist() == [1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 0.0, 1.0]
        assert out.extra_info["reward_status"] == ["ok", "timeout", "crash", "crash", "error", "ok", "ok", "ok"]
        assert out.metrics["reward/source/src/a/timeouts"] == 1.0
        assert out.metrics["reward/source/src/a/errors"] == 2.0
        assert out.metrics["reward/source/src/b/errors"] == 1.0
        assert out.metrics["reward/timeouts"] == 1.0
        # the pool replaced its dead workers and keeps scoring
        again = manager(batch_of(["42", "1"]))
        assert again.scores.tolist() == [1.0, 0.0]


class _PluginManager(RewardManager):
    """A third-party manager that changes nothing about where scorers run."""

    name = "plugin_style"


@pytest.mark.parametrize("manager_class", [None, _PluginManager], ids=["naive", "a plugin's subclass"])
def test_serial_managers_keep_reward_model_timeout_and_survive_crashes(make_config, faulty, manager_class):
    cfg = make_config(f"custom_reward_function.path={faulty}", "reward_model.timeout=1",
                      "reward_model.fallback_score=-1")
    with build_reward_manager(cfg.reward_settings()) as naive:
        manager = naive if manager_class is None else manager_class(naive.plan, naive.settings)
        try:
            out = manager(batch_of(["42", "hang", "segfault", "exit", "7"]))
        finally:
            manager.close()
    assert out.extra_info["reward_status"] == ["ok", "timeout", "crash", "crash", "ok"]
    assert out.scores.tolist() == [1.0, -1.0, -1.0, -1.0, 0.0]
    assert out.metrics["reward/timeouts"] == 1.0


def test_naive_with_no_timeout_scores_in_this_process(make_config):
    cfg = make_config("reward_model.timeout=null")
    with build_reward_manager(cfg.reward_settings()) as manager:
        assert isinstance(manager.executor, SerialExecutor)


def test_identical_samples_are_scored_once(make_config, faulty, tmp_path):
    log = tmp_path / "calls.log"
    cfg = make_config(f"custom_reward_function.path={faulty}",
                      f"custom_reward_function.reward_kwargs.call_log={log}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch_of(["42", "42", "1", "42", "1"]))
    assert out.scores.tolist() == [1.0, 1.0, 0.0, 1.0, 0.0]
    assert sorted(log.read_text().split()) == ["1", "42"]
    assert out.metrics["reward/unique_calls_ratio"] == pytest.approx(2 / 5)


WEIGHTED = '''
from rewardsmith import hookimpl

def exact(data_source, solution_str, ground_truth, extra_info=None):
    return float(solution_str == ground_truth)

def length(data_source, solution_str, ground_truth, extra_info=None):
    return None if solution_str == "" else min(1.0, len(solution_str) / 4)

@hookimpl
def register_scorers(register):
    register("exact", exact, data_sources=["fakew/*"])
    register("length", length)
'''


def test_weighted_scorers_combine_and_log_each(installed_plugins, make_config):
    installed_plugins({"fake-weighted": ("fakeplug_w", WEIGHTED)})
    cfg = make_config("reward_model.scorer_weights={'fakew/*': {exact: 0.75, length: 0.25}}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch_of(["42", "4", ""], sources=["fakew/x"] * 3))
    # 0.75*1 + 0.25*0.5 ; 0.75*0 + 0.25*0.25 ; length abstains -> exact alone, rescaled to total weight 1
    assert out.scores.tolist() == pytest.approx([0.875, 0.0625, 0.0])
    assert out.extra_info["exact/score"] == [1.0, 0.0, 0.0]
    assert out.extra_info["length/score"] == [0.5, 0.25, None]
    assert out.metrics["reward/exact/mean"] == pytest.approx(1 / 3)
    assert out.metrics["reward/length/mean"] == pytest.approx(0.375)


def test_scorer_weights_with_unknown_scorer_fails_at_build(make_config):
    with pytest.raises(NotRegistered, match="unknown scorer 'nope'"):
        build_reward_manager(make_config("reward_model.scorer_weights={'x': {nope: 1.0}}").reward_settings())


def test_unknown_data_source_names_row_and_known_sources(make_config):
    with build_reward_manager(make_config().reward_settings()) as manager:
        with pytest.raises(NotRegistered, match=r"row 1: no scorer for data_source 'mystery'.*openai/gsm8k"):
            manager(batch_of(["1", "2"], sources=["openai/gsm8k", "mystery"]))
        with pytest.raises(NotRegistered, match="dataset row data_source 'mystery'"):
            manager.check_data_sources(["openai/gsm8k", "mystery"])


def test_model_style_rows_go_to_a_model_only_when_model_scoring_is_on(make_config):
    # Model rows are scored by the configured reward model or judge (tests/test_model_scoring_*.py);
    # with reward_model.enable false they are an error naming the row and the key to set.
    with build_reward_manager(make_config().reward_settings()) as manager:
        with pytest.raises(RewardError, match=r"row 0: data_source 'openai/gsm8k': reward_model.style is 'model' but reward_model.enable is false"):
            manager(batch_of(["1"], sources=["openai/gsm8k"], styles=["model"]))


def test_verl_rule_styles_such_as_dapo_math_17k_are_rule_rows(make_config):
    # DAPO-Math-17k rows carry style 'rule-lighteval/MATH_v2'; verl never reads the style and scores
    # them with its rule scorer, so they go to their data_source's scorer here, like 'rule' rows.
    solutions = ["Answer: 34", "Answer: 35", "Answer: 34"]
    styles = ["rule-lighteval/MATH_v2", "rule-lighteval/MATH_v2", "rule"]
    with build_reward_manager(make_config().reward_settings()) as manager:
        manager.check_rows(batch_of(solutions, ["34"] * 3, ["math_dapo"] * 3, styles=styles))
        out = manager(batch_of(solutions, ["34"] * 3, ["math_dapo"] * 3, styles=styles))
    assert out.scores.tolist() == [1.0, -1.0, 1.0]
    assert out.extra_info["reward_status"] == ["ok"] * 3


def test_token_level_scores_sit_on_last_valid_token(make_config):
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    placed = token_level_scores(torch.tensor([0.5, -1.0, 2.0]), mask)
    assert placed.tolist() == [[0, 0, 0.5, 0], [-1.0, 0, 0, 0], [0, 0, 0, 0]]
    with build_reward_manager(make_config().reward_settings()) as manager:
        out = manager(batch_of(["#### 42", "#### 41", "x"], sources=["openai/gsm8k"] * 3, response_mask=mask))
    assert out.token_level_scores.tolist() == [[0, 0, 1.0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_overlong_penalty_formula():
    lengths = torch.tensor([4, 6, 8, 10])
    # max_resp_len 10, buffer 4: free up to 6 tokens, then -(L-6)/4 * factor
    assert overlong_penalty(lengths, 10, 4, 1.0).tolist() == [0.0, 0.0, -0.5, -1.0]
    assert overlong_penalty(lengths, 10, 4, 0.5).tolist() == [0.0, 0.0, -0.25, -0.5]


def test_dapo_manager_applies_and_logs_penalty(make_config):
    cfg = make_config("reward_model.reward_manager=dapo", "reward_model.overlong_buffer.enable=true",
                      "reward_model.overlong_buffer.len=4", "reward_model.overlong_buffer.log=true",
                      "reward_model.max_resp_len=10")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch_of(["Answer: 42", "Answer: 42", "Answer: 7"], sources=["math_dapo"] * 3,
                               response_lengths=[5, 8, 10]))
    assert out.scores.tolist() == [1.0, 0.5, -2.0]
    assert out.extra_info["overlong_reward"] == [0.0, -0.5, -1.0]
    assert out.extra_info["overlong"] == [False, True, True]
    assert out.extra_info["acc"] == [True, True, False]


def test_dapo_accepts_verl_reward_kwargs_and_validates(make_config):
    cfg = make_config("reward_model.reward_manager=dapo",
                      "reward_model.reward_kwargs={overlong_buffer_cfg: {enable: true, len: 2, penalty_factor: 1.0}, max_resp_len: 4}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch_of(["Answer: 42"], sources=["math_dapo"], response_lengths=[4]))
    assert out.scores.tolist() == [0.0]
    with pytest.raises(ConfigError, match=r"reward_model\.reward_kwargs\.overlong_buffer_cfg\.len must be > 0"):
        build_reward_manager((make_config("reward_model.reward_manager=dapo",
                                         "reward_model.reward_kwargs={overlong_buffer_cfg: {enable: true, len: 0}}")).reward_settings())
    with pytest.raises(ConfigError, match=r"len \(20\) must not exceed max_resp_len \(10\)"):
        build_reward_manager((make_config("reward_model.reward_manager=dapo", "reward_model.max_resp_len=10",
                                         "reward_model.overlong_buffer.enable=true", "reward_model.overlong_buffer.len=20")).reward_settings())


def test_manager_rejects_unknown_reward_kwargs(make_config):
    with pytest.raises(RewardError, match="'naive' does not take reward_model.reward_kwargs typo"):
        build_reward_manager(make_config("reward_model.reward_kwargs.typo=1").reward_settings())


def test_unknown_manager_lists_known(make_config):
    with pytest.raises(NotRegistered, match=r"unknown reward manager 'fancy'.*naive"):
        build_reward_manager(make_config("reward_model.reward_manager=fancy").reward_settings())
