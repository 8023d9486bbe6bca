"""What `rewardsmith train` and `sft` share: ``[CONFIG] [key=value ...]`` arguments."""
from __future__ import annotations

import argparse

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
