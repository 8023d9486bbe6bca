"""The embedded demo: a supervised warm start, then GRPO, on the shipped arithmetic problems.

Everything is built locally (data from :mod:`rewardsmith.demo.arith_problems`, a character
tokenizer, a tiny Qwen2-style model from a config), so nothing is downloaded.
The run prints a before/after table per data source and writes
``reward_curve.png`` and ``metrics.jsonl`` to its output directory.

With ``multi_turn`` (``rewardsmith demo --multi-turn``) the same pipeline runs
multi-turn episodes instead: multiplications that need the ``calculator`` tool
(:mod:`rewardsmith.demo.tool_problems`), a warm start on tool-use transcripts,
and a table that adds the tool calls per episode and the tool error rate.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

from rewardsmith.demo import arith_problems, tool_problems
from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config

# Heads of 32, the smallest size vLLM's CPU attention has a kernel for (so
# that the demo runs with either rollout engine); four of them, 128 wide,
# learn the three answer formats reliably with both.
def tiny_qwen2(max_positions: int) -> str:
    """The demo model's config (as an override value) with room for ``max_positions`` tokens."""
    return ("{model_type: qwen2, hidden_size: 128, intermediate_size: 256, num_hidden_layers: 2, num_attention_heads: 4, "
            f"num_key_value_heads: 4, max_position_embeddings: {max_positions}, tie_word_embeddings: true}}")


TINY_QWEN2 = tiny_qwen2(128)

# The demo's settings, in the same key=value language as the command line;
# the user's overrides come after and win.
DEMO_OVERRIDES = [
    "trainer.default_local_dir=outputs/demo",
    "trainer.experiment_name=demo",
    "trainer.resume_mode=disable",
    "trainer.total_training_steps=80",
    "trainer.test_freq=10",
    "trainer.save_freq=40",
    # One torch thread: the model is too small to gain from more, and with
    # torch's default (a thread per core) a step slows down many times as soon
    # as other processes share the cores (the warm start took 20 minutes instead of 3).
    "trainer.cpu_threads=1",
    f"actor_rollout_ref.model.config={TINY_QWEN2}",
    "data.max_prompt_length=96",
    "data.max_response_length=20",
    "data.train_batch_size=32",
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.rollout.n=8",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    # The demo's recorded curves (README, docs/training.md) were measured in the rollout's order.
    "trainer.balance_batch=false",
    "actor_rollout_ref.actor.optim.lr=0.0005",
    "sft.total_epochs=15",
    "sft.batch_size=32",
    "sft.lr=0.005",
]
# The multi-turn demo's settings, on top of DEMO_OVERRIDES: an episode (a tool call, the
# calculator's result, the answer) is about 110 characters, so the response budget and the
# model's positions grow; fewer, shorter-sampled steps keep it within minutes on 2 cores.
MULTI_TURN_OVERRIDES = [
    "trainer.default_local_dir=outputs/demo_multi_turn",
    "trainer.experiment_name=demo_multi_turn",
    "trainer.total_training_steps=40",
    "trainer.test_freq=10",
    "trainer.save_freq=-1",
    # An episode that runs into the response budget leaves the loss (SimpleRL-Zoo's option): otherwise a
    # right answer followed by text without an end-of-turn is still paid, and after 30 steps the policy
    # stopped ending its answers (held-out reward 0.74 -> 0.58 between steps 30 and 40).
    "trainer.remove_clip=true",
    # The learning rate decays (cosine, to a tenth) so that the late steps refine the copying
    # instead of undoing it: at a constant rate held-out reward swung by 0.1 between validations.
    "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
    "actor_rollout_ref.actor.optim.min_lr_ratio=0.1",
    f"actor_rollout_ref.model.config={tiny_qwen2(192)}",
    "data.max_prompt_length=32",
    "data.max_response_length=128",
    "actor_rollout_ref.rollout.multi_turn.enable=true",
    "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
    # 16 epochs (1024 steps): after 10, one seed in three had not yet learned to copy a number (its loss
    # had not dropped), and its policy scored 0 on every episode, tool calls included.
    "sft.total_epochs=16",
]
TARGET = 0.8


def demo_config(overrides: Sequence[str] = (), multi_turn: bool = False) -> Config:
    """The demo's config: :data:`DEMO_OVERRIDES` (and :data:`MULTI_TURN_OVERRIDES`), then ``overrides``."""
    return load_config(Config, None, [*DEMO_OVERRIDES, *(MULTI_TURN_OVERRIDES if multi_turn else ()), *overrides])


def prepare(out_dir: Path, multi_turn: bool = False) -> list[str]:
    """Write the dataset and tokenizer (and the tool config) under ``out_dir``; returns the overrides pointing at them."""
    problems = tool_problems if multi_turn else arith_problems
    paths = problems.write_dataset(out_dir / "data")
    build_char_tokenizer().save_pretrained(out_dir / "tokenizer")
    overrides = [
        f"data.tokenizer={out_dir / 'tokenizer'}",
        f"sft.train_files={paths['sft']}",
        f"data.train_files={paths['train']}",
        f"data.val_files={paths['val']}",
        f"sft.save_dir={out_dir / 'sft_model'}",
    ]
    if multi_turn:
        tools = tool_problems.write_tool_config(out_dir / "tools.yaml")
        overrides.append(f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}")
    return overrides


def read_metrics(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _val_metrics(record: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in record.items() if k.startswith("val/")}


def before_after(records: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
    """The first and last validation records' ``val/...`` metrics."""
    vals = [r for r in records if "val/reward/mean" in r]
    if not vals:
        raise ValueError("metrics.jsonl holds no validation lines (val/reward/mean)")
    return _val_metrics(vals[0]), _val_metrics(vals[-1])


def tool_error_rate(metrics: dict[str, float]) -> Optional[float]:
    """Failed tool calls over all tool calls in validation metrics (``val/tool/<name>/...``); None without calls."""
    calls = sum(v for k, v in metrics.items() if k.startswith("val/tool/") and k.endswith("/calls"))
    failures = sum(v for k, v in metrics.items() if k.startswith("val/tool/") and k.endswith("/failures"))
    return failures / calls if calls else None


def tool_rows(before: dict[str, float], after: dict[str, float]) -> dict[str, tuple[Optional[float], Optional[float]]]:
    """The multi-turn demo's extra table rows: tool calls per held-out episode, and the share of them that failed."""
    key = "val/multi_turn/tool_calls_per_episode"
    return {"tool calls/episode": (before.get(key), after.get(key)),
            "tool error rate": (tool_error_rate(before), tool_error_rate(after))}


def format_table(before: dict[str, float], after: dict[str, float], counts: dict[str, int],
                 extra_rows: Optional[dict[str, tuple[Optional[float], Optional[float]]]] = None) -> str:
    """A before/after table of mean validation reward per data source of ``counts`` (and overall),
    then ``extra_rows`` (label -> before, after; None shows as ``-``)."""
    # Only the data sources themselves: the reward managers' per-component and
    # per-scorer means (val/reward/source/..., val/reward/<scorer>/...) are in metrics.jsonl.
    sources = sorted(s for s in counts if f"val/reward/{s}/mean" in after)
    extra_rows = extra_rows or {}
    width = max([len("data_source"), *map(len, sources), *map(len, extra_rows)]) + 2
    lines = [f"{'data_source':<{width}}{'rows':>6}{'before':>9}{'after':>9}"]
    for source in sources:
        key = f"val/reward/{source}/mean"
        lines.append(f"{source:<{width}}{counts.get(source, 0):>6}{before.get(key, float('nan')):>9.3f}{after[key]:>9.3f}")
    lines.append(f"{'all':<{width}}{sum(counts.values()):>6}{before['val/reward/mean']:>9.3f}{after['val/reward/mean']:>9.3f}")
    for label, values in extra_rows.items():
        cells = "".join(f"{'-':>9}" if v is None else f"{v:>9.3f}" for v in values)
        lines.append(f"{label:<{width}}{'':>6}{cells}")
    return "\n".join(lines)


def plot_rewards(records: list[dict[str, Any]], path: Path, title: str = "GRPO on arithmetic word problems") -> Path:
    """PNG of the training score and validation reward per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [(r["step"], r["critic/score/mean"]) for r in records if "critic/score/mean" in r]
    val = [(r["step"], r["val/reward/mean"]) for r in records if "val/reward/mean" in r]
    fig, ax = plt.subplots(figsize=(7, 4))
    if train:
        ax.plot(*zip(*train), label="train score (sampled)", alpha=0.6)
    ax.plot(*zip(*val), marker="o", label="validation reward (greedy)")
    ax.axhline(TARGET, linestyle="--", color="grey", linewidth=1, label=f"target {TARGET}")
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward")
    ax.set_title(f"rewardsmith demo: {title}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def run_demo(overrides: Sequence[str] = (), stream=None, multi_turn: bool = False) -> dict[str, Any]:
    """Warm start, train, and report; returns the before/after metrics and the output paths.

    With ``multi_turn``, the calculator demo (:data:`MULTI_TURN_OVERRIDES`, :mod:`rewardsmith.demo.tool_problems`).
    """
    from rewardsmith.core.sft import run_sft
    from rewardsmith.core.trainer import PPOTrainer, output_dir

    out_dir = output_dir(demo_config(overrides, multi_turn))
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"rewardsmith demo: output directory {out_dir.resolve()}", file=stream, flush=True)
    prepared = prepare(out_dir, multi_turn)
    # The user's overrides still win over the prepared paths.
    config = demo_config([*prepared, *overrides], multi_turn)
    sft_dir = run_sft(config, stream=stream)
    config = demo_config([*prepared, f"actor_rollout_ref.model.path={sft_dir}", *overrides], multi_turn)
    trainer = PPOTrainer(config, stream=stream)
    try:
        trainer.fit()
    finally:
        trainer.close()
    records = read_metrics(out_dir / "metrics.jsonl")
    before, after = before_after(records)
    counts: dict[str, int] = {}
    for source in trainer.val_set.data_sources() if trainer.val_set else []:
        counts[source] = sum(1 for r in trainer.val_set.rows if r[config.data.reward_fn_key] == source)
    title = "GRPO with a calculator tool, multi-turn" if multi_turn else "GRPO on arithmetic word problems"
    return {
        "before": before,
        "after": after,
        "table": format_table(before, after, counts, tool_rows(before, after) if multi_turn else None),
        "plot": plot_rewards(records, out_dir / "reward_curve.png", title),
        "metrics": out_dir / "metrics.jsonl",
        "out_dir": out_dir,
    }


def summary(result: dict[str, Any], target: Optional[float] = TARGET) -> str:
    after = result["after"]["val/reward/mean"]
    verdict = "reached" if target is not None and after >= target else "not reached"
    return (
        f"{result['table']}\n\nheld-out reward {result['before']['val/reward/mean']:.3f} -> {after:.3f} "
        f"(target {target}: {verdict})\nreward curve: {result['plot']}\nmetrics: {result['metrics']}"
    )
