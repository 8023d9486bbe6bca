"""What a model scorer takes and gives back, and how a row's prompt becomes text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

from rewardsmith.plugins.scoring import ScoreOutcome


@dataclass(frozen=True)
class ModelRequest:
    """One sample for a model: the row's prompt (chat messages, a string, or None when
    the caller did not pass prompts), the decoded response and the row's reward fields."""

    data_source: str
    prompt: Any
    response: str
    ground_truth: Any = None
    extra_info: Optional[dict] = None


class ModelScorer(Protocol):
    """Scores requests in batches; failures are outcomes, never exceptions."""

    def score(self, requests: list[ModelRequest]) -> list[ScoreOutcome]: ...

    def metrics(self) -> dict[str, float]:
        """Counters since the previous call (e.g. truncations, cache hits), then reset."""
        ...

    def close(self) -> None: ...


def as_messages(prompt: Any) -> list[dict[str, str]]:
    """A row's prompt as chat messages: a string is one user turn, None is no turn."""
    if prompt is None:
        return []
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    messages = list(prompt)
    if not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages):
        raise ValueError(f"a prompt must be a string or a list of {{role, content}} messages, got {prompt!r:.200}")
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def plain_prompt(prompt: Any) -> str:
    """The prompt as plain text: one user turn is its content; several turns are ``role: content`` lines."""
    messages = as_messages(prompt)
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def render_chat(tokenizer: Any, prompt: Any, response: str) -> tuple[str, str]:
    """``(prefix, full)``: the prompt alone and the prompt plus response as the tokenizer's chat
    template writes them; without a template, the plain prompt and a newline, then the response."""
    messages = as_messages(prompt)
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": response}], tokenize=False)
        prefix = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) if messages else ""
        if not full.startswith(prefix):  # a template that rewrites earlier turns: no known prompt part
            prefix = ""
        return prefix, full
    prefix = plain_prompt(prompt) + "\n" if messages else ""
    return prefix, prefix + response
