"""Config sections of the reward side, with verl's key names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from rewardsmith.common.config import InvalidValue, opt, require_http_url, require_positive, section


@dataclass
class CustomRewardFunctionConfig:
    path: Optional[str] = opt(None, "A Python file (or pkg://module.path) holding a verl-style compute_score; replaces data_source routing for every row.")
    name: str = opt("compute_score", "Function name inside custom_reward_function.path.")
    reward_kwargs: dict[str, Any] = opt({}, "Keyword arguments passed to the custom function on every call.")


@dataclass
class OverlongBufferConfig:
    enable: bool = opt(False, "DAPO overlong penalty on responses that run into the last `len` tokens before max_resp_len.")
    len: int = opt(0, "Length of the soft-penalty buffer in tokens; must be > 0 when enabled.")
    penalty_factor: float = opt(1.0, "Penalty at max_resp_len; it grows linearly across the buffer.")
    log: bool = opt(False, "Record overlong_reward and overlong in each sample's extra info.")

    def __post_init__(self) -> None:
        if self.len < 0:
            raise InvalidValue("len", f"must be >= 0, got {self.len}")
        if self.enable and self.len == 0:
            raise InvalidValue("len", "must be > 0 when enable is true")
        if self.penalty_factor < 0:
            raise InvalidValue("penalty_factor", f"must be >= 0, got {self.penalty_factor}")


@dataclass
class SandboxFusionConfig:
    url: Optional[str] = opt(None, "URL of a SandboxFusion-compatible /run_code endpoint (ours: `rewardsmith sandbox serve`).")
    max_concurrent: int = opt(64, "Sandbox requests in flight at once, per process (a plain SandboxFusion gets one request per test case, and the client adapts below this to what it sustains); the sandbox manager keeps as many samples in flight.")
    memory_limit_mb: int = opt(1024, "Memory limit per program run, in MB.")
    retry_backoff: float = opt(0.5, "Base of the client's exponential retry back-off in seconds (connection errors, 429, 5xx).")
    float_tolerance: dict[str, float] = opt({}, "Tolerance for real-number output tokens of the code scorer, per data_source or glob ({'*': 1e-4}); default 1e-6. Integers always compare exactly.")

    def __post_init__(self) -> None:
        require_http_url("url", self.url)
        if self.max_concurrent < 1:
            raise InvalidValue("max_concurrent", f"must be >= 1, got {self.max_concurrent}")
        if self.retry_backoff < 0:
            raise InvalidValue("retry_backoff", f"must be >= 0, got {self.retry_backoff}")
        for pattern, tolerance in self.float_tolerance.items():
            if tolerance < 0:
                raise InvalidValue(f"float_tolerance.{pattern}", f"must be >= 0, got {tolerance}")


@dataclass
class RewardModelPathConfig:
    path: Optional[str] = opt(None, "Local directory of a Hugging Face sequence classifier with one output (the local reward model); read only when reward_model.enable is true.")
    tokenizer: Optional[str] = opt(None, "The reward model's tokenizer directory (its chat template re-templates prompt + response); null = path.")
    dtype: Literal["float32", "bfloat16", "float16"] = opt("float32", "Parameter dtype of the local reward model.")
    device: Literal["auto", "cpu", "cuda"] = opt("auto", "Where the local reward model runs: auto = cuda when available.")
    max_length: int = opt(2048, "Maximum tokens of prompt + response; longer inputs lose the prompt's start first (counted in reward/<component>/truncated_prompt).")
    micro_batch_size: int = opt(16, "Samples per forward pass; samples are sorted by length so each micro-batch pads little.")
    trust_remote_code: bool = opt(False, "Allow custom modelling code shipped with the reward model directory.")
    # verl's reward-model worker keys: speed and memory on hardware this in-process model does not use.
    use_remove_padding: bool = opt(False, "verl's unpadded forward of the reward model: accepted with a notice (samples are sorted by length, so micro-batches pad little; scores are the same).")
    use_shm: bool = opt(False, "verl: copy the reward model to /dev/shm before loading it; a load-speed key (a notice: the same weights).")
    fsdp_config: dict[str, Any] = opt({}, "verl's FSDP settings of the reward-model worker (param_offload, ...): accepted with a notice; the reward model runs unsharded in-process, scores are the same.")

    def __post_init__(self) -> None:
        require_positive("max_length", self.max_length, allow_none=False)
        require_positive("micro_batch_size", self.micro_batch_size, allow_none=False)


@dataclass
class RemoteRewardModelConfig:
    urls: list[str] = opt([], "Reward-model server URLs, load-balanced (OpenRLHF: http://host:port/get_reward; vLLM: http://host:port/classify).")
    protocol: Literal["openrlhf", "vllm_classify"] = opt("openrlhf", "openrlhf: POST {query, prompts, labels} -> {rewards}; vllm_classify: vLLM's /classify, score = probs[0].")
    model: Optional[str] = opt(None, "Served model name sent to vLLM (vllm_classify).")
    tokenizer: Optional[str] = opt(None, "Tokenizer directory whose chat template renders prompt + response into the query text; null = plain text (message contents joined by newlines).")
    token_env: Optional[str] = opt(None, "Environment variable holding a bearer token for the servers (the token itself never goes into config or logs).")
    batch_size: int = opt(32, "Samples per request.")
    max_concurrent: int = opt(8, "Requests in flight at once.")
    timeout: float = opt(60.0, "Seconds per request.")
    max_retries: int = opt(3, "Retries of a request after a connection error, a timeout, a 5xx or a 429 (never after another 4xx).")
    backoff: float = opt(0.5, "First retry delay in seconds; doubles each retry.")
    # vLLM's /classify request fields (verl's reward loop sends use_activation=false).
    use_activation: Optional[bool] = opt(None, "vllm_classify: vLLM's use_activation request field; null = the server's default (a one-output classifier's sigmoid, in (0, 1)); false = the raw score head output, as the local reward model scores.")
    max_length: Optional[int] = opt(None, "vllm_classify with a tokenizer: cut prompt + response to this many tokens before sending, as the local reward model does (the prompt's start first), so no sample is refused as too long; null = send them whole.")

    def __post_init__(self) -> None:
        require_positive("max_length", self.max_length)
        for n, url in enumerate(self.urls):
            require_http_url(f"urls[{n}]", url)
        for key in ("batch_size", "max_concurrent", "timeout"):
            require_positive(key, getattr(self, key), allow_none=False)
        if self.max_retries < 0 or self.backoff < 0:
            raise InvalidValue("max_retries" if self.max_retries < 0 else "backoff", "must be >= 0")


DEFAULT_JUDGE_TEMPLATE = (
    "Rate the response to the prompt from 0 to 10.\n\nPrompt:\n{prompt}\n\nResponse:\n{response}\n\n"
    "Answer with a final line of the form 'Score: N'."
)


# The chat-completions fields the judge fills from its own keys.
JUDGE_BODY_KEYS = frozenset({"model", "messages", "temperature", "max_tokens"})


@dataclass
class JudgeConfig:
    base_url: Optional[str] = opt(None, "OpenAI-compatible API base, e.g. http://127.0.0.1:8000/v1 (POST {base_url}/chat/completions).")
    model: Optional[str] = opt(None, "Judge model name sent with each request.")
    api_key_env: Optional[str] = opt(None, "Environment variable holding the API key (never the key itself: it stays out of config, logs and metrics).")
    template: str = opt(DEFAULT_JUDGE_TEMPLATE, "User message sent to the judge; fields: {prompt}, {response}, {ground_truth}, {data_source}, {extra_info.KEY}; {{ and }} are literal braces.")
    system_prompt: Optional[str] = opt(None, "Optional system message.")
    parser: Literal["score_line", "yes_no", "regex"] = opt("score_line", "Verdict parser: the number on the last 'Score:' line, a leading yes/no (1/0), or the first group of `regex`.")
    regex: Optional[str] = opt(None, "Regular expression for parser=regex; its first group must be a number.")
    scale: Optional[list[float]] = opt(None, "[low, high]: map the parsed number linearly onto [0, 1] (e.g. [0, 10]); null = keep it.")
    temperature: float = opt(0.0, "Judge sampling temperature.")
    max_tokens: int = opt(256, "Maximum tokens of the judge's answer.")
    max_concurrent: int = opt(8, "Requests in flight at once.")
    rpm: Optional[int] = opt(None, "At most this many requests per minute (spaced evenly); null = no limit.")
    timeout: float = opt(60.0, "Seconds per request.")
    max_retries: int = opt(3, "Retries after a connection error, a timeout, a 5xx or a 429 (never after another 4xx).")
    backoff: float = opt(1.0, "First retry delay in seconds; doubles each retry.")
    cache_size: int = opt(100000, "Judge answers kept for identical requests (same rendered prompt, model and sampling settings); 0 = no cache.")
    tokenizer: Optional[str] = opt(None, "Tokenizer directory handed to verl generative-judge functions as reward_model_tokenizer.")
    extra_body: dict[str, Any] = opt({}, "Fields merged into every chat-completions request body (part of the cache key), e.g. vLLM's allowed_token_ids or structured_outputs, or a provider's own fields; it may not repeat model, messages, temperature or max_tokens, which have their own keys.")

    def __post_init__(self) -> None:
        require_http_url("base_url", self.base_url)
        clash = sorted(set(self.extra_body) & JUDGE_BODY_KEYS)
        if clash:
            raise InvalidValue("extra_body", f"sets {', '.join(clash)}, which the judge sends from its own keys; set those instead")
        for key in ("max_tokens", "max_concurrent", "timeout"):
            require_positive(key, getattr(self, key), allow_none=False)
        require_positive("rpm", self.rpm)
        if self.max_retries < 0 or self.backoff < 0 or self.cache_size < 0:
            raise InvalidValue("max_retries/backoff/cache_size", "must be >= 0")
        if self.parser == "regex" and not self.regex:
            raise InvalidValue("regex", "must be set when parser is regex")
        if self.scale is not None and (len(self.scale) != 2 or self.scale[0] == self.scale[1]):
            raise InvalidValue("scale", f"must be two different numbers [low, high], got {self.scale}")


MODEL_KINDS = ("local_rm", "remote_rm", "judge")


@dataclass
class RewardModelRolloutConfig:
    name: Optional[Literal["vllm", "sglang", "hf"]] = opt(None, "verl's serving engine of the reward model, used with reward_model.use_reward_loop=true: vllm starts a vLLM server of reward_model.model.path and scores on it through the remote reward-model client; hf scores in-process; sglang is refused (not supported here).")
    gpu_memory_utilization: Optional[float] = opt(None, "vLLM's gpu_memory_utilization of the reward-model server (on CPU: the cap on its KV cache as a share of the memory free at start; null there = 0.1); a notice when no server is started.")
    tensor_model_parallel_size: Optional[int] = opt(None, "vLLM's tensor_parallel_size of the reward-model server (null = 1); a notice when no server is started.")
    prompt_length: Optional[int] = opt(None, "verl's prompt budget of the reward-model server; with response_length it sets reward_model.model.max_length (prompt_length + response_length; the vLLM server's max_model_len).")
    response_length: Optional[int] = opt(None, "verl's response budget of the reward-model server; see prompt_length.")
    free_cache_engine: Optional[bool] = opt(None, "verl's freeing of the reward-model server's memory between steps: a memory key (a notice; the served model keeps its cache).")

    def __post_init__(self) -> None:
        for key in ("tensor_model_parallel_size", "prompt_length", "response_length"):
            require_positive(key, getattr(self, key))
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise InvalidValue("gpu_memory_utilization", f"must be in (0, 1], got {self.gpu_memory_utilization}")


# Component kinds that read a multi-turn episode's environment rewards (plugins/episode_rewards.py).
ENVIRONMENT_KINDS = ("tool_reward", "tool_step_rewards", "interaction_score")


@dataclass
class ComponentConfig:
    kind: Literal["rule", "local_rm", "remote_rm", "judge", "tool_reward", "tool_step_rewards", "interaction_score"] = opt("rule", "rule: a scorer; local_rm / remote_rm / judge: reward_model.model / .remote / .judge; a multi-turn episode's environment: tool_reward (a tool's own calc_reward), tool_step_rewards (the sum of its calls' step rewards), interaction_score (the interaction's calculate_score); docs/environments.md#rewards-of-an-episode.")
    scorer: Optional[str] = opt(None, "rule components: the scorer's name; null = the row's data_source route (or custom_reward_function).")
    tool: Optional[str] = opt(None, "tool_reward components: the tool (its schema's function name) whose reward counts; null = the sum over the episode's tools.")
    weight: float = opt(1.0, "Weight of this component in the sample's reward.")
    gate: Optional[str] = opt(None, "Name of an earlier component of the same data_source: this one is asked only when the gate's score >= gate_threshold.")
    gate_threshold: float = opt(0.5, "The gate passes when its score is at least this.")
    gate_value: Optional[float] = opt(None, "This component's value when its gate does not pass; null = the gate's score.")
    gate_when: Literal["score_at_least", "abstained"] = opt("score_at_least", "score_at_least: asked where the gate's score >= gate_threshold; abstained: a fallback, asked only where the gate has no value (it abstained, was undecided, or failed under on_failure abstain), standing in for it there (the gate's weight; its own weight and gate_value are not used).")
    on_failure: Literal["abstain", "zero", "fallback", "raise"] = opt("fallback", "A failed, timed-out or unparsable sample: leave the decision to the other components, score 0, score `fallback`, or stop the run.")
    fallback: Optional[float] = opt(None, "Value for on_failure=fallback; null = reward_model.fallback_score.")

    def __post_init__(self) -> None:
        if self.weight < 0:
            raise InvalidValue("weight", f"must be >= 0, got {self.weight}")
        if self.kind != "rule" and self.scorer is not None:
            raise InvalidValue("scorer", f"is for rule components; this component's kind is {self.kind}")
        if self.kind != "tool_reward" and self.tool is not None:
            raise InvalidValue("tool", f"is for tool_reward components; this component's kind is {self.kind}")
        if self.gate_when == "abstained" and self.gate is None:
            raise InvalidValue("gate_when", "abstained needs a gate: the component it stands in for")
        if self.gate_when == "abstained" and self.gate_value is not None:
            raise InvalidValue("gate_value", "is not used with gate_when: abstained (where the gate has a value, that value counts)")


# reward_model.timeout's default, seconds per sample.
DEFAULT_TIMEOUT_S = 30.0


@dataclass
class RewardModelConfig:
    enable: bool = opt(False, "Model-based scoring on, with reward_model.model / .remote / .judge: as in verl, the model scores every row (see route_by_style), and model components use it. Off: a row or component that needs a model is an error.")
    enable_resource_pool: Optional[bool] = opt(None, "verl: a device pool of the reward model's own; a device-layout key (a notice: the reward model shares the trainer's devices here, the same scores).")
    n_gpus_per_node: Optional[int] = opt(None, "verl: GPUs of the reward model's own pool (a notice, as enable_resource_pool).")
    nnodes: Optional[int] = opt(None, "verl: machines of the reward model's own pool (a notice, as enable_resource_pool).")
    reward_manager: str = opt("naive", "Reward manager: naive, parallel, dapo, batch, sandbox, prime (verl's), or one a plugin registers.")
    reward_kwargs: dict[str, Any] = opt({}, "Keyword arguments for the reward manager, as in verl (e.g. dapo: overlong_buffer_cfg, max_resp_len).")
    num_workers: Optional[int] = opt(None, "Worker processes of the parallel manager (null = CPU count), and of dapo when > 1; naive, batch and sandbox do not use it.")
    timeout: Optional[float] = opt(DEFAULT_TIMEOUT_S, "Hard per-sample timeout in seconds, every manager (naive and dapo score in one worker process for it; prime keeps verl's fixed 300 s and refuses another value); null = none (naive: scores in this process).")
    fallback_score: float = opt(0.0, "Score given to a sample whose scorer failed, hung, crashed or returned an invalid value.")
    stop_when_all_fail: bool = opt(True, "Stop (rewardsmith score: non-zero exit; training: before the update) when a scorer fails with the same exception on at least 3 distinct inputs and scores none in between (one input shared by many samples, or fewer rows, costs only those samples); false = give them fallback_score.")
    scorer: Optional[str] = opt(None, "Score every row with this scorer name instead of routing by data_source.")
    scorer_weights: dict[str, dict[str, float]] = opt({}, "Combine several scorers per data_source: {data_source or glob: {scorer: weight}}.")
    max_resp_len: Optional[int] = opt(None, "Maximum response length for the DAPO penalty; null = data.max_response_length.")
    overlong_buffer: OverlongBufferConfig = section(OverlongBufferConfig, "DAPO overlong penalty.")
    sandbox_fusion: SandboxFusionConfig = section(SandboxFusionConfig, "Code execution sandbox.")
    model: RewardModelPathConfig = section(RewardModelPathConfig, "Local reward model (kind local_rm).")
    remote: RemoteRewardModelConfig = section(RemoteRewardModelConfig, "Reward-model servers (kind remote_rm).")
    judge: JudgeConfig = section(JudgeConfig, "LLM judge behind an OpenAI-compatible endpoint (kind judge).")
    model_scorer: Optional[Literal["local_rm", "remote_rm", "judge"]] = opt(None, "What scores `style: model` rows that no `components` pattern matches; null = the only one configured.")
    components: dict[str, dict[str, ComponentConfig]] = opt({}, "Composite rewards per data_source pattern: {pattern: {component name: {kind, scorer, tool, weight, gate, on_failure, ...}}}; see docs/reward_models.md (a multi-turn episode's tool and interaction rewards: docs/environments.md#rewards-of-an-episode).")
    # verl's reward-model semantics and its reward-loop keys (docs/reward_models.md).
    route_by_style: bool = opt(False, "false (verl): with enable true, the reward model scores EVERY row, whatever its reward_model.style (custom_reward_function.path, when set, scores every row instead); true: rewardsmith's per-row routing, `style: model` rows to the model and the others to their scorers.")
    micro_batch_size_per_gpu: Optional[int] = opt(None, "verl's per-rank reward-model micro-batch; the local reward model runs on one rank here, so it sets reward_model.model.micro_batch_size.")
    use_reward_loop: bool = opt(False, "verl's reward loop: with reward_model.rollout.name=vllm the reward model (reward_model.model.path) is served by vLLM and scored over HTTP; with rollout.name hf or unset it scores in-process (a notice when unset).")
    rollout: RewardModelRolloutConfig = section(RewardModelRolloutConfig, "verl's serving settings of the reward model in its reward loop.")
    launch_reward_fn_async: Optional[bool] = opt(None, "verl's key: score each step's responses on a background thread while the old-policy, reference and value passes run, joining before the advantages (results are identical either way). null (default) = on when the manager scores outside the trainer's thread (every manager's worker processes, sandbox, batch, or only model scorers over HTTP) and the step before took at least a tenth of its time on rewards (cheaper ones cost the passes more than overlapping hides), off for scorers in the trainer's process (reward_model.timeout=null, a local reward model), whose Python would hold the GIL the passes need; true/false force it.")
    step_budget_s: Optional[float] = opt(None, "Seconds a training step's reward call may take; samples not scored by then abstain (unscored, counted reward/over_budget), their pool workers are killed and queued calls never start. Calls on the trainer's thread (naive) cannot be interrupted: only the ones not yet started are cut. null = no budget.")

    def __post_init__(self) -> None:
        if self.num_workers is not None and self.num_workers < 1:
            raise InvalidValue("num_workers", f"must be >= 1 or null, got {self.num_workers}")
        if self.timeout is not None and not self.timeout > 0:
            raise InvalidValue("timeout", f"must be > 0 or null, got {self.timeout}")
        if self.step_budget_s is not None and not self.step_budget_s > 0:
            raise InvalidValue("step_budget_s", f"must be > 0 or null, got {self.step_budget_s}")
        for pattern, components in self.components.items():
            if not components:
                raise InvalidValue(f"components.{pattern}", "must name at least one component")
            names = list(components)
            for i, (name, comp) in enumerate(components.items()):
                if comp.gate is not None and comp.gate not in names[:i]:
                    raise InvalidValue(f"components.{pattern}.{name}.gate",
                                       f"names {comp.gate!r}, which is not an earlier component of {pattern!r} ({', '.join(names[:i]) or 'none'})")
        require_positive("micro_batch_size_per_gpu", self.micro_batch_size_per_gpu)
        if self.micro_batch_size_per_gpu is not None:
            self.model.micro_batch_size = self.micro_batch_size_per_gpu
        if self.rollout.prompt_length is not None and self.rollout.response_length is not None:
            self.model.max_length = self.rollout.prompt_length + self.rollout.response_length
        if self.use_reward_loop and self.rollout.name == "sglang":
            raise InvalidValue("rollout.name", "sglang cannot serve the reward model here; use vllm "
                                               "(or hf to score in-process)")
        for pattern, weights in self.scorer_weights.items():
            if not weights:
                raise InvalidValue(f"scorer_weights.{pattern}", "must name at least one scorer")
            for name, w in weights.items():
                if w < 0:
                    raise InvalidValue(f"scorer_weights.{pattern}.{name}", f"must be >= 0, got {w}")

    def serves_with_vllm(self) -> bool:
        """Whether the local reward model is served by vLLM (verl's reward loop with rollout.name=vllm)."""
        return self.enable and self.use_reward_loop and self.rollout.name == "vllm" and bool(self.model.path)

    def notices(self) -> list[str]:
        """One line per verl reward-model key this run accepts without effect, naming it and why."""
        lines = []
        serving = self.serves_with_vllm()
        loop_model = self.use_reward_loop and self.enable and bool(self.model.path)
        if loop_model and self.rollout.name is None:
            lines.append("reward_model.use_reward_loop: no reward_model.rollout.name, so the reward model scores "
                         "in-process (set reward_model.rollout.name=vllm to serve it with vLLM); the scores are the same")
        if self.rollout.name is not None and not loop_model:
            lines.append("reward_model.rollout.name: serves a reward model only with reward_model.use_reward_loop=true, "
                         "reward_model.enable=true and reward_model.model.path (as in verl), so none is served")
        if self.rollout.free_cache_engine is not None and serving:
            lines.append("reward_model.rollout.free_cache_engine: a memory key; the served reward model keeps its cache "
                         "between steps, and the scores are the same")
        for key in ("gpu_memory_utilization", "tensor_model_parallel_size", "free_cache_engine"):
            if getattr(self.rollout, key) is not None and not serving:
                lines.append(f"reward_model.rollout.{key}: no reward-model server is started (the model scores "
                             "in-process), so this serving setting changes nothing")
        if self.model.use_remove_padding:
            lines.append("reward_model.model.use_remove_padding: micro-batches are sorted by length and pad little; "
                         "the padded forward gives the same scores")
        for key in ("enable_resource_pool", "n_gpus_per_node", "nnodes"):
            if getattr(self, key) is not None:
                lines.append(f"reward_model.{key}: a device-layout key; the reward model shares the trainer's devices "
                             "here, the same scores")
        if self.model.use_shm:
            lines.append("reward_model.model.use_shm: a load-speed key; the weights are read from model.path as they "
                         "are, the same weights")
        for key in self.model.fsdp_config:
            lines.append(f"reward_model.model.fsdp_config.{key}: the reward model runs unsharded in one process; "
                         "FSDP settings change nothing")
        return lines


@dataclass
class PluginsConfig:
    disable: list[str] = opt([], "Plugin names (as `rewardsmith plugins` lists them) not to load.")
    prefer: dict[str, str] = opt({}, "Settle a clash between plugins: {scorer name or data_source: plugin name}.")


@dataclass
class RewardSettings:
    """Everything the reward side reads of a run's config; the engine builds it
    (``Config.reward_settings()``), so reward managers never see the engine's schema."""

    reward_model: RewardModelConfig = section(RewardModelConfig)
    custom_reward_function: CustomRewardFunctionConfig = section(CustomRewardFunctionConfig)
    plugins: PluginsConfig = section(PluginsConfig)
    max_response_length: Optional[int] = opt(None, "The rollout's response budget in tokens (DAPO's default max_resp_len).")
    backend: Literal["local", "ray"] = opt("local", "Where pool workers run: local processes, or Ray actors across the cluster.")
