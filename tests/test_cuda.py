"""The CUDA paths: FSDP2 over an NCCL process group, bf16 mixed precision and CPU offload on a GPU.

Every other test runs on the CPU (gloo, fp32); these need a CUDA device and
are skipped without one. They ran on an H100 (docs/training.md, "On a GPU").
"""
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from core_helpers import tiny_overrides, write_inputs

from rewardsmith.sandbox.testing import free_port

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device on this machine: the NCCL, bf16 and GPU-offload paths need one")

GREEDY = ["actor_rollout_ref.rollout.do_sample=false", "data.val_files=[]", "trainer.total_training_steps=3",
          "algorithm.adv_estimator=gae", "actor_rollout_ref.actor.use_kl_loss=true", "trainer.balance_batch=false"]
FSDP2 = ["actor_rollout_ref.actor.strategy=fsdp2", "critic.strategy=fsdp2"]
BF16 = [f"{role}.fsdp_config.mixed_precision.param_dtype=bfloat16" for role in ("actor_rollout_ref.actor", "critic")]
LOSSES = ("actor/pg_loss", "actor/kl_loss", "actor/entropy", "critic/vf_loss", "critic/score/mean")


def train(overrides: list[str], torchrun: bool) -> None:
    """`rewardsmith train` on the GPU, under torchrun (an NCCL group of one) or as a plain process."""
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=1", "--master-addr=127.0.0.1",
                 f"--master-port={free_port()}", "-m", "rewardsmith"] if torchrun else [sys.executable, "-m", "rewardsmith"])
    proc = subprocess.run([*launcher, "train", *overrides], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]


def metrics(out_dir) -> dict[int, dict]:
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r for r in records}


def gpu_overrides(tmp_path, name: str) -> list[str]:
    paths = write_inputs(tmp_path)
    base = [o for o in tiny_overrides(tmp_path, paths) if not o.startswith("trainer.device=")]
    return [*base, *GREEDY, "trainer.device=cuda", f"trainer.default_local_dir={tmp_path / name}"]


def test_fsdp2_over_nccl_gives_the_losses_of_the_local_strategy_on_the_gpu(tmp_path):
    train(gpu_overrides(tmp_path, "local"), torchrun=False)
    train([*gpu_overrides(tmp_path, "nccl"), *FSDP2], torchrun=True)
    local, sharded = metrics(tmp_path / "local"), metrics(tmp_path / "nccl")
    assert sorted(local) == sorted(sharded) == [1, 2, 3]
    for step in local:
        for key in LOSSES:
            # TF32 and cuBLAS's kernel choice differ between a sharded and a plain module's matmuls.
            assert sharded[step][key] == pytest.approx(local[step][key], rel=1e-3, abs=1e-4), f"step {step}: {key}"


def test_bf16_mixed_precision_and_gpu_offload_train_with_finite_losses(tmp_path):
    offload = [f"{role}.fsdp_config.offload_policy=true" for role in ("actor_rollout_ref.actor", "critic")]
    train([*gpu_overrides(tmp_path, "bf16"), *FSDP2, *BF16, *offload], torchrun=True)
    bf16 = metrics(tmp_path / "bf16")
    assert sorted(bf16) == [1, 2, 3]
    for step in bf16:
        assert all(math.isfinite(bf16[step][key]) for key in LOSSES), bf16[step]
        assert bf16[step]["actor/grad_norm"] > 0
