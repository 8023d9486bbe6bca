"""Building the model scorers a run's reward settings configure."""
from __future__ import annotations

from typing import Any

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.config import RewardModelConfig

# kind -> (config section under reward_model, the key that says it is configured)
SECTIONS = {"local_rm": ("model", "path"), "remote_rm": ("remote", "urls"), "judge": ("judge", "base_url")}


def configured_kinds(rm: RewardModelConfig) -> list[str]:
    """The model kinds whose section is filled in (local path, server URLs, judge endpoint)."""
    return [kind for kind, (section, field) in SECTIONS.items() if getattr(getattr(rm, section), field)]


def build_model_scorer(kind: str, rm: RewardModelConfig) -> Any:
    """The :class:`ModelScorer` of ``kind``, from its section of ``reward_model``."""
    section = SECTIONS[kind][0]
    key = f"reward_model.{section}"
    if kind == "local_rm" and rm.serves_with_vllm():
        from rewardsmith.plugins.model_scoring.vllm_server import ServedRewardModel
        return ServedRewardModel(rm, key)
    if kind == "local_rm":
        from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel
        return LocalRewardModel(rm.model, key)
    if kind == "remote_rm":
        from rewardsmith.plugins.model_scoring.remote_rm import RemoteRewardModel
        return RemoteRewardModel(rm.remote, key)
    if kind == "judge":
        from rewardsmith.plugins.model_scoring.judge import LLMJudge
        return LLMJudge(rm.judge, key)
    raise ConfigError(f"unknown model kind {kind!r}; expected one of {', '.join(SECTIONS)}")
