"""Training a reward model on preference pairs with the Bradley–Terry loss (``rewardsmith rm train``).

Rows hold ``prompt`` (chat messages or a string), ``chosen`` and ``rejected``
(response strings) and optionally ``margin``. Each pair is templated with the
reward model's own tokenizer exactly as the local reward model scores it
(:func:`rewardsmith.plugins.model_scoring.interface.render_chat`), so a saved
model loads by path into ``reward_model.model.path`` and scores what it learned.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Optional

import torch
import torch.nn.functional as F
from tqdm import tqdm

from rewardsmith.common.rows import read_rows
from rewardsmith.core.models import DTYPES, _config_from_mapping, load_tokenizer, load_with_new_head
from rewardsmith.core.reward_model_config import Files, RMDataConfig, RMModelConfig, RMTrainConfig
from rewardsmith.plugins.model_scoring.interface import render_chat
from rewardsmith.plugins.model_scoring.local_rm import pad_right, sequence_rewards, truncate_left

def bradley_terry_loss(chosen: torch.Tensor, rejected: torch.Tensor, margin: Optional[torch.Tensor] = None,
                       center_coefficient: Optional[float] = None) -> torch.Tensor:
    """TRL's reward-model loss.

    ``L = -mean(log sigmoid(r_c - r_r - m)) + c * mean((r_c + r_r)^2)``, with
    margin ``m`` (0 when None) and centring coefficient ``c`` (0 when None).
    """
    diff = chosen - rejected
    if margin is not None:
        diff = diff - margin
    loss = -F.logsigmoid(diff).mean()
    if center_coefficient:
        loss = loss + center_coefficient * torch.mean((chosen + rejected) ** 2)
    return loss


def _response_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[-1], dict) and "content" in value[-1]:
        return str(value[-1]["content"])  # TRL's conversational format: the last (assistant) turn
    raise ValueError(f"{where}: expected a response string (or a list of messages ending with the response), got {value!r:.100}")


class PairEncoder:
    """Tokenizes preference rows as the local reward model would see them."""

    def __init__(self, tokenizer: Any, data: RMDataConfig) -> None:
        self.tokenizer, self.data = tokenizer, data

    def encode(self, prompt: Any, response: str) -> list[int]:
        prefix, full = render_chat(self.tokenizer, prompt or None, response)
        tok = self.tokenizer
        full_ids = tok(full, add_special_tokens=False)["input_ids"]
        prefix_ids = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
        if full_ids[:len(prefix_ids)] != prefix_ids:
            prefix_ids = []
        return truncate_left(prefix_ids, full_ids[len(prefix_ids):], self.data.max_length)[0]

    def pairs(self, rows: list[dict], source: str) -> list[tuple[list[int], list[int], float]]:
        d = self.data
        out = []
        for i, row in enumerate(rows):
            where = f"{source} row {i}"
            for key in (d.chosen_key, d.rejected_key):
                if key not in row:
                    raise ValueError(f"{where}: missing field {key!r}")
            prompt = row.get(d.prompt_key)
            margin = float(row[d.margin_key]) if row.get(d.margin_key) is not None else 0.0
            out.append((self.encode(prompt, _response_text(row[d.chosen_key], where)),
                        self.encode(prompt, _response_text(row[d.rejected_key], where)), margin))
        return out


def _read(files: Files, what: str) -> list[dict]:
    paths = [files] if isinstance(files, str) else list(files)
    rows: list[dict] = []
    for path in paths:
        rows += [dict(r) for r in read_rows(path)]
    if paths and not rows:
        raise ValueError(f"{what}: no rows")
    return rows


def build_reward_model(cfg: RMModelConfig, tokenizer: Any) -> Any:
    """A one-output sequence classifier from a checkpoint (new score head) or a config mapping."""
    from transformers import AutoModelForSequenceClassification

    dtype = DTYPES[cfg.dtype]
    if cfg.path:
        model = load_with_new_head(AutoModelForSequenceClassification, cfg.path, "rm train", "score head",
                                   num_labels=1, dtype=dtype)
    elif cfg.config:
        if "model_type" not in cfg.config:
            raise ValueError("model.config must name a model_type (e.g. qwen2)")
        model = AutoModelForSequenceClassification.from_config(_config_from_mapping(cfg.config, tokenizer, num_labels=1), dtype=dtype)
    else:
        raise ValueError("set model.path (a causal LM checkpoint) or model.config (a mapping with model_type)")
    model.config.pad_token_id = tokenizer.pad_token_id
    return model


@torch.no_grad()
def pairwise_accuracy(model: Any, pairs: list[tuple[list[int], list[int], float]], pad_id: int,
                      device: torch.device, batch_size: int) -> float:
    """Share of pairs whose chosen response gets the higher reward."""
    model.eval()
    right = 0
    for s in range(0, len(pairs), batch_size):
        chunk = pairs[s:s + batch_size]
        ids, mask = pad_right([c for c, _, _ in chunk] + [r for _, r, _ in chunk], pad_id)
        rewards = sequence_rewards(model, ids.to(device), mask.to(device))
        right += int((rewards[:len(chunk)] > rewards[len(chunk):]).sum())
    return right / max(1, len(pairs))


def train_reward_model(cfg: RMTrainConfig, stream: Any = None) -> dict[str, float]:
    """Train, report held-out pairwise accuracy after each epoch, save; returns the final metrics."""
    if not cfg.save_dir:
        raise ValueError("save_dir is not set: where should the reward model be saved?")
    torch.manual_seed(cfg.seed)
    if cfg.cpu_threads:
        torch.set_num_threads(cfg.cpu_threads)
    device = torch.device("cuda" if cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available()) else "cpu")
    tokenizer_path = cfg.model.tokenizer or cfg.model.path
    if not tokenizer_path:
        raise ValueError("set model.tokenizer (a tokenizer directory) when model.path is null")
    tokenizer = load_tokenizer(tokenizer_path)
    encoder = PairEncoder(tokenizer, cfg.data)
    train_rows = _read(cfg.data.train_files, "data.train_files")
    if not train_rows:
        raise ValueError("data.train_files is empty: give at least one jsonl or parquet file of preference pairs")
    if cfg.data.val_files:
        val_rows = _read(cfg.data.val_files, "data.val_files")
    else:
        random.Random(cfg.seed).shuffle(train_rows)
        n_val = int(len(train_rows) * cfg.data.val_ratio)
        val_rows, train_rows = train_rows[:n_val], train_rows[n_val:]
    train = encoder.pairs(train_rows, "data.train_files")
    val = encoder.pairs(val_rows, "held-out split")
    model = build_reward_model(cfg.model, tokenizer).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    pad_id = tokenizer.pad_token_id
    order_rng = random.Random(cfg.seed)
    steps = cfg.epochs * ((len(train) + cfg.batch_size - 1) // cfg.batch_size)
    metrics: dict[str, float] = {}
    with tqdm(total=steps, desc="rm train", disable=not cfg.progress_bar, file=stream, dynamic_ncols=True) as bar:
        for epoch in range(cfg.epochs):
            order = list(range(len(train)))
            order_rng.shuffle(order)
            for s in range(0, len(order), cfg.batch_size):
                chunk = [train[i] for i in order[s:s + cfg.batch_size]]
                model.train()
                ids, mask = pad_right([c for c, _, _ in chunk] + [r for _, r, _ in chunk], pad_id)
                rewards = sequence_rewards(model, ids.to(device), mask.to(device))
                margin = torch.tensor([m for _, _, m in chunk], device=device)
                loss = bradley_terry_loss(rewards[:len(chunk)], rewards[len(chunk):], margin, cfg.center_rewards_coefficient)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                optimizer.step()
                metrics["train/loss"] = loss.item()
                metrics["train/accuracy"] = (rewards[:len(chunk)] > rewards[len(chunk):]).float().mean().item()
                bar.update(1)
                bar.set_postfix(loss=f"{metrics['train/loss']:.3f}")
            if val:
                metrics["val/accuracy"] = pairwise_accuracy(model, val, pad_id, device, cfg.batch_size)
                tqdm.write(f"epoch {epoch + 1}: held-out pairwise accuracy {metrics['val/accuracy']:.3f} ({len(val)} pairs)", file=stream)
    metrics["val/pairs"] = float(len(val))
    save = Path(cfg.save_dir)
    model.save_pretrained(save)
    tokenizer.save_pretrained(save)
    return metrics
