"""The multi-turn demo's dataset: multiplications a tiny model cannot do in its head, and a calculator.

Each row asks for the product of a 4-digit and a 3-digit number (``What is 4821*337?``)
as verl's ``openai/gsm8k`` source: the answer after ``####``, judged by the
built-in ``gsm8k`` scorer. A tiny character-level model does not learn
multiplication in minutes, but it can copy: the way to the answer is to call
the ``calculator`` tool (Hermes ``<tool_call>`` JSON, verl's default format)
and copy its result.

The warm-start transcripts (``response``: the assistant and tool turns after
the prompt) mix two kinds, as a corpus gathered from mixed sources would: in
:data:`TOOL_SHARE` of them the assistant calls the calculator and then
answers; in the rest it writes the (correct) answer at once. The
warm-started policy mostly answers at once and is wrong, sometimes calls the
tool and is right; GRPO, rewarded only by the final answer, teaches it to call.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from rewardsmith.demo.arith_problems import distinct_rows, prompt_texts, write_splits

DATA_SOURCE = "openai/gsm8k"
TOOL = "calculator"
# The share of warm-start transcripts that call the tool: half, so the warm-started policy's
# greedy answer mostly skips it while nearly every group of 8 samples holds a call. With 0.3 the
# policy learned to call (held-out calls per episode 0 -> 1) but kept miscopying the first digit of
# a number (the tool's result into the answer, an operand into the call) in 15-25% of episodes:
# the in-head transcripts had taught it to guess a product's leading digit. Held-out reward
# stayed between 0.72 and 0.87 from step 10 on; with 0.5 it reached 0.97 at step 20.
TOOL_SHARE = 0.5


def tool_call_text(expression: str) -> str:
    """The assistant turn that calls the calculator on ``expression`` (compact JSON, so fewer tokens)."""
    call = {"name": TOOL, "arguments": {"expression": expression}}
    return f"<tool_call>{json.dumps(call, separators=(',', ':'))}</tool_call>"


def make_problem(rng: random.Random, index: int, split: str, tool_share: float = TOOL_SHARE) -> dict:
    """One row: a 4-digit number times a 3-digit one, with a warm-start transcript in ``response``."""
    # Always 4 by 3 digits with a 7-digit product: each copy (the operands into the call, the
    # result into the answer) is then at a fixed distance, which a tiny model learns in minutes.
    a, b = rng.randint(1000, 9999), rng.randint(100, 999)
    while a * b < 10**6:
        a, b = rng.randint(1000, 9999), rng.randint(100, 999)
    expression, answer = f"{a}*{b}", str(a * b)
    if rng.random() < tool_share:
        response = [{"role": "assistant", "content": tool_call_text(expression)}, {"role": "tool", "content": answer},
                    {"role": "assistant", "content": f"#### {answer}"}]
    else:
        # The in-head answer is stated first, so that `#### ` is always followed by a copy of a number
        # 14 tokens back (the tool's result, or this statement): the guess happens elsewhere, and does not
        # compete with the copy (when both paths wrote `#### ` and then a guess or a copy, the warm-started
        # model often took the guess's first digit; held-out reward stayed near 0.72).
        response = [{"role": "assistant", "content": f"The product is {answer}.\n#### {answer}"}]
    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": f"What is {expression}?"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"split": split, "index": index, "expression": expression},
        "response": response,
    }


def make_dataset(n_sft: int = 2048, n_train: int = 1024, n_val: int = 128, seed: int = 0,
                 tool_share: float = TOOL_SHARE) -> dict[str, list[dict]]:
    """The splits ``sft`` (``tool_share`` of its transcripts call the tool), ``train`` and ``val``;
    validation prompts never occur in sft or train."""
    sft = distinct_rows(n_sft, seed, lambda rng, i: make_problem(rng, i, "sft", tool_share))
    train = distinct_rows(n_train, seed + 1, lambda rng, i: make_problem(rng, i, "train"), prompt_texts(sft))
    val = distinct_rows(n_val, seed + 2, lambda rng, i: make_problem(rng, i, "val"), prompt_texts(sft + train))
    return {"sft": sft, "train": train, "val": val}


def write_dataset(directory: str | Path, **kwargs: int) -> dict[str, Path]:
    """Write ``calc_{sft,train,val}.jsonl`` into ``directory``; returns their paths."""
    return write_splits(directory, make_dataset(**kwargs), "calc")


def write_tool_config(path: str | Path) -> Path:
    """verl's tool config YAML offering the built-in calculator (``multi_turn.tool_config_path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"tools:\n  - class_name: {TOOL}\n    config: {{type: native}}\n")
    return path
