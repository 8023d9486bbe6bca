"""Supervised warm start: next-token loss on the response of ``(prompt, response)`` rows.

Rows use the dataset schema plus a response field (``sft.response_key``). The
input is the chat-templated prompt followed by the response and EOS; only
response tokens (and the EOS) are in the loss. The result is saved with
``save_pretrained`` (model and tokenizer), ready to be
``actor_rollout_ref.model.path`` of a training run.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Optional

import torch
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rewardsmith.core.data import messages_of, prompt_text, read_files
from rewardsmith.core.models import build_causal_lm, load_tokenizer, position_ids_from_mask
from rewardsmith.core.optim import lr_factor
from rewardsmith.core.trainer import output_dir, setup_torch


def encode_example(row: dict[str, Any], tokenizer: PreTrainedTokenizerBase, prompt_key: str, response_key: str) -> tuple[list[int], int]:
    """Token ids of prompt + response + EOS, and the prompt's length."""
    if response_key not in row or not isinstance(row[response_key], str):
        raise ValueError(f"{row.get('_where', 'row')}: missing string field {response_key!r} (sft.response_key)")
    prompt = tokenizer(prompt_text(tokenizer, messages_of(row, prompt_key)), add_special_tokens=False)["input_ids"]
    response = tokenizer(row[response_key], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return prompt + response, len(prompt)


def collate_sft(examples: list[tuple[list[int], int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (-100 outside the response)."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    labels = torch.full_like(input_ids, -100)
    for i, (ids, prompt_len) in enumerate(examples):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention_mask[i, : len(ids)] = 1
        labels[i, prompt_len : len(ids)] = torch.tensor(ids[prompt_len:])
    return input_ids, attention_mask, labels


def sft_loss(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the labelled tokens: ``-mean_t log p(x_t | x_<t)`` over labels != -100."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids_from_mask(attention_mask),
                   use_cache=False).logits
    return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), labels[:, 1:].flatten(), ignore_index=-100)


def run_sft(config: Any, stream=None) -> Path:
    """Fine-tune ``actor_rollout_ref.model`` on ``sft.train_files``; returns the saved model directory."""
    s, model_cfg = config.sft, config.actor_rollout_ref.model
    device = setup_torch(config.trainer)
    tokenizer_path = config.data.tokenizer or model_cfg.path
    if not tokenizer_path:
        raise ValueError("set data.tokenizer (a tokenizer directory) when actor_rollout_ref.model.path is null")
    tokenizer = load_tokenizer(tokenizer_path)
    model = build_causal_lm(model_cfg, tokenizer).to(device)
    examples = [encode_example(r, tokenizer, config.data.prompt_key, s.response_key) for r in read_files(s.train_files, "sft.train_files")]
    steps_per_epoch = max(1, len(examples) // s.batch_size)
    total = steps_per_epoch * s.total_epochs
    warmup = int(s.lr_warmup_steps_ratio * total)
    optimizer = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, warmup, total, "cosine", 0.0))
    rng = random.Random(config.trainer.seed)
    loss_value: Optional[float] = None
    with tqdm(total=total, desc="sft", disable=not config.trainer.progress_bar, file=stream, dynamic_ncols=True) as bar:
        for _epoch in range(s.total_epochs):
            order = list(range(len(examples)))
            rng.shuffle(order)
            for step in range(steps_per_epoch):
                chunk = [examples[i] for i in order[step * s.batch_size : (step + 1) * s.batch_size]]
                input_ids, attention_mask, labels = (x.to(device) for x in collate_sft(chunk, tokenizer.pad_token_id))
                loss = sft_loss(model, input_ids, attention_mask, labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                loss_value = loss.item()
                bar.update(1)
                bar.set_postfix(loss=f"{loss_value:.4f}")
    save_dir = Path(s.save_dir or output_dir(config) / "sft_model")
    model.save_pretrained(save_dir)
    tokenizer.save_pretrained(save_dir)
    tqdm.write(f"sft: {total} steps, final loss {loss_value:.4f}; model saved to {save_dir}", file=stream)
    return save_dir
