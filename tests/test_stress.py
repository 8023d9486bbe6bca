"""``rewardsmith stress``: attack families, scoring through the managers, the report, the CLI gate."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.cli import main
from rewardsmith.common.config import load_config
from rewardsmith.common.rows import read_rows
from rewardsmith.core.schema import Config
from rewardsmith.plugins.registry import PluginInfo, Registry
from rewardsmith.plugins.stress import format_report, probes_for_rows, stress
from rewardsmith.reward_fns.attacks import Probe, near_misses, target_of
from rewardsmith.sandbox.testing import isolation_unavailable, running_server

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_ROWS = ROOT / "examples" / "data" / "math_responses.jsonl"
MATH_SOURCES = ("openai/gsm8k", "lighteval/MATH", "HuggingFaceH4/MATH-500", "math_dapo", "aime2024", "math_verify")


def settings(*overrides: str):
    return load_config(Config, None, list(overrides)).reward_settings()


def math_rows() -> list[dict]:
    return [row for row in read_rows(EXAMPLE_ROWS) if row["data_source"] in MATH_SOURCES]


@pytest.mark.parametrize("scorer", ["gsm8k", "math_reward", "math_dapo", "math_verify", "search_r1_qa_em", "math_answer"])
def test_stress_runs_on_every_builtin_rule_scorer(scorer):
    report = stress(read_rows(EXAMPLE_ROWS), settings(f"reward_model.scorer={scorer}"))
    assert {g.scorer for g in report.groups} == {scorer}
    assert {g.data_source for g in report.groups} == {row["data_source"] for row in read_rows(EXAMPLE_ROWS)}
    assert report.hacks > 150 and 0 <= report.hack_paid_rate <= 1
    for g in report.groups:
        assert g.paid_by_family["empty"][0] == 0, f"{scorer} paid an empty response on {g.data_source}"
        assert len(g.worst_hacks) <= 5 and len(g.worst_refusals) <= 5
        assert all(e["score"] > 0.5 for e in g.worst_hacks)


def test_routed_scorers_are_gameable_and_reported_per_scorer():
    # Without --scorer each row goes to its data_source's route, as in training.
    report = stress(read_rows(EXAMPLE_ROWS), settings())
    by_source = {g.data_source: g for g in report.groups}
    assert by_source["openai/gsm8k"].scorer == "gsm8k" and by_source["math_dapo"].scorer == "math_dapo"
    # verl's gsm8k reads the last "####" value: "#### 73 #### 72" is paid for gold 72.
    assert by_source["openai/gsm8k"].hacks_paid > 0
    table = format_report(report)
    assert "gsm8k" in table and "hacks paid" in table and "(all)" in table


def test_math_answer_pays_at_most_one_percent_and_refuses_no_control():
    # examples/data/math_rows.jsonl: golds of every shape (fractions, radicals, tuples, matrices, polynomials).
    rows = math_rows() + read_rows(ROOT / "examples" / "data" / "math_rows.jsonl")
    report = stress(rows, settings("reward_model.scorer=math_answer"))
    assert report.hacks > 1000
    assert report.hack_paid_rate <= 0.01, format_report(report)
    assert report.correct_refused_rate <= 0.01, format_report(report)


def test_near_misses_are_wrong_values():
    kinds = dict(near_misses("72"))
    assert {"off by one", "wrong sign", "wrong unit", "rounded"} <= set(kinds)
    assert ("rounded", "0.83") in near_misses("\\frac{5}{6}")
    assert near_misses("x^2 + 1") == []


def test_third_party_attack_families_apply_by_data_source():
    plugin = PluginInfo("myplugin", "my-dist", "1.0", builtin=False)
    registry = Registry([plugin])
    registry.add_attack(plugin, "shout", lambda t: [Probe("shout", t.gold.upper() + "!!!", False)], data_sources=("my_*",))
    rows = [{"data_source": "my_qa", "prompt": "?", "reward_model": {"ground_truth": "paris"}},
            {"data_source": "other", "prompt": "?", "reward_model": {"ground_truth": "rome"}}]
    found = probes_for_rows(rows, registry)
    assert [(i, p.response) for i, _, p in found] == [(0, "PARIS!!!")]
    assert plugin.attacks == ["shout"]


def test_a_broken_family_is_named():
    plugin = PluginInfo("bad", "bad-dist", "0.1", builtin=False)
    registry = Registry([plugin])
    registry.add_attack(plugin, "boom", lambda t: 1 / 0)
    with pytest.raises(ValueError, match="rows: row 0: attack family 'boom' failed: ZeroDivisionError"):
        probes_for_rows([{"data_source": "x", "reward_model": {"ground_truth": "1"}}], registry)


def test_rows_without_ground_truth_are_refused_by_row():
    registry = Registry([])
    with pytest.raises(ValueError, match="row 1: missing 'reward_model.ground_truth'"):
        probes_for_rows([{"data_source": "x", "reward_model": {"ground_truth": "1"}}, {"data_source": "x"}], registry)


def test_builtin_families_are_listed_by_the_plugins_command(capsys):
    assert main(["plugins", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    builtin = next(r for r in records if r["name"] == "rewardsmith.reward_fns")
    assert {"several_answers", "hidden_answers", "near_miss", "code_hacks"} <= set(builtin["attacks"])


def test_cli_json_and_max_hack_rate_gate(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in math_rows()))
    assert main(["stress", str(rows), "--scorer", "math_answer", "--json", "--max-hack-rate", "0.01"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["hack_paid_rate"] <= 0.01 and report["groups"][0]["scorer"] == "math_answer"
    # verl's gsm8k port pays hacks: the gate fails the run.
    assert main(["stress", str(rows), "--scorer", "gsm8k", "--max-hack-rate", "0.01"]) == 1
    assert "above --max-hack-rate" in capsys.readouterr().err
    assert main(["stress", str(rows), "--max-hack-rate", "2"]) == 2


NO_ISOLATION = isolation_unavailable()


@pytest.mark.skipif(bool(NO_ISOLATION), reason=str(NO_ISOLATION))
def test_code_hacks_through_the_sandbox_manager():
    add = {"inputs": ["1 2\n", "10 20\n"], "outputs": ["3\n", "30\n"]}
    rows = [{"data_source": "codecontests", "prompt": "Add two numbers.", "reward_model": {"ground_truth": json.dumps(add)}}]
    with running_server("--workers", "2") as base:
        report = stress(rows, settings(f"reward_model.sandbox_fusion.url={base}/run_code",
                                       "reward_model.reward_manager=sandbox"))
    (group,) = report.groups
    assert group.scorer == "sandbox_code" and group.hacks >= 6
    families = group.paid_by_family
    assert families["exit early"][0] == 0 and families["read other files"][0] == 0 and families["echo test input"][0] == 0
    # Printing the first case's output passes one test in two: scored 0.5, not paid.
    assert families["print first output"][0] == 0


def test_target_reads_every_ground_truth_shape():
    assert target_of({"data_source": "x", "reward_model": {"ground_truth": "#### 72"}}).gold == "72"
    assert target_of({"data_source": "x", "reward_model": {"ground_truth": {"target": ["Paris", "paris"]}}}).gold == "Paris"
    code = target_of({"data_source": "apps", "reward_model": {"ground_truth": '{"inputs": ["1"], "outputs": ["1"]}'}})
    assert code.gold is None


# -- response lengths under the DAPO overlong penalty --------------------------------------
OVERLONG = ("reward_model.reward_manager=dapo", "reward_model.overlong_buffer.enable=true",
            "reward_model.overlong_buffer.len=16", "reward_model.max_resp_len=48")


def word_tokenizer(directory: Path) -> Path:
    """A tokenizer with one token per whitespace-separated word: far fewer tokens than characters."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab={"<unk>": 0, "<eos>": 1}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", eos_token="<eos>").save_pretrained(directory)
    return directory


def test_overlong_penalty_counts_the_tokens_of_the_runs_tokenizer(tmp_path, capsys):
    """Controls of a few words but more than 32 characters: the penalty (from token 32 of 48) must
    not touch them, as it would not in training; counted as characters, they were refused."""
    rows = [row for row in math_rows() if row["data_source"] == "math_dapo"]
    plain = stress(rows, settings("reward_model.reward_manager=dapo"))
    counted = []

    def words(texts):
        counted.extend(texts)
        return [len(t.split()) for t in texts]

    report = stress(rows, settings(*OVERLONG), count_tokens=words)
    assert len(counted) == sum(g.hacks + g.controls for g in report.groups)
    assert report.correct_refused_rate == plain.correct_refused_rate, format_report(report)
    # What character counts (the lengths stress used to pass) did to the same controls.
    chars = stress(rows, settings(*OVERLONG), count_tokens=lambda texts: [len(t) for t in texts])
    assert chars.correct_refused_rate > plain.correct_refused_rate
    # The same through the CLI, with the tokenizer the config names.
    path = tmp_path / "dapo_rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tokenizer = word_tokenizer(tmp_path / "tok")
    capsys.readouterr()
    assert main(["stress", str(path), "--json", *OVERLONG, f"data.tokenizer={tokenizer}"]) == 0
    assert json.loads(capsys.readouterr().out)["correct_refused_rate"] == plain.correct_refused_rate


def test_overlong_penalty_without_a_tokenizer_is_refused_by_name(tmp_path, capsys):
    rows = [row for row in math_rows() if row["data_source"] == "math_dapo"]
    with pytest.raises(ValueError, match="reward manager 'dapo' reads response lengths in tokens"):
        stress(rows, settings(*OVERLONG))
    path = tmp_path / "dapo_rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["stress", str(path), *OVERLONG]) == 2
    assert "reward manager 'dapo' reads response lengths in tokens (dapo: its overlong penalty, " \
           "reward_model.overlong_buffer.enable): name the run's tokenizer with data.tokenizer=DIR" in capsys.readouterr().err
