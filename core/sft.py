"""Supervised warm start: next-token loss on the response of ``(prompt, response)`` rows.

Rows use the dataset schema plus a response field (``sft.response_key``). The
input is the chat-templated prompt followed by the response and EOS; only
response tokens (and the EOS) are in the loss. A response may also be a
multi-turn transcript (a list of assistant, tool and user messages, e.g. tool
calls and their results), tokenized as the multi-turn rollout tokenizes an
episode, with only the assistant turns in the loss. The result is saved with
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

from rewardsmith.core.chat_tokens import ChatTokens
from rewardsmith.core.data import messages_of, prompt_text, read_files
from rewardsmith.core.models import build_causal_lm, load_tokenizer, position_ids_from_mask
from rewardsmith.core.optim import lr_factor
from rewardsmith.core.trainer import output_dir, setup_torch


def encode_example(row: dict[str, Any], tokenizer: PreTrainedTokenizerBase, prompt_key: str, response_key: str) -> tuple[list[int], list[int]]:
    """Token ids of prompt + response, and which of them are in the loss (1).

    A string response is one assistant turn: it and EOS are in the loss. A list
    of messages is a multi-turn transcript after the prompt (``assistant`` turns,
    ``tool`` responses, ``user`` turns), tokenized turn by turn exactly as the
    multi-turn rollout builds an episode (:func:`transcript_ids`): only the
    assistant turns and their EOS are in the loss.
    """
    where = row.get("_where", "row")
    response = row.get(response_key)
    messages = messages_of(row, prompt_key)
    if isinstance(response, str):
        prompt = tokenizer(prompt_text(tokenizer, messages), add_special_tokens=False)["input_ids"]
        completion = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        return prompt + completion, [0] * len(prompt) + [1] * len(completion)
    if isinstance(response, list) and response:
        chat = ChatTokens(tokenizer, row.get("tools"), [tokenizer.eos_token_id])
        return transcript_ids(chat, messages, response, f"{where}: field {response_key!r}")
    raise ValueError(f"{where}: field {response_key!r} (sft.response_key) must be a string or a non-empty list of "
                     "messages (assistant, tool and user turns)")


def transcript_ids(chat: ChatTokens, prompt: list[dict], turns: list[dict], where: str) -> tuple[list[int], list[int]]:
    """Ids of ``prompt`` then ``turns`` as the multi-turn rollout builds them, and the loss mask (assistant turns).

    The prompt is rendered with the generation prompt; each assistant turn is its
    text and EOS, as the model generates it; each run of tool responses, or a
    user turn, is rendered on its own (with the template's end-of-turn
    separator before it and the next generation prompt after it), as in
    :class:`~rewardsmith.core.multi_turn.MultiTurnRollout`.
    """
    tokenizer = chat.tokenizer
    ids = chat.render(prompt, add_generation_prompt=True)
    mask = [0] * len(ids)
    i = 0
    while i < len(turns):
        message = turns[i]
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("assistant", "tool", "user") or not isinstance(message.get("content"), str):
            raise ValueError(f"{where}[{i}]: each turn is {{role: assistant|tool|user, content: str}}, got {message!r}")
        if role == "assistant":
            piece = tokenizer(message["content"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            ids += piece
            mask += [1] * len(piece)
            i += 1
            continue
        # One environment turn: all consecutive tool responses (one tool round), or one user turn.
        end = i + 1
        while role == "tool" and end < len(turns) and isinstance(turns[end], dict) and turns[end].get("role") == "tool":
            end += 1
        piece = chat.separator + chat.context([dict(m) for m in turns[i:end]])
        ids += piece
        mask += [0] * len(piece)
        i = end
    if turns[-1].get("role") != "assistant":
        raise ValueError(f"{where}: the transcript must end with an assistant turn (the last is {turns[-1].get('role')!r})")
    return ids, mask


def collate_sft(examples: list[tuple[list[int], list[int]]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (-100 outside the loss mask)."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    labels = torch.full_like(input_ids, -100)
    for i, (ids, loss_mask) in enumerate(examples):
        row = torch.tensor(ids)
        input_ids[i, : len(ids)] = row
        attention_mask[i, : len(ids)] = 1
        labels[i, : len(ids)] = torch.where(torch.tensor(loss_mask, dtype=torch.bool), row, -100)
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
