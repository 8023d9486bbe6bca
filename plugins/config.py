"""Config sections of the reward side, with verl's key names."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from rewardkit.common.config import InvalidValue, opt, section


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
    url: Optional[str] = opt(None, "URL of a SandboxFusion-compatible /run_code endpoint (ours: `rewardkit sandbox serve`).")
    max_concurrent: int = opt(64, "Sandbox requests in flight at once, per process (a plain SandboxFusion gets one request per test case, and the client adapts below this to what it sustains); the sandbox manager keeps as many samples in flight.")
    memory_limit_mb: int = opt(1024, "Memory limit per program run, in MB.")
    retry_backoff: float = opt(0.5, "Base of the client's exponential retry back-off in seconds (connection errors, 429, 5xx).")
    float_tolerance: dict[str, float] = opt({}, "Tolerance for real-number output tokens of the code scorer, per data_source or glob ({'*': 1e-4}); default 1e-6. Integers always compare exactly.")

    def __post_init__(self) -> None:
        if self.max_concurrent < 1:
            raise InvalidValue("max_concurrent", f"must be >= 1, got {self.max_concurrent}")
        if self.retry_backoff < 0:
            raise InvalidValue("retry_backoff", f"must be >= 0, got {self.retry_backoff}")
        for pattern, tolerance in self.float_tolerance.items():
            if tolerance < 0:
                raise InvalidValue(f"float_tolerance.{pattern}", f"must be >= 0, got {tolerance}")


@dataclass
class RewardModelPathConfig:
    path: Optional[str] = opt(None, "Local path of a reward model (model-based scoring).")


@dataclass
class RewardModelConfig:
    enable: bool = opt(False, "Use a reward model for rows whose reward_model.style is 'model'.")
    reward_manager: str = opt("naive", "Reward manager: naive, parallel, dapo, sandbox, or one a plugin registers.")
    reward_kwargs: dict[str, Any] = opt({}, "Keyword arguments for the reward manager, as in verl (e.g. dapo: overlong_buffer_cfg, max_resp_len).")
    num_workers: Optional[int] = opt(None, "Worker processes of the parallel manager (null = CPU count), and of dapo when > 1; naive, batch and sandbox do not use it.")
    timeout: Optional[float] = opt(30.0, "Hard per-sample timeout in seconds for process-pool execution; null = none.")
    fallback_score: float = opt(0.0, "Score given to a sample whose scorer failed, hung, crashed or returned an invalid value.")
    stop_when_all_fail: bool = opt(True, "Stop (rewardkit score: non-zero exit; training: before the update) when a scorer fails on every sample of a batch with the same exception; false = give them fallback_score.")
    scorer: Optional[str] = opt(None, "Score every row with this scorer name instead of routing by data_source.")
    scorer_weights: dict[str, dict[str, float]] = opt({}, "Combine several scorers per data_source: {data_source or glob: {scorer: weight}}.")
    max_resp_len: Optional[int] = opt(None, "Maximum response length for the DAPO penalty; null = data.max_response_length.")
    overlong_buffer: OverlongBufferConfig = section(OverlongBufferConfig, "DAPO overlong penalty.")
    sandbox_fusion: SandboxFusionConfig = section(SandboxFusionConfig, "Code execution sandbox.")
    model: RewardModelPathConfig = section(RewardModelPathConfig, "Reward model.")

    def __post_init__(self) -> None:
        if self.num_workers is not None and self.num_workers < 1:
            raise InvalidValue("num_workers", f"must be >= 1 or null, got {self.num_workers}")
        if self.timeout is not None and not self.timeout > 0:
            raise InvalidValue("timeout", f"must be > 0 or null, got {self.timeout}")
        for pattern, weights in self.scorer_weights.items():
            if not weights:
                raise InvalidValue(f"scorer_weights.{pattern}", "must name at least one scorer")
            for name, w in weights.items():
                if w < 0:
                    raise InvalidValue(f"scorer_weights.{pattern}.{name}", f"must be >= 0, got {w}")


@dataclass
class PluginsConfig:
    disable: list[str] = opt([], "Plugin names (as `rewardkit plugins` lists them) not to load.")
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
