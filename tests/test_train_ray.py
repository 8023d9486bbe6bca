"""The Ray backend on a real local 2-CPU cluster: worker groups of 2 FSDP2 ranks (actor with its
rollout, reference, critic) and a Ray reward worker give the losses of one process, resume
exactly from a checkpoint, and leave no process behind."""
import os
import subprocess
import sys

import pytest
import torch

from core_helpers import tiny_overrides, write_inputs
from test_train_distributed import FSDP2, GREEDY, LOSSES, OPTIONS, metrics, train

pytest.importorskip("ray", reason="ray is not installed (pip install 'rewardkit[ray]')")

pytestmark = pytest.mark.slow

RAY = ["trainer.backend=ray", "trainer.ray.cpus_per_rank=0.5",
       "reward_model.reward_manager=parallel", "reward_model.num_workers=1"]


def ray_processes() -> set[str]:
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return {line.strip() for line in out.splitlines() if "ray::" in line or "raylet" in line or "gcs_server" in line}


def test_ray_worker_groups_match_one_process_resume_and_shut_down(tmp_path):
    before = ray_processes()
    paths = write_inputs(tmp_path)
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS, *GREEDY]
    train([*common, f"trainer.default_local_dir={tmp_path / 'one'}"], ranks=1)
    train([*common, *FSDP2, *RAY, f"trainer.default_local_dir={tmp_path / 'ray'}", "trainer.save_freq=1"], ranks=1)
    one, ray_run = metrics(tmp_path / "one"), metrics(tmp_path / "ray")
    assert sorted(one) == sorted(ray_run) == [1, 2, 3]
    for step in one:
        for key in LOSSES:
            assert ray_run[step][key] == pytest.approx(one[step][key], rel=1e-4, abs=1e-6), f"step {step}: {key}"
    assert ray_run[3]["reward/errors"] == 0
    # Two rank actors sampled with their own streams, saved with the checkpoint.
    assert len(torch.load(tmp_path / "ray" / "global_step_2" / "actor_rank_rng.pt", weights_only=False)) == 2

    # Resume the Ray run from its step-2 checkpoint: step 3 comes out as it did uninterrupted.
    train([*common, *FSDP2, *RAY, f"trainer.default_local_dir={tmp_path / 'resumed'}", "trainer.resume_mode=resume_path",
           f"trainer.resume_from_path={tmp_path / 'ray' / 'global_step_2'}"], ranks=1)
    resumed = metrics(tmp_path / "resumed")
    assert sorted(resumed) == [3]
    for key in LOSSES:
        assert resumed[3][key] == pytest.approx(ray_run[3][key], rel=1e-5, abs=1e-7), key

    assert ray_processes() <= before, f"left behind: {ray_processes() - before}"


class RankEcho:
    """A stand-in worker: it reports the rank its process joined as."""

    def __init__(self) -> None:
        import torch.distributed as dist

        dist.init_process_group("gloo")
        self.rank = dist.get_rank()

    def sync_rollout_weights(self) -> int:
        return self.rank


def test_a_dead_rank_is_reported_by_role_and_rank():
    import ray

    from rewardkit.common.config import load_config
    from rewardkit.core.ray_workers import RayBackend
    from rewardkit.core.schema import Config

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        cfg = load_config(Config, None, ["trainer.backend=ray", "trainer.n_gpus_per_node=2", "trainer.device=cpu"]).trainer
        backend = RayBackend(cfg, ["actor"])
        group = backend.group("actor", RankEcho, ())
        assert group._each("sync_rollout_weights") == [0, 1]
        ray.kill(group.actors[1])
        with pytest.raises(RuntimeError, match="the actor worker group's rank 1 died"):
            group.sync_rollout_weights()
        backend.shutdown()
        assert ray.util.placement_group_table() and all(
            pg["state"] == "REMOVED" for pg in ray.util.placement_group_table().values())
    finally:
        ray.shutdown()
