"""Receipts: every scored sample says where its reward came from, and `score --reproduce` checks it."""
from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from model_scoring_helpers import ScriptedServer

from rewardsmith.cli import main
from rewardsmith.common.config import load_config
from rewardsmith.common.rows import read_rows, write_rows
from rewardsmith.core.schema import Config
from rewardsmith.plugins import loader as plugin_host
from rewardsmith.plugins.receipts import config_hash, digest, reward_config
from rewardsmith.reproduce import recorded, reproduce_rows

PROMPT = [{"role": "user", "content": "q"}]


def row(source, gold, response, **extra):
    return {"data_source": source, "prompt": PROMPT, "reward_model": {"style": "rule", "ground_truth": gold},
            "extra_info": extra, "response": response}


ROWS = [row("openai/gsm8k", "7", ["#### 7", "#### 8"]), row("openai/gsm8k", "3", "#### 3")]

CONTAINS = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0 if str(ground_truth) in solution_str else 0.0
'''

PLUGIN = '''
from rewardsmith import hookimpl

def pays(data_source, solution_str, ground_truth, extra_info=None):
    return {PAY}

@hookimpl
def register_scorers(register):
    register("rcpt_scorer", pays, data_sources=["fake/rcpt"])
'''


def score(tmp_path, rows, *args):
    src, out = tmp_path / "rows.jsonl", tmp_path / "scored.jsonl"
    write_rows(src, rows)
    assert main(["score", str(src), "-o", str(out), *map(str, args)]) == 0
    return read_rows(out)


def test_score_rows_carry_receipts_of_builtin_scorers(tmp_path):
    rows = score(tmp_path, ROWS)
    version = importlib.metadata.version("rewardsmith")
    first, second = rows[0]["receipt"]  # one receipt per response
    assert first == second and rows[1]["receipt"] == first
    assert first["manager"] == {"name": "naive", "plugin": "rewardsmith.plugins.managers",
                                "distribution": "rewardsmith", "version": version}
    assert first["components"] == [{"name": "gsm8k", "kind": "rule", "weight": 1.0, "scorer": "gsm8k",
                                    "plugin": "rewardsmith.reward_fns", "distribution": "rewardsmith", "version": version}]
    # The reward-side config is a config file of its own, and the hash is of what it holds.
    path = tmp_path / "scored.jsonl.reward_config.yaml"
    assert first["config_file"] == str(path)
    loaded = load_config(Config, path)
    assert config_hash(reward_config(loaded.reward_settings(), loaded.data)) == first["config_hash"]
    # A different reward setting is a different hash.
    other = score(tmp_path, ROWS, "reward_model.fallback_score=-1")
    assert other[1]["receipt"]["config_hash"] != first["config_hash"]


def test_custom_file_is_hashed_and_an_edit_is_reported_by_reproduce(tmp_path, capsys):
    fn = tmp_path / "fn.py"
    fn.write_text(CONTAINS)
    rows = score(tmp_path, ROWS, f"custom_reward_function.path={fn}")
    receipt = rows[1]["receipt"]
    assert receipt["components"][0]["file"] == str(fn)
    assert receipt["components"][0]["file_hash"] == digest(CONTAINS.encode())
    assert "plugin" not in receipt["components"][0]
    scored = tmp_path / "scored.jsonl"
    capsys.readouterr()

    assert main(["score", "--reproduce", str(scored)]) == 0  # nothing changed
    out = capsys.readouterr().out
    assert "reproduced 3 of 3 samples" in out and "0 differ, 0 change(s)" in out

    edited = CONTAINS.replace("in solution_str", "== solution_str.strip()")
    fn.write_text(edited)
    # A fresh process, as a user runs it: this one has imported the file's first version.
    proc = subprocess.run([sys.executable, "-m", "rewardsmith", "score", "--reproduce", str(scored)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert (f"changed: component 'compute_score' (scorer 'compute_score'): file {fn} changed since scoring "
            f"(hash {digest(CONTAINS.encode())} then, {digest(edited.encode())} now)") in out
    assert "differs: row 0 response 0 (openai/gsm8k): 1 when scored, 0 now" in out
    assert "differs: row 1 (openai/gsm8k): 1 when scored, 0 now" in out
    assert "differs: row 0 response 1" not in out  # "#### 8" scored 0 before and after
    assert "reproduced 1 of 3 samples" in out


def test_reproduce_reports_a_changed_plugin_version(tmp_path, installed_plugins, capsys):
    site = installed_plugins({"fake-rcpt-plugin": ("fakeplug_rcpt", PLUGIN.replace("{PAY}", "1.0"))})
    rows = score(tmp_path, [row("fake/rcpt", "1", "anything")])
    component = rows[0]["receipt"]["components"][0]
    assert (component["scorer"], component["distribution"], component["version"]) == ("rcpt_scorer", "fake-rcpt-plugin", "1.0")

    # A new release of the plugin: version 2.0, and its scorer pays differently.
    (site / "fakeplug_rcpt.py").write_text(PLUGIN.replace("{PAY}", "0.25"))
    metadata = site / "fake_rcpt_plugin-1.0.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 1.0", "Version: 2.0"))
    del sys.modules["fakeplug_rcpt"]
    plugin_host._cache.clear()
    capsys.readouterr()
    assert main(["score", "--reproduce", str(tmp_path / "scored.jsonl")]) == 1
    out = capsys.readouterr().out
    assert ("changed: component 'rcpt_scorer' (scorer 'rcpt_scorer'): plugin fake-rcpt-plugin 1.0 when scored, "
            "fake-rcpt-plugin 2.0 installed now") in out
    assert "differs: row 0 (fake/rcpt): 1 when scored, 0.25 now" in out
    # The same from Python.
    scored = tmp_path / "scored.jsonl"
    report = reproduce_rows(read_rows(scored), scored)
    assert report.differ == [{"row": 0, "response": None, "data_source": "fake/rcpt", "recorded": 1.0, "now": 0.25}]
    assert [line for line in report.changes if "fake-rcpt-plugin 2.0" in line] and report.samples == 1


def judge_reply(path, body, headers):
    return 200, {"choices": [{"message": {"role": "assistant", "content": "Score: 8"}}]}


def test_judge_receipt_names_model_template_and_cache(tmp_path):
    template = "Rate {response} from 0 to 10. Score: N"
    with ScriptedServer(judge_reply) as server:
        # Two samples the manager tells apart (their extra_info differs) whose judge requests are identical:
        # the second is answered without a request of its own.
        rows = score(tmp_path, [row("chat", "1", "hello", id=1), row("chat", "1", "hello", id=2)],
                     "reward_model.enable=true", f"reward_model.judge.base_url=http://user:pw@{server.url[7:]}/v1",
                     "reward_model.judge.model=tiny-judge", f"reward_model.judge.template='{template}'",
                     "reward_model.components.chat.format.scorer=gsm8k", "reward_model.components.chat.format.weight=0.5",
                     "reward_model.components.chat.quality.kind=judge")
        assert len(server.requests) == 1
    receipts = [r["receipt"] for r in rows]
    version = importlib.metadata.version("rewardsmith")
    rule = {"name": "format", "kind": "rule", "weight": 0.5, "scorer": "gsm8k", "plugin": "rewardsmith.reward_fns",
            "distribution": "rewardsmith", "version": version}
    judge = {"name": "quality", "kind": "judge", "weight": 1.0, "model": "tiny-judge",
             "template_hash": digest(f'[null, "{template}"]'.encode())}
    assert [r["components"] for r in receipts] == [[rule, {**judge, "cached": False}], [rule, {**judge, "cached": True}]]
    # The judge's credentials stay out of the reward config file.
    written = (tmp_path / "scored.jsonl.reward_config.yaml").read_text()
    assert "user:pw" not in written and "***@127.0.0.1" in written


def test_remote_reward_model_receipt_names_the_model_without_credentials(tmp_path):
    with ScriptedServer(lambda path, body, headers: (200, {"rewards": [0.5] * len(body["query"])})) as server:
        url = f"http://user:pw@{server.url[7:]}/get_reward"
        model_row = {**row("chat", None, "hello"), "reward_model": {"style": "model", "ground_truth": None}}
        rows = score(tmp_path, [model_row], "reward_model.enable=true", f"reward_model.remote.urls=[{url}]")
    assert rows[0]["score"] == 0.5
    assert rows[0]["receipt"]["components"] == [{"name": "remote_rm", "kind": "remote_rm", "weight": 1.0,
                                                 "model": [url.replace("user:pw", "***")]}]


def test_reproduce_needs_a_scored_file_and_its_recorded_config(tmp_path, capsys):
    src = tmp_path / "rows.jsonl"
    write_rows(src, ROWS)
    with pytest.raises(ValueError, match=r"row 0 has no 'receipt' or 'score'"):
        recorded(read_rows(src), str(src))
    assert main(["score", "--reproduce", str(src)]) == 2
    assert "row 0 has no 'receipt' or 'score'" in capsys.readouterr().err
    score(tmp_path, ROWS)
    assert main(["score", "--reproduce", str(tmp_path / "scored.jsonl"), "--scorer", "math_answer"]) == 2
    assert "it takes no --config, --scorer or -o" in capsys.readouterr().err
    (tmp_path / "scored.jsonl.reward_config.yaml").unlink()
    assert main(["score", "--reproduce", str(tmp_path / "scored.jsonl")]) == 2
    assert "the reward config scored.jsonl.reward_config.yaml named by" in capsys.readouterr().err


def test_training_rollout_dump_carries_receipts_that_reproduce(tmp_path, capsys):
    from core_helpers import DIGITS_REWARD, tiny_config

    from rewardsmith.core.trainer import PPOTrainer

    dump = tmp_path / "rollouts"
    config = tiny_config(tmp_path, f"trainer.rollout_data_dir={dump}", "algorithm.adv_estimator=grpo")
    trainer = PPOTrainer(config)
    try:
        trainer.global_step = 2
        trainer.make_experience(next(iter(trainer.loader)))
    finally:
        trainer.close()
    records = read_rows(dump / "2.jsonl")
    receipt = records[0]["receipt"]
    assert all(r["receipt"]["components"] == receipt["components"] for r in records)
    assert receipt["manager"]["name"] == config.reward_model.reward_manager
    assert receipt["components"][0]["file_hash"] == digest(DIGITS_REWARD.encode())
    assert receipt["config_file"] == str(dump / f"reward_config.{receipt['config_hash']}.yaml")
    loaded = load_config(Config, receipt["config_file"])
    assert config_hash(reward_config(loaded.reward_settings(), loaded.data)) == receipt["config_hash"]
    # The dump re-scores as it was scored in training.
    capsys.readouterr()
    assert main(["score", "--reproduce", str(dump / "2.jsonl")]) == 0
    assert f"reproduced {len(records)} of {len(records)} samples" in capsys.readouterr().out
