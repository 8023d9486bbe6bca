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


# verl's PPO entry point reads its stock config from verl/trainer/config/ppo_trainer.yaml (Hydra's
# --config-path is relative to verl/trainer, so "config" and "./config" name that folder); this
# command's defaults are that config's.
VERL_CONFIG_PATHS = (None, "config", "./config", "config/", "./config/")
VERL_PPO_CONFIG = "ppo_trainer"


def add_verl_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Hydra's ``--config-path`` / ``--config-name``, as verl's launch scripts pass them to main_ppo."""
    parser.add_argument("--config-path", help="verl's Hydra config folder: only verl's own (config) is accepted")
    parser.add_argument("--config-name", help=f"verl's Hydra config name: only {VERL_PPO_CONFIG} (this command's "
                                              "defaults) is accepted")


def verl_config_notice(config_path: Optional[str], config_name: Optional[str]) -> Optional[str]:
    """The start-up notice for verl's ``--config-path``/``--config-name`` when they name verl's stock PPO config;
    a ``ConfigError`` saying what to do for any other config."""
    if config_path is None and config_name is None:
        return None
    if config_path in VERL_CONFIG_PATHS and config_name in (None, VERL_PPO_CONFIG):
        given = " ".join(f"--config-{k}={v}" for k, v in (("path", config_path), ("name", config_name)) if v)
        return f"notice: {given} is verl's stock PPO config (verl/trainer/config/{VERL_PPO_CONFIG}.yaml), " \
               "whose defaults are this command's; changes nothing here"
    if config_name == "ppo_megatron_trainer":
        raise ConfigError("--config-name=ppo_megatron_trainer: verl's Megatron-LM config; Megatron-LM is not an "
                          "engine here: drop it and use actor_rollout_ref.actor.strategy=fsdp2")
    raise ConfigError(f"--config-path={config_path} --config-name={config_name}: a Hydra config of your own is "
                      "not read here; pass it as a YAML config file (rewardsmith train FILE.yaml key=value ...) "
                      "with its keys inline (no Hydra defaults list)")


def load_from_args(args: argparse.Namespace) -> Config:
    """The config: the first item without '=' is the file, the rest are overrides."""
    notice = verl_config_notice(getattr(args, "config_path", None), getattr(args, "config_name", None))
    if notice:
        print(notice, flush=True)
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
