"""``trainer.rollout_data_dir``: each training step's rollouts as JSONL, one line per sample.

A line holds verl's fields (``input``, ``output``, ``gts``, ``score``, ``step``,
as verl's ``trainer.rollout_data_dir`` writes them to ``<dir>/<step>.jsonl``) and
the row itself in verl's dataset schema plus ``response``, so that
``rewardsmith score`` and ``rewardsmith diff`` read a dump as they read any rows:
``<reward_fn_key>``, ``prompt`` (the chat messages), ``reward_model``
{``style``, ``ground_truth``}, ``extra_info``, ``response``; then ``uid`` (the
group), ``reward`` (the trajectory reward after any KL penalty and reward
masking), ``unscored`` (no component could score it) and
``reward_extra_info`` (what the reward managers said of it: per-component
scores under ``reward_components``, ``reward_status``, a scorer's extra keys) and
``receipt`` (where the reward came from: :mod:`rewardsmith.plugins.receipts`; the
run's reward-side config is ``<dir>/reward_config.<hash>.yaml``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from rewardsmith.common.rows import write_rows

# The run's reward-side config, written once into ``trainer.rollout_data_dir``; named by its hash,
# so that a run resumed with another reward config leaves the earlier steps' config in place.
REWARD_CONFIG_FILE = "reward_config.{hash}.yaml"


def rollout_records(step: int, meta: dict[str, list[Any]], reward_fn_key: str, inputs: Sequence[str],
                    responses: Sequence[str], scores: Sequence[float], rewards: Sequence[float],
                    unscored: Sequence[bool], extra_info: dict[str, list[Any]],
                    receipts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per sample (see the module docstring); ``meta`` is the batch's
    per-sample row fields (``data_source``, ``ground_truth``, ``style``, ``extra_info``,
    ``raw_prompt``, ``uid``), ``extra_info`` the reward managers' per-sample lists and
    ``receipts`` each sample's receipt."""
    records = []
    for i, response in enumerate(responses):
        records.append({
            "step": step,
            "input": inputs[i],
            "output": response,
            "gts": meta["ground_truth"][i],
            "score": scores[i],
            reward_fn_key: meta["data_source"][i],
            "prompt": meta["raw_prompt"][i],
            "reward_model": {"style": meta["style"][i], "ground_truth": meta["ground_truth"][i]},
            "extra_info": meta["extra_info"][i],
            "response": response,
            "uid": meta["uid"][i],
            "reward": rewards[i],
            "unscored": bool(unscored[i]),
            "reward_extra_info": {key: values[i] for key, values in extra_info.items() if key != "score"},
            "receipt": receipts[i],
        })
    return records


def dump_rollouts(directory: str | Path, step: int, records: list[dict[str, Any]]) -> Path:
    """Write ``records`` to ``<directory>/<step>.jsonl`` (verl's file naming); returns the path."""
    path = Path(directory) / f"{step}.jsonl"
    write_rows(path, records)
    return path
