"""Tiny reward models, a synthetic preference and scripted HTTP servers for the model-scoring tests."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from rewardkit.demo.char_tokenizer import build_char_tokenizer
from rewardkit.demo.preferences import a_share, preference_pairs  # noqa: F401 - a_share is for the tests

TINY_RM = {"model_type": "qwen2", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 256}


def save_random_rm(path: Path, seed: int = 0) -> Path:
    """A one-output Qwen2 sequence classifier with random weights and the character tokenizer, saved to ``path``."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    torch.manual_seed(seed)
    tokenizer = build_char_tokenizer()
    config = AutoConfig.for_model(**TINY_RM, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, num_labels=1)
    AutoModelForSequenceClassification.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


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
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
