"""What `rewardsmith train`, `sft` and `rm train` share: ``[CONFIG] [key=value ...]`` arguments,
and a check, before anything loads, that the model directories and data files they name exist.

Nothing here imports torch or transformers: a typo or a missing file is reported at once, not
after the engine's imports."""
from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Optional, Union

from rewardsmith.common.config import load_config
from rewardsmith.common.errors import ConfigError
from rewardsmith.core.schema import Config


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """A config file, then ``key=value`` overrides."""
    parser.add_argument(
        "args", nargs="*", metavar="CONFIG | key=value",
        help="a YAML config file, then Hydra-style overrides such as algorithm.adv_estimator=grpo (see docs/config.md)",
    )


def load_from_args(args: argparse.Namespace) -> Config:
    """The config: the first item without '=' is the file, the rest are overrides."""
    items = list(args.args)
    path = items.pop(0) if items and "=" not in items[0] else None
    for item in items:
        if "=" not in item:
            raise ConfigError(f"expected key=value after the config file, got {item!r}")
    return load_config(Config, path, items)


# A Hugging Face hub repo id: "name" or "org/name".
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def looks_like_local_path(value: str) -> bool:
    """Whether ``value`` names a local directory rather than a hub id: it is absolute, starts with
    ``.`` or ``~``, cannot be a hub id (e.g. ``outputs/arith/sft_model``), or its first folder exists here."""
    if os.path.isabs(value) or value.startswith((".", "~")) or not _HUB_ID.match(value):
        return True
    return "/" in value and Path(value.split("/", 1)[0]).is_dir()


def require_model_dir(key: str, value: Optional[str], hint: str = "") -> None:
    """Raise ``FileNotFoundError`` naming ``key`` when ``value`` is meant as a local directory that
    does not exist (a hub id such as ``Qwen/Qwen2.5-0.5B`` is left to transformers)."""
    if value and looks_like_local_path(value) and not Path(value).expanduser().is_dir():
        what = "is not a directory" if Path(value).expanduser().exists() else "does not exist"
        raise FileNotFoundError(f"{key}: directory {value} {what}{hint}")


def require_model_dirs(config: Config) -> None:
    """:func:`require_model_dir` for every directory a train or sft config loads from."""
    require_model_dir("actor_rollout_ref.model.path", config.actor_rollout_ref.model.path,
                      " (a warm start's output? run `rewardsmith sft` first)")
    require_model_dir("data.tokenizer", config.data.tokenizer)
    require_model_dir("critic.model.path", config.critic.model.path)


def require_files(key: str, files: Union[str, list[str], None]) -> None:
    """Raise ``FileNotFoundError`` naming ``key`` when a data file it lists does not exist."""
    for path in [files] if isinstance(files, str) else list(files or []):
        if not Path(path).expanduser().is_file():
            raise FileNotFoundError(f"{key}: dataset file not found: {path}")
