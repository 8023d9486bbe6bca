"""Prompt datasets in verl's row schema and a resumable, seeded batch loader.

A row holds ``data_source`` (or whatever ``data.reward_fn_key`` names),
``prompt`` (chat messages, or a string sent as one user turn),
``reward_model.{style, ground_truth}`` and optionally ``ability`` and
``extra_info``. Prompts go through the tokenizer's chat template with the
generation prompt appended.
"""
from __future__ import annotations

import random
from typing import Any, Iterator, Sequence

import torch
from transformers import PreTrainedTokenizerBase

from rewardsmith.core.batch import Batch
from rewardsmith.common.rows import read_rows


def as_file_list(files: str | Sequence[str]) -> list[str]:
    return [files] if isinstance(files, str) else list(files)


def read_files(files: str | Sequence[str], what: str) -> list[dict[str, Any]]:
    """All rows of ``files`` (jsonl or parquet); ``what`` names the config key in errors."""
    paths = as_file_list(files)
    if not paths:
        raise ValueError(f"{what} is empty: give at least one jsonl or parquet file")
    rows: list[dict[str, Any]] = []
    for path in paths:
        for i, row in enumerate(read_rows(path)):
            row = dict(row)
            row["_where"] = f"{path} row {i}"
            rows.append(row)
    return rows


def messages_of(row: dict[str, Any], prompt_key: str) -> list[dict[str, str]]:
    """The row's prompt as chat messages (a plain string becomes one user turn)."""
    if prompt_key not in row:
        raise ValueError(f"{row.get('_where', 'row')}: missing prompt field {prompt_key!r}")
    prompt = row[prompt_key]
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if isinstance(prompt, (list, tuple)) and all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt):
        return [{"role": m["role"], "content": m["content"]} for m in prompt]
    raise ValueError(f"{row.get('_where', 'row')}: field {prompt_key!r} must be a string or a list of {{role, content}} messages")


def prompt_text(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


class PromptDataset:
    """Tokenized prompts plus what the reward managers need per row."""

    def __init__(self, rows: list[dict[str, Any]], tokenizer: PreTrainedTokenizerBase, data_cfg: Any) -> None:
        self.tokenizer = tokenizer
        self.rows: list[dict[str, Any]] = []
        self.token_ids: list[list[int]] = []
        limit = data_cfg.max_prompt_length
        for row in rows:
            where = row.get("_where", "row")
            if data_cfg.reward_fn_key not in row:
                raise ValueError(f"{where}: missing field {data_cfg.reward_fn_key!r} (data.reward_fn_key)")
            reward = row.get("reward_model")
            if not isinstance(reward, dict) or "ground_truth" not in reward:
                raise ValueError(f"{where}: missing reward_model.ground_truth")
            ids = tokenizer(prompt_text(tokenizer, messages_of(row, data_cfg.prompt_key)), add_special_tokens=False)["input_ids"]
            if len(ids) > limit:
                if data_cfg.filter_overlong_prompts:
                    continue
                if data_cfg.truncation == "error":
                    raise ValueError(
                        f"{where}: prompt has {len(ids)} tokens > data.max_prompt_length={limit} "
                        "(set data.truncation=left|right or data.filter_overlong_prompts=true)"
                    )
                ids = ids[-limit:] if data_cfg.truncation == "left" else ids[:limit]
            self.rows.append(row)
            self.token_ids.append(ids)
        if not self.rows:
            raise ValueError("no rows left after filtering prompts longer than data.max_prompt_length")
        self.reward_fn_key = data_cfg.reward_fn_key
        self.prompt_key = data_cfg.prompt_key

    def __len__(self) -> int:
        return len(self.rows)

    def data_sources(self) -> list[str]:
        return sorted({str(r[self.reward_fn_key]) for r in self.rows})

    def reward_rows(self) -> Batch:
        """Every row's reward fields (meta only, as :meth:`collate` gives them), for start-up checks."""
        return Batch(meta=self.collate(range(len(self))).meta)

    def collate(self, indices: Sequence[int], uid_prefix: str = "") -> Batch:
        """Left-padded prompts of ``indices`` with their reward fields as meta."""
        seqs = [self.token_ids[i] for i in indices]
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        attention_mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for j, s in enumerate(seqs):
            input_ids[j, width - len(s):] = torch.tensor(s, dtype=torch.long)
            attention_mask[j, width - len(s):] = 1
        rows = [self.rows[i] for i in indices]
        meta = {
            "data_source": [str(r[self.reward_fn_key]) for r in rows],
            "ground_truth": [r["reward_model"]["ground_truth"] for r in rows],
            "style": [r["reward_model"].get("style", "rule") for r in rows],
            "extra_info": [r.get("extra_info") for r in rows],
            # The chat messages themselves: a reward model or judge re-templates them its own way.
            "raw_prompt": [messages_of(r, self.prompt_key) for r in rows],
            "uid": [f"{uid_prefix}{i}" for i in indices],
        }
        return Batch({"input_ids": input_ids, "attention_mask": attention_mask}, meta)


class PromptLoader:
    """Batches of ``batch_size`` prompts, reshuffled each epoch from ``seed + epoch``; the last
    incomplete batch of an epoch is dropped. ``state_dict`` captures the position for resuming."""

    def __init__(self, dataset: PromptDataset, batch_size: int, shuffle: bool, seed: int) -> None:
        if len(dataset) < batch_size:
            raise ValueError(f"data.train_batch_size={batch_size} is larger than the training set ({len(dataset)} rows)")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.position = 0

    @property
    def batches_per_epoch(self) -> int:
        return len(self.dataset) // self.batch_size

    def _order(self, epoch: int) -> list[int]:
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed * 100003 + epoch).shuffle(order)
        return order

    def __iter__(self) -> Iterator[Batch]:
        while True:
            if self.position >= self.batches_per_epoch:
                self.epoch += 1
                self.position = 0
            start = self.position * self.batch_size
            indices = self._order(self.epoch)[start : start + self.batch_size]
            self.position += 1
            yield self.dataset.collate(indices, uid_prefix=f"e{self.epoch}-")

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
