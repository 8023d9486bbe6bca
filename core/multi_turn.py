"""Multi-turn rollouts with tools: any :class:`~rewardsmith.core.rollout.RolloutEngine` driven turn by turn.

Each sample is one episode, as in verl's tool agent loop: the model writes a
turn; its tool calls (Hermes-style ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>``, verl's default ``format``) run concurrently
(:func:`~rewardsmith.reward_fns.tools.call_tools`); their responses, cut to
``max_tool_response_length`` characters, join the conversation as ``tool``
messages rendered with the tokenizer's chat template; a turn without a call
goes to the row's interaction, if any, whose reply is a user turn; and the
model writes the next turn, until a turn has no call (or the interaction ends
the episode), a turn limit is reached or the response budget
(``data.max_response_length`` tokens, the environment's included) is spent.

The result is a batch like a single-turn engine's, with one difference: the
response holds the environment's tokens too (attended, ``attention_mask`` 1) and
``response_mask`` is 1 only on the tokens the model generated, so the losses,
the KL and the advantages see only those. The conversation (``messages``), the
tool calls with their outcomes, ``num_turns`` and verl's ``tool_rewards`` /
``turn_scores`` go into each sample's ``extra_info``, which the scorer gets.

The runtime token stream is built turn by turn (the generated tokens as they
are, each tool round or user turn rendered on its own,
:mod:`rewardsmith.core.chat_tokens`); ``tokenization_sanity_check_mode``
compares it with the whole conversation rendered at once and counts the
episodes where they differ.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence
from uuid import uuid4

import torch
import torch.distributed as dist
from transformers import PreTrainedTokenizerBase

from rewardsmith.core.batch import Batch
from rewardsmith.core.chat_tokens import ChatTokens, only_whitespace_differs
from rewardsmith.core.episode_rewards import rollout_reward_scores, settle_episode_rewards
from rewardsmith.core.rollout import SEED_LIMIT, RolloutEngine, SamplingParams, draw_seed
from rewardsmith.reward_fns.tools import ToolCall, ToolResult, ToolStats, call_tools

log = logging.getLogger(__name__)

# Why an episode ended.
NO_TOOL_CALL, MAX_ASSISTANT_TURNS, MAX_USER_TURNS, LENGTH = "no_tool_call", "max_assistant_turns", "max_user_turns", "length"
INTERACTION_DONE, INTERACTION_FAILED = "interaction_done", "interaction_failed"

_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def parse_hermes(text: str) -> tuple[str, list[ToolCall], int]:
    """The text without its ``<tool_call>`` blocks, the calls in them, and how many blocks were malformed.

    As verl's ``hermes`` parser: a block must hold JSON with ``name`` and
    ``arguments``; one that does not is skipped (counted here, logged by verl).
    """
    calls, malformed = [], 0
    if "<tool_call>" in text and "</tool_call>" in text:
        for block in _HERMES.findall(text):
            try:
                parsed = json.loads(block)
                calls.append(ToolCall(str(parsed["name"]), parsed["arguments"]))
            except (ValueError, KeyError, TypeError):
                malformed += 1
        text = _HERMES.sub("", text)
    return text, calls, malformed


# qwen: verl's search example config spells the hermes blocks so (SGLang's parser of Qwen2.5's tool calls, which
# reads the same <tool_call> JSON); verl 0.9's own parser registry has only hermes and gpt-oss.
TOOL_PARSERS: dict[str, Callable[[str], tuple[str, list[ToolCall], int]]] = {"hermes": parse_hermes, "qwen": parse_hermes}


def truncate_tool_text(text: str, limit: int, side: str) -> str:
    """``text`` cut to ``limit`` characters with verl's markers (``left``, ``right`` or ``middle``)."""
    if len(text) <= limit:
        return text
    if side == "left":
        return "(truncated)..." + text[-limit:]
    if side == "right":
        return text[:limit] + "...(truncated)"
    half = limit // 2
    return text[:half] + "...(truncated)..." + text[-half:]


@dataclass
class InteractionSession:
    """An episode's instance of an interaction (verl's ``interaction_kwargs`` of the row)."""

    interaction: Any
    instance_id: str
    kwargs: dict[str, Any]


@dataclass
class Episode:
    """One sample's conversation as it grows: messages, and the runtime token stream with its loss mask."""

    messages: list[dict]
    prompt_ids: list[int]
    full_prompt_ids: list[int]  # before truncation to the prompt limit: what the sanity check renders after
    create_kwargs: dict[str, dict]  # per tool name: its instances' create_kwargs (the row's extra_info.tools_kwargs)
    calc_reward_kwargs: dict[str, dict] = field(default_factory=dict)  # per tool name: what its calc_reward gets
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    log_probs: list[float] = field(default_factory=list)
    generated: list[list[int]] = field(default_factory=list)  # each assistant turn's tokens
    assistant_turns: int = 0
    user_turns: int = 0
    tool_calls: list[dict] = field(default_factory=list)
    tool_rewards: list[float] = field(default_factory=list)
    tool_scores: dict[str, float] = field(default_factory=dict)  # per tool: its calc_reward after its last call
    turn_rewards: list[float] = field(default_factory=list)  # per assistant turn: its calls' step rewards + the reply's score
    turn_ends: list[Optional[int]] = field(default_factory=list)  # per assistant turn: its last generated token's position
    interaction_score: Optional[float] = None  # the interaction's calculate_score at the episode's end
    interaction_score_failed: bool = False
    malformed_calls: int = 0
    tool_stats: ToolStats = field(default_factory=ToolStats)
    interaction: Optional[InteractionSession] = None
    chat: Optional[ChatTokens] = None  # renders with the tools this episode is offered
    turn_scores: list[float] = field(default_factory=list)
    stop_reason: Optional[str] = None
    tokenization_mismatch: bool = False
    prompt_messages: int = 0

    @property
    def runtime_ids(self) -> list[int]:
        return self.prompt_ids + self.response_ids

    def append(self, ids: Sequence[int], generated: bool, log_probs: Optional[Sequence[float]] = None) -> None:
        self.response_ids.extend(ids)
        self.response_mask.extend([int(generated)] * len(ids))
        self.log_probs.extend(log_probs if log_probs is not None else [0.0] * len(ids))

    def trajectory(self) -> dict[str, Any]:
        """What the scorer's ``extra_info`` gains (verl's ``num_turns``, ``tool_rewards``, ``turn_scores``, and ours)."""
        return {"num_turns": self.assistant_turns + self.user_turns + 1, "tool_rewards": list(self.tool_rewards),
                "turn_scores": list(self.turn_scores), "messages": self.messages, "tool_calls": self.tool_calls,
                "stop_reason": self.stop_reason, "rollout_reward_scores": rollout_reward_scores(self),
                "interaction_score": self.interaction_score}


class MultiTurnRollout:
    """A :class:`RolloutEngine` that runs tool-calling episodes on another engine (``inner``).

    ``config`` is ``actor_rollout_ref.rollout.multi_turn``; ``tools`` maps tool
    names to tools, ``interactions`` names to interactions
    (:mod:`rewardsmith.plugins.environments`). With interactions, a row's
    ``extra_info.interaction_kwargs.name`` picks its interaction, which answers
    every assistant turn without a tool call as a user turn, as verl's tool
    agent loop did up to verl 0.7.
    Each sample's ``multi_turn`` meta holds its turn counts, its calls'
    :class:`ToolStats` and the sanity check's verdict (:func:`episode_metrics`).
    """

    def __init__(self, inner: RolloutEngine, tokenizer: PreTrainedTokenizerBase, tools: Mapping[str, Any], config: Any,
                 eos_token_ids: Sequence[int], max_prompt_length: Optional[int] = None,
                 interactions: Optional[Mapping[str, Any]] = None) -> None:
        if config.format not in TOOL_PARSERS:
            raise ValueError(f"actor_rollout_ref.rollout.multi_turn.format: {config.format!r} is not a tool-call format "
                             f"here; allowed: {', '.join(sorted(TOOL_PARSERS))}")
        self.inner = inner
        self.tokenizer = tokenizer
        self.tools = dict(tools)
        self.interactions = dict(interactions or {})
        self.config = config
        self.parse = TOOL_PARSERS[config.format]
        self.eos_token_ids = list(eos_token_ids)
        self.max_prompt_length = max_prompt_length
        self._chats: dict[tuple[str, ...], ChatTokens] = {}

    def _chat_for(self, names: tuple[str, ...]) -> ChatTokens:
        """The renderer that shows the model the tools ``names`` (one per selection, kept)."""
        if names not in self._chats:
            schemas = [self.tools[n].tool_schema.model_dump(exclude_unset=True, exclude_none=True) for n in names]
            self._chats[names] = ChatTokens(self.tokenizer, schemas, self.eos_token_ids)
        return self._chats[names]

    # The inner engine's lifecycle is this engine's.
    def update_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        self.inner.update_weights(weights)

    def sleep(self) -> None:
        self.inner.sleep()

    def wake(self) -> None:
        self.inner.wake()

    def shutdown(self) -> None:
        self.inner.shutdown()

    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        """``params.n`` episodes per prompt, n adjacent; see the module docstring for the result."""
        n = params.n
        meta = {k: [v for v in items for _ in range(n)] for k, items in prompts.meta.items()}
        infos = prompts.meta.get("extra_info") or [None] * len(prompts)
        uids = prompts.meta.get("uid") or list(range(len(prompts)))
        episodes = [self._start(messages, info, uid) for messages, info, uid in zip(prompts.meta["raw_prompt"], infos, uids)
                    for _ in range(n)]
        cut = sum(len(e.full_prompt_ids) > len(e.prompt_ids) for e in episodes)
        if cut:
            log.warning("multi-turn rollout: %d of %d prompts, rendered with the tools' schemas, are longer than "
                        "data.max_prompt_length and lost their first tokens", cut, len(episodes))
        budget = params.max_new_tokens
        # One seed for the whole call: each later turn's request is seeded by its episode's place in the generation
        # batch and the turn, so a batch generated in chunks or over ranks samples what one call does.
        params = dataclasses.replace(params, seed=draw_seed() if params.seed is None else params.seed)
        first_episode = params.first_prompt * n
        asyncio.run(_gather(self._start_interaction(e) for e in episodes))
        try:
            # The first turn samples n per prompt in one call (an engine may share each prompt's prefill).
            first = Batch(_left_padded([episodes[i * n].runtime_ids for i in range(len(prompts))], self._pad))
            turn = self.inner.generate(first, params)
            with_log_probs = "rollout_log_probs" in turn
            live = self._take_turn(episodes, turn, budget, list(range(len(episodes))))
            while any_rank(bool(live)):
                # A rank whose episodes have all ended generates along on a stand-in row until every rank's have:
                # a sharded model gathers its weights in every forward, on all ranks at once.
                rows = live or [0]
                remaining = max(budget - len(episodes[i].response_ids) for i in rows) if live else 1
                seeds = tuple(turn_seed(params.seed, first_episode + i, episodes[i].assistant_turns) for i in rows)
                batch = Batch(_left_padded([episodes[i].runtime_ids for i in rows], self._pad))
                turn = self.inner.generate(batch, dataclasses.replace(params, n=1, max_new_tokens=remaining, seeds=seeds))
                if live:
                    live = self._take_turn([episodes[i] for i in live], turn, budget, live)
            asyncio.run(_gather(settle_episode_rewards(e, {n: self.tools[n] for n in e.chat.tool_names},
                                                       self.config.tool_timeout_s) for e in episodes))
        finally:
            asyncio.run(_gather(self._finalize_interaction(e) for e in episodes))
        for episode in episodes:
            self._check_tokenization(episode)
        mismatched = sum(e.tokenization_mismatch for e in episodes)
        if mismatched:
            log.warning("multi-turn rollout: %d of %d episodes tokenize differently turn by turn than whole "
                        "(multi_turn.tokenization_sanity_check_mode=%s); review the chat template",
                        mismatched, len(episodes), self.config.tokenization_sanity_check_mode)
        row_infos = meta.get("extra_info", [None] * len(episodes))
        meta["extra_info"] = [{**(info or {}), **e.trajectory()} for info, e in zip(row_infos, episodes)]
        meta["multi_turn"] = [{"assistant_turns": e.assistant_turns, "user_turns": e.user_turns, "tool_stats": e.tool_stats,
                               "malformed_tool_calls": e.malformed_calls, "tokenization_mismatch": e.tokenization_mismatch,
                               "turn_rewards": e.turn_rewards, "turn_ends": e.turn_ends,
                               "interaction_score_failed": e.interaction_score_failed}
                              for e in episodes]
        return self._batch(episodes, budget, meta, with_log_probs)

    @property
    def _pad(self) -> int:
        return self.tokenizer.pad_token_id

    def _start(self, messages: list[dict], extra_info: Optional[dict], uid: Any) -> Episode:
        # verl 0.9.1: a row may offer only some of the tools (extra_info.tool_selection, unknown names ignored).
        selection = (extra_info or {}).get("tool_selection")
        names = tuple(n for n in selection if n in self.tools) if selection and self.tools else tuple(self.tools)
        chat = self._chat_for(names)
        # verl renders the first prompt with the tools' schemas and keeps its last max_prompt_length tokens.
        ids = chat.render(list(messages), add_generation_prompt=True)
        kept = ids[-self.max_prompt_length:] if self.max_prompt_length and len(ids) > self.max_prompt_length else ids
        tools_kwargs = (extra_info or {}).get("tools_kwargs") or {}
        create = {name: dict((kw or {}).get("create_kwargs") or {}) for name, kw in tools_kwargs.items()}
        reward_kwargs = {name: dict((kw or {}).get("calc_reward_kwargs") or {}) for name, kw in tools_kwargs.items()}
        return Episode(messages=[dict(m) for m in messages], prompt_ids=kept, full_prompt_ids=ids, create_kwargs=create,
                       calc_reward_kwargs=reward_kwargs, prompt_messages=len(messages),
                       interaction=self._session(extra_info, uid), chat=chat)

    def _session(self, extra_info: Optional[dict], uid: Any) -> Optional[InteractionSession]:
        """The row's interaction (``extra_info.interaction_kwargs.name``), when interactions are configured."""
        if not self.interactions:
            return None
        kwargs = (extra_info or {}).get("interaction_kwargs")
        name = kwargs.get("name") if isinstance(kwargs, dict) else None
        if name not in self.interactions:
            raise ValueError(f"row {uid}: extra_info.interaction_kwargs.name is {name!r}; with "
                             f"multi_turn.interaction_config_path each row names one of: {', '.join(sorted(self.interactions))}")
        return InteractionSession(self.interactions[name], str(uuid4()), dict(kwargs))

    async def _start_interaction(self, episode: Episode) -> None:
        session = episode.interaction
        if session is not None:
            await session.interaction.start_interaction(session.instance_id, **session.kwargs)

    async def _finalize_interaction(self, episode: Episode) -> None:
        session = episode.interaction
        if session is None:
            return
        try:
            await session.interaction.finalize_interaction(session.instance_id)
        except Exception as exc:  # noqa: BLE001 - the episode is over; a leak is logged, not fatal
            log.warning("interaction %r failed to finalize %s: %s: %s", session.kwargs.get("name"),
                        session.instance_id, type(exc).__name__, exc)

    def _take_turn(self, episodes: list[Episode], turn: Batch, budget: int, index: list[int]) -> list[int]:
        """Add each episode's generated turn, run the calls of those that continue; the indices still live."""
        lengths = turn["response_mask"].sum(-1).tolist()
        calling: list[tuple[int, Episode, list[ToolCall]]] = []
        answering: list[tuple[int, Episode]] = []
        for row, (pos, episode) in enumerate(zip(index, episodes)):
            room = budget - len(episode.response_ids)
            ids = turn["responses"][row, : min(int(lengths[row]), room)].tolist()
            log_probs = turn["rollout_log_probs"][row, : len(ids)].tolist() if "rollout_log_probs" in turn else None
            episode.append(ids, generated=True, log_probs=log_probs)
            episode.generated.append(ids)
            episode.assistant_turns += 1
            episode.turn_rewards.append(0.0)
            episode.turn_ends.append(len(episode.response_ids) - 1 if ids else None)
            text = self.tokenizer.decode([t for t in ids if t not in self.eos_token_ids], skip_special_tokens=True)
            content, calls, malformed = self.parse(text)
            episode.malformed_calls += malformed
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:  # the calls that run (call_tools drops and counts the rest), as verl's message lists them
                message["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                         for c in calls[: self.config.max_parallel_calls]]
            episode.messages.append(message)
            ended = bool(ids) and ids[-1] in self.eos_token_ids
            cfg = self.config
            if not ended or len(episode.response_ids) >= budget:
                episode.stop_reason = LENGTH
            elif cfg.max_assistant_turns and episode.assistant_turns >= cfg.max_assistant_turns:
                episode.stop_reason = MAX_ASSISTANT_TURNS
            elif cfg.max_user_turns and episode.user_turns >= cfg.max_user_turns:
                episode.stop_reason = MAX_USER_TURNS
            elif calls:
                calling.append((pos, episode, calls))
            elif episode.interaction is not None:
                answering.append((pos, episode))
            else:
                episode.stop_reason = NO_TOOL_CALL
        results, replies = self._respond([(episode, calls) for _, episode, calls in calling], [e for _, e in answering])
        live = []
        for (pos, episode, calls), outcome in zip(calling, results):
            if self._add_tool_responses(episode, calls, outcome, budget):
                live.append(pos)
        for (pos, episode), reply in zip(answering, replies):
            if self._add_user_turn(episode, reply, budget):
                live.append(pos)
        return sorted(live)

    def _respond(self, calling: list[tuple[Episode, list[ToolCall]]], answering: list[Episode]
                 ) -> tuple[list[list[ToolResult]], list[Optional[tuple]]]:
        """The environment's side of a turn, all episodes at once: each calling episode's calls (its first
        max_parallel_calls concurrently) and each answering episode's interaction reply (None when it failed)."""
        if not calling and not answering:
            return [], []
        cfg = self.config
        tools = [call_tools({name: self.tools[name] for name in episode.chat.tool_names}, calls,
                            max_parallel_calls=cfg.max_parallel_calls, create_kwargs=episode.create_kwargs,
                            calc_reward_kwargs=episode.calc_reward_kwargs, timeout_s=cfg.tool_timeout_s,
                            stats=episode.tool_stats)
                 for episode, calls in calling]
        done = asyncio.run(_gather([*tools, *(self._reply(episode) for episode in answering)]))
        return done[: len(calling)], done[len(calling):]

    async def _reply(self, episode: Episode) -> Optional[tuple]:
        """The interaction's ``(should_terminate, content, score, data)``; None (logged) when it raised or timed out."""
        session = episode.interaction
        try:
            return await asyncio.wait_for(session.interaction.generate_response(
                session.instance_id, [dict(m) for m in episode.messages], **session.kwargs), self.config.tool_timeout_s)
        except Exception as exc:  # noqa: BLE001 - a broken interaction ends its episode, never the step
            log.warning("interaction %r failed: %s: %s", session.kwargs.get("name"), type(exc).__name__, exc)
            return None

    def _add_user_turn(self, episode: Episode, reply: Optional[tuple], budget: int) -> bool:
        """Append the interaction's reply as a user turn; False (the episode ends) when it ends the episode,
        failed, or does not fit the budget."""
        if reply is None:
            episode.stop_reason = INTERACTION_FAILED
            return False
        terminate, content, score, _ = reply
        if score is not None:
            episode.turn_scores.append(float(score))
            episode.turn_rewards[-1] += float(score)
        message = {"role": "user", "content": str(content)}
        ids = episode.chat.separator + episode.chat.context([message])
        if len(episode.response_ids) + len(ids) >= budget:
            episode.stop_reason = LENGTH
            return False
        # As verl: the reply enters the conversation even when it ends the episode.
        episode.messages.append(message)
        episode.append(ids, generated=False)
        episode.user_turns += 1
        if terminate:
            episode.stop_reason = INTERACTION_DONE
            return False
        return True

    def _add_tool_responses(self, episode: Episode, calls: list[ToolCall], results: list[ToolResult], budget: int) -> bool:
        """Append the responses as one tool round; False (the episode ends) when they do not fit the budget."""
        cfg = self.config
        messages = []
        for call, result in zip(calls, results):
            text = truncate_tool_text(result.response.text or "", cfg.max_tool_response_length, cfg.tool_response_truncate_side)
            messages.append({"role": "tool", "content": text})
            episode.tool_calls.append({"turn": episode.assistant_turns, "name": call.name, "arguments": call.arguments,
                                       "status": result.status, "error": result.error, "response": text,
                                       "reward": result.reward})
            if result.reward is not None:
                episode.tool_rewards.append(result.reward)
                episode.turn_rewards[-1] += result.reward
            if result.episode_reward is not None:
                episode.tool_scores[call.name] = result.episode_reward
        ids = episode.chat.separator + episode.chat.context(messages)
        if len(episode.response_ids) + len(ids) >= budget:
            # As verl: a tool round that does not fit ends the episode without entering the sequence
            # (its calls stay in tool_calls).
            episode.stop_reason = LENGTH
            return False
        episode.messages.extend(messages)
        episode.append(ids, generated=False)
        episode.user_turns += 1
        return True

    def _check_tokenization(self, episode: Episode) -> None:
        """verl's tokenization sanity check: the response tokens equal the conversation rendered whole."""
        mode = self.config.tokenization_sanity_check_mode
        if mode == "disable":
            return
        chat = episode.chat
        expected = whole_conversation_ids(chat, episode)[len(episode.full_prompt_ids):]
        actual = episode.response_ids
        # The whole rendering closes the last turn, which the model ended at its end-of-turn token or the budget cut.
        tail = expected[len(actual):]
        closing = tail == chat.separator or (tail[:1] and tail[0] in chat.eos_token_ids and tail[1:] == chat.separator)
        if expected[: len(actual)] == actual and (not tail or closing):
            return
        if mode == "ignore_strippable" and only_whitespace_differs(self.tokenizer, expected, actual):
            return
        episode.tokenization_mismatch = True

    def _batch(self, episodes: list[Episode], budget: int, meta: dict[str, list], with_log_probs: bool) -> Batch:
        prompts = _left_padded([e.prompt_ids for e in episodes], self._pad)
        responses = torch.full((len(episodes), budget), self._pad, dtype=torch.long)
        response_mask = torch.zeros_like(responses)
        attended = torch.zeros_like(responses)
        log_probs = torch.zeros(responses.shape, dtype=torch.float32)
        for i, e in enumerate(episodes):
            k = len(e.response_ids)
            responses[i, :k] = torch.tensor(e.response_ids, dtype=torch.long)
            response_mask[i, :k] = torch.tensor(e.response_mask, dtype=torch.long)
            attended[i, :k] = 1
            log_probs[i, :k] = torch.tensor(e.log_probs, dtype=torch.float32)
        tensors = {"prompts": prompts["input_ids"], "responses": responses, "response_mask": response_mask,
                   "input_ids": torch.cat([prompts["input_ids"], responses], dim=1),
                   "attention_mask": torch.cat([prompts["attention_mask"], attended], dim=1)}
        if with_log_probs:
            tensors["rollout_log_probs"] = log_probs
        return Batch(tensors, meta)


def episode_metrics(batches: Batch | Sequence[Batch]) -> dict[str, float]:
    """The metrics of a multi-turn batch (or of several, e.g. validation's, together): turns per episode (verl's
    ``num_turns/*``), tool calls per episode, the share of response tokens the environment wrote, per tool its
    calls, failures by kind, dropped calls, failed ``calc_reward`` calls and latency p50/p99, the share of calls
    that failed, interactions whose score failed, and the episodes whose turn-by-turn tokens differ from the
    whole conversation's."""
    batches = [batches] if isinstance(batches, Batch) else list(batches)
    infos = [info for batch in batches for info in batch.meta["multi_turn"]]
    turns = torch.tensor([i["assistant_turns"] + i["user_turns"] + 1 for i in infos], dtype=torch.float32)
    attended = generated = 0.0
    for batch in batches:
        width = batch["responses"].shape[1]
        attended += float(batch["attention_mask"][:, -width:].sum())
        generated += float(batch["response_mask"].sum())
    stats = ToolStats()
    for info in infos:
        stats.merge(info["tool_stats"])
    calls = sum(stats.calls.values())
    metrics = {"num_turns/mean": turns.mean().item(), "num_turns/max": turns.max().item(), "num_turns/min": turns.min().item(),
               "multi_turn/tool_calls_per_episode": calls / len(infos),
               "multi_turn/env_token_share": (attended - generated) / max(attended, 1.0),
               "multi_turn/malformed_tool_calls": float(sum(i["malformed_tool_calls"] for i in infos)),
               "multi_turn/tokenization_mismatch": float(sum(i["tokenization_mismatch"] for i in infos)),
               "multi_turn/interaction_score_failed": float(sum(i["interaction_score_failed"] for i in infos))}
    if calls:
        metrics["multi_turn/tool_failure_rate"] = sum(sum(k.values()) for k in stats.failures.values()) / calls
    for name, summary in stats.summary().items():
        for key, value in summary.items():
            if key.startswith("latency_"):
                if value is not None:
                    metrics[f"tool/{name}/{key[:-2]}_ms"] = value * 1000.0
            else:
                metrics[f"tool/{name}/{key}"] = float(value)
    return metrics


def whole_conversation_ids(chat: ChatTokens, episode: Episode) -> list[int]:
    """The episode's conversation rendered at once, each assistant turn as the text the model generated."""
    messages = [dict(m) for m in episode.messages[: episode.prompt_messages]]
    turns = iter(episode.generated)
    for message in episode.messages[len(messages):]:
        if message["role"] == "assistant":
            ids = next(turns)
            text = chat.tokenizer.decode([t for t in ids if t not in chat.eos_token_ids])
            messages.append({"role": "assistant", "content": text})
        else:
            messages.append(message)
    # An episode that ended on the environment's turn (an interaction's last reply) holds the next generation prompt.
    return chat.render(messages, add_generation_prompt=messages[-1]["role"] != "assistant")


def turn_seed(seed: int, episode: int, turn: int) -> int:
    """The sampling seed of episode ``episode``'s assistant turn ``turn`` (from 1; the first turn is seeded per prompt)
    in a generate call seeded ``seed``: a hash, so no two (episode, turn) pairs of a call share a random stream."""
    digest = hashlib.blake2b(f"{seed}/{episode}/{turn}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % SEED_LIMIT


def any_rank(flag: bool) -> bool:
    """Whether ``flag`` holds on any rank of the process group (this process's flag without one)."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return flag
    flags: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(flags, flag)
    return any(flags)


async def _gather(awaitables: Iterable[Any]) -> list[Any]:
    return list(await asyncio.gather(*awaitables))


def _left_padded(rows: list[list[int]], pad: int) -> dict[str, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r):] = 1
    return {"input_ids": ids, "attention_mask": mask}


def multi_turn_engine(inner: RolloutEngine, config: Any, tokenizer: PreTrainedTokenizerBase, registry: Any,
                      max_prompt_length: Optional[int]) -> MultiTurnRollout:
    """``inner`` driven turn by turn with the tools and interactions of ``config.tool_config_path`` and
    ``config.interaction_config_path`` (``rollout.multi_turn``)."""
    from rewardsmith.plugins.environments import load_interactions, load_tools

    tools = load_tools(config.tool_config_path, registry) if config.tool_config_path else {}
    interactions = load_interactions(config.interaction_config_path, registry) if config.interaction_config_path else {}
    return MultiTurnRollout(inner, tokenizer, tools, config, [tokenizer.eos_token_id], max_prompt_length, interactions)
