"""``rewardsmith stress``: how gameable is a scorer? Hacks and controls derived from the rows' gold answers."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Optional

from rewardsmith.common.config import load_config
from rewardsmith.common.rows import read_rows
from rewardsmith.core.schema import Config


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="jsonl or parquet rows in verl's schema (data_source, prompt, reward_model.ground_truth)")
    parser.add_argument("--scorer", help="stress this scorer on every row, whatever its data_source")
    parser.add_argument("--config", help="a YAML config file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--max-hack-rate", type=float, metavar="R",
                        help="exit 1 when the overall rate of hacks paid exceeds R (0..1)")
    parser.add_argument("--paid-above", type=float, default=0.5,
                        help="a score above this counts as paid (default 0.5)")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config overrides, e.g. custom_reward_function.path=my_reward.py")


def token_counter(config: Config) -> Optional[Callable[[list[str]], list[int]]]:
    """Response lengths as training counts them: tokens of the run's tokenizer (``data.tokenizer``,
    else ``actor_rollout_ref.model.path``), loaded on first use; None when the config names neither."""
    if not (config.data.tokenizer or config.actor_rollout_ref.model.path):
        return None

    def count(texts: list[str]) -> list[int]:
        from rewardsmith.core.models import run_tokenizer

        return [len(ids) for ids in run_tokenizer(config)(texts, add_special_tokens=False)["input_ids"]]

    return count


def run(args: argparse.Namespace) -> int:
    from rewardsmith.plugins.stress import format_report, stress

    if args.max_hack_rate is not None and not 0 <= args.max_hack_rate <= 1:
        raise ValueError(f"--max-hack-rate must be between 0 and 1, got {args.max_hack_rate}")
    overrides = list(args.overrides) + ([f"reward_model.scorer={args.scorer}"] if args.scorer else [])
    config = load_config(Config, args.config, overrides)
    rows = read_rows(args.input)
    if not rows:
        raise ValueError(f"{args.input} has no rows to derive probes from")
    report = stress(rows, config.reward_settings(), config.data.reward_fn_key, config.data.prompt_key,
                    args.paid_above, source=args.input, count_tokens=token_counter(config))
    print(json.dumps(report.as_dict(), indent=2) if args.json else format_report(report))
    if args.max_hack_rate is not None and report.hack_paid_rate > args.max_hack_rate:
        print(f"rewardsmith stress: {100 * report.hack_paid_rate:.1f}% of hacks paid, above --max-hack-rate "
              f"{100 * args.max_hack_rate:.1f}%", file=sys.stderr)
        return 1
    return 0
