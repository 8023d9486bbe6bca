"""`rewardsmith sft CONFIG [key=value ...]`: a supervised warm start of the policy."""
from __future__ import annotations

import argparse

from rewardsmith.commands.config_args import add_config_arguments, load_from_args, require_model_dirs


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from rewardsmith.core.sft import run_sft

    config = load_from_args(args)
    require_model_dirs(config)
    try:
        save_dir = run_sft(config)
    except KeyboardInterrupt:
        raise KeyboardInterrupt("no checkpoint was written (sft saves its model only when it finishes)") from None
    print(f"use it with: actor_rollout_ref.model.path={save_dir}")
    return 0
