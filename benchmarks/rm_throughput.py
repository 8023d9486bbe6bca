"""Local reward model throughput, and the LLM judge cache on a group-sampled batch.

1. The same responses scored by the same reward model two ways:
   - rewardsmith's local reward model (length-sorted micro-batches, each padded
     only to its own longest sample);
   - TRL's way of using a reward model as a reward function (GRPOTrainer with a
     model in ``reward_funcs``: the whole batch tokenized with
     ``padding=True, padding_side="right"`` and one ``model(**inputs).logits[:, 0]``).
   Prints samples/s and the ratio for each batch size.
2. A group-sampled batch (prompts x n samples with repeated responses) scored
   by the LLM judge against a local OpenAI-compatible server with a fixed
   latency, with and without the cache, then once more (a repeated validation).

    .venv/bin/python benchmarks/rm_throughput.py [--samples 64 256] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification

from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.plugins.config import JudgeConfig, RewardModelPathConfig
from rewardsmith.plugins.model_scoring.interface import ModelRequest, render_chat
from rewardsmith.plugins.model_scoring.judge import LLMJudge
from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel

MODEL = {"model_type": "qwen2", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 1024}


def make_rm(path: Path) -> None:
    tokenizer = build_char_tokenizer()
    config = AutoConfig.for_model(**MODEL, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, num_labels=1)
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


def responses(n: int, seed: int = 0) -> list[ModelRequest]:
    """Responses of very different lengths, as RL rollouts are (10 to 600 characters)."""
    rng = random.Random(seed)
    letters = "abcdefghij klmnop"
    return [ModelRequest("open", [{"role": "user", "content": "Say something."}],
                         "".join(rng.choice(letters) for _ in range(int(10 + 590 * rng.random() ** 2)))) for _ in range(n)]


@torch.inference_mode()
def trl_style(model: LocalRewardModel, requests: list[ModelRequest]) -> list[float]:
    """TRL GRPOTrainer's reward-model path: template, tokenize the batch padded right, one forward."""
    texts = [render_chat(model.tokenizer, r.prompt, r.response)[1] for r in requests]
    model.tokenizer.padding_side = "right"
    inputs = model.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return model.model(**inputs).logits[:, 0].tolist()


def bench_local(batch_sizes: list[int], repeats: int) -> None:
    """Both paths on batches of each size (TRL scores its whole generation batch in one forward)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        make_rm(Path(tmp))
        ours = LocalRewardModel(RewardModelPathConfig(path=tmp, micro_batch_size=16, max_length=1024))
        warm = responses(32, seed=1)
        check_ours = [o.score for o in ours.score(warm)]
        check_trl = trl_style(ours, warm)
        assert max(abs(a - b) for a, b in zip(check_ours, check_trl)) < 1e-3, "the two paths disagree"
        for samples in batch_sizes:
            requests = responses(samples)
            times = {}
            for name, fn in (("TRL reward_funcs (one padded batch)", lambda: trl_style(ours, requests)),
                             ("rewardsmith local_rm (length-sorted micro-batches)", lambda: ours.score(requests))):
                best = float("inf")
                for _ in range(repeats):
                    start = time.perf_counter()
                    fn()
                    best = min(best, time.perf_counter() - start)
                times[name] = best
            base = next(iter(times.values()))
            rows += [(samples, name, samples / seconds, base / seconds) for name, seconds in times.items()]
    print(f"\nreward model throughput: responses of 10-600 characters, same model and inputs (best of {repeats})")
    print(f"{'batch':>6}  {'path':<50}{'samples/s':>11}{'ratio':>8}")
    for samples, name, rate, ratio in rows:
        print(f"{samples:>6}  {name:<50}{rate:>11.1f}{ratio:>7.2f}x")


class _Judge(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    latency = 0.05
    count = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).count += 1
        time.sleep(self.latency)
        data = json.dumps({"choices": [{"message": {"content": "Score: 7"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def bench_judge(prompts: int, n: int, distinct: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    rng = random.Random(1)
    batch = [ModelRequest("chat", f"question {p}", f"answer {rng.randrange(distinct)}") for p in range(prompts) for _ in range(n)]
    print(f"\nLLM judge on a group-sampled batch: {prompts} prompts x {n} samples = {len(batch)} samples, {distinct} distinct "
          f"answers per prompt, {_Judge.latency * 1000:.0f} ms per request, 8 in flight (duplicates within a batch are always asked once)")
    print(f"{'judge':<34}{'requests':>10}{'seconds':>9}{'hit rate':>10}")
    rows = []
    for name, size in (("cache_size=0", 0), ("cache_size=100000", 100000)):
        judge = LLMJudge(JudgeConfig(base_url=url, model="m", max_concurrent=8, cache_size=size))
        for label in ("first pass", "repeated"):
            before = _Judge.count
            start = time.perf_counter()
            judge.score(batch)
            seconds = time.perf_counter() - start
            rate = judge.metrics().get("cache_hit_rate", 0.0)
            rows.append((f"{name}, {label}", _Judge.count - before, seconds, rate))
        judge.close()
    for label, sent, seconds, rate in rows:
        print(f"{label:<34}{sent:>10}{seconds:>9.2f}{rate:>10.2f}")
    server.shutdown()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[64, 256], help="batch sizes to score")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 keeps the ratio steady on cores shared with other jobs")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    bench_local(args.samples, args.repeats)
    bench_judge(prompts=16, n=8, distinct=3)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
