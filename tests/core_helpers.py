"""Shared set-up for the core/train tests: a tiny model, the arithmetic rows and a custom reward."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from rewardsmith.demo.arith_problems import make_dataset
from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.common.config import load_config
from rewardsmith.common.rows import write_rows
from rewardsmith.core.schema import Config

if TYPE_CHECKING:
    from rewardsmith.core.trainer import PPOTrainer

TINY_MODEL = (
    "{model_type: qwen2, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
    "num_key_value_heads: 2, max_position_embeddings: 128, tie_word_embeddings: true}"
)

# A reward a random tiny model can improve in a few steps: the share of digit
# characters in the response (loaded as a verl-style custom compute_score file).
DIGITS_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
'''


def write_inputs(tmp_path: Path, n_train: int = 64, n_val: int = 8) -> dict[str, Path]:
    """Arithmetic rows, the character tokenizer and the custom reward file under ``tmp_path``."""
    splits = make_dataset(n_sft=32, n_train=n_train, n_val=n_val)
    paths = {}
    for split, rows in splits.items():
        paths[split] = tmp_path / f"{split}.jsonl"
        write_rows(paths[split], rows)
    paths["tokenizer"] = tmp_path / "tokenizer"
    build_char_tokenizer().save_pretrained(paths["tokenizer"])
    paths["reward"] = tmp_path / "digits.py"
    paths["reward"].write_text(DIGITS_REWARD)
    return paths


def tiny_overrides(tmp_path: Path, paths: dict[str, Path], custom_reward: bool = True) -> list[str]:
    """A run of two tiny steps: 4 prompts x 2 samples, 8-token responses."""
    overrides = [
        f"data.tokenizer={paths['tokenizer']}",
        f"data.train_files={paths['train']}",
        f"data.val_files={paths['val']}",
        f"sft.train_files={paths['sft']}",
        f"actor_rollout_ref.model.config={TINY_MODEL}",
        "data.max_prompt_length=96",
        "data.max_response_length=8",
        "data.train_batch_size=4",
        "actor_rollout_ref.rollout.n=2",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2",
        "actor_rollout_ref.actor.optim.lr=0.001",
        f"trainer.default_local_dir={tmp_path / 'run'}",
        "trainer.progress_bar=false",
        "trainer.logger=[jsonl]",
        "trainer.total_training_steps=2",
        "trainer.val_before_train=false",
        "trainer.device=cpu",
        # One thread: tiny models gain nothing from more, and tests share the cores.
        "trainer.cpu_threads=1",
    ]
    if custom_reward:
        overrides.append(f"custom_reward_function.path={paths['reward']}")
    return overrides


def tiny_config(tmp_path: Path, *extra: str, custom_reward: bool = True) -> Config:
    paths = write_inputs(tmp_path)
    return load_config(Config, None, [*tiny_overrides(tmp_path, paths, custom_reward), *extra])


def write_reward(tmp_path: Path, source: str) -> str:
    """``source`` as ``tmp_path``/reward.py; returns the override that loads it as the custom compute_score."""
    path = tmp_path / "reward.py"
    path.write_text(source)
    return f"custom_reward_function.path={path}"


def two_steps(trainer: PPOTrainer) -> list[dict]:
    """Experience and update of two steps: what overlapping or streaming the rewards must not change."""
    out = []
    for step in (1, 2):
        trainer.global_step = step
        timing: dict[str, float] = {}
        batch, metrics = trainer.make_experience(next(trainer.prompt_batches), timing)
        metrics.update(trainer.update(batch))
        out.append({"responses": batch["responses"], "scores": batch["token_level_scores"], "advantages": batch["advantages"],
                    "old_log_probs": batch["old_log_probs"], "unscored": batch["unscored"], "metrics": metrics,
                    "timing": timing})
    return out


def assert_same_steps(whole: list[dict], streamed: list[dict]) -> None:
    """:func:`two_steps` run both ways gave the same responses, scores, advantages, log-probs and losses."""
    import pytest

    for a, b in zip(whole, streamed):
        assert torch.equal(a["responses"], b["responses"])
        assert torch.equal(a["unscored"], b["unscored"])
        torch.testing.assert_close(a["scores"], b["scores"])
        torch.testing.assert_close(a["advantages"], b["advantages"])
        torch.testing.assert_close(a["old_log_probs"], b["old_log_probs"])
        for key in ("actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "reward/mean", "reward/unscored", "reward/errors"):
            assert b["metrics"][key] == pytest.approx(a["metrics"][key], rel=1e-5, abs=1e-7), key


def fit_and_assert_trained(trainer: PPOTrainer) -> dict[str, float]:
    """``trainer.fit()``, asserting the actor's weights changed and the last pg_loss is finite; returns the last metrics.

    The caller closes the trainer."""
    before = {k: v.clone() for k, v in trainer.actor.model.state_dict().items()}
    last = trainer.fit()
    after = trainer.actor.model.state_dict()
    assert torch.isfinite(torch.tensor(last["actor/pg_loss"]))
    assert any(not torch.equal(before[k], after[k]) for k in before)
    return last


DEMO_SOURCES = ("lighteval/MATH", "math_dapo", "openai/gsm8k")


def run_demo_command(out_dir: Path, *overrides: str, timeout: float) -> subprocess.CompletedProcess:
    """``rewardsmith demo`` exactly as ``make demo`` runs it: the console script in a process of its own.

    In-process (``cli.main`` under pytest) the demo inherited the test session's
    state: test modules set ``torch.set_num_threads(1)`` at import, so it never ran
    with torch's default threads as ``make demo`` does. Only the output
    directory is redirected here (last, so that it wins).
    """
    script = Path(sys.executable).with_name("rewardsmith")
    proc = subprocess.run([str(script), "demo", *overrides, f"trainer.default_local_dir={out_dir}"],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def demo_validations(out_dir: Path) -> list[dict]:
    """The demo run's validation records (``val/reward/...``) from its metrics.jsonl, in order."""
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in records if "val/reward/mean" in r]


def no_argument_schema(name: str):
    """The OpenAI function schema of a test tool named ``name`` that takes no arguments."""
    from rewardsmith.reward_fns.tools import OpenAIFunctionToolSchema

    return OpenAIFunctionToolSchema.model_validate(
        {"type": "function", "function": {"name": name, "description": "",
                                          "parameters": {"type": "object", "properties": {}, "required": []}}})
