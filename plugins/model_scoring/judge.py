"""An LLM judge: an OpenAI-compatible chat endpoint scores each response from a prompt template.

The template's fields are ``{prompt}``, ``{response}``, ``{ground_truth}``,
``{data_source}`` and ``{extra_info.KEY}``; ``{{``/``}}`` are literal braces.
The verdict is parsed from the answer's text (a ``Score:`` line, a yes/no, or
a regex) and optionally mapped from ``scale`` onto [0, 1]. Identical requests
are answered once: in flight within a batch, and from a cache across batches.
The judge's text is kept in the sample's extra info (``judge_text``), and
whether the cache (or an identical request of the batch) answered (``judge_cached``).
"""
from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Callable, Optional

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.model_scoring.http_client import JsonClient, RequestFailed
from rewardsmith.plugins.model_scoring.interface import ModelRequest, plain_prompt
from rewardsmith.plugins.model_scoring.judge_cache import JudgeCache, request_key
from rewardsmith.plugins.model_scoring.rate_limit import RateLimiter
from rewardsmith.plugins.model_scoring.remote_rm import bearer_headers
from rewardsmith.plugins.reward_step import current_step
from rewardsmith.plugins.scoring import INVALID, OK, ScoreOutcome

FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
SCORE_LINE = re.compile(rf"score\s*[:=]\s*\**\s*({NUMBER})", re.IGNORECASE)
YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
BASIC_FIELDS = ("prompt", "response", "ground_truth", "data_source")


def template_fields(template: str, key: str = "reward_model.judge.template") -> list[str]:
    """The fields ``template`` names; raises :class:`ConfigError` on an unknown or malformed one."""
    fields = []
    for match in FIELD.finditer(template):
        name = match.group(1)
        if name is None:
            continue
        if name in BASIC_FIELDS or (name.startswith("extra_info.") and len(name) > len("extra_info.")):
            fields.append(name)
        else:
            raise ConfigError(f"{key} names an unknown field {{{name}}}; known: "
                              f"{', '.join('{' + f + '}' for f in BASIC_FIELDS)}, {{extra_info.KEY}} (write {{{{ }}}} for literal braces)")
    return fields


def render_template(template: str, request: ModelRequest) -> str:
    """``template`` with its fields filled from ``request``; raises KeyError naming a missing extra_info key."""
    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]
        if name == "prompt":
            return plain_prompt(request.prompt) if request.prompt is not None else ""
        if name == "response":
            return request.response
        if name == "data_source":
            return request.data_source
        if name == "ground_truth":
            return "" if request.ground_truth is None else str(request.ground_truth)
        extra_key = name[len("extra_info."):]
        if not isinstance(request.extra_info, dict) or extra_key not in request.extra_info:
            raise KeyError(f"the judge template names {{{name}}} but the row's extra_info has no {extra_key!r}")
        return str(request.extra_info[extra_key])
    return FIELD.sub(fill, template)


def make_parser(kind: str, regex: Optional[str] = None, scale: Optional[list[float]] = None) -> Callable[[str], Optional[float]]:
    """A function from the judge's text to its verdict (None when it cannot be read).

    ``score_line``: the number on the last ``Score: N`` line; ``yes_no``: 1 for a
    leading yes, 0 for a leading no; ``regex``: the first group of ``regex``'s
    last match. With ``scale = [lo, hi]`` the number ``x`` becomes ``(x - lo) / (hi - lo)``.
    """
    pattern = re.compile(regex, re.IGNORECASE | re.MULTILINE) if kind == "regex" else None

    def parse(text: str) -> Optional[float]:
        if kind == "yes_no":
            match = YES_NO.match(text)
            value = None if match is None else float(match.group(1).lower() == "yes")
        else:
            matches = list((pattern or SCORE_LINE).finditer(text))
            try:
                value = float(matches[-1].group(1)) if matches else None
            except (ValueError, IndexError):
                value = None
        if value is None or scale is None:
            return value
        return (value - scale[0]) / (scale[1] - scale[0])
    return parse


class LLMJudge:
    """Asks ``reward_model.judge`` (a JudgeConfig) for a verdict on each request."""

    def __init__(self, cfg: Any, key: str = "reward_model.judge") -> None:
        if not cfg.base_url or not cfg.model:
            raise ConfigError(f"{key}.base_url and {key}.model must both be set for the LLM judge")
        self.fields = template_fields(cfg.template, f"{key}.template")
        self.cfg = cfg
        self.client = JsonClient([cfg.base_url], cfg.timeout, cfg.max_retries, cfg.backoff,
                                 bearer_headers(cfg.api_key_env, f"{key}.api_key_env"))
        self.parse = make_parser(cfg.parser, cfg.regex, cfg.scale)
        self.cache = JudgeCache(cfg.cache_size)
        self.limiter = RateLimiter(cfg.rpm)
        self._pool = ThreadPoolExecutor(cfg.max_concurrent, thread_name_prefix="judge")
        self._requests = 0
        self._lock = threading.Lock()

    def check(self, request: ModelRequest, where: str) -> None:
        """Raise ValueError naming ``where`` (the row) if the template needs a field this row lacks."""
        try:
            render_template(self.cfg.template, request)
        except KeyError as exc:
            raise ValueError(f"{where}: {exc.args[0]} (reward_model.judge.template)") from None

    def payload(self, request: ModelRequest) -> dict[str, Any]:
        """The chat-completions body for ``request``: ``extra_body``'s fields plus the judge's own."""
        messages = [{"role": "system", "content": self.cfg.system_prompt}] if self.cfg.system_prompt else []
        messages.append({"role": "user", "content": render_template(self.cfg.template, request)})
        return {**self.cfg.extra_body, "model": self.cfg.model, "messages": messages, "temperature": self.cfg.temperature,
                "max_tokens": self.cfg.max_tokens}

    def _ask(self, payload: dict[str, Any]) -> str:
        self.limiter.wait()
        with self._lock:
            self._requests += 1
        answer = self.client.post(payload, "/chat/completions")
        try:
            return str(answer["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            raise RequestFailed(INVALID, f"answer has no choices[0].message.content: {str(answer)[:200]}") from None

    def _timed_ask(self, payload: dict[str, Any]) -> tuple[str, float]:
        start = time.perf_counter()
        return self._ask(payload), time.perf_counter() - start

    def _outcome(self, text: str, seconds: float) -> ScoreOutcome:
        value = self.parse(text)
        if value is None:
            return ScoreOutcome(INVALID, extras={"judge_text": text}, error=f"judge verdict not parsed ({self.cfg.parser}): {text[-200:]!r}", seconds=seconds)
        return ScoreOutcome(OK, value, extras={"judge_text": text}, seconds=seconds)

    def score(self, requests: list[ModelRequest]) -> list[ScoreOutcome]:
        start = time.perf_counter()
        payloads = []
        for r in requests:
            try:
                payloads.append(self.payload(r))
            except KeyError as exc:
                payloads.append(exc)
        keys = [request_key(p) if isinstance(p, dict) else None for p in payloads]
        texts: dict[str, Any] = {}
        to_ask: dict[str, dict] = {}
        cached = [False] * len(payloads)  # answered without a request of its own (the sample's receipt says so)
        for n, (key, p) in enumerate(zip(keys, payloads)):
            if key is None:
                continue
            if key in texts or key in to_ask:  # asked once, answered for every copy
                self.cache.record_hit()
                cached[n] = True
                continue
            answer = self.cache.get(key)
            if answer is not None:
                texts[key] = answer
                cached[n] = True
            else:
                to_ask[key] = p  # type: ignore[assignment]
        step = current_step()
        futures = {key: self._pool.submit(self._timed_ask, p) for key, p in to_ask.items()}
        late = set()
        for key, future in futures.items():
            try:
                texts[key], took = future.result(timeout=step.remaining())
                step.record("judge", took)
                self.cache.put(key, texts[key])
            except FutureTimeout:
                # Over the step's budget: a queued request never starts; one in flight ends
                # at the client's own timeout and its answer is never read.
                future.cancel()
                late.add(key)
            except RequestFailed as exc:
                texts[key] = exc
        seconds = time.perf_counter() - start
        out = []
        for key, p, hit in zip(keys, payloads, cached):
            if key is None:
                out.append(ScoreOutcome(INVALID, error=f"judge: {p.args[0]}", seconds=0.0))
            elif key in late:
                out.append(step.over_budget())
            elif isinstance(texts[key], RequestFailed):
                out.append(ScoreOutcome(texts[key].status, error=f"judge: {texts[key]}", seconds=seconds))
            else:
                outcome = self._outcome(texts[key], seconds)
                outcome.extras["judge_cached"] = hit
                out.append(outcome)
        return out

    def metrics(self) -> dict[str, float]:
        hits, misses = self.cache.take_counts()
        with self._lock:
            sent, self._requests = self._requests, 0
        out = {"requests": float(sent), "retries": float(self.client.take_retries())}
        if hits + misses:
            out["cache_hit_rate"] = hits / (hits + misses)
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
