"""`rewardkit demo [key=value ...]`: the embedded end-to-end demo (warm start, GRPO, before/after)."""
from __future__ import annotations

import argparse

from rewardkit.common.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="overrides of the demo's settings, e.g. trainer.total_training_steps=40")


def run(args: argparse.Namespace) -> int:
    from rewardkit.demo import run_demo, summary

    for item in args.overrides:
        if "=" not in item:
            raise ConfigError(f"rewardkit demo takes key=value overrides only, got {item!r}")
    result = run_demo(args.overrides)
    print()
    print(summary(result))
    return 0
