"""verl's newer ``reward.*`` config layout, rewritten onto rewardsmith's ``reward_model.*`` keys.

verl (0.6+) groups reward settings under ``reward``; its older layout (and
rewardsmith's schema) uses ``reward_model`` and a top-level
``custom_reward_function``. Both load: :func:`map_reward_layout` rewrites a
config tree before validation, so the schema stays one.
"""
from __future__ import annotations

from typing import Any

from rewardsmith.common.errors import ConfigError

# verl's reward.* key -> rewardsmith's key (dotted paths)
KEY_MAP = {
    "reward.num_workers": "reward_model.num_workers",
    "reward.reward_manager.name": "reward_model.reward_manager",
    "reward.reward_model.enable": "reward_model.enable",
    "reward.reward_model.model_path": "reward_model.model.path",
    **{f"reward.reward_model.{k}": f"reward_model.{k}" for k in ("enable_resource_pool", "n_gpus_per_node", "nnodes")},
    # rewardsmith's own per-row routing (verl has no such key): a reward.* config can ask for it too
    "reward.reward_model.route_by_style": "reward_model.route_by_style",
    "reward.custom_reward_function.path": "custom_reward_function.path",
    "reward.custom_reward_function.name": "custom_reward_function.name",
    "reward.custom_reward_function.reward_kwargs": "custom_reward_function.reward_kwargs",
    "reward.sandbox_fusion.url": "reward_model.sandbox_fusion.url",
    "reward.sandbox_fusion.max_concurrent": "reward_model.sandbox_fusion.max_concurrent",
    "reward.sandbox_fusion.memory_limit_mb": "reward_model.sandbox_fusion.memory_limit_mb",
    **{f"reward.reward_model.rollout.{k}": f"reward_model.rollout.{k}"
       for k in ("name", "gpu_memory_utilization", "tensor_model_parallel_size", "prompt_length", "response_length")},
}
# verl's bookkeeping keys that say nothing about what is computed
_IGNORED_LEAVES = ("_target_",)


def _leaves(tree: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(tree, dict) and tree:
        out = []
        for key, value in tree.items():
            if key in _IGNORED_LEAVES:
                continue
            out += _leaves(value, f"{prefix}.{key}")
        return out
    return [(prefix, tree)]


def _get(tree: dict, dotted: str) -> tuple[bool, Any]:
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _set(tree: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"'{part}' in {dotted} is a value, not a section")
    node[parts[-1]] = value


def map_reward_layout(tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` with its ``reward`` section moved onto ``reward_model`` / ``custom_reward_function`` keys.

    A ``reward.*`` key with no rewardsmith meaning is an error naming it; a key set
    in both layouts to different values is an error naming both.
    """
    if "reward" not in tree:
        return tree
    reward = tree["reward"]
    if not isinstance(reward, dict):
        raise ConfigError(f"'reward' must be a mapping (verl's reward.* layout), got {reward!r}")
    out = {k: v for k, v in tree.items() if k != "reward"}
    for key, value in _leaves(reward, "reward"):
        if key.endswith(".reward_kwargs") or key.startswith("reward.custom_reward_function.reward_kwargs."):
            key, value = "reward.custom_reward_function.reward_kwargs", _get(tree, "reward.custom_reward_function.reward_kwargs")[1]
        target = KEY_MAP.get(key)
        if target is None:
            raise ConfigError(f"unknown config key '{key}' (verl's reward.* layout); supported: {', '.join(sorted(KEY_MAP))}")
        present, existing = _get(out, target)
        if present and existing != value:
            raise ConfigError(f"'{key}' ({value!r}) and '{target}' ({existing!r}) are both set and disagree; keep one layout")
        _set(out, target, value)
    return out
