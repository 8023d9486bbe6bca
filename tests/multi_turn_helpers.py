"""A tool-aware chat tokenizer and a scripted rollout engine for the multi-turn tests."""
from __future__ import annotations

from typing import Callable, Iterable, Optional

import torch

from rewardsmith.core.batch import Batch
from rewardsmith.core.rollout import SamplingParams, response_mask_from_eos
from rewardsmith.demo.char_tokenizer import build_char_tokenizer

TOOL = "<|tool|>"

# The demo's turn format plus the tool role and the tools' names in a system turn (as chat templates
# with tool support show the schemas); every piece is rendered the same alone as in a whole conversation.
TOOL_TEMPLATE = (
    "{% if tools %}{{ '<|system|>tools:' }}{% for t in tools %}{{ ' ' + t['function']['name'] }}{% endfor %}"
    "{{ '<|end|>' }}{% endif %}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def tool_tokenizer(template: str = TOOL_TEMPLATE):
    """The demo's character tokenizer with a ``<|tool|>`` special token and a template that renders tools."""
    tok = build_char_tokenizer()
    tok.add_tokens([TOOL], special_tokens=True)
    tok.chat_template = template
    return tok


class ScriptedEngine:
    """A :class:`~rewardsmith.core.rollout.RolloutEngine` whose turns are ``script(conversation text)``:
    deterministic text where a random model could not write a tool call. Records each call's prompts."""

    def __init__(self, tokenizer, script: Callable[[str], str], log_prob: Optional[float] = None) -> None:
        self.tokenizer = tokenizer
        self.script = script
        self.log_prob = log_prob  # when set, returned as every sampled token's rollout_log_probs (as the vllm engine's)
        self.calls: list[list[str]] = []

    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        tok = self.tokenizer
        texts = [tok.decode(ids[mask.bool()].tolist()) for ids, mask in zip(prompts["input_ids"], prompts["attention_mask"])]
        self.calls.append(texts)
        rows = []
        for text in texts:
            for _ in range(params.n):
                ids = tok(self.script(text), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
                rows.append(ids[: params.max_new_tokens])
        responses = torch.full((len(rows), params.max_new_tokens), tok.pad_token_id, dtype=torch.long)
        for i, ids in enumerate(rows):
            responses[i, : len(ids)] = torch.tensor(ids)
        mask = response_mask_from_eos(responses, [tok.eos_token_id])
        responses = torch.where(mask.bool(), responses, torch.full_like(responses, tok.pad_token_id))
        prompt_ids = prompts["input_ids"].repeat_interleave(params.n, 0)
        prompt_mask = prompts["attention_mask"].repeat_interleave(params.n, 0)
        out = Batch({"prompts": prompt_ids, "responses": responses, "response_mask": mask,
                     "input_ids": torch.cat([prompt_ids, responses], 1),
                     "attention_mask": torch.cat([prompt_mask, mask], 1)},
                    {k: [v for v in items for _ in range(params.n)] for k, items in prompts.meta.items()})
        if self.log_prob is not None:
            out["rollout_log_probs"] = mask * self.log_prob
        return out

    def update_weights(self, weights: Iterable) -> None:
        pass

    def sleep(self) -> None:
        pass

    def wake(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


def calculator_script(expression: str, answer_prefix: str = "answer ") -> Callable[[str], str]:
    """First turn: call the calculator on ``expression``; after a tool response: answer with its last line."""
    def script(conversation: str) -> str:
        if TOOL not in conversation:
            return '<tool_call>{"name": "calculator", "arguments": {"expression": "%s"}}</tool_call>' % expression
        result = conversation.rsplit(TOOL, 1)[1].split("<|end|>")[0]
        return answer_prefix + result
    return script


# Qwen2.5's chat template (ChatML with tools): an assistant turn ends "<|im_end|>\n", the model stops at
# "<|im_end|>", and consecutive tool responses share one user turn.
QWEN25_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


def chatml_tokenizer():
    """The demo's character tokenizer with ChatML's special tokens, ``<|im_end|>`` as EOS, and Qwen2.5's template."""
    tok = build_char_tokenizer()
    tok.add_tokens(["<|im_start|>", "<|im_end|>"], special_tokens=True)
    tok.eos_token = "<|im_end|>"
    tok.chat_template = QWEN25_TEMPLATE
    return tok


def arithmetic_script(conversation: str) -> str:
    """First turn: call the calculator on the last question's ``what is X?``; after a tool response: answer with it."""
    if TOOL not in conversation:
        expression = conversation.rsplit("what is ", 1)[1].split("?", 1)[0]
        return '<tool_call>{"name": "calculator", "arguments": {"expression": "%s"}}</tool_call>' % expression
    return "answer " + conversation.rsplit(TOOL, 1)[1].split("<|end|>")[0]


def tool_calling_model(tokenizer, episodes, steps: int = 150):
    """A tiny Qwen2 taught, by supervised steps on ``episodes`` (a multi-turn batch), to write their generated
    tokens: a real model that calls tools, where a random one never would. Head size 32 (vLLM's CPU minimum)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from rewardsmith.core.sft import sft_loss

    torch.manual_seed(0)
    config = AutoConfig.for_model("qwen2", vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                  num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                  max_position_embeddings=512, tie_word_embeddings=True,
                                  eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    width = episodes["responses"].shape[1]
    labels = torch.full_like(episodes["input_ids"], -100)
    labels[:, -width:] = torch.where(episodes["response_mask"].bool(), episodes["responses"], -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        loss = sft_loss(model, episodes["input_ids"], episodes["attention_mask"], labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model.eval()
