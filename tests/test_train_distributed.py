"""FSDP2 data parallelism under torchrun (2 gloo ranks on the CPU): the same losses as one process,
a sharded checkpoint that resumes exactly, and an export that from_pretrained loads."""
import json
import os
import subprocess
import sys

import pytest
import torch

from core_helpers import tiny_overrides, write_inputs

from rewardsmith.core.trainer import measures_machine
from rewardsmith.sandbox.testing import free_port

pytestmark = pytest.mark.slow

# PPO with a critic, a KL loss (so a sharded reference too), several shuffled
# mini-batches per step, gradient accumulation and clipping that acts.
OPTIONS = [
    "algorithm.adv_estimator=gae",
    "actor_rollout_ref.actor.use_kl_loss=true",
    "actor_rollout_ref.actor.ppo_epochs=2",
    "actor_rollout_ref.actor.shuffle=true",
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "actor_rollout_ref.actor.ppo_micro_batch_size=2",
    "actor_rollout_ref.actor.grad_clip=0.5",
    "data.train_batch_size=4",
    "data.val_files=[]",
    "trainer.total_training_steps=3",
    # Balancing sorts the samples into one group per rank, so one process and two ranks would train on
    # different mini-batches (as in verl); these runs compare the data-parallel arithmetic on the same ones.
    "trainer.balance_batch=false",
]
FSDP2 = ["actor_rollout_ref.actor.strategy=fsdp2", "critic.strategy=fsdp2", "trainer.n_gpus_per_node=2"]
# Greedy decoding: these tests compare the data-parallel arithmetic (sampling is compared with one process by
# test_two_ranks_sample_what_one_process_samples).
GREEDY = ["actor_rollout_ref.rollout.do_sample=false"]
# Metrics that are zero up to float32 rounding (the mean of the whitened
# advantages; a policy loss when every reward is 0) differ by ~1e-6 between
# one process's reductions and two ranks' (or a packed forward's): they are
# compared to 1e-5, every other metric to rel 1e-4.
NEAR_ZERO = 1e-5
LOSSES = ("actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm", "actor/ppo_kl", "critic/vf_loss",
          "critic/grad_norm", "critic/score/mean", "critic/advantages/mean", "critic/returns/mean", "critic/values/mean")


def train(overrides, ranks: int) -> str:
    """Runs `rewardsmith train` on ``ranks`` torchrun ranks; returns its standard output."""
    launcher = ([sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={ranks}", "--master-addr=127.0.0.1",
                 f"--master-port={free_port()}", "-m", "rewardsmith"] if ranks > 1 else [sys.executable, "-m", "rewardsmith"])
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([*launcher, "train", *overrides], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def metrics(out_dir) -> dict[int, dict]:
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: {k: v for k, v in r.items() if not measures_machine(k)} for r in records}


@pytest.mark.parametrize("offload, packed", [(False, False), (True, False), (False, True)],
                         ids=["on-device", "cpu-offload", "packed"])
def test_two_fsdp2_ranks_give_the_losses_of_one_process(tmp_path, offload, packed):
    """With ``packed`` the two ranks run unpadded forwards (use_remove_padding) against one padded process."""
    paths = write_inputs(tmp_path)
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS, *GREEDY]
    train([*common, f"trainer.default_local_dir={tmp_path / 'one'}"], ranks=1)
    offloading = [f"actor_rollout_ref.actor.fsdp_config.offload_policy={str(offload).lower()}",
                  f"critic.fsdp_config.offload_policy={str(offload).lower()}"]
    packing = ["actor_rollout_ref.model.use_remove_padding=true", "critic.model.use_remove_padding=true"] if packed else []
    out = train([*common, *FSDP2, *offloading, *packing, f"trainer.default_local_dir={tmp_path / 'two'}",
                 "trainer.save_freq=3"], ranks=2)
    assert out.count("metrics: ") == 1, out  # rank 0 alone reports the run
    one, two = metrics(tmp_path / "one"), metrics(tmp_path / "two")
    assert sorted(one) == sorted(two) == [1, 2, 3]
    for step in one:
        assert one[step].keys() == two[step].keys()
        for key in LOSSES:
            assert two[step][key] == pytest.approx(one[step][key], rel=1e-4, abs=NEAR_ZERO), f"step {step}: {key}"
    assert one[3]["actor/grad_norm"] > 0.5  # the clip acted, on the global norm

    # The export is a Hugging Face directory with the full weights.
    from transformers import AutoModelForCausalLM

    export = tmp_path / "two" / "global_step_3" / "actor"
    model = AutoModelForCausalLM.from_pretrained(export)
    assert model.config.architectures == ["Qwen2ForCausalLM"]
    assert (export / "dcp" / ".metadata").is_file() and (export / "tokenizer.json").is_file()
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_a_sharded_checkpoint_resumes_exactly(tmp_path):
    paths = write_inputs(tmp_path)
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS, *FSDP2]  # sampling on: each rank's RNG is restored
    train([*common, f"trainer.default_local_dir={tmp_path / 'straight'}"], ranks=2)
    stopped = [*common, f"trainer.default_local_dir={tmp_path / 'stopped'}", "trainer.save_freq=1"]
    train([*stopped, "trainer.total_training_steps=2"], ranks=2)
    train(stopped, ranks=2)  # resume_mode=auto continues from global_step_2
    straight, resumed = metrics(tmp_path / "straight"), metrics(tmp_path / "stopped")
    assert sorted(resumed) == [1, 2, 3]
    assert resumed[3] == straight[3]


def test_fsdp2_on_a_single_rank_matches_the_local_strategy(tmp_path):
    # No launcher: the run makes a process group of one. With one rank the
    # sampling stream is the local run's, so sampling can stay on.
    paths = write_inputs(tmp_path)
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS]
    train([*common, f"trainer.default_local_dir={tmp_path / 'local'}"], ranks=1)
    train([*common, "actor_rollout_ref.actor.strategy=fsdp2", "critic.strategy=fsdp2",
           f"trainer.default_local_dir={tmp_path / 'fsdp2'}"], ranks=1)
    local, sharded = metrics(tmp_path / "local"), metrics(tmp_path / "fsdp2")
    for step in local:
        for key in LOSSES:
            assert sharded[step][key] == pytest.approx(local[step][key], rel=1e-4, abs=NEAR_ZERO), f"step {step}: {key}"


def test_two_ranks_train_on_balanced_groups(tmp_path):
    """trainer.balance_batch on two ranks: every rank reorders the gathered batch the same way and the groups balance."""
    paths = write_inputs(tmp_path)
    options = [o for o in OPTIONS if not o.startswith("trainer.balance_batch")]
    train([*tiny_overrides(tmp_path, paths), *options, *FSDP2, "trainer.total_training_steps=1", "data.max_response_length=16",
           f"trainer.default_local_dir={tmp_path / 'two'}"], ranks=2)
    step = metrics(tmp_path / "two")[1]
    # Two groups holding every token between them (Karmarkar-Karp balances verl's workload estimate, so their token
    # totals need not beat the rollout order's split on every batch).
    assert step["global_seqlen/balanced_min"] + step["global_seqlen/balanced_max"] == 2 * step["global_seqlen/mean"]
    assert step["global_seqlen/min"] + step["global_seqlen/max"] == 2 * step["global_seqlen/mean"]


def test_two_ranks_take_skyworks_adaptive_entropy_coefficient_as_one_process(tmp_path):
    # The controller's coefficient reaches every rank's update (WorkerGroup.update's extra argument).
    paths = write_inputs(tmp_path)
    adaptive = ["actor_rollout_ref.actor.entropy_coeff=0.05", "actor_rollout_ref.actor.adaptive_entropy.enabled=true",
                "actor_rollout_ref.actor.adaptive_entropy.target_entropy=100",
                "actor_rollout_ref.actor.adaptive_entropy.delta_ent_coef=0.05"]
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS, *GREEDY, *adaptive]
    train([*common, f"trainer.default_local_dir={tmp_path / 'one'}"], ranks=1)
    train([*common, *FSDP2, f"trainer.default_local_dir={tmp_path / 'two'}"], ranks=2)
    one, two = metrics(tmp_path / "one"), metrics(tmp_path / "two")
    assert [one[s]["actor/entropy_coeff"] for s in (1, 2, 3)] == pytest.approx([0.05, 0.1, 0.15])
    for step in one:
        for key in (*LOSSES, "actor/entropy_coeff", "actor/sampled_entropy"):
            assert two[step][key] == pytest.approx(one[step][key], rel=1e-4, abs=NEAR_ZERO), f"step {step}: {key}"


# The share of digits, after a draw from torch's global generator: only rank 0 scores, so only its stream moves.
DRAWING_REWARD = '''
import torch

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    torch.rand(1)
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
'''


def test_two_ranks_sample_what_one_process_samples(tmp_path):
    """Sampling on: each prompt samples from the batch's seed plus its place in the batch, and every rank draws that
    seed from the trainer's rollout generator, which nothing else moves (setting up two FSDP2 ranks takes other
    draws from torch's global stream than one process does, and only rank 0's scorer draws from it)."""
    paths = write_inputs(tmp_path)
    reward = tmp_path / "drawing.py"
    reward.write_text(DRAWING_REWARD)
    common = [*tiny_overrides(tmp_path, paths), *OPTIONS, f"custom_reward_function.path={reward}",
              "reward_model.launch_reward_fn_async=false", "trainer.total_training_steps=2"]
    for ranks, options in ((1, []), (2, FSDP2)):
        train([*common, *options, f"trainer.default_local_dir={tmp_path / str(ranks)}",
               f"trainer.rollout_data_dir={tmp_path / f'dump{ranks}'}"], ranks=ranks)
    for step in (1, 2):
        one, two = ([json.loads(line) for line in (tmp_path / f"dump{ranks}" / f"{step}.jsonl").read_text().splitlines()]
                    for ranks in (1, 2))
        assert [r["output"] for r in two] == [r["output"] for r in one], f"step {step}"
        assert [r["score"] for r in two] == pytest.approx([r["score"] for r in one]), f"step {step}"
    # Step 2 samples after an update: responses of several lengths, some ended by EOS.
    assert len({len(r["output"]) for r in one}) > 1
