"""The third verdict's fallback: a verifier decides what it can, and an LLM judge (a scripted
OpenAI-compatible server on loopback) scores only the samples it was undecided on, standing in
for it (``gate_when: abstained``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from model_scoring_helpers import ScriptedServer

from rewardsmith.common.config import load_config
from rewardsmith.common.errors import ConfigError
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager

ROOT = Path(__file__).resolve().parents[1]

# Decides exact answers; undecided on hedged ones ("maybe ..."), saying why.
VERIFIER = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if solution_str.startswith("maybe"):
        return {"score": None, "verdict": "undecided", "why": "a hedge, not a committed answer"}
    correct = solution_str == ground_truth
    return {"score": float(correct), "verdict": "correct" if correct else "wrong", "why": "exact match"}
'''

# The documented line: the judge stands in for the verifier where it is undecided.
FALLBACK = ("reward_model.components={'*': {answer: {kind: rule}, "
            "judge: {kind: judge, gate: answer, gate_when: abstained, on_failure: abstain}}}")


def judge_reply(path, body, headers):
    """GOOD -> Score: 9, BAD -> Score: 2, anything else -> no verdict."""
    response = body["messages"][-1]["content"].split("Response:\n", 1)[-1]
    verdict = "Score: 9" if "GOOD" in response else "Score: 2" if "BAD" in response else "It rambles."
    return 200, {"choices": [{"message": {"role": "assistant", "content": verdict}}]}


@pytest.fixture
def judge_server():
    with ScriptedServer(judge_reply) as server:
        yield server


def judged(server) -> list[str]:
    return sorted(b["messages"][-1]["content"].split("Response:\n")[-1].split("\n")[0] for _, b, _ in server.requests)


def judge_overrides(server) -> list[str]:
    return ["reward_model.enable=true", f"reward_model.judge.base_url={server.url}/v1",
            "reward_model.judge.model=tiny-judge", "reward_model.judge.scale=[0, 10]"]


def test_the_judge_scores_only_what_the_verifier_is_undecided_on(tmp_path, judge_server):
    verifier = tmp_path / "verifier.py"
    verifier.write_text(VERIFIER)
    cfg = load_config(Config, None, [*judge_overrides(judge_server), f"custom_reward_function.path={verifier}",
                                     "reward_model.fallback_score=-5", FALLBACK])
    responses = ["42", "7", "maybe GOOD", "maybe BAD", "maybe GARBLE", "maybe GOOD"]
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["math"] * 6, responses, ["42"] * 6))
    # Decided answers never reach the judge; each distinct undecided one does, once.
    assert judged(judge_server) == ["maybe BAD", "maybe GARBLE", "maybe GOOD"]
    # The judge's verdict takes the verifier's place (same scale: the pair counts as one component).
    assert out.scores.tolist()[:4] == pytest.approx([1.0, 0.0, 0.9, 0.2])
    assert out.scores[5].item() == pytest.approx(0.9)
    # Undecided by both (no judge verdict): unscored, out of the means, counted.
    assert out.unscored.tolist() == [False, False, False, False, True, False]
    info = out.extra_info
    assert info["answer/verdict"] == ["correct", "wrong"] + ["undecided"] * 4
    assert info["answer/why"][2] == "a hedge, not a committed answer"
    assert info["reward_status"][:4] == ["ok"] * 4 and info["judge/status"][:2] == ["gated"] * 2
    assert out.metrics["reward/undecided"] == 4.0 and out.metrics["reward/source/math/undecided"] == 4.0
    assert out.metrics["reward/unscored"] == 1.0 and out.metrics["reward/judge/gated"] == 2.0
    assert out.metrics["reward/mean"] == pytest.approx((1.0 + 0.0 + 0.9 + 0.2 + 0.9) / 5)


def test_without_the_fallback_undecided_samples_are_unscored(tmp_path):
    verifier = tmp_path / "verifier.py"
    verifier.write_text(VERIFIER)
    cfg = load_config(Config, None, [f"custom_reward_function.path={verifier}", "reward_model.fallback_score=-5"])
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["math"] * 3, ["42", "maybe 42", "7"], ["42"] * 3))
    assert out.unscored.tolist() == [False, True, False]
    assert out.extra_info["reward_status"] == ["ok", "abstain", "ok"] and out.extra_info["verdict"][1] == "undecided"
    assert out.metrics["reward/mean"] == 0.5 and out.metrics["reward/undecided"] == 1.0


def test_a_fallback_needs_a_gate_and_takes_no_gate_value(make_config):
    with pytest.raises(ConfigError, match="gate_when.*needs a gate"):
        make_config("reward_model.components={'*': {judge: {kind: judge, gate_when: abstained}}}")
    with pytest.raises(ConfigError, match="gate_value.*not used with gate_when: abstained"):
        make_config("reward_model.components={'*': {a: {kind: rule}, j: {kind: judge, gate: a, gate_when: abstained, gate_value: 0}}}")


def test_the_shipped_math_answer_example_sends_decided_answers_past_the_judge(judge_server):
    cfg = load_config(Config, ROOT / "examples" / "configs" / "math_judge_fallback.yaml",
                      [f"reward_model.judge.base_url={judge_server.url}/v1"])
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["lighteval/MATH"] * 2, ["So the answer is \\boxed{42}.", "The answer is \\boxed{41}."],
                                  ["42", "42"]))
    assert out.scores.tolist() == [1.0, 0.0] and judge_server.requests == []
    assert out.extra_info["judge/status"] == ["gated", "gated"]
