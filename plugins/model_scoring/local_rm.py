"""A local reward model: a Hugging Face sequence classifier with one output.

The score of a sample is the classifier head's output at its last valid
token. The row's prompt messages and the decoded response are re-templated
with the reward model's own tokenizer; an input longer than ``max_length``
loses the start of its prompt first (counted), and only a response longer
than ``max_length`` on its own loses its end (counted too).
"""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from rewardsmith.common.errors import ConfigError
from rewardsmith.common.tokenizer_files import load_tokenizer_dir
from rewardsmith.plugins.model_scoring.interface import ModelRequest, render_chat
from rewardsmith.plugins.scoring import ERROR, OK, ScoreOutcome

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def check_sequence_classifier(path: str, key: str = "reward_model.model.path", trust_remote_code: bool = False) -> Any:
    """The transformers config at ``path``; raises :class:`ConfigError` naming ``key`` unless it is a
    one-output ``*ForSequenceClassification`` model."""
    from transformers import AutoConfig

    if not Path(path).expanduser().is_dir():
        raise ConfigError(f"{key}={path}: not a directory (a saved reward model, e.g. from `rewardsmith rm train`)")
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ConfigError(f"{key}={path}: cannot read a transformers config: {type(exc).__name__}: {exc}") from None
    architectures = list(getattr(config, "architectures", None) or [])
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        raise ConfigError(
            f"{key}={path} is not a sequence classifier (architectures: {', '.join(architectures) or 'none'}); "
            "a reward model is an AutoModelForSequenceClassification with num_labels=1 (see `rewardsmith rm train`)"
        )
    if config.num_labels != 1:
        raise ConfigError(f"{key}={path} has {config.num_labels} outputs; a reward model has exactly one (num_labels=1)")
    return config


def truncate_left(prefix_ids: list[int], response_ids: list[int], max_length: int) -> tuple[list[int], int, int]:
    """``(ids, prompt_tokens_cut, response_tokens_cut)`` of ``prefix + response`` cut to ``max_length``:
    the prompt loses its first tokens; the response loses its end only when it alone is too long."""
    overflow = len(prefix_ids) + len(response_ids) - max_length
    if overflow <= 0:
        return prefix_ids + response_ids, 0, 0
    if overflow <= len(prefix_ids):
        return prefix_ids[overflow:] + response_ids, overflow, 0
    return response_ids[:max_length], len(prefix_ids), len(response_ids) - max_length


def encode_chat(tokenizer: Any, prefix: str, full: str, max_length: int) -> tuple[list[int], int, int]:
    """``(ids, prompt_tokens_cut, response_tokens_cut)``: the token ids of ``full`` (whose first
    characters are ``prefix``, the prompt part) cut to ``max_length`` by :func:`truncate_left`."""
    full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    if full_ids[:len(prefix_ids)] != prefix_ids:  # the tokens merge across the boundary: cut at the common part
        n = 0
        while n < min(len(prefix_ids), len(full_ids)) and prefix_ids[n] == full_ids[n]:
            n += 1
        prefix_ids = full_ids[:n]
    return truncate_left(prefix_ids, full_ids[len(prefix_ids):], max_length)


def last_token_scores(token_scores: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``out[i] = token_scores[i, last_i]``, ``last_i`` the last position where ``attention_mask[i]`` is 1
    (right padding)."""
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device).expand_as(attention_mask)
    last = torch.where(attention_mask.bool(), positions, torch.full_like(positions, -1)).max(-1).values
    return token_scores[torch.arange(token_scores.shape[0], device=token_scores.device), last]


def pad_right(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` of ``sequences`` padded on the right to the longest
    (an empty sequence becomes one pad token, so it still gets a finite score)."""
    sequences = [s or [pad_id] for s in sequences]
    width = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for j, seq in enumerate(sequences):
        input_ids[j, :len(seq)] = torch.tensor(seq)
        attention_mask[j, :len(seq)] = 1
    return input_ids, attention_mask


def sequence_rewards(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B,) rewards of a sequence classifier: its ``score`` head on the backbone's last hidden
    state, taken at each row's last attended token (as TRL's ``get_reward``)."""
    backbone = getattr(model, model.base_model_prefix)
    hidden = backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return last_token_scores(model.score(hidden)[..., 0].float(), attention_mask)


def length_sorted_batches(lengths: list[int], micro_batch_size: int) -> list[list[int]]:
    """Indices grouped into micro-batches of similar length (longest first), so each pads little."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[s:s + micro_batch_size] for s in range(0, len(order), micro_batch_size)]


class LocalRewardModel:
    """Loads ``reward_model.model`` (a :class:`~rewardsmith.plugins.config.RewardModelPathConfig`) and
    scores requests in this process, without gradients."""

    def __init__(self, cfg: Any, key: str = "reward_model.model") -> None:
        from transformers import AutoModelForSequenceClassification

        if not cfg.path:
            raise ConfigError(f"{key}.path is not set: the local reward model needs a saved sequence classifier")
        check_sequence_classifier(cfg.path, f"{key}.path", cfg.trust_remote_code)
        if cfg.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"{key}.device=cuda but no CUDA device is available")
        self.device = torch.device("cuda" if cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available()) else "cpu")
        self.model = AutoModelForSequenceClassification.from_pretrained(
            cfg.path, num_labels=1, dtype=DTYPES[cfg.dtype], trust_remote_code=cfg.trust_remote_code).to(self.device).eval()
        if not isinstance(getattr(self.model, "score", None), torch.nn.Module) or getattr(self.model, self.model.base_model_prefix, None) is None:
            raise ConfigError(f"{key}.path={cfg.path}: {type(self.model).__name__} has no decoder backbone with a `score` head "
                              "(decoder-only sequence classifiers such as Qwen2/Llama/Mistral have one)")
        self.tokenizer = load_tokenizer_dir(cfg.tokenizer or cfg.path)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        if self.pad_id is None:
            raise ConfigError(f"{key}: the tokenizer at {cfg.tokenizer or cfg.path} has neither a pad nor an eos token")
        self.max_length = cfg.max_length
        self.micro_batch_size = cfg.micro_batch_size
        self._counts: Counter = Counter()

    # -- text to tokens ----------------------------------------------------------------
    def encode(self, prefix: str, full: str) -> tuple[list[int], bool]:
        """Token ids of ``full`` (whose first characters are ``prefix``, the prompt part) cut to
        max_length, and whether anything was cut."""
        ids, cut_prompt, cut_response = encode_chat(self.tokenizer, prefix, full, self.max_length)
        self._counts["truncated_prompt"] += cut_prompt > 0
        self._counts["truncated_response"] += cut_response > 0
        return ids, bool(cut_prompt or cut_response)

    # -- scoring -----------------------------------------------------------------------
    @torch.no_grad()
    def forward(self, sequences: list[list[int]]) -> list[float]:
        """The reward of each token sequence, in micro-batches of similar length."""
        out = [0.0] * len(sequences)
        for rows in length_sorted_batches([len(s) for s in sequences], self.micro_batch_size):
            input_ids, attention_mask = pad_right([sequences[i] for i in rows], self.pad_id)
            values = sequence_rewards(self.model, input_ids.to(self.device), attention_mask.to(self.device))
            for j, i in enumerate(rows):
                out[i] = float(values[j])
        return out

    def score_texts(self, prefixes: list[str], fulls: list[str]) -> list[float]:
        """Rewards of already templated texts (``prefixes[i]`` is the prompt part of ``fulls[i]``)."""
        return self.forward([self.encode(p, f)[0] for p, f in zip(prefixes, fulls)])

    def score(self, requests: list[ModelRequest]) -> list[ScoreOutcome]:
        """Re-template each request with this model's chat template and score the batch."""
        start = time.perf_counter()
        try:
            rendered = [render_chat(self.tokenizer, r.prompt, r.response) for r in requests]
            self._counts["missing_prompt"] += sum(r.prompt is None for r in requests)
            values = self.score_texts([p for p, _ in rendered], [f for _, f in rendered])
        except Exception as exc:  # noqa: BLE001 - a model failure costs this batch's samples, not the run
            seconds = time.perf_counter() - start
            return [ScoreOutcome(ERROR, error=f"local reward model: {type(exc).__name__}: {exc}", seconds=seconds) for _ in requests]
        seconds = (time.perf_counter() - start) / max(1, len(requests))
        return [ScoreOutcome(OK, v, seconds=seconds) for v in values]

    def metrics(self) -> dict[str, float]:
        counts, self._counts = self._counts, Counter()
        return {k: float(counts[k]) for k in ("truncated_prompt", "truncated_response", "missing_prompt")}

    def close(self) -> None:
        pass
