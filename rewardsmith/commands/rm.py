"""``rewardsmith rm train CONFIG`` and ``rewardsmith rm serve PATH``: reward models of your own."""
from __future__ import annotations

import argparse
import os
import sys

from rewardsmith.common.network import RM_TOKEN_ENV


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    about = "Train a reward model on preference pairs (Bradley-Terry loss)."
    train = sub.add_parser("train", help=about, description=about + " Pairs format and keys: docs/reward_models.md; "
                           "a sample file: examples/data/rm_pairs.jsonl.")
    train.add_argument("config", nargs="?", help="a YAML config (keys: see docs/reward_models.md)")
    train.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. save_dir=out/rm")
    about = "Serve a local reward model with OpenRLHF's /get_reward protocol."
    serve = sub.add_parser("serve", help=about, description=about + " See docs/reward_models.md.")
    serve.add_argument("path", help="a saved sequence classifier with one output")
    serve.add_argument("--host", default="127.0.0.1",
                       help="bind address (a non-loopback one needs a token; default: %(default)s)")
    serve.add_argument("--port", type=int, default=5000, help="port to listen on (default: %(default)s)")
    serve.add_argument("--token", default=os.environ.get(RM_TOKEN_ENV),
                       help=f"require 'Authorization: Bearer TOKEN' on every request (default: ${RM_TOKEN_ENV}; prefer "
                            "the variable: a command line is visible to every user in ps)")
    serve.add_argument("--max-request-mb", type=int, help="largest request body accepted, MiB (413 beyond; default 64)")
    serve.add_argument("--max-length", type=int, default=2048, help="maximum tokens per query; the prompt's start is cut first (default: %(default)s)")
    serve.add_argument("--micro-batch-size", type=int, default=16, help="queries per forward pass (default: %(default)s)")
    serve.add_argument("--max-batch", type=int, default=256, help="queries scored together across concurrent requests (default: %(default)s)")
    serve.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                       help="parameter dtype (default: %(default)s)")
    serve.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                       help="auto = cuda when available (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    if args.action == "train":
        from rewardsmith.commands.config_args import require_files, require_model_dir
        from rewardsmith.common.config import load_config
        from rewardsmith.core.reward_model_config import RMTrainConfig

        path, overrides = args.config, list(args.overrides)
        if path is not None and "=" in path:  # no config file: the first argument is already an override
            path, overrides = None, [path, *overrides]
        config = load_config(RMTrainConfig, path, overrides)
        require_model_dir("model.path", config.model.path)
        require_model_dir("model.tokenizer", config.model.tokenizer)
        require_files("data.train_files", config.data.train_files)
        require_files("data.val_files", config.data.val_files)
        # The engine (torch, transformers: seconds) loads only once the config and its files are known good.
        from rewardsmith.core.reward_model_training import train_reward_model

        metrics = train_reward_model(config, stream=sys.stderr)
        accuracy = metrics.get("val/accuracy")
        held_out = f"held-out pairwise accuracy {accuracy:.3f}" if accuracy is not None else "no held-out pairs"
        print(f"saved reward model to {config.save_dir} ({held_out})")
        return 0
    from rewardsmith.plugins.config import RewardModelPathConfig
    from rewardsmith.plugins.model_scoring.rm_server import MAX_REQUEST_MB, serve

    cfg = RewardModelPathConfig(path=args.path, dtype=args.dtype, device=args.device, max_length=args.max_length,
                                micro_batch_size=args.micro_batch_size)
    serve(cfg, args.host, args.port, args.token, args.max_batch, args.max_request_mb or MAX_REQUEST_MB)
    return 0
