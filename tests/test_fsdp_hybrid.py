"""verl's fsdp_size below the world size: hybrid sharding (HSDP) on FSDP2's 2-D mesh, 4 gloo ranks on the CPU
against one process."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core_helpers import tiny_config, tiny_overrides, write_inputs
from test_train_distributed import GREEDY, LOSSES, NEAR_ZERO, OPTIONS, metrics, train

from rewardsmith.common.config import ConfigError, InvalidValue
from rewardsmith.core.fsdp_mesh import fsdp_mesh_shape
from rewardsmith.sandbox.testing import free_port

RANK_PROGRAM = Path(__file__).with_name("hsdp_rank.py")


def run_ranks(out: Path, ranks: int, fsdp_size: int) -> list[dict]:
    """``hsdp_rank.py`` on ``ranks`` torchrun ranks (or one plain process); every rank's results."""
    out.mkdir()
    launcher = ([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={ranks}", "--master-addr=127.0.0.1",
                 f"--master-port={free_port()}"] if ranks > 1 else [sys.executable])
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([*launcher, str(RANK_PROGRAM), str(out), str(fsdp_size)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [torch.load(out / f"rank{r}.pt") for r in range(ranks)]


@pytest.mark.slow
def test_four_ranks_sharded_within_pairs_train_as_one_process_and_resume(tmp_path):
    one = run_ranks(tmp_path / "one", 1, -1)[0]
    hsdp = run_ranks(tmp_path / "hsdp", 4, 2)
    assert one["mesh_shape"] == (1,) and one["mesh_dim_names"] == ("fsdp",)
    assert min(one["norms"]) > 0.05  # clipping acts
    for rank in hsdp:
        assert rank["mesh_shape"] == (2, 2) and rank["mesh_dim_names"] == ("ddp", "fsdp")
        # The same steps as one process on the whole batch: the same global gradient norms (a gradient averaged
        # rather than summed across the ranks would be smaller), and the same weights up to float32 reduction
        # order (three AdamW steps of lr 1e-2 from weights of about 0.1; they differ by ~1e-6).
        assert rank["norms"] == pytest.approx(one["norms"], rel=1e-5)
        for name, value in one["weights"].items():
            torch.testing.assert_close(rank["weights"][name], value, rtol=1e-4, atol=1e-5, msg=name)
        # Each rank holds half of every parameter (sharded within its pair of ranks).
        for name, value in rank["weights"].items():
            assert rank["local"][name].numel() * 2 == value.numel(), name
        # The checkpoint saved under HSDP loads back, optimizer state included: one more step after loading
        # is the step the trained model took.
        for name, value in rank["weights"].items():
            assert torch.equal(rank["loaded"][name], value), name
            assert torch.equal(rank["resumed"][name], rank["continued"][name]), name
    # Ranks r and r + 2 replicate one shard; the two ranks of a pair hold different halves.
    for first, second in ((0, 2), (1, 3)):
        for name, value in hsdp[first]["local"].items():
            assert torch.equal(value, hsdp[second]["local"][name]), name
    assert any(not torch.equal(hsdp[0]["local"][name], hsdp[1]["local"][name]) for name in hsdp[0]["local"])


@pytest.mark.slow
def test_the_trainer_on_hsdp_gives_the_losses_of_plain_fsdp(tmp_path):
    """PPO (critic, KL loss, clipping) on 4 ranks, balance_batch on and a checkpoint saved: fsdp_size=2 against -1."""
    paths = write_inputs(tmp_path)
    options = [o for o in OPTIONS if "micro_batch" not in o and "balance_batch" not in o]  # 2 samples do not split in 4
    common = [*tiny_overrides(tmp_path, paths), *options, *GREEDY, "actor_rollout_ref.actor.strategy=fsdp2",
              "critic.strategy=fsdp2", "trainer.n_gpus_per_node=4", "trainer.balance_batch=true", "trainer.save_freq=3"]
    train([*common, "actor_rollout_ref.actor.fsdp_config.fsdp_size=2", "critic.fsdp_config.fsdp_size=2",
           f"trainer.default_local_dir={tmp_path / 'hsdp'}"], ranks=4)
    train([*common, f"trainer.default_local_dir={tmp_path / 'plain'}"], ranks=4)
    hsdp, plain = metrics(tmp_path / "hsdp"), metrics(tmp_path / "plain")
    assert sorted(hsdp) == sorted(plain) == [1, 2, 3]
    for step in plain:
        for key in LOSSES:
            assert hsdp[step][key] == pytest.approx(plain[step][key], rel=1e-4, abs=NEAR_ZERO), f"step {step}: {key}"
    assert (tmp_path / "hsdp" / "global_step_3" / "actor" / "dcp" / ".metadata").is_file()


@pytest.mark.parametrize("size, world, shape", [(-1, 4, (4,)), (4, 4, (4,)), (32, 4, (4,)), (2, 4, (2, 2)),
                                                 (1, 4, (4, 1)), (2, 8, (4, 2))])
def test_fsdp_size_gives_verls_mesh(size, world, shape):
    assert fsdp_mesh_shape("fsdp_size", size, world) == shape


def test_an_fsdp_size_that_does_not_divide_the_world_size_is_refused_by_name(tmp_path):
    with pytest.raises(InvalidValue, match=r"^fsdp_size is 3, which does not divide the 4 ranks: .*use one of 1, 2, "
                                           r"or -1 \(shard over all 4 ranks\)"):
        fsdp_mesh_shape("fsdp_size", 3, 4)
    with pytest.raises(ConfigError, match=r"critic\.fsdp_config\.fsdp_size is 3, which does not divide the 4 ranks"):
        tiny_config(tmp_path, "trainer.n_gpus_per_node=4", "critic.fsdp_config.fsdp_size=3")


def test_an_fsdp_size_below_the_world_size_that_divides_it_is_accepted(tmp_path):
    config = tiny_config(tmp_path, "trainer.n_gpus_per_node=4", "actor_rollout_ref.actor.fsdp_config.fsdp_size=2",
                         "critic.fsdp_config.fsdp_size=1")
    assert config.actor_rollout_ref.actor.fsdp_config.fsdp_size == 2
    assert config.critic.fsdp_config.fsdp_size == 1
