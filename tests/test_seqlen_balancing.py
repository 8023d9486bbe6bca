"""trainer.balance_batch: the same groups and order as verl 0.9.1's own functions, and a training step with it."""
import ast
import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from core_helpers import tiny_config

from rewardsmith.core.batch import Batch
from rewardsmith.core.seqlen_balancing import balance_batch, balanced_partitions, dispatch_order, rank_shares, workloads
from rewardsmith.core.trainer import PPOTrainer

torch.set_num_threads(1)

VERL = "verl is not installed (`make test` installs verl 0.9.1 --no-deps for the comparisons with verl's code)"


def _verl_balance_batch():
    """verl's own ``RayPPOTrainer._balance_batch``, compiled from the installed verl's ray_trainer.py: importing
    that module needs verl's full dependencies (torchdata, ray), the method only torch and seqlen_balancing."""
    balancing = pytest.importorskip("verl.utils.seqlen_balancing", reason=VERL)
    source = Path(balancing.__file__).parent.parent / "trainer" / "ppo" / "ray_trainer.py"
    tree = ast.parse(source.read_text())
    trainer = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RayPPOTrainer")
    method = next(n for n in trainer.body if isinstance(n, ast.FunctionDef) and n.name == "_balance_batch")
    from verl import DataProto

    namespace = {"torch": torch, "DataProto": DataProto, **{name: getattr(balancing, name) for name in
                                    ("calculate_workload", "get_seqlen_balanced_partitions", "log_seqlen_unbalance")}}
    exec(compile(ast.Module([method], []), str(source), "exec"), namespace)
    return namespace["_balance_batch"]


def _lengths(rng: random.Random, size: int) -> list[int]:
    # Repeated lengths on purpose: verl's tie-breaking decides their order.
    return [rng.choice([rng.randint(1, 40), 7, 16]) for _ in range(size)]


@pytest.mark.parametrize("seed", range(40))
def test_partitions_equal_verls(seed):
    balancing = pytest.importorskip("verl.utils.seqlen_balancing", reason=VERL)
    rng = random.Random(seed)
    ranks = rng.choice([1, 2, 3, 4, 8])
    lengths = _lengths(rng, ranks * rng.randint(1, 12))
    load = balancing.calculate_workload(torch.tensor(lengths)).tolist()
    assert workloads(lengths) == load
    assert balanced_partitions(load, ranks) == balancing.get_seqlen_balanced_partitions(load, ranks, equal_size=True)


@pytest.mark.parametrize("seed", range(40))
def test_the_order_and_metrics_equal_verls_balance_batch(seed):
    verl_balance = _verl_balance_batch()
    from verl import DataProto

    rng = random.Random(1000 + seed)
    ranks = rng.choice([1, 2, 4])
    lengths = _lengths(rng, ranks * rng.randint(1, 10))
    mask = torch.zeros(len(lengths), 48, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, 48 - n:] = 1
    data = DataProto.from_dict({"attention_mask": mask.clone(), "ids": torch.arange(len(lengths))})
    verl_metrics: dict = {}
    host = SimpleNamespace(_get_dp_size=lambda group, role: ranks, actor_rollout_wg=None, use_prefix_grouper=False)
    verl_balance(host, data, verl_metrics)
    verl_order = data.batch["ids"].tolist()

    shares = rank_shares(lengths, ranks)
    assert [i for share in shares for i in share] == verl_order
    # Mini-batches of the whole batch: the layout is verl's rank-major order itself.
    ours, _, metrics = balance_batch(Batch({"attention_mask": mask, "ids": torch.arange(len(lengths))}, {}), None, ranks,
                                     len(lengths))
    if ranks == 1:
        assert ours["ids"].tolist() == verl_order
    assert metrics == pytest.approx({k: float(v) for k, v in verl_metrics.items()})


def test_dispatch_hands_each_rank_verls_mini_batches():
    shares = [[0, 1, 2, 3], [4, 5, 6, 7]]
    # Two mini-batches of 4 over 2 ranks: verl's rank r takes shares[r][:2], then shares[r][2:].
    order = dispatch_order(shares, 4)
    minis = [order[:4], order[4:]]
    assert [[m[:2], m[2:]] for m in minis] == [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]
    assert dispatch_order([[3, 1, 2]], 2) == [3, 1, 2]


def test_an_uneven_batch_is_refused_naming_the_key():
    batch = Batch({"attention_mask": torch.ones(5, 3, dtype=torch.long)}, {})
    with pytest.raises(ValueError, match="trainer.balance_batch: a batch of 5 samples cannot be split evenly over 2"):
        balance_batch(batch, None, 2, 4)


def test_a_batch_the_ranks_cannot_share_evenly_is_refused_at_start(tmp_path):
    from rewardsmith.common.config import ConfigError

    with pytest.raises(ConfigError, match="trainer.balance_batch splits each step's 8 samples .* for the 3 data-parallel "
                                          "ranks, which 8 is not a multiple of"):
        tiny_config(tmp_path, "trainer.n_gpus_per_node=3")
    assert tiny_config(tmp_path / "off", "trainer.n_gpus_per_node=3", "trainer.balance_batch=false").trainer.n_gpus_per_node == 3


def _run(config) -> list[dict]:
    trainer = PPOTrainer(config)
    try:
        trainer.fit()
    finally:
        trainer.close()
    return [json.loads(line) for line in (Path(config.trainer.default_local_dir) / "metrics.jsonl").read_text().splitlines()]


def test_a_step_trains_on_the_balanced_order_and_logs_verls_metrics(tmp_path):
    """Two mini-batches per step: the balanced order changes which samples share one, so the updates differ."""
    run = ("algorithm.adv_estimator=grpo", "trainer.total_training_steps=1", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
           "data.max_response_length=16", "trainer.val_before_train=false")
    balanced = _run(tiny_config(tmp_path / "on", *run))
    plain = _run(tiny_config(tmp_path / "off", *run, "trainer.balance_batch=false"))
    step = balanced[-1]
    assert step["global_seqlen/balanced_max"] == step["global_seqlen/balanced_min"] == step["global_seqlen/mean"]
    assert step["global_seqlen/min"] <= step["global_seqlen/balanced_min"]
    assert not any(key.startswith("global_seqlen/") for key in plain[-1])
    # The same rollout and rewards, different mini-batches.
    assert step["critic/score/mean"] == pytest.approx(plain[-1]["critic/score/mean"], rel=1e-6)
    assert step["actor/pg_loss"] != plain[-1]["actor/pg_loss"]
