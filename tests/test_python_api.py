"""From Python: rewardsmith.compute_score and the TRL reward_funcs adapter."""
from __future__ import annotations

import pytest

import rewardsmith
from rewardsmith.common.errors import NotRegistered


def test_compute_score_routes_by_data_source():
    assert rewardsmith.compute_score("openai/gsm8k", "so #### 72", "72") == 1.0
    result = rewardsmith.compute_score("math_dapo", "Answer: 51", "51")
    assert result["score"] == 1.0 and result["acc"] is True


def test_compute_score_by_scorer_name():
    assert rewardsmith.compute_score("whatever", "#### 5", "5", scorer="gsm8k") == 1.0


def test_compute_score_unknown_source():
    with pytest.raises(NotRegistered, match="no scorer for data_source 'unknown/src'"):
        rewardsmith.compute_score("unknown/src", "x", "y")


def test_trl_adapter_with_plain_and_conversational_completions():
    reward = rewardsmith.trl_reward_func()
    try:
        assert reward.__name__.startswith("rewardsmith")  # distinct per function: rewardsmith, rewardsmith_2, ...
        # TRL passes dataset columns as keyword lists, one entry per completion
        scores = reward(
            prompts=["q1", "q2", "q3"],
            completions=["#### 4", [{"role": "assistant", "content": "\\boxed{7}"}], "#### 9"],
            data_source=["openai/gsm8k", "lighteval/MATH", "openai/gsm8k"],
            reward_model=[{"ground_truth": "4"}, {"ground_truth": "7"}, {"ground_truth": "8"}],
        )
        assert scores == [1.0, 1.0, 0.0]
    finally:
        reward.close()


def test_trl_adapter_named_scorer_and_solution_column():
    reward = rewardsmith.trl_reward_func("gsm8k")
    try:
        assert reward.__name__.startswith("gsm8k")
        assert reward(prompts=["a", "b"], completions=["#### 1", "#### 2"], solution=["1", "1"]) == [1.0, 0.0]
        with pytest.raises(ValueError, match="no ground truth column"):
            reward(prompts=["a"], completions=["#### 1"], other=["1"])
    finally:
        reward.close()
