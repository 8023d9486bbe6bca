"""The wheel as pip installs it: built from the checkout, installed (not editable) with its
declared dependencies into a fresh venv, and used from a directory outside the checkout."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"rewardsmith": "rewardsmith", "rewardsmith.common": "common", "rewardsmith.core": "core",
           "rewardsmith.plugins": "plugins", "rewardsmith.reward_fns": "reward_fns", "rewardsmith.sandbox": "sandbox"}
# What the wheel's extras other than `test` install (and a plain `pip install rewardsmith`
# leaves out): a module may need one of these and nothing else to import.
OPTIONAL = {"ray", "vllm", "tensorboard", "wandb", "mlflow", "swanlab"}
# The `test` extra: no module of the wheel may need it, so the venv must not have it.
TEST_ONLY = ["pytest", "trl"]
# Not imported as package modules: the sandbox worker is a program the pool's bootstrap loads
# from its source with its sibling modules (no path of the server's package in a run), and
# imports the template from there.
BY_PATH = {"rewardsmith.sandbox.template", "rewardsmith.sandbox.worker"}

IMPORT_ALL = """
import importlib, json, sys
failed = {}
for name in json.loads(sys.argv[1]):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        failed[name] = e.name
    else:
        assert module.__file__.startswith(sys.prefix), (name, module.__file__)
print(json.dumps(failed))
"""


def source_modules() -> list[str]:
    """Every module of the checkout, by the name it has once installed (``__main__`` runs the CLI
    when imported: the test runs it as ``python -m rewardsmith`` instead)."""
    names = []
    for package, folder in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join((package, *parts)))
    return [name for name in names if name not in BY_PATH]


@pytest.mark.slow
def test_the_wheel_installs_and_every_module_and_command_works(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # From a copy without build outputs: setuptools reuses build/lib, where a module the
    # package list misses may still lie from an earlier build.
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "outputs"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, src],
                   check=True, timeout=600, env=env)
    wheel = next(dist.glob("rewardsmith-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py, cli = venv / "bin" / "python", venv / "bin" / "rewardsmith"
    # CPU torch first, as README says, so the wheel's range never pulls a CUDA build.
    subprocess.run([py, "-m", "pip", "install", "-q", "torch==2.13.0"], check=True, timeout=900, env=env)
    subprocess.run([py, "-m", "pip", "install", "-q", wheel], check=True, timeout=900, env=env)

    work = tmp_path / "outside"
    work.mkdir()

    def run(*args, **kw):
        proc = subprocess.run([*map(str, args)], cwd=work, capture_output=True, text=True, timeout=600, env=env, **kw)
        assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    absent = run(py, "-c", f"import importlib.util; print([m for m in {TEST_ONLY!r} if importlib.util.find_spec(m)])")
    assert absent.strip() == "[]", f"the venv must lack the test extras: {absent}"
    failed = json.loads(run(py, "-c", IMPORT_ALL, json.dumps(source_modules())))
    assert {name: missing for name, missing in failed.items() if missing.split(".")[0] not in OPTIONAL} == {}

    assert "score" in run(py, "-m", "rewardsmith", "--help")
    plugins = json.loads(run(cli, "plugins", "--json"))
    assert [p["name"] for p in plugins if p["error"]] == []
    assert {"rewardsmith.plugins.managers", "rewardsmith.reward_fns"} <= {p["name"] for p in plugins}

    responses = work / "math_responses.jsonl"
    responses.write_bytes((ROOT / "examples" / "data" / "math_responses.jsonl").read_bytes())
    run(cli, "score", responses, "-o", work / "scored.jsonl")
    assert len((work / "scored.jsonl").read_text().splitlines()) == len(responses.read_text().splitlines())

    # Model scoring from the wheel: train a tiny reward model, then score a model row with it.
    run(py, "-c", "import sys; from rewardsmith.common.rows import write_rows;"
        "from rewardsmith.demo.char_tokenizer import build_char_tokenizer;"
        "from rewardsmith.demo.preferences import preference_pairs;"
        "build_char_tokenizer().save_pretrained('tok'); write_rows('pairs.jsonl', preference_pairs(64, seed=0))")
    run(cli, "rm", "train", "data.train_files=pairs.jsonl", "data.max_length=64", "model.tokenizer=tok",
        "model.config={model_type: qwen2, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, "
        "num_attention_heads: 2, num_key_value_heads: 2, max_position_embeddings: 128}",
        "save_dir=rm", "epochs=1", "cpu_threads=1", "progress_bar=false")
    (work / "rows.jsonl").write_text(json.dumps(
        {"data_source": "open/chat", "prompt": "Say something.", "response": "aaab",
         "reward_model": {"style": "model", "ground_truth": ""}}) + "\n")
    run(cli, "score", "rows.jsonl", "-o", "rm_scored.jsonl", "reward_model.enable=true", "reward_model.model.path=rm")
    scored = json.loads((work / "rm_scored.jsonl").read_text())
    assert isinstance(scored["score"], float) and "local_rm" in scored["reward_extra_info"]["reward_components"]

    # The TRL adapter, from the installed package.
    out = run(py, "-c", "from rewardsmith import trl_reward_func; f = trl_reward_func('gsm8k');"
              "print(f(prompts=['q'], completions=['#### 4'], ground_truth=['4'], data_source=['openai/gsm8k']))")
    assert out.strip() == "[1.0]"
