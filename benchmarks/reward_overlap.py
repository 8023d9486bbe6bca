"""Rewards sequential vs overlapped with the log-prob passes, on the same tiny GRPO job.

The job: a tiny random Qwen2-style model, the demo's arithmetic prompts
(PROMPTS x N samples), MAX_NEW_TOKENS-token responses, two PPO epochs and a KL
loss, so each step has an old-policy pass and a reference pass for the rewards
to hide behind. Two reward kinds, each real:

* ``cpu``: a pure-Python scorer that burns ~CPU_MS of CPU per sample (the math
  verifiers' kind of cost), in the ``parallel`` manager's worker processes;
* ``judge``: an LLM judge over HTTP, a small server in its own process that
  answers each request in 200 ms (``reward_model.judge``, 8 requests in flight).

Each is run with ``reward_model.launch_reward_fn_async=false`` (the sequential
path) and ``true``, alternating the order every round, in this one process;
the first step of a run is a warm-up and is not timed. The table gives the
medians over rounds of the per-step medians: samples/s, step time, the time
the step waited on rewards, the rewards' own time, and the ratio of samples/s
to the sequential run of the same kind.

    python benchmarks/reward_overlap.py [--steps 3] [--rounds 3] [--prompts 8] [--n 4] [--max-new-tokens 20]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL = ("{model_type: qwen2, hidden_size: 64, intermediate_size: 256, num_hidden_layers: 2, num_attention_heads: 2, "
         "num_key_value_heads: 2, max_position_embeddings: 128, tie_word_embeddings: true}")
JUDGE_DELAY_S = 0.2
CPU_MS = 20

CPU_SCORER = f'''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    end = time.process_time() + {CPU_MS} / 1000
    n = 0
    while time.process_time() < end:
        n += 1
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
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


def run(args: argparse.Namespace, work: Path, kind_overrides: list[str], overlap: bool, out: Path) -> list[dict]:
    """Per-step metrics of the timed steps of one run."""
    from rewardsmith.common.config import load_config
    from rewardsmith.core.schema import Config
    from rewardsmith.core.trainer import PPOTrainer

    config = load_config(Config, None, [
        f"actor_rollout_ref.model.config={MODEL}", f"data.tokenizer={work / 'tokenizer'}",
        f"data.train_files={work / 'data' / 'train.jsonl'}", "data.max_prompt_length=96",
        f"data.max_response_length={args.max_new_tokens}", f"data.train_batch_size={args.prompts}",
        f"actor_rollout_ref.rollout.n={args.n}", f"actor_rollout_ref.actor.ppo_mini_batch_size={args.prompts}",
        "actor_rollout_ref.actor.ppo_epochs=2", "actor_rollout_ref.actor.use_kl_loss=true",
        "actor_rollout_ref.actor.optim.lr=0.0001", "algorithm.adv_estimator=grpo", "trainer.progress_bar=false",
        "trainer.logger=[]", "trainer.resume_mode=disable", f"trainer.default_local_dir={out}", "trainer.device=cpu",
        "trainer.seed=0", f"reward_model.launch_reward_fn_async={str(overlap).lower()}", *kind_overrides,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=20)
    parser.add_argument("--serve-judge", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_judge:
        serve_judge(args.serve_judge)
        return

    from rewardsmith.common.rows import write_rows
    from rewardsmith.demo.arith_problems import make_dataset
    from rewardsmith.demo.char_tokenizer import build_char_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "data").mkdir()
        write_rows(work / "data" / "train.jsonl", make_dataset(n_sft=8, n_train=256, n_val=8)["train"])
        build_char_tokenizer().save_pretrained(work / "tokenizer")
        (work / "cpu_scorer.py").write_text(CPU_SCORER)
        judge, judge_url = start_judge(work)
        try:
            kinds = {
                "cpu": ["reward_model.reward_manager=parallel", "reward_model.num_workers=2",
                        f"custom_reward_function.path={work / 'cpu_scorer.py'}"],
                "judge": ["reward_model.enable=true", f"reward_model.judge.base_url={judge_url}",
                          "reward_model.judge.model=bench-judge", "reward_model.judge.max_concurrent=8",
                          "reward_model.judge.cache_size=0"],
            }
            results: dict[tuple[str, str], list[dict[str, float]]] = {}
            for r in range(args.rounds):
                for kind, overrides in kinds.items():
                    for overlap in ((False, True) if r % 2 == 0 else (True, False)):
                        mode = "overlapped" if overlap else "sequential"
                        steps = run(args, work, overrides, overlap, work / f"run-{kind}-{mode}-{r}")
                        results.setdefault((kind, mode), []).append({
                            key: statistics.median(s[f"timing_s/{key}"] for s in steps)
                            for key in ("step", "reward_wait", "reward_total")})
        finally:
            judge.terminate()
            judge.wait()
    samples = args.prompts * args.n
    print(f"{samples} samples per step, {args.max_new_tokens} new tokens, {args.steps} timed steps x {args.rounds} rounds (medians)")
    print(f"{'reward':8}{'rewards':>12}{'samples/s':>11}{'step s':>9}{'waited s':>10}{'reward s':>10}{'ratio':>7}")
    for kind in kinds:
        base = None
        for mode in ("sequential", "overlapped"):
            m = {k: statistics.median(r[k] for r in results[(kind, mode)]) for k in ("step", "reward_wait", "reward_total")}
            rate = samples / m["step"]
            base = base or rate
            print(f"{kind:8}{mode:>12}{rate:>11.1f}{m['step']:>9.3f}{m['reward_wait']:>10.3f}{m['reward_total']:>10.3f}{rate / base:>7.2f}")


if __name__ == "__main__":
    main()
