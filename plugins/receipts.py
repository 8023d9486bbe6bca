"""Receipts: where each sample's reward came from.

A receipt names, per sample, the reward manager and each component that scored
it (its kind and weight; for a rule component the scorer and the plugin
distribution and version that registered it, or the custom reward file and a
hash of its contents; for a model component the model, and for a judge a hash
of its prompt template and whether its cache answered), plus the hash of the
run's resolved reward-side config and the file that holds it.

The reward-side config is written once per run (``reward_model``,
``custom_reward_function``, ``plugins`` and the reward keys of ``data`` and
``trainer``, credentials masked), in the config file layout, so that
``rewardsmith score --reproduce`` can load it back as a config.
"""
from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from typing import Any, Optional

import yaml

from rewardsmith.common.canonical import canonical_json
from rewardsmith.common.config import to_dict
from rewardsmith.common.redaction import redact_config, redact_url
from rewardsmith.plugins.batch import RewardBatch, RewardOutput
from rewardsmith.plugins.config import RewardSettings
from rewardsmith.plugins.executors import Progress
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.managers.base import RewardManager
from rewardsmith.plugins.scoring_plan import Component

# Beside ``<output>`` (score) or in ``trainer.rollout_data_dir`` (training).
CONFIG_SUFFIX = ".reward_config.yaml"


def digest(data: bytes) -> str:
    """A short content hash: the first 16 hex digits of SHA-256."""
    return hashlib.sha256(data).hexdigest()[:16]


# The keys of the run's ``data`` section that decide what scorers see.
REWARD_DATA_KEYS = ("reward_fn_key", "prompt_key")


def reward_config(settings: RewardSettings, data_section: Any) -> dict[str, Any]:
    """The reward side of a run's config (its reward settings and ``data`` section) as a
    config-file tree, credentials masked."""
    data = {key: getattr(data_section, key) for key in REWARD_DATA_KEYS}
    if settings.max_response_length is not None:
        data["max_response_length"] = settings.max_response_length
    tree = {"reward_model": to_dict(settings.reward_model),
            "custom_reward_function": to_dict(settings.custom_reward_function),
            "plugins": to_dict(settings.plugins), "data": data, "trainer": {"backend": settings.backend}}
    return redact_config(tree)


def config_hash(tree: dict[str, Any]) -> str:
    """The hash of a reward-side config tree (key order does not matter)."""
    return digest(canonical_json(tree, "the reward-side config").encode())


def run_receipt(tree: dict[str, Any], path: Path) -> dict[str, str]:
    """The run part of every receipt: the hash of the reward-side config ``tree`` and the file that holds it."""
    return {"config_hash": config_hash(tree), "config_file": str(path)}


def write_reward_config(tree: dict[str, Any], path: Path) -> None:
    """Write the reward-side config ``tree`` to ``path`` as YAML (a config file ``--config`` reads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(tree, sort_keys=False))


def source_hash(fn: Any) -> tuple[Optional[str], Optional[str]]:
    """``(file, hash of its contents)`` of the file that defines ``fn``; ``(None, None)`` when there is none."""
    try:
        file = inspect.getsourcefile(inspect.unwrap(fn))
    except TypeError:
        return None, None
    if not file or not Path(file).is_file():
        return None, None
    return file, digest(Path(file).read_bytes())


def score_with_receipts(settings: RewardSettings, batch: RewardBatch, run: dict[str, str],
                        progress: Optional[Progress] = None) -> tuple[RewardOutput, list[dict[str, Any]]]:
    """Score ``batch`` with the manager ``settings`` configure (rows checked first, as in training);
    returns its output and each sample's receipt, whose run part is ``run`` (:func:`run_receipt`)."""
    with build_reward_manager(settings) as manager:
        manager.check_rows(batch)
        manager.check_data_sources(batch.data_sources)
        out = manager(batch, progress=progress)
        return out, Receipts(manager, run).for_batch(batch, out.extra_info)


class Receipts:
    """Builds the receipts of one manager's samples; ``run`` is the per-run part (config hash and file)."""

    def __init__(self, manager: RewardManager, run: dict[str, str]) -> None:
        self.manager = manager
        self.run = run
        self.registry = manager.plan.registry
        self.rm = manager.settings.reward_model
        self._origins: dict[int, dict[str, Any]] = {}
        owner = self.registry.claimant(type(manager))
        self._manager = {"name": manager.name, **_plugin_fields(owner)}

    def for_batch(self, batch: RewardBatch, extra_info: dict[str, list]) -> list[dict[str, Any]]:
        """One receipt per sample of ``batch``; ``extra_info`` is the manager's output for it (judge cache flags)."""
        receipts = []
        for i, comps in enumerate(self.manager.components_of(batch)):
            components = [self._component(c, extra_info, i, single=len(comps) == 1) for c in comps]
            receipts.append({"manager": self._manager, "components": components, **self.run})
        return receipts

    def _component(self, c: Component, extra_info: dict[str, list], i: int, single: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"name": c.name, "kind": c.kind, "weight": c.weight}
        if c.scorer is not None:
            out["scorer"] = c.scorer.name
            out.update(self._origin(c.scorer.fn))
        elif c.kind == "judge":
            judge = self.rm.judge
            template = canonical_json([judge.system_prompt, judge.template])
            cached = extra_info.get("judge_cached" if single else f"{c.name}/judge_cached")
            out.update(model=judge.model, template_hash=digest(template.encode()),
                       cached=None if cached is None else cached[i])
        elif c.kind == "remote_rm":
            out["model"] = self.rm.remote.model or [redact_url(u) for u in self.rm.remote.urls]
        elif c.kind == "local_rm":
            out["model"] = self.rm.model.path
        elif c.tool is not None:
            out["tool"] = c.tool
        return out

    def _origin(self, fn: Any) -> dict[str, Any]:
        """Who provided a scorer: the plugin that registered it, else (a custom function) its file and hash."""
        if id(fn) not in self._origins:
            owner = self.registry.claimant(fn)
            if owner is not None:
                self._origins[id(fn)] = _plugin_fields(owner)
            else:
                file, hashed = source_hash(fn)
                self._origins[id(fn)] = {"file": file, "file_hash": hashed}
        return self._origins[id(fn)]


def _plugin_fields(info: Any) -> dict[str, Any]:
    if info is None:
        return {}
    return {"plugin": info.name, "distribution": info.distribution, "version": info.version}


# What a receipt says about a component that decides its score (not ``cached`` or a file's path).
_DECIDING = ("kind", "weight", "scorer", "model", "template_hash")


def receipt_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between a recorded receipt and today's for the same sample, one line each:
    the reward manager or a component's plugin version, a custom file's contents, a judge's
    model or template, the reward-side config."""
    changes = []
    if old.get("config_hash") != new.get("config_hash"):
        changes.append(f"reward config: hash {old.get('config_hash')} when scored, {new.get('config_hash')} now")
    changes += _origin_changes(f"reward manager '{old['manager'].get('name')}'", old["manager"], new["manager"])
    if old["manager"].get("name") != new["manager"].get("name"):
        changes.append(f"reward manager: '{old['manager'].get('name')}' when scored, '{new['manager'].get('name')}' now")
    before = {c["name"]: c for c in old["components"]}
    after = {c["name"]: c for c in new["components"]}
    if list(before) != list(after):
        changes.append(f"components: {', '.join(before)} when scored, {', '.join(after)} now")
    for name in before.keys() & after.keys():
        was, now = before[name], after[name]
        what = f"component '{name}'" + (f" (scorer '{now['scorer']}')" if now.get("scorer") else "")
        changes += _origin_changes(what, was, now)
        changes += [f"{what}: {key} {was.get(key)!r} when scored, {now.get(key)!r} now"
                    for key in _DECIDING if was.get(key) != now.get(key)]
    return changes


def _origin_changes(what: str, was: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """A changed plugin distribution or version, or a changed custom file."""
    changes = []
    if (was.get("distribution"), was.get("version")) != (now.get("distribution"), now.get("version")):
        changes.append(f"{what}: plugin {was.get('distribution')} {was.get('version')} when scored, "
                       f"{now.get('distribution')} {now.get('version')} installed now")
    if was.get("file_hash") != now.get("file_hash"):
        changes.append(f"{what}: file {now.get('file') or was.get('file')} changed since scoring "
                       f"(hash {was.get('file_hash')} then, {now.get('file_hash')} now)")
    return changes
