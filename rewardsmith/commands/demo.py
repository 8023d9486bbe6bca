"""`rewardsmith demo [--multi-turn] [key=value ...]`: the embedded end-to-end demo (warm start, GRPO, before/after)."""
from __future__ import annotations

import argparse

from rewardsmith.common.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--multi-turn", action="store_true",
                        help="the multi-turn demo: multiplications the model answers by calling a calculator tool")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="overrides of the demo's settings, e.g. trainer.total_training_steps=40")


def run(args: argparse.Namespace) -> int:
    from rewardsmith.demo import run_demo, summary

    for item in args.overrides:
        if "=" not in item:
            raise ConfigError(f"rewardsmith demo takes key=value overrides only, got {item!r}")
    result = run_demo(args.overrides, multi_turn=args.multi_turn)
    print()
    print(summary(result))
    return 0
