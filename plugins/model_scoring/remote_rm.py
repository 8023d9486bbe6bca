"""A client for reward-model servers: OpenRLHF's protocol and vLLM's /classify endpoint.

OpenRLHF (``openrlhf.cli.serve_rm``, and ``rewardsmith rm serve``)::

    POST {"query": [prompt + response, ...], "prompts": [prompt, ...], "labels": [ground truth, ...]}
    ->   {"rewards": [r, ...], "scores": [...], "extra_logs": {...}}

vLLM (``vllm serve MODEL`` of a one-label classifier)::

    POST {"model": NAME, "input": [text or token ids, ...], "use_activation": false}
    ->   {"data": [{"index": i, "probs": [p]}, ...]}

(``use_activation`` only when set; with a tokenizer the input is token ids,
cut to ``max_length`` as the local reward model cuts them.)

A batch is split into requests of ``batch_size`` samples, at most
``max_concurrent`` in flight, spread over the URLs. A request that finally
fails costs its samples (status timeout / unavailable / error), which then
follow their component's failure policy.
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any

from rewardsmith.common.errors import ConfigError
from rewardsmith.common.tokenizer_files import load_tokenizer_dir
from rewardsmith.plugins.model_scoring.http_client import JsonClient, RequestFailed
from rewardsmith.plugins.model_scoring.interface import ModelRequest, render_chat
from rewardsmith.plugins.model_scoring.local_rm import encode_chat
from rewardsmith.plugins.reward_step import current_step
from rewardsmith.plugins.scoring import INVALID, OK, ScoreOutcome


def bearer_headers(env_name: Any, key: str) -> dict[str, str]:
    """``Authorization: Bearer $env_name``, or nothing when ``env_name`` is None; the value never leaves here."""
    if not env_name:
        return {}
    value = os.environ.get(env_name)
    if not value:
        raise ConfigError(f"{key}={env_name}: the environment variable {env_name} is not set")
    return {"Authorization": f"Bearer {value}"}


def parse_rewards(protocol: str, answer: Any, n: int) -> list[float]:
    """The ``n`` rewards in a server's answer; raises ValueError when the answer does not hold them."""
    if protocol == "openrlhf":
        values = answer.get("rewards") if isinstance(answer, dict) else None
    else:
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise ValueError(f"answer has no 'data' list: {str(answer)[:200]}")
        values = [None] * len(data)
        for item in data:
            values[int(item.get("index", 0))] = (item.get("probs") or [None])[0]
    if not isinstance(values, list) or len(values) != n:
        raise ValueError(f"expected {n} rewards, got {str(values)[:200]}")
    out = []
    for v in values:
        if isinstance(v, list) and len(v) == 1:  # some servers answer one-element lists
            v = v[0]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"reward {v!r} is not a finite number")
        out.append(float(v))
    return out


class RemoteRewardModel:
    """Scores requests on the servers of ``reward_model.remote`` (a RemoteRewardModelConfig)."""

    def __init__(self, cfg: Any, key: str = "reward_model.remote") -> None:
        if not cfg.urls:
            raise ConfigError(f"{key}.urls is empty: give at least one reward-model server URL")
        if cfg.protocol == "vllm_classify" and not cfg.model:
            raise ConfigError(f"{key}.model must name the served model for protocol vllm_classify")
        if cfg.protocol != "vllm_classify" and cfg.use_activation is not None:
            raise ConfigError(f"{key}.use_activation is a field of vLLM's /classify: set {key}.protocol=vllm_classify or remove it")
        if cfg.max_length is not None and (cfg.protocol != "vllm_classify" or not cfg.tokenizer):
            raise ConfigError(f"{key}.max_length cuts the token ids sent to vLLM's /classify: it needs "
                              f"{key}.protocol=vllm_classify and {key}.tokenizer")
        self.cfg = cfg
        self.client = JsonClient(cfg.urls, cfg.timeout, cfg.max_retries, cfg.backoff, bearer_headers(cfg.token_env, f"{key}.token_env"))
        self.tokenizer = load_tokenizer_dir(cfg.tokenizer) if cfg.tokenizer else None
        self._pool = ThreadPoolExecutor(cfg.max_concurrent, thread_name_prefix="remote-rm")
        self._counts: Counter = Counter()
        self._counts_lock = threading.Lock()  # chunks are encoded in the pool's threads

    def _payload(self, requests: list[ModelRequest]) -> dict[str, Any]:
        rendered = [render_chat(self.tokenizer, r.prompt, r.response) for r in requests]
        if self.cfg.protocol == "openrlhf":
            return {"query": [f for _, f in rendered], "prompts": [p for p, _ in rendered],
                    "labels": [r.ground_truth for r in requests]}
        extra = {} if self.cfg.use_activation is None else {"use_activation": self.cfg.use_activation}
        if self.tokenizer is None:
            return {"model": self.cfg.model, "input": [f for _, f in rendered], **extra}
        # Token ids, not text: the server may load the tokenizer as another class
        # (AutoTokenizer picks the model's) and cut the same text differently.
        return {"model": self.cfg.model, "input": [self._token_ids(p, f) for p, f in rendered], **extra}

    def _token_ids(self, prefix: str, full: str) -> list[int]:
        if self.cfg.max_length is None:
            ids = self.tokenizer(full, add_special_tokens=False)["input_ids"]
        else:
            ids, cut_prompt, cut_response = encode_chat(self.tokenizer, prefix, full, self.cfg.max_length)
            with self._counts_lock:
                self._counts["truncated_prompt"] += cut_prompt > 0
                self._counts["truncated_response"] += cut_response > 0
        # vLLM refuses an empty input (and with it the whole request); the local model scores one pad token.
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        return ids or ([pad] if pad is not None else ids)

    def _score_chunk(self, requests: list[ModelRequest]) -> list[ScoreOutcome]:
        start = time.perf_counter()
        try:
            answer = self.client.post(self._payload(requests))
            values = parse_rewards(self.cfg.protocol, answer, len(requests))
        except RequestFailed as exc:
            seconds = time.perf_counter() - start
            return [ScoreOutcome(exc.status, error=f"remote reward model: {exc}", seconds=seconds) for _ in requests]
        except ValueError as exc:
            seconds = time.perf_counter() - start
            return [ScoreOutcome(INVALID, error=f"remote reward model: {exc}", seconds=seconds) for _ in requests]
        seconds = (time.perf_counter() - start) / len(requests)
        return [ScoreOutcome(OK, v, seconds=seconds) for v in values]

    def score(self, requests: list[ModelRequest]) -> list[ScoreOutcome]:
        size = self.cfg.batch_size
        chunks = [requests[s:s + size] for s in range(0, len(requests), size)]
        step = current_step()
        futures = [self._pool.submit(self._score_chunk, chunk) for chunk in chunks]
        out: list[ScoreOutcome] = []
        for chunk, future in zip(chunks, futures):
            try:
                part = future.result(timeout=step.remaining())
                step.record("remote_rm", sum(o.seconds for o in part))
            except FutureTimeout:
                # Over the step's budget: a queued request never starts; one in flight is never read.
                future.cancel()
                part = [step.over_budget() for _ in chunk]
            out += part
        return out

    def metrics(self) -> dict[str, float]:
        with self._counts_lock:
            counts, self._counts = self._counts, Counter()
        cuts = {k: float(counts[k]) for k in ("truncated_prompt", "truncated_response")} if self.cfg.max_length else {}
        return {"retries": float(self.client.take_retries()), **cuts}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
