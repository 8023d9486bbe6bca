"""`rewardkit sft CONFIG [key=value ...]`: a supervised warm start of the policy."""
from __future__ import annotations

import argparse

from rewardkit.core.cli_common import add_config_arguments, guarded, load_from_args


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        from rewardkit.core.sft import run_sft

        config = load_from_args(args)
        save_dir = run_sft(config)
        print(f"use it with: actor_rollout_ref.model.path={save_dir}")
        return 0

    return guarded(body)
