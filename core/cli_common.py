"""What `rewardkit train`, `sft` and `demo` share: ``[CONFIG] [key=value ...]`` arguments and error reporting."""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from rewardkit.core.config import ConfigError, load_config
from rewardkit.core.schema import Config
from rewardkit.plugins.errors import RewardError

# Errors that mean "the user's config or data is wrong": one clear line, no traceback.
USER_ERRORS = (ConfigError, RewardError, FileNotFoundError, ValueError)


def add_config_arguments(parser: argparse.ArgumentParser, config_optional: bool = False) -> None:
    what = "an optional YAML config file" if config_optional else "a YAML config file"
    parser.add_argument(
        "args", nargs="*", metavar="CONFIG | key=value",
        help=f"{what}, then Hydra-style overrides such as algorithm.adv_estimator=grpo (see docs/config.md)",
    )


def split_args(items: list[str]) -> tuple[str | None, list[str]]:
    """The config path (the first item without '=') and the overrides."""
    if items and "=" not in items[0]:
        return items[0], items[1:]
    return None, list(items)


def load_from_args(args: argparse.Namespace) -> Config:
    path, overrides = split_args(args.args)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"expected key=value after the config file, got {item!r}")
    return load_config(Config, path, overrides)


def guarded(body: Callable[[], int]) -> int:
    """Run ``body``; a user error prints ``error: ...`` and gives exit status 2."""
    try:
        return body()
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
