"""The Ray backend on a real local 2-CPU cluster: worker groups of 2 FSDP2 ranks (actor with its
rollout, reference, critic) and a Ray reward worker give the losses of one process, resume
exactly from a checkpoint, and leave no process behind; and a run that joins an existing cluster
through RAY_ADDRESS."""
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch

from core_helpers import tiny_overrides, write_inputs
from test_train_distributed import FSDP2, GREEDY, LOSSES, NEAR_ZERO, OPTIONS, metrics, train

from rewardsmith.sandbox.testing import free_port

pytest.importorskip("ray", reason="ray is not installed (pip install 'rewardsmith[ray]')")

pytestmark = pytest.mark.slow

RAY = ["trainer.backend=ray", "trainer.ray.cpus_per_rank=0.5",
       "reward_model.reward_manager=parallel", "reward_model.num_workers=1"]


def processes_tagged(tag: str) -> list[str]:
    """Live processes whose environment holds ``tag`` (the run's, and the Ray processes it started)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if tag.encode() in (proc / "environ").read_bytes() and "State:\tZ" not in (proc / "status").read_text():
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name} {command[:120]}")
        except (OSError, ValueError):
            continue  # gone, or not a process directory
    return found


def test_ray_worker_groups_match_one_process_resume_and_shut_down(tmp_path, monkeypatch):
    # Every process of these runs inherits the tag, so processes of other Ray users on the machine do not count.
    tag = f"REWARDSMITH_RAY_TEST={uuid.uuid4().hex}"
    monkeypatch.setenv(*tag.split("="))
    paths = write_inputs(tmp_path)
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS, *GREEDY]
    train([*common, f"trainer.default_local_dir={tmp_path / 'one'}"], ranks=1)
    train([*common, *FSDP2, *RAY, f"trainer.default_local_dir={tmp_path / 'ray'}", "trainer.save_freq=1"], ranks=1)
    one, ray_run = metrics(tmp_path / "one"), metrics(tmp_path / "ray")
    assert sorted(one) == sorted(ray_run) == [1, 2, 3]
    for step in one:
        for key in LOSSES:
            assert ray_run[step][key] == pytest.approx(one[step][key], rel=1e-4, abs=NEAR_ZERO), f"step {step}: {key}"
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

    deadline = time.time() + 30  # Ray's own processes exit a moment after the driver
    while processes_tagged(tag) and time.time() < deadline:
        time.sleep(1)
    assert not processes_tagged(tag), f"left behind: {processes_tagged(tag)}"


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

    from rewardsmith.common.config import load_config
    from rewardsmith.core.ray_workers import RayBackend
    from rewardsmith.core.schema import Config

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        cfg = load_config(Config, None, ["trainer.backend=ray", "trainer.n_gpus_per_node=2", "trainer.device=cpu"]).trainer
        backend = RayBackend(cfg, ["actor"])
        group = backend.group("actor", RankEcho, ())
        assert group._each("sync_rollout_weights") == [0, 1]
        ray.kill(group.actors[1])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # ray.kill returns before the actor is gone
            try:
                ray.get(group.actors[1].__ray_ready__.remote(), timeout=5)
            except ray.exceptions.RayActorError:
                break
            time.sleep(0.1)
        with pytest.raises(RuntimeError, match="the actor worker group's rank 1 died"):
            group.sync_rollout_weights()
        backend.shutdown()
        assert ray.util.placement_group_table() and all(
            pg["state"] == "REMOVED" for pg in ray.util.placement_group_table().values())
    finally:
        ray.shutdown()


def test_a_run_joins_the_cluster_in_ray_address_and_frees_what_it_took(tmp_path, monkeypatch):
    """An existing cluster (`ray start --head`) is joined through RAY_ADDRESS, not replaced by a local one,
    and stays up after the run with all its CPUs free again."""
    tag = f"REWARDSMITH_RAY_TEST={uuid.uuid4().hex}"
    monkeypatch.setenv(*tag.split("="))
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    # Ray >= 2.5x clusters from `ray start` require a token; a driver joining one says so (docs/training.md).
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", uuid.uuid4().hex)
    port, temp_dir = free_port(), Path(f"/tmp/rk-{uuid.uuid4().hex[:8]}")
    head = subprocess.Popen([str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", "--port", str(port),
                             "--node-ip-address=127.0.0.1", "--num-cpus=2", "--include-dashboard=false",
                             "--disable-usage-stats", f"--temp-dir={temp_dir}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"127.0.0.1:{port}"
    probe = ("import ray; ray.init(address='{}', log_to_driver=False); "
             "print(ray.cluster_resources().get('CPU'), ray.available_resources().get('CPU'))").format(address)
    try:
        deadline = time.time() + 60
        while subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode != 0:
            assert head.poll() is None and time.time() < deadline, "ray start --head did not come up"
            time.sleep(1)
        monkeypatch.setenv("RAY_ADDRESS", address)
        paths = write_inputs(tmp_path)
        train([*tiny_overrides(tmp_path, paths), *OPTIONS, *GREEDY, *FSDP2, *RAY, "trainer.total_training_steps=2",
               f"trainer.default_local_dir={tmp_path / 'run'}"], ranks=1)
        assert sorted(metrics(tmp_path / "run")) == [1, 2]
        # The run's driver logged into the existing cluster's session, so it did not start its own.
        assert list((temp_dir / "session_latest" / "logs").glob("python-core-driver-*"))
        deadline = time.time() + 30  # actors release their CPUs a moment after the driver leaves
        while True:
            total, free = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                         check=True).stdout.split()[-2:]
            if float(free) == float(total) == 2.0 or time.time() > deadline:
                break
            time.sleep(1)
        assert float(free) == float(total) == 2.0, f"{free} of {total} CPUs free after the run"
        assert head.poll() is None, "the run stopped the cluster it joined"
    finally:
        os.killpg(head.pid, 15)
        head.wait(timeout=60)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_trainer_that_fails_to_start_leaves_no_rank_behind(tmp_path):
    """The reward manager fails to build after the Ray rank actors (the actor with its rollout engine,
    the reference, the critic) started: the trainer's error stops every one and frees their placement groups."""
    import ray
    import ray._private.state

    from rewardsmith.common.config import load_config
    from rewardsmith.common.errors import NotRegistered
    from rewardsmith.core.schema import Config
    from rewardsmith.core.trainer import PPOTrainer

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        paths = write_inputs(tmp_path)
        cfg = load_config(Config, None, [*tiny_overrides(tmp_path, paths), "trainer.backend=ray", "trainer.ray.cpus_per_rank=0.5",
                                         "actor_rollout_ref.actor.use_kl_loss=true", "reward_model.scorer=no_such_scorer"])
        with pytest.raises(NotRegistered, match="no_such_scorer"):
            PPOTrainer(cfg)

        def hosts() -> list[dict]:
            return [a for a in ray._private.state.actors().values() if a["ActorClassName"].endswith("RankHost")]

        assert len(hosts()) == 3  # the actor's rank, the reference's and the critic's did start
        deadline = time.time() + 30
        while any(a["State"] != "DEAD" for a in hosts()) and time.time() < deadline:
            time.sleep(0.5)
        assert all(a["State"] == "DEAD" for a in hosts()), hosts()
        groups = ray.util.placement_group_table().values()
        assert groups and all(pg["state"] == "REMOVED" for pg in groups)
    finally:
        ray.shutdown()
