"""The step's reward budget against real services: a slow judge over HTTP and a sandbox server.

Each test scores one batch inside a :class:`RewardStep` with a deadline, as the trainer does
(``reward_model.step_budget_s``): the late samples abstain, counted, and nothing late is waited for.
"""
from __future__ import annotations

import time

import pytest

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.reward_step import RewardStep, count_over_budget, reward_step
from model_scoring_helpers import ScriptedServer
from test_sandbox_manager import SQUARE, fenced, manager_for, server


def budget(seconds: float) -> RewardStep:
    return RewardStep(seconds, time.perf_counter() + seconds)


def slow_judge_reply(path, body, headers):
    """A judge that answers in 200 ms, or in 5 s for a response that says SLOW."""
    response = body["messages"][-1]["content"].split("Response:\n", 1)[-1]
    time.sleep(5 if "SLOW" in response else 0.2)
    return 200, {"choices": [{"message": {"role": "assistant", "content": "Score: 9"}}]}


def test_budget_cuts_a_slow_judge_and_cancels_the_requests_not_sent(make_config):
    with ScriptedServer(slow_judge_reply) as judge:
        cfg = make_config("reward_model.enable=true", f"reward_model.judge.base_url={judge.url}/v1",
                          "reward_model.judge.model=tiny-judge", "reward_model.judge.scale=[0, 10]",
                          "reward_model.judge.max_concurrent=2", "reward_model.judge.timeout=2",
                          "reward_model.judge.max_retries=0")
        texts = ["GOOD 1", "GOOD 2", "SLOW 1", "SLOW 2", "SLOW 3", "SLOW 4"]
        batch = RewardBatch(["chat"] * 6, texts, [None] * 6, styles=["model"] * 6,
                            prompts=[[{"role": "user", "content": f"q{i}"}] for i in range(6)])
        with build_reward_manager(cfg.reward_settings()) as manager:
            start = time.perf_counter()
            with reward_step(budget(1.0)) as step:
                out = manager(batch)
            assert time.perf_counter() - start < 1.8  # not the 5 s answers, not the 2 s timeouts
            assert out.scores[:2].tolist() == pytest.approx([0.9, 0.9])
            assert out.unscored.tolist() == [False, False, True, True, True, True]
            assert count_over_budget(out.extra_info) == 4
            assert out.extra_info["reward_status"][2:] == ["abstain"] * 4
            assert "reward_model.step_budget_s=1" in out.extra_info["reward_error"][2]
            # The two quick answers were timed; the late ones were not.
            assert len(step.latencies["judge"]) == 2 and all(0.2 <= s < 1.0 for s in step.latencies["judge"])
            # Two slow requests were in flight at the deadline; the two queued behind them never go out,
            # even once the in-flight ones have timed out and freed the judge's threads.
            time.sleep(2.5)
            sent = sorted(b["messages"][-1]["content"].split("Response:\n", 1)[-1].splitlines()[0] for _, b, _ in judge.requests)
            assert sent == ["GOOD 1", "GOOD 2", "SLOW 1", "SLOW 2"]
            # The judge is whole for the next step.
            again = manager(RewardBatch(["chat"], ["GOOD 3"], [None], styles=["model"], prompts=[[{"role": "user", "content": "q"}]]))
            assert again.scores.tolist() == pytest.approx([0.9])


def test_budget_cuts_sandbox_runs_mid_batch(make_config):
    quick, stuck = fenced("print(int(input()) ** 2)"), fenced("import time\ntime.sleep(30)")
    responses = [quick, quick + "\n", stuck, stuck + "\n", stuck + "\n\n", quick + "\n\n\n"]
    batch = RewardBatch(["codecontests"] * 6, responses, [SQUARE] * 6)
    # Six server workers, two samples in flight: a stuck sample's three test cases run side by side on the
    # server, and with two workers they could take both while the second quick sample still had a case to run.
    with server("--workers", "6") as url, manager_for(make_config, url, 2) as manager:
        start = time.perf_counter()
        with reward_step(budget(4.0)):
            out = manager(batch)
        took = time.perf_counter() - start
    assert took < 6
    # Two samples in flight at a time: the quick pair scores, the stuck pair holds both slots
    # until the deadline, and everything behind it (quick or not) is never sent.
    assert out.scores[:2].tolist() == pytest.approx([1.0, 1.0])
    assert out.unscored.tolist() == [False, False, True, True, True, True]
    assert count_over_budget(out.extra_info) == 4
