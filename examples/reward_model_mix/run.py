"""One command: train a tiny reward model, then GRPO on rows that mix rules and the reward model.

    python examples/reward_model_mix/run.py [OUT_DIR] [key=value ...]

1. A synthetic preference made on the spot: among two short responses, the one
   with the larger share of the letter 'a' is preferred (learnable and
   checkable). `rewardsmith rm train` learns it and saves the model.
2. A dataset mixing the demo's arithmetic rows (`style: rule`, scored by the
   gsm8k / MATH / DAPO rules) with open-ended rows (`style: model`,
   data_source `open/chat`, scored by the reward model loaded by path).
3. A short supervised warm start on arithmetic, then GRPO with
   `reward_model.enable=true reward_model.route_by_style=true
   reward_model.model.path=<the saved model>` (route_by_style: rule rows keep
   their scorers; verl's default would give every row to the reward model).

It prints the held-out pairwise accuracy of the reward model and a
before/after table of validation reward per data_source; each kind rises.
Everything is built locally; nothing is downloaded. key=value overrides go to
the GRPO run (e.g. trainer.total_training_steps=20).
"""
from __future__ import annotations

import sys
from pathlib import Path

from rewardsmith.common.config import load_config
from rewardsmith.common.rows import write_rows
from rewardsmith.core.reward_model_training import RMTrainConfig, train_reward_model
from rewardsmith.demo import DEMO_OVERRIDES, before_after, format_table, read_metrics
from rewardsmith.demo.arith_problems import make_dataset
from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.demo.preferences import OPEN_PROMPTS, preference_pairs

OPEN_SOURCE = "open/chat"
TINY_RM = ("{model_type: qwen2, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
           "num_key_value_heads: 2, max_position_embeddings: 256}")


def open_rows(n: int, split: str) -> list[dict]:
    """Open-ended rows routed to the reward model."""
    return [{"data_source": OPEN_SOURCE, "prompt": [{"role": "user", "content": OPEN_PROMPTS[i % len(OPEN_PROMPTS)]}],
             "ability": "chat", "reward_model": {"style": "model", "ground_truth": ""},
             "extra_info": {"split": split, "index": i}} for i in range(n)]


def prepare(out: Path, pairs: int = 600, rm_epochs: int = 3) -> dict[str, Path]:
    """Tokenizer, preference pairs, the trained reward model and the mixed dataset under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"tokenizer": out / "tokenizer", "pairs": out / "pairs.jsonl", "rm": out / "reward_model"}
    build_char_tokenizer().save_pretrained(paths["tokenizer"])
    write_rows(paths["pairs"], preference_pairs(pairs, seed=0))
    rm_cfg = load_config(RMTrainConfig, None, [
        f"data.train_files={paths['pairs']}", "data.max_length=128", f"model.tokenizer={paths['tokenizer']}",
        f"model.config={TINY_RM}", f"save_dir={paths['rm']}", "batch_size=16", f"epochs={rm_epochs}", "lr=0.003",
        "cpu_threads=1"])
    metrics = train_reward_model(rm_cfg, stream=sys.stderr)
    paths["rm_accuracy"] = metrics["val/accuracy"]  # type: ignore[assignment]
    splits = make_dataset(n_sft=256, n_train=256, n_val=48)
    for split, n in (("train", 128), ("val", 12)):
        rows = splits[split] + open_rows(n, split)
        paths[split] = out / f"{split}.jsonl"
        write_rows(paths[split], rows)
    paths["sft"] = out / "sft.jsonl"
    write_rows(paths["sft"], splits["sft"])
    return paths


def run(out: Path, overrides: list[str] = (), sft_epochs: int = 40) -> dict:
    """Prepare, warm-start, train; returns the before/after validation means and the RM's accuracy."""
    from rewardsmith.core.schema import Config
    from rewardsmith.core.sft import run_sft
    from rewardsmith.core.trainer import PPOTrainer

    paths = prepare(out)
    common = [*DEMO_OVERRIDES, f"trainer.default_local_dir={out / 'run'}", f"data.tokenizer={paths['tokenizer']}",
              f"data.train_files={paths['train']}", f"data.val_files={paths['val']}", f"sft.train_files={paths['sft']}",
              f"sft.save_dir={out / 'sft_model'}", f"sft.total_epochs={sft_epochs}", "trainer.total_training_steps=30",
              "trainer.save_freq=-1", "trainer.cpu_threads=1", "trainer.progress_bar=false",
              "reward_model.enable=true", "reward_model.route_by_style=true", f"reward_model.model.path={paths['rm']}"]
    sft_dir = run_sft(load_config(Config, None, [*common, *overrides]), stream=sys.stderr)
    trainer = PPOTrainer(load_config(Config, None, [*common, f"actor_rollout_ref.model.path={sft_dir}", *overrides]), stream=sys.stderr)
    try:
        trainer.fit()
    finally:
        trainer.close()
    records = read_metrics(out / "run" / "metrics.jsonl")
    before, after = before_after(records)
    counts = {s: sum(r["data_source"] == s for r in trainer.val_set.rows) for s in trainer.val_set.data_sources()}
    return {"before": before, "after": after, "counts": counts, "rm_accuracy": paths["rm_accuracy"], "records": records}


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv and "=" not in argv[0] else Path("outputs/reward_model_mix")
    result = run(out, [a for a in argv if "=" in a])
    print(f"\nreward model: held-out pairwise accuracy {result['rm_accuracy']:.3f}")
    print("validation reward per data_source (open/chat is the reward model's score, the others rule scores):")
    print(format_table(result["before"], result["after"], result["counts"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
