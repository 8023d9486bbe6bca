"""``rewardsmith score``: score a file of responses offline, exactly as training would."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator, Optional

from rewardsmith.commands.score_summary import component_columns, failure_report, summary_table, unscored_report
from rewardsmith.common.config import load_config
from rewardsmith.common.rows import read_rows, write_rows
from rewardsmith.core.schema import Config
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.receipts import CONFIG_SUFFIX, reward_config, run_receipt, score_with_receipts, write_reward_config


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="jsonl or parquet rows in verl's schema plus a 'response' field (string or list)")
    parser.add_argument("-o", "--output", help="where to write the scored rows (default: INPUT.scored.jsonl)")
    parser.add_argument("--overwrite-input", action="store_true",
                        help="allow -o to name the input file (it is replaced only once every row is written)")
    parser.add_argument("--scorer", help="score every row with this scorer, whatever its data_source")
    parser.add_argument("--config", help="a YAML config file")
    parser.add_argument("--reproduce", action="store_true",
                        help="INPUT is a scored file: re-score its responses with the config its receipts recorded, "
                             "report changed plugin versions and files, and exit 1 if any row's score differs")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. reward_model.reward_manager=parallel")


def samples_of(rows: list[dict[str, Any]], reward_fn_key: str, source: str,
               prompt_key: str = "prompt") -> tuple[RewardBatch, list[tuple[int, int]]]:
    """Flatten rows (each with one or several responses) into a batch; returns it and each sample's (row, response) index."""
    sources, solutions, truths, extras, styles, lengths, prompts = [], [], [], [], [], [], []
    owners: list[tuple[int, int]] = []
    for i, row in enumerate(rows):
        where = f"{source}: row {i}"
        if "response" not in row:
            raise ValueError(f"{where}: missing 'response' (a string or a list of strings)")
        responses = row["response"] if isinstance(row["response"], list) else [row["response"]]
        if reward_fn_key not in row:
            raise ValueError(f"{where}: missing '{reward_fn_key}' (data.reward_fn_key)")
        rm = row.get("reward_model") or {}
        if not isinstance(rm, dict) or "ground_truth" not in rm:
            raise ValueError(f"{where}: missing 'reward_model.ground_truth'")
        row_lengths = row.get("response_length")
        if row_lengths is not None and not isinstance(row_lengths, list):
            row_lengths = [row_lengths]
        for j, response in enumerate(responses):
            if not isinstance(response, str):
                raise ValueError(f"{where}: response {j} is {type(response).__name__}, expected a string")
            owners.append((i, j))
            sources.append(row[reward_fn_key])
            solutions.append(response)
            truths.append(rm["ground_truth"])
            extras.append(row.get("extra_info"))
            styles.append(rm.get("style", "rule"))
            prompts.append(row.get(prompt_key))
            lengths.append(row_lengths[j] if row_lengths is not None and j < len(row_lengths) else None)
    batch = RewardBatch(sources, solutions, truths, extras, styles, prompts=prompts,
                        response_lengths=lengths if all(n is not None for n in lengths) and lengths else None)
    return batch, owners


class _ProgressBar:
    """A tqdm bar drawn once the manager knows how many scorer calls it makes (``reset``), not before."""

    def __init__(self) -> None:
        self._bar: Optional[Any] = None

    def reset(self, total: Optional[int] = None) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=total, desc="scoring", unit="call", file=sys.stderr)
        else:
            self._bar.reset(total=total)

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@contextlib.contextmanager
def _scorer_output_to_stderr() -> Iterator[None]:
    """While scoring, what scorers print (in this process, worker processes and
    their children, which inherit the descriptor) goes to stderr, so stdout holds
    only the summary table."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run(args: argparse.Namespace) -> int:
    if args.reproduce:
        from rewardsmith.commands.reproduce import reproduce
        return reproduce(args)
    overrides = list(args.overrides) + ([f"reward_model.scorer={args.scorer}"] if args.scorer else [])
    config = load_config(Config, args.config, overrides)
    output = Path(args.output) if args.output else Path(args.input).with_suffix(".scored.jsonl")
    if output.resolve() == Path(args.input).resolve() and not args.overwrite_input:
        raise ValueError(f"-o {output} is the input file; pass --overwrite-input to replace it with the scored rows")
    rows = read_rows(args.input)
    if not rows:
        write_rows(output, [])
        print(f"{args.input} has no rows; wrote an empty {output}", file=sys.stderr)
        return 0
    batch, owners = samples_of(rows, config.data.reward_fn_key, args.input, config.data.prompt_key)
    reward_side = reward_config(config.reward_settings(), config.data)
    reward_side_file = output.with_name(output.name + CONFIG_SUFFIX)
    bar = _ProgressBar()
    try:
        with _scorer_output_to_stderr():
            out, receipts = score_with_receipts(config.reward_settings(), batch,
                                                run_receipt(reward_side, reward_side_file), progress=bar)
    finally:
        bar.close()
    scores = out.scores.tolist()
    per_row: dict[int, list[tuple[float, dict, dict]]] = defaultdict(list)
    for k, (i, _j) in enumerate(owners):
        per_row[i].append((scores[k], {key: values[k] for key, values in out.extra_info.items()}, receipts[k]))
    for i, row in enumerate(rows):
        results = per_row.get(i, [])
        many = isinstance(row["response"], list)
        for n, key in enumerate(("score", "reward_extra_info", "receipt")):
            row[key] = [r[n] for r in results] if many else results[0][n]
    for column in write_rows(output, rows):
        print(f"note: column '{column}' mixes types parquet cannot hold in one column (e.g. strings and dicts); "
              "it is stored as JSON text, which rewardsmith's readers decode", file=sys.stderr)
    write_reward_config(reward_side, reward_side_file)  # only once the rows are written: a failure leaves nothing
    print(summary_table(batch.data_sources, scores, out.unscored.tolist(), out.extra_info["reward_status"],
                        out.extra_info["reward_seconds"],
                        component_columns(out.extra_info["reward_components"])))
    print(f"wrote {len(rows)} scored rows ({len(batch)} samples) to {output}")
    failures, unreachable = failure_report(batch.data_sources, out.extra_info)
    for line in failures:
        print(line, file=sys.stderr)
    if unreachable:
        # One line: which service, why, and where the details are (each row's reward_error).
        names = ", ".join(f"'{name}' ({error})" for name, error in unreachable.items())
        print(f"rewardsmith score: error: every sample of component {names} was unavailable: its service "
              f"(sandbox, reward model or judge) could not be reached; each row's reward_error in {output} "
              "says why", file=sys.stderr)
        return 1
    none_scored = unscored_report(out.extra_info["reward_status"], out.extra_info["reward_components"])
    if none_scored:
        print(f"rewardsmith score: error: {none_scored}; their scores in {output} are "
              "reward_model.fallback_score, not results", file=sys.stderr)
        return 1
    return 0
