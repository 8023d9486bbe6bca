"""`rewardsmith diff`: two ways of scoring the same responses, compared; and training's rollout dump."""
import json
import math

import pytest

from core_helpers import DIGITS_REWARD, tiny_config

from rewardsmith.cli import main
from rewardsmith.common.rows import read_rows, write_rows
from rewardsmith.diff import compare, diff_rows, mcnemar, parse_side, recorded_scores

# Pays 1 when the response ends with the gold answer.
STRICT = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0 if solution_str.strip().endswith(str(ground_truth)) else 0.0
'''
# Pays 1 when the gold answer appears anywhere; abstains on responses that say "skip".
LOOSE = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if "skip" in solution_str:
        return None
    return 1.0 if str(ground_truth) in solution_str else 0.0

def half(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 0.5
'''


def row(source, gold, responses):
    return {"data_source": source, "prompt": [{"role": "user", "content": "q"}], "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": gold}, "extra_info": {}, "response": responses}


ROWS = [
    row("a", "7", ["so 7", "7 is wrong, it is 8", "8"]),       # both pay; loose only; neither
    row("a", "3", "the answer: 3"),                            # both pay
    row("b", "5", ["5 or 6", "skip 5", "6"]),                 # loose only; loose abstains; neither
]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "strict.py").write_text(STRICT)
    (tmp_path / "loose.py").write_text(LOOSE)
    write_rows(tmp_path / "rows.jsonl", ROWS)
    return tmp_path


def binomial_two_sided(b, c):
    n = b + c
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n)


def test_mcnemar_exact_and_chi_square():
    assert mcnemar(0, 0) == (1.0, "exact binomial")
    assert mcnemar(2, 8) == (pytest.approx(56 / 1024 * 2), "exact binomial")  # P(X<=2), n=10: (1+10+45)/1024
    assert mcnemar(11, 0)[0] == pytest.approx(2 / 2 ** 11)
    assert mcnemar(5, 5)[0] == 1.0
    p, method = mcnemar(30, 10)
    assert method.startswith("chi-square")
    # (|30-10|-1)^2/40 = 9.025; P(chi2_1 > x) = P(|Z| > sqrt(x))
    z = math.sqrt(9.025)
    assert p == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(z / math.sqrt(2)))))
    assert mcnemar(13, 11)[0] == pytest.approx(binomial_two_sided(13, 11))  # 24 < 25: still exact


def test_parse_side(files):
    assert parse_side("math_answer").overrides == ["reward_model.scorer=math_answer"]
    side = parse_side(f"{files / 'loose.py'}:half reward_model.fallback_score=-1")
    assert side.overrides == [f"custom_reward_function.path={files / 'loose.py'}", "custom_reward_function.name=half",
                              "reward_model.fallback_score=-1"]
    assert parse_side("b.yaml").config_file == "b.yaml"
    assert parse_side("recorded").recorded
    with pytest.raises(FileNotFoundError, match="nope.py"):
        parse_side("nope.py")
    with pytest.raises(ValueError, match="recorded"):
        parse_side("recorded math_answer")
    with pytest.raises(ValueError, match="empty"):
        parse_side("  ")


def test_diff_two_custom_files(files):
    report = diff_rows(ROWS, str(files / "strict.py"), str(files / "loose.py"))
    assert report["samples"] == 7 and report["compared"] == 6
    assert report["unscored_a"] == 0 and report["unscored_b"] == 1
    assert (report["both_pass"], report["both_fail"], report["a_pass_b_fail"], report["a_fail_b_pass"]) == (2, 2, 0, 2)
    assert report["agreement"] == pytest.approx(4 / 6)
    assert report["mean_a"] == pytest.approx(2 / 6) and report["mean_b"] == pytest.approx(4 / 6)
    assert report["mcnemar"]["p_value"] == pytest.approx(binomial_two_sided(0, 2))
    flips = report["examples"]["a_fail_b_pass"]
    assert [(e["row"], e["response_index"], e["score_a"], e["score_b"]) for e in flips] == [(0, 1, 0.0, 1.0), (2, 0, 0.0, 1.0)]
    a, b = report["by_data_source"]["a"], report["by_data_source"]["b"]
    assert (a["samples"], a["mean_a"], a["mean_b"], a["a_fail_b_pass"]) == (4, 0.5, 0.75, 1)
    assert (b["samples"], b["mean_a"], b["mean_b"], b["mean_change"]) == (2, 0.0, 0.5, 0.5)


def test_threshold_and_function_name(files):
    # `half` pays 0.5 everywhere: not above the default threshold, above 0.4.
    loose = str(files / "loose.py")
    assert diff_rows(ROWS, loose, f"{loose}:half")["pass_rate_b"] == 0.0
    assert diff_rows(ROWS, loose, f"{loose}:half", threshold=0.4)["pass_rate_b"] == 1.0


def test_compare_needs_no_scorer():
    from rewardsmith.diff import SideScores
    from rewardsmith.plugins.batch import RewardBatch

    batch = RewardBatch(["s"] * 4, ["w", "x", "y", "z"], ["g"] * 4)
    report = compare(batch, [(i, 0) for i in range(4)], SideScores([1.0, 1.0, 0.0, 0.0], [False] * 4),
                     SideScores([1.0, 0.0, 0.0, None], [False, False, False, True]))
    assert report["compared"] == 3 and report["a_pass_b_fail"] == 1 and report["unscored_b"] == 1
    assert report["examples"]["a_pass_b_fail"][0]["response"] == "x"


def test_cli_table_json_and_recorded(files, capsys):
    rows, strict = str(files / "rows.jsonl"), str(files / "strict.py")
    assert main(["score", rows, "-o", str(files / "scored.jsonl"), f"custom_reward_function.path={strict}"]) == 0
    capsys.readouterr()
    # The recorded scores against a fresh scoring with the same file: nothing changes.
    assert main(["diff", str(files / "scored.jsonl"), "recorded", strict, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["agreement"] == 1.0 and report["identical_scores"] == 1.0 and report["mcnemar"]["p_value"] == 1.0
    assert main(["diff", rows, strict, str(files / "loose.py")]) == 0
    out = capsys.readouterr().out
    assert "A fail -> B pass: 2" in out and "McNemar (exact binomial)" in out and "A refuses, B pays (2):" in out


def test_cli_errors_name_what_is_wrong(files, capsys):
    assert main(["diff", str(files / "rows.jsonl"), "recorded", "math_answer"]) == 2
    assert "row 0 has no 'score'" in capsys.readouterr().err
    assert main(["diff", str(files / "rows.jsonl"), "no_such_scorer", "math_answer"]) == 2
    assert "no_such_scorer" in capsys.readouterr().err


def test_training_dumps_rollouts_that_diff_reads(tmp_path, capsys):
    from rewardsmith.core.trainer import PPOTrainer

    dump = tmp_path / "rollouts"
    trainer = PPOTrainer(tiny_config(tmp_path, f"trainer.rollout_data_dir={dump}", "algorithm.adv_estimator=grpo"))
    try:
        trainer.global_step = 3
        batch, _ = trainer.make_experience(next(iter(trainer.loader)))
    finally:
        trainer.close()
    records = read_rows(dump / "3.jsonl")
    assert len(records) == len(batch) == 8
    first = records[0]
    assert {"input", "output", "gts", "score", "step", "data_source", "prompt", "reward_model", "response", "uid",
            "reward", "unscored", "reward_extra_info"} <= set(first)
    assert first["step"] == 3 and first["output"] == first["response"] and first["gts"] == first["reward_model"]["ground_truth"]
    assert [r["score"] for r in records] == pytest.approx(batch["token_level_scores"].sum(-1).tolist())
    assert [r["uid"] for r in records] == batch.meta["uid"]
    assert "reward_components" in first["reward_extra_info"]
    # Re-scoring the dump with the reward that trained it reproduces every score.
    (tmp_path / "digits_again.py").write_text(DIGITS_REWARD)
    assert main(["diff", str(dump / "3.jsonl"), "recorded", str(tmp_path / "digits_again.py"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["samples"] == 8 and report["identical_scores"] == 1.0


def test_recorded_scores_read_the_unscored_flag_in_every_place_a_file_keeps_it():
    rows = [{"score": 0.0, "unscored": True},                                     # a rollout dump's row
            {"score": 0.0, "reward_extra_info": {"unscored": True}},              # `rewardsmith score`'s output
            {"score": 0.0, "reward_extra_info": {"reward_masked": True}},         # the same, by an older version
            {"score": 1.0, "reward_extra_info": {"unscored": False}},
            {"score": None}]
    side = recorded_scores(rows, [(i, 0) for i in range(len(rows))], "f.jsonl")
    assert side.unscored == [True, True, True, False, True]
    assert side.scores == [0.0, 0.0, 0.0, 1.0, None]
