"""The demo's dataset: short arithmetic word problems in verl's row schema.

Rows mix three of verl's data sources, each asking for its own answer format,
so the built-in scorers judge them exactly as in verl:

- ``openai/gsm8k``: the answer after ``####`` (scorer ``gsm8k``)
- ``lighteval/MATH``: the answer in ``\boxed{}`` (scorer ``math_reward``)
- ``math_dapo``: a final ``Answer: n`` line (scorer ``math_dapo``, reward +-1)

Problems are additions and subtractions with one-digit operands and answers
and short prompts, so a tiny character-level model can learn them on a laptop
CPU in minutes.
Generation is deterministic in the seed; ``python -m rewardsmith.demo.arith_problems DIR``
writes the shipped ``arith_*.jsonl`` files.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Callable, Iterable

NAMES = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kim", "Lu", "Max", "Ned", "Ola", "Pat"]
THINGS = ["pens", "cats", "cups", "eggs", "hats", "keys", "nuts", "owls", "rugs", "toys"]
ADD = ["{n} has {a} {t}, gets {b} more.", "{n} had {a} {t}, found {b}.", "{n} buys {a} {t}, then {b} more."]
SUB = ["{n} has {a} {t}, loses {b}.", "{n} had {a} {t}, gave {b} away.", "{n} owns {a} {t}, sells {b}."]
# data_source -> (the format cue ending the prompt, the expected completion). The
# completion first writes the equation, then the answer in the source's format:
# a short chain of thought that puts the operands next to the answer.
FORMATS = {
    "openai/gsm8k": ("Use ####", "{e}={x}\n#### {x}"),
    "lighteval/MATH": ("Use \\boxed", "{e}={x} so \\boxed{{{x}}}"),
    "math_dapo": ("Use Answer:", "{e}={x}\nAnswer: {x}"),
}


# The training split's shares of data sources. `\boxed{}` is accepted by two of
# the three scorers (MATH's, and math_dapo's fallback when there is no
# `Answer:` line, as in verl 0.9), `####` by gsm8k's alone. In equal shares a
# policy that boxes every answer is paid on two prompts in three, and GRPO
# drives it there within ten steps; gsm8k's prompts then see only boxed
# samples, all scored 0, which give no gradient, and gsm8k stays at 0 unless
# a lucky `####` sample turns up. With half the rows gsm8k's, `####` and
# `\boxed{}` are paid equally often and the policy learns to read the cue.
TRAIN_SOURCE_WEIGHTS = {"openai/gsm8k": 2, "lighteval/MATH": 1, "math_dapo": 1}


def make_problem(rng: random.Random, index: int, split: str, any_format: bool = False,
                 source_weights: dict[str, float] | None = None) -> dict:
    """One row: a random problem, its data source, and (in ``response``) a target completion.

    With ``any_format`` the completion uses one of the three answer conventions
    at random, whatever the row's data source asks for. The data source is
    drawn with ``source_weights`` (default: equal shares).
    """
    # One-digit operands and answers: a + b <= 9, a - b >= 0.
    subtract = rng.random() < 0.5
    if subtract:
        a = rng.randint(1, 9)
        b = rng.randint(0, a)
    else:
        a = rng.randint(0, 8)
        b = rng.randint(1, 9 - a)
    answer = a - b if subtract else a + b
    expression = f"{a}{'-' if subtract else '+'}{b}"
    story = rng.choice(SUB if subtract else ADD).format(n=rng.choice(NAMES), a=a, b=b, t=rng.choice(THINGS))
    if source_weights is None:
        source = rng.choice(list(FORMATS))
    else:
        source = rng.choices(list(source_weights), weights=list(source_weights.values()))[0]
    instruction, response = FORMATS[source]
    if any_format:
        response = FORMATS[rng.choice(list(FORMATS))][1]
    return {
        "data_source": source,
        "prompt": [{"role": "user", "content": f"{story} How many? {instruction}"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(answer)},
        "extra_info": {"split": split, "index": index, "expression": expression},
        "response": response.format(e=expression, x=answer),
    }


def distinct_rows(n: int, seed: int, make_row: Callable[[random.Random, int], dict],
                  exclude: Iterable[str] = ()) -> list[dict]:
    """``n`` rows from ``make_row(rng, index)`` with a ``seed``-ed rng, no two (nor any in ``exclude``)
    with the same prompt text."""
    rng = random.Random(seed)
    rows: list[dict] = []
    seen = set(exclude)
    while len(rows) < n:
        row = make_row(rng, len(rows))
        text = row["prompt"][0]["content"]
        if text not in seen:
            seen.add(text)
            rows.append(row)
    return rows


def prompt_texts(rows: Iterable[dict]) -> set[str]:
    """The rows' first prompt messages: what a held-out split must not repeat."""
    return {r["prompt"][0]["content"] for r in rows}


def make_split(n: int, seed: int, split: str, exclude: set[str] = frozenset(), any_format: bool = False,
               source_weights: dict[str, float] | None = None) -> list[dict]:
    """``n`` distinct problems from ``seed`` whose prompt text is not in ``exclude``."""
    return distinct_rows(n, seed, lambda rng, index: make_problem(rng, index, split, any_format, source_weights), exclude)


def make_dataset(n_sft: int = 1536, n_train: int = 2048, n_val: int = 128, seed: int = 0) -> dict[str, list[dict]]:
    """The demo splits ``sft``, ``train`` and ``val``; validation prompts never occur in sft or train.

    The SFT responses are correct but written in a random one of the three
    answer conventions, as in a warm-start corpus gathered from mixed sources:
    the warm-started policy can do the arithmetic but ignores the format its
    data source asks for, and RL with the sources' scorers teaches it. The
    SFT split is large (1536 rows, each shown 15 times in the demo) so that the
    warm start learns to read the operands off new prompts rather than memorise
    a few hundred; the training split draws sources with :data:`TRAIN_SOURCE_WEIGHTS`.
    """
    sft = make_split(n_sft, seed, "sft", any_format=True)
    train = make_split(n_train, seed + 1, "train", source_weights=TRAIN_SOURCE_WEIGHTS)
    val = make_split(n_val, seed + 2, "val", exclude=prompt_texts(sft + train))
    return {"sft": sft, "train": train, "val": val}


def write_splits(directory: str | Path, splits: dict[str, list[dict]], prefix: str) -> dict[str, Path]:
    """Write each split as ``{prefix}_{split}.jsonl`` into ``directory``; returns their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, rows in splits.items():
        path = directory / f"{prefix}_{split}.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        paths[split] = path
    return paths


def write_dataset(directory: str | Path, **kwargs: int) -> dict[str, Path]:
    """Write ``arith_{sft,train,val}.jsonl`` into ``directory``; returns their paths."""
    return write_splits(directory, make_dataset(**kwargs), "arith")


if __name__ == "__main__":
    for split, path in write_dataset(sys.argv[1] if len(sys.argv) > 1 else "examples/data").items():
        print(f"{split}: {path}")
