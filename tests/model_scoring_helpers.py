"""Tiny reward models, a synthetic preference and scripted HTTP servers for the model-scoring tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator, Optional

import requests

from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.demo.preferences import a_share, preference_pairs  # noqa: F401 - a_share is for the tests
from rewardsmith.sandbox.testing import free_port

TINY_RM = {"model_type": "qwen2", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 256}


def save_random_rm(path: Path, seed: int = 0, **config: int) -> Path:
    """A one-output Qwen2 sequence classifier with random weights and the character tokenizer, saved to ``path``;
    ``config`` overrides sizes of ``TINY_RM``."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    torch.manual_seed(seed)
    tokenizer = build_char_tokenizer()
    config = AutoConfig.for_model(**{**TINY_RM, **config}, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, num_labels=1)
    AutoModelForSequenceClassification.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# A causal LM vLLM's CPU backend can serve: its attention has kernels for heads of 32 and up.
TINY_JUDGE = {"model_type": "llama", "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 512}


def save_random_causal_lm(path: Path, seed: int = 0) -> Path:
    """A Llama causal LM with random weights and the character tokenizer (with its chat template), saved to ``path``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    tokenizer = build_char_tokenizer()
    config = AutoConfig.for_model(**TINY_JUDGE, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                  bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    AutoModelForCausalLM.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@contextmanager
def vllm_server(model: Path, name: str, log: Path, *args: str, startup: float = 300) -> Iterator[str]:
    """vLLM's OpenAI-compatible server on ``model`` in its own process on a free loopback port; yields its
    ``http://127.0.0.1:PORT``. Its output goes to ``log``, whose tail a failed start-up shows."""
    port = free_port()
    # On CPU vLLM reserves its KV cache from the machine's memory; a tiny model needs 1 GiB at most.
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                                 "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port),
                                 "--max-model-len", "256", "--enforce-eager", "--dtype", "float32", *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + startup
        while True:
            assert proc.poll() is None, f"vLLM exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
            assert time.time() < deadline, f"vLLM not healthy after {startup:g} s:\n{log.read_text()[-3000:]}"
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(2)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


@contextmanager
def rm_serve(path: Path, token: Optional[str] = None) -> Iterator[str]:
    """`rewardsmith rm serve PATH` in its own process on a free loopback port; yields its ``host:port``.
    The token goes in ``$REWARDSMITH_RM_TOKEN``, as docs/reward_models.md advises (not on the command line)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("REWARDSMITH_RM_TOKEN", None)
    if token:
        env["REWARDSMITH_RM_TOKEN"] = token
    proc = subprocess.Popen([sys.executable, "-m", "rewardsmith", "rm", "serve", str(path), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "serving reward model" in line, proc.stderr.read()
        yield line.split("http://")[1].split("/get_reward")[0]
    finally:
        proc.terminate()
        proc.wait(10)


def preference_rows(n: int, seed: int = 0) -> list[dict]:
    """Short preference pairs (the demo's synthetic preference), quick to train on."""
    return preference_pairs(n, seed, max_length=12)


class ScriptedServer:
    """A real HTTP server on 127.0.0.1 whose answers come from ``reply(path, body, headers) -> (code, json)``;
    it records every request it got."""

    def __init__(self, reply: Callable[[str, dict, dict], tuple[int, dict]]) -> None:
        self.requests: list[tuple[str, dict, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                headers = dict(self.headers.items())
                server.requests.append((self.path, body, headers))
                code, answer = reply(self.path, body, headers)
                data = json.dumps(answer).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up first (the timeout tests make it): no one is left to answer.
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
