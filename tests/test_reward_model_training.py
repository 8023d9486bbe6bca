"""`rewardsmith rm train`: the Bradley-Terry loss, a learned synthetic preference, save and load by path."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from model_scoring_helpers import TINY_RM, a_share, preference_rows

from rewardsmith.common.rows import write_rows
from rewardsmith.core.reward_model_training import bradley_terry_loss
from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.plugins.config import RewardModelPathConfig
from rewardsmith.plugins.model_scoring.interface import ModelRequest
from rewardsmith.plugins.model_scoring.local_rm import LocalRewardModel

torch.set_num_threads(1)


def test_bradley_terry_loss_with_margin_and_centering():
    chosen, rejected = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 1.0])
    plain = -(math.log(1 / (1 + math.exp(-2.0))) + math.log(1 / (1 + math.exp(1.0)))) / 2
    assert bradley_terry_loss(chosen, rejected).item() == pytest.approx(plain)
    margin = torch.tensor([1.0, 0.0])
    with_margin = -(math.log(1 / (1 + math.exp(-1.0))) + math.log(1 / (1 + math.exp(1.0)))) / 2
    assert bradley_terry_loss(chosen, rejected, margin).item() == pytest.approx(with_margin)
    centred = bradley_terry_loss(chosen, rejected, None, 0.5).item()
    assert centred == pytest.approx(plain + 0.5 * (4.0 + 1.0) / 2)


@pytest.mark.slow
def test_rm_train_learns_a_preference_saves_and_loads_by_path(tmp_path, capsys):
    from rewardsmith.cli import main

    build_char_tokenizer().save_pretrained(tmp_path / "tok")
    write_rows(tmp_path / "pairs.jsonl", preference_rows(400, seed=0))
    model = "{" + ", ".join(f"{k}: {v}" for k, v in TINY_RM.items()) + "}"
    assert main(["rm", "train", f"data.train_files={tmp_path / 'pairs.jsonl'}", "data.max_length=64",
                 f"model.tokenizer={tmp_path / 'tok'}", f"model.config={model}", f"save_dir={tmp_path / 'rm'}",
                 "epochs=3", "lr=0.003", "cpu_threads=1", "progress_bar=false"]) == 0
    out = capsys.readouterr()
    accuracy = float(out.out.split("held-out pairwise accuracy ")[1].rstrip(")\n"))
    assert accuracy >= 0.9 and "epoch 3: held-out pairwise accuracy" in out.err
    # loads by path as the local reward model and ranks unseen responses by the preference
    rm = LocalRewardModel(RewardModelPathConfig(path=str(tmp_path / "rm")))
    texts = ["bcdxyz", "abcxyz", "aabxya", "aaaaaa"]
    scores = [o.score for o in rm.score([ModelRequest("open", [{"role": "user", "content": "Say something."}], t) for t in texts])]
    assert sorted(range(4), key=scores.__getitem__) == sorted(range(4), key=lambda i: a_share(texts[i]))


def test_rm_train_runs_on_the_shipped_sample_pairs(tmp_path):
    # What docs/reward_models.md tells a newcomer to run, from the repository root.
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-m", "rewardsmith", "rm", "train", "examples/configs/rm_arith.yaml",
                           f"save_dir={tmp_path / 'rm'}", "epochs=1", "progress_bar=false", "cpu_threads=1"],
                          capture_output=True, text=True, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"saved reward model to {tmp_path / 'rm'} (held-out pairwise accuracy ")
    assert "epoch 1: held-out pairwise accuracy" in done.stderr and "(16 pairs)" in done.stderr
    rm = LocalRewardModel(RewardModelPathConfig(path=str(tmp_path / "rm")))
    (outcome,) = rm.score([ModelRequest("openai/gsm8k", [{"role": "user", "content": "2+2?"}], "2+2=4\n#### 4")])
    assert outcome.status == "ok" and math.isfinite(outcome.score)
