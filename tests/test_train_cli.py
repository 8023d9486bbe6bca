"""`rewardsmith train` and `rewardsmith sft` end to end, through the real command line entry point."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from core_helpers import TINY_MODEL, write_inputs

from rewardsmith.cli import main
from rewardsmith.core.models import build_causal_lm, load_tokenizer
from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config

ROOT = Path(__file__).resolve().parents[1]


def write_config(tmp_path, paths, **extra):
    config = {
        "data": {"tokenizer": str(paths["tokenizer"]), "train_files": str(paths["train"]), "val_files": str(paths["val"]),
                 "max_prompt_length": 96, "max_response_length": 8, "train_batch_size": 4},
        "actor_rollout_ref": {"model": {"config": yaml.safe_load(TINY_MODEL)}, "rollout": {"n": 2},
                              "actor": {"ppo_mini_batch_size": 2}},
        "algorithm": {"adv_estimator": "grpo"},
        "trainer": {"default_local_dir": str(tmp_path / "run"), "total_training_steps": 2, "save_freq": 2, "progress_bar": False},
        "sft": {"train_files": str(paths["sft"]), "total_epochs": 1, "batch_size": 8, "save_dir": str(tmp_path / "sft")},
    }
    for key, value in extra.items():
        config[key].update(value)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_train_runs_from_a_yaml_file_with_overrides(tmp_path, capsys):
    paths = write_inputs(tmp_path)
    config = write_config(tmp_path, paths)
    # a sandbox URL with credentials (as docs/sandbox.md suggests for a token): never written down
    secret_url = "http://alice:pw-SECRET@127.0.0.1:9/run_code?token=tok-SECRET&lang=py"
    assert main(["train", str(config), "trainer.logger=[console,jsonl]", "algorithm.adv_estimator=rloo",
                 f"reward_model.sandbox_fusion.url={secret_url}"]) == 0
    out = capsys.readouterr()
    assert f"output directory: {(tmp_path / 'run').resolve()}" in out.out + out.err
    assert "final validation reward:" in out.out
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2]
    assert "val/reward/mean" in records[0] and "val/reward/mean" in records[-1]
    for key in ("critic/score/mean", "actor/pg_loss", "actor/entropy", "actor/grad_norm", "timing_s/gen",
                "perf/tokens_per_s", "response_length/mean"):
        assert key in records[1], key
    assert any(k.startswith("reward/source/") for k in records[1])
    written = (tmp_path / "run" / "config.yaml").read_text()
    assert "SECRET" not in written
    saved = yaml.safe_load(written)
    assert saved["algorithm"]["adv_estimator"] == "rloo"
    assert saved["reward_model"]["sandbox_fusion"]["url"] == "http://***@127.0.0.1:9/run_code?token=***&lang=py"
    assert (tmp_path / "run" / "global_step_2" / "actor" / "config.json").is_file()


def test_sft_then_train_from_its_output(tmp_path, capsys):
    paths = write_inputs(tmp_path)
    config = write_config(tmp_path, paths)
    assert main(["sft", str(config)]) == 0
    assert f"actor_rollout_ref.model.path={tmp_path / 'sft'}" in capsys.readouterr().out
    model_cfg = load_config(Config).actor_rollout_ref.model
    tokenizer = load_tokenizer(str(tmp_path / "sft"))
    model = build_causal_lm(model_cfg, tokenizer, path=str(tmp_path / "sft"))
    assert model.config.vocab_size == len(tokenizer)
    assert main(["train", str(config), f"actor_rollout_ref.model.path={tmp_path / 'sft'}", "data.tokenizer=null",
                 "trainer.total_training_steps=1", "trainer.resume_mode=disable"]) == 0


def test_user_errors_are_one_line_naming_the_problem(tmp_path, capsys):
    paths = write_inputs(tmp_path)
    config = write_config(tmp_path, paths)
    assert main(["train", str(config), "trainer.bogus=1"]) == 2
    assert "unknown config key 'trainer.bogus'" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "missing.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    assert main(["train", str(config), "algorithm.adv_estimator=nope"]) == 2
    assert "nope" in capsys.readouterr().err
    rows = [json.loads(line) for line in paths["val"].read_text().splitlines()]
    rows[0]["data_source"] = "no/such_source"
    paths["val"].write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["train", str(config)]) == 2
    err = capsys.readouterr().err
    assert "no/such_source" in err and "openai/gsm8k" in err  # lists the known sources


def test_train_under_verl_reward_model_keys_scores_rule_rows_with_the_model_and_names_its_notices(tmp_path, capsys):
    from model_scoring_helpers import save_random_rm

    paths = write_inputs(tmp_path)
    config = write_config(tmp_path, paths)
    rm = save_random_rm(tmp_path / "rm")
    assert main(["train", str(config), "trainer.logger=[console,jsonl]", "trainer.total_training_steps=1",
                 "data.return_raw_chat=True", "reward_model.enable=True", f"reward_model.model.path={rm}",
                 "reward_model.micro_batch_size_per_gpu=2", "reward_model.model.use_remove_padding=True",
                 "reward_model.use_reward_loop=True", "reward_model.rollout.tensor_model_parallel_size=1"]) == 0
    out = capsys.readouterr().out
    # (use_reward_loop without rollout.name scores in-process; rollout.name=vllm would serve the model with vLLM)
    for key in ("reward_model.model.use_remove_padding", "reward_model.use_reward_loop", "reward_model.rollout.tensor_model_parallel_size"):
        assert sum(line.startswith(f"notice: {key}:") for line in out.splitlines()) == 1, key
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    # the demo rows are `style: rule` arithmetic: under verl's keys the reward model scores them all
    assert records[1]["reward/local_rm/count"] == 8.0
    components = {k.split("/")[1] for k in records[1] if k.startswith("reward/") and k.endswith("/count") and k.count("/") == 2}
    assert components == {"local_rm"}  # no rule scorer (gsm8k, MATH) was asked


# Runs the command in a fresh interpreter, then reports whether the engine's heavy libraries were imported.
_WITHOUT_ENGINE = ("import sys; from rewardsmith.cli import main; code = main(sys.argv[1:]); "
                   "print('imported:', sorted({'torch', 'transformers'} & set(sys.modules))); sys.exit(code)")


@pytest.mark.parametrize("argv, error", [
    (["train", str(ROOT / "examples/configs/arith_ppo.yaml"), "trainer.total_traning_steps=3"],
     "trainer.total_traning_steps"),
    (["train", str(ROOT / "examples/configs/arith_ppo.yaml"), "data.train_files=no/such.jsonl"],
     "actor_rollout_ref.model.path: directory outputs/arith/sft_model does not exist"),
    (["train", str(ROOT / "examples/configs/arith_ppo.yaml"), "data.train_files=no/such.jsonl",
      "actor_rollout_ref.model.path=examples/data/arith_tokenizer"],  # a directory, so the data file is next
     "data.train_files: dataset file not found: no/such.jsonl"),
    (["rm", "train", "data.train_files=pairs.jsonl", "epoch=2"], "epoch"),
    (["rm", "train", "data.train_files=no/such.jsonl"], "data.train_files: dataset file not found: no/such.jsonl"),
])
def test_config_typos_and_missing_files_are_reported_before_the_engine_loads(argv, error):
    done = subprocess.run([sys.executable, "-c", _WITHOUT_ENGINE, *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert error in done.stderr.strip().splitlines()[-1]
    assert done.stdout.strip() == "imported: []"
