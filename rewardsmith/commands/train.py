"""`rewardsmith train CONFIG [key=value ...]`: PPO/GRPO training from a config."""
from __future__ import annotations

import argparse

import yaml

from rewardsmith.commands.config_args import (add_config_arguments, add_verl_config_arguments, load_from_args,
                                              require_files, require_model_dirs)
from rewardsmith.common.config import to_dict
from rewardsmith.common.redaction import redact_config


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    add_verl_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    config = load_from_args(args)
    require_model_dirs(config)
    if not config.data.train_files:
        raise ValueError("data.train_files is empty: give a config file or data.train_files=PATH")
    require_files("data.train_files", config.data.train_files)
    require_files("data.val_files", config.data.val_files)
    # The engine (torch, transformers: seconds) loads only once the config and its files are known good.
    from rewardsmith.core.checkpoint import latest_checkpoint
    from rewardsmith.core.trainer import PPOTrainer, output_dir

    out = output_dir(config)
    trainer = PPOTrainer(config)
    # Under torchrun every rank runs this command; rank 0 speaks for the run.
    if trainer.is_main:
        out.mkdir(parents=True, exist_ok=True)
        # Redacted: a sandbox URL's ?token= or a judge URL's user:pass@ must not be written down.
        (out / "config.yaml").write_text(yaml.safe_dump(redact_config(to_dict(config)), sort_keys=False))
    try:
        last = trainer.fit()
    except KeyboardInterrupt:
        checkpoint = latest_checkpoint(out)
        raise KeyboardInterrupt(f"last checkpoint: {checkpoint} (the same command resumes from it)" if checkpoint
                                else f"no checkpoint was written under {out}") from None
    finally:
        trainer.close()
    if not trainer.is_main:
        return 0
    if "val/reward/mean" in last:
        print(f"final validation reward: {last['val/reward/mean']:.4f}")
    print(f"metrics: {out / 'metrics.jsonl'}")
    return 0
