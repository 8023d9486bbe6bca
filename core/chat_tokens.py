"""A conversation's pieces as token ids, rendered with the tokenizer's chat template.

The multi-turn rollout (:mod:`rewardsmith.core.multi_turn`) builds an
episode's tokens turn by turn: the prompt, the model's turns as generated,
and each round of tool responses or user turn rendered on its own after a
stand-in conversation (as verl's Continuous Token builder does), so that its
tokens do not depend on how the template would re-render the model's own
turns.
"""
from __future__ import annotations

import difflib
from typing import Any, Optional, Sequence

from transformers import PreTrainedTokenizerBase

# The stand-in conversation a tool group is rendered after (verl's Continuous Token builder does the same),
# so a group's tokens do not depend on how the template would re-render the model's own turns.
_SYNTHETIC_PREFIX = [{"role": "system", "content": "synthetic system"}, {"role": "user", "content": "synthetic user"}]


class ChatTokens:
    """Token ids of a conversation's pieces, rendered with the tokenizer's chat template (and the tools' schemas)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, tool_schemas: Optional[list[dict]], eos_token_ids: Sequence[int]) -> None:
        self.tokenizer = tokenizer
        self.tool_schemas = tool_schemas or None
        self.tool_names = [schema["function"]["name"] for schema in tool_schemas or []]
        self.eos_token_ids = set(eos_token_ids)
        self.separator = self._turn_separator()

    def render(self, messages: list[dict], add_generation_prompt: bool) -> list[int]:
        """The ids of ``messages`` rendered whole (the text tokenized as the dataset tokenizes prompts)."""
        text = self.tokenizer.apply_chat_template(messages, tools=self.tool_schemas, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def suffix(self, prefix: list[dict], appended: list[dict], add_generation_prompt: bool) -> list[int]:
        """The ids ``appended`` adds after ``prefix`` (an error when the template re-renders the prefix differently)."""
        before = self.render(prefix, add_generation_prompt=False)
        after = self.render(prefix + appended, add_generation_prompt=add_generation_prompt)
        if after[: len(before)] != before:
            roles = [m.get("role") for m in appended] or ["generation prompt"]
            raise ValueError(f"multi-turn rollout: the chat template renders {roles} by changing the conversation "
                             "before them, so they cannot be appended turn by turn")
        return after[len(before):]

    def context(self, messages: list[dict]) -> list[int]:
        """The ids of one round of tool responses, or of a user message, with the next turn's generation prompt."""
        assistant: dict[str, Any] = {"role": "assistant", "content": "x"}
        if messages[0]["role"] == "tool":
            assistant = {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": m.get("name", "tool"), "arguments": {}}} for m in messages]}
        return self.suffix([*_SYNTHETIC_PREFIX, assistant], messages, add_generation_prompt=True)

    def _turn_separator(self) -> list[int]:
        """What the template puts after an assistant turn's end-of-turn token (e.g. ChatML's newline):
        the model stops at that token, so these are added as environment tokens before the next message."""
        rendered = self.suffix(_SYNTHETIC_PREFIX, [{"role": "assistant", "content": "x"}], add_generation_prompt=False)
        prompt = self.suffix(_SYNTHETIC_PREFIX, [], add_generation_prompt=True)
        turn = rendered[len(prompt):] if rendered[: len(prompt)] == prompt else rendered
        ends = [i for i, tok in enumerate(turn) if tok in self.eos_token_ids]
        return turn[ends[-1] + 1:] if ends else []


def only_whitespace_differs(tokenizer: PreTrainedTokenizerBase, expected: list[int], actual: list[int]) -> bool:
    """Whether every stretch where the two id lists differ decodes to whitespace on both sides
    (verl's ``ignore_strippable``)."""
    matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal" and (tokenizer.decode(expected[i1:i2]).strip() or tokenizer.decode(actual[j1:j2]).strip()):
            return False
    return True
