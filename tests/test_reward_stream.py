"""Scoring each chunk of responses as it is generated (actor_rollout_ref.rollout.stream_chunks), on a tiny real
model: chunked generation samples what one call does, streamed scoring overlaps generation, results do not change,
and DAPO's dynamic sampling stops generating once the scored chunks hold enough varied groups."""
from __future__ import annotations

import dataclasses
import time

import pytest
import torch

from core_helpers import assert_same_steps, tiny_config, two_steps, write_reward
from rewardsmith.core.batch import Batch, chunk_ranges
from rewardsmith.core.reward_chunks import concat_chunks
from rewardsmith.core.reward_overlap import PendingReward
from rewardsmith.core.rollout import FinishedGroups
from rewardsmith.core.trainer import PPOTrainer, reward_batch
from rewardsmith.plugins.batch import RewardBatch

GRPO = ("algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.ppo_epochs=2",
        "data.train_batch_size=6", "actor_rollout_ref.rollout.n=3", "actor_rollout_ref.actor.ppo_mini_batch_size=3")

# The share of digits, after writing when the call began (the scorer runs in a pool worker) to STARTS.
TIMED_DIGITS = '''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    with open(STARTS, "a") as f:
        f.write(f"{time.time()}\\n")
    time.sleep(0.05)
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
'''

# Fails on responses holding a "1": unscored samples, so that the merged counts mean something.
PICKY_DIGITS = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if "1" in solution_str:
        raise ValueError("no ones")
    return sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
'''

# Scored in this process, in order: consecutive calls alternate 0 and 1, so every group of distinct responses varies.
ALTERNATING = '''
calls = [0]

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    calls[0] += 1
    return float(calls[0] % 2)
'''


def test_chunk_ranges_cover_the_batch_in_near_equal_parts():
    assert chunk_ranges(7, 3) == [range(0, 2), range(2, 4), range(4, 7)]
    assert chunk_ranges(2, 5) == [range(0, 1), range(1, 2)]
    assert chunk_ranges(4, 1) == [range(0, 4)]


def test_chunked_generation_samples_what_one_call_does(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "actor_rollout_ref.rollout.n=3", "data.train_batch_size=5"))
    try:
        prompts = next(trainer.prompt_batches)
        params = dataclasses.replace(trainer.sampling, seed=1234)
        whole = trainer.actor.generate(prompts, params)
        parts = [trainer.actor.generate(prompts.select(r), dataclasses.replace(params, first_prompt=r.start))
                 for r in chunk_ranges(len(prompts), 3)]
        chunked = Batch.concat(parts)
        assert torch.equal(whole["responses"], chunked["responses"])
        assert torch.equal(whole["response_mask"], chunked["response_mask"])
        # A prompt's samples differ from one another, and another seed samples other responses.
        assert len({tuple(r.tolist()) for r in whole["responses"][:3]}) > 1
        other = trainer.actor.generate(prompts, dataclasses.replace(params, seed=4321))
        assert not torch.equal(whole["responses"], other["responses"])
    finally:
        trainer.close()


@pytest.mark.parametrize("overlap", [True, False])
def test_streaming_on_and_off_give_the_same_rewards_advantages_and_losses(tmp_path, overlap):
    reward = write_reward(tmp_path, PICKY_DIGITS)
    runs = {}
    for chunks in (1, 3):
        cfg = tiny_config(tmp_path / str(chunks), reward, *GRPO, "reward_model.reward_manager=parallel",
                          "reward_model.num_workers=2", f"reward_model.launch_reward_fn_async={overlap}",
                          f"actor_rollout_ref.rollout.stream_chunks={chunks}")
        trainer = PPOTrainer(cfg)
        try:
            runs[chunks] = two_steps(trainer)
        finally:
            trainer.close()
    assert_same_steps(runs[1], runs[3])
    assert any(run["unscored"].any() and not run["unscored"].all() for run in runs[1]), "the seed must give both kinds"


def test_streamed_scoring_overlaps_generation(tmp_path):
    starts = tmp_path / "starts.txt"
    reward = write_reward(tmp_path, f"STARTS = {str(starts)!r}\n" + TIMED_DIGITS)
    cfg = tiny_config(tmp_path, reward, *GRPO, "reward_model.reward_manager=parallel", "reward_model.num_workers=2",
                      "reward_model.launch_reward_fn_async=true", "actor_rollout_ref.rollout.stream_chunks=3",
                      "actor_rollout_ref.rollout.stream_requests=false", "data.max_response_length=32")
    trainer = PPOTrainer(cfg)
    generated_at: list[float] = []
    generate = trainer.actor.generate

    def timed(prompts, params):
        out = generate(prompts, params)
        # A tiny model generates a chunk in ~35 ms, less than handing it to a scoring worker takes:
        # a slower generation (as any real model's) gives the next chunk time to overlap the scoring.
        time.sleep(0.3)
        generated_at.append(time.time())
        return out

    trainer.actor.generate = timed
    try:
        trainer.global_step = 1
        timing: dict[str, float] = {}
        trainer.make_experience(next(trainer.prompt_batches), timing)
    finally:
        trainer.close()
    assert len(generated_at) == 3
    first_scored = min(float(line) for line in starts.read_text().split())
    # The first chunk's scoring began while the last chunk was still generating.
    assert generated_at[0] < first_scored < generated_at[-1]


def test_merged_chunk_metrics_are_those_of_one_call(tmp_path):
    reward = write_reward(tmp_path, PICKY_DIGITS)
    trainer = PPOTrainer(tiny_config(tmp_path, reward, "reward_model.timeout=null", "data.train_batch_size=8"))
    try:
        batch = trainer.actor.generate(next(trainer.prompt_batches), trainer.sampling)
        texts = trainer.decode_responses(batch)
        whole = trainer.reward_manager(reward_batch(batch, texts, batch["response_mask"]))
        parts = [batch.select(r) for r in chunk_ranges(len(batch), 3)]
        merged = concat_chunks([trainer.reward_manager(reward_batch(p, trainer.decode_responses(p), p["response_mask"]))
                                for p in parts])
    finally:
        trainer.close()
    assert 0 < whole.metrics["reward/unscored"] < len(batch), "the seed must give both kinds"
    torch.testing.assert_close(merged.scores, whole.scores)
    torch.testing.assert_close(merged.token_level_scores, whole.token_level_scores)
    assert torch.equal(merged.unscored, whole.unscored)
    timeless = [{k: v for k, v in out.extra_info.items() if k != "reward_seconds"} for out in (merged, whole)]
    assert timeless[0] == timeless[1]
    # A chunk scores its identical samples once, as a whole batch does across all of them: that ratio may differ.
    assert merged.metrics.keys() == whole.metrics.keys()
    for key, value in whole.metrics.items():
        if key != "reward/unique_calls_ratio":
            assert merged.metrics[key] == pytest.approx(value), key


def _dapo_trainer(tmp_path, chunks: int) -> PPOTrainer:
    # One generation batch of 8 prompts holds 4x the 2 groups a step needs.
    cfg = tiny_config(tmp_path, write_reward(tmp_path, ALTERNATING), "algorithm.adv_estimator=grpo",
                      "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=seq_reward",
                      "data.train_batch_size=2", "data.gen_batch_size=8", "actor_rollout_ref.rollout.n=4",
                      "actor_rollout_ref.actor.ppo_mini_batch_size=2", "reward_model.timeout=null",
                      "data.max_response_length=16", f"actor_rollout_ref.rollout.stream_chunks={chunks}",
                      "actor_rollout_ref.rollout.stream_requests=false")
    return PPOTrainer(cfg)


def test_dynamic_sampling_stops_generating_once_the_scored_chunks_suffice(tmp_path):
    kept = {}
    for chunks in (1, 4):
        (tmp_path / str(chunks)).mkdir()
        trainer = _dapo_trainer(tmp_path / str(chunks), chunks)
        calls: list[Batch] = []
        generate = trainer.actor.generate

        def counted(prompts, params, calls=calls, generate=generate):
            calls.append(prompts)
            return generate(prompts, params)

        trainer.actor.generate = counted
        try:
            trainer.global_step = 1
            batch, metrics = trainer.make_experience(next(trainer.prompt_batches), {})
        finally:
            trainer.close()
        # Scored inline (reward_model.timeout=null): the first chunk of 2 prompts already holds 2 varied groups.
        assert [len(p) for p in calls] == ([8] if chunks == 1 else [2]), chunks
        assert metrics["train/num_gen_batches"] == 1.0
        kept[chunks] = batch
    # The step trains on the same groups, sampled alike.
    assert kept[4].meta["uid"] == kept[1].meta["uid"]
    assert torch.equal(kept[4]["responses"], kept[1]["responses"])


SLEEPY = '''
import time

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    time.sleep(0.2)
    return 1.0
'''


@pytest.mark.parametrize("overlap", [True, False])
def test_the_budget_and_reward_time_run_from_the_hand_over_not_from_generation(tmp_path, overlap):
    trainer = PPOTrainer(tiny_config(tmp_path, write_reward(tmp_path, SLEEPY), "reward_model.reward_manager=parallel",
                                     "reward_model.num_workers=2"))
    rows = RewardBatch(data_sources=["openai/gsm8k"] * 2, solutions=["12", "34"], ground_truths=["1", "2"])
    try:
        trainer.reward_manager(rows)  # the pool's workers are up
        pending = PendingReward.open(trainer.reward_manager, overlap, budget_s=1.5)
        time.sleep(2.0)  # the generation of the first chunk: longer than the budget
        pending.submit(rows)
        time.sleep(0.5)  # the generation of the second chunk, while the first one is scored (overlapped)
        pending.submit(rows)
        timing: dict[str, float] = {}
        out = pending.join(timing)
    finally:
        trainer.close()
    assert pending.metrics["reward/over_budget"] == 0.0
    assert out.scores.tolist() == [1.0] * 4 and not out.unscored.any()
    # Two chunks of 0.2 s samples on two workers: about 0.4 s of scoring, none of the 2.5 s of generation.
    assert 0.3 < timing["reward_total"] < 1.5
    assert timing["reward_wait"] <= timing["reward_total"]


def _reassembled(parts: list[tuple[list[int], Batch]], n: int) -> Batch:
    """The stream's parts put back in the prompts' order."""
    groups = [g for rows, _ in parts for g in rows]
    place = sorted(range(len(groups)), key=groups.__getitem__)
    return Batch.concat([samples for _, samples in parts]).select([i * n + k for i in place for k in range(n)])


# Each row's new tokens, one column per token step, for four prompt groups of two samples: EOS ids 7 and 8, and
# generate's padding (0, not an EOS) after a row's EOS. Group 0 ends at step 3 (its rows at steps 1 and 3), group 1
# at step 0, group 2 never (row 5 hits the length limit), group 3 at step 3 (both rows at once).
STEPS = torch.tensor([[4, 7, 0, 0, 0],
                      [4, 4, 4, 8, 0],
                      [8, 0, 0, 0, 0],
                      [7, 0, 0, 0, 0],
                      [4, 4, 7, 0, 0],
                      [4, 4, 4, 4, 4],
                      [4, 4, 4, 7, 0],
                      [4, 4, 4, 8, 0]])
PROMPT = torch.full((8, 2), 5)


def _watched(stop_after: int) -> tuple[FinishedGroups, list[tuple[int, list[int], torch.Tensor]]]:
    """A FinishedGroups over STEPS whose ``take`` records (step, groups, their samples' ids) and asks to stop at its
    ``stop_after``-th hand-over."""
    taken: list[tuple[int, list[int], torch.Tensor]] = []

    def take(groups: list[int], samples: Batch) -> bool:
        step = samples["ids"].shape[1] - PROMPT.shape[1] - 1
        taken.append((step, groups, samples["ids"]))
        return len(taken) == stop_after

    def samples(groups: list[int], ids: torch.Tensor) -> Batch:
        return Batch({"ids": ids[[g * 2 + k for g in groups for k in range(2)]]})

    return FinishedGroups(4, 2, [7, 8], torch.device("cpu"), take, samples), taken


def test_finished_groups_hands_each_group_over_once_at_the_step_its_last_sample_ends():
    finished, taken = _watched(stop_after=0)
    for step in range(STEPS.shape[1]):
        ids = torch.cat([PROMPT, STEPS[:, : step + 1]], dim=1)
        assert not finished(ids, torch.zeros(8, 10)).any(), "no row is stopped while take does not ask"
    assert [(step, groups) for step, groups, _ in taken] == [(0, [1]), (3, [0, 3])]
    # A part holds its groups' rows of the sequences so far.
    assert torch.equal(taken[1][2], torch.cat([PROMPT, STEPS[:, :4]], dim=1)[[0, 1, 6, 7]])
    # The group cut at the length limit comes last, from the call's sequences.
    assert not finished.hand_over_rest(ids)
    assert [groups for _, groups, _ in taken] == [[1], [0, 3], [2]]
    assert torch.equal(taken[2][2], ids[[4, 5]])


def test_finished_groups_stops_every_row_once_take_asks_and_hands_nothing_over_after():
    finished, taken = _watched(stop_after=1)
    stopped = [finished(torch.cat([PROMPT, STEPS[:, : step + 1]], dim=1), torch.zeros(8, 10)).tolist()
               for step in range(STEPS.shape[1])]
    assert stopped == [[True] * 8] * STEPS.shape[1]
    assert finished.hand_over_rest(torch.cat([PROMPT, STEPS], dim=1))
    assert [groups for _, groups, _ in taken] == [[1]]


@pytest.mark.parametrize("log_probs", [False, True])
def test_the_hf_stream_hands_finished_groups_over_from_inside_one_call_and_samples_what_the_call_does(tmp_path, log_probs):
    # 64 new tokens: some prompt groups of the tiny model end (EOS) well before the length limit.
    trainer = PPOTrainer(tiny_config(tmp_path, "actor_rollout_ref.rollout.n=2", "data.train_batch_size=8",
                                     "data.max_response_length=64"))
    rollout = trainer.actor.rollout
    calls: list[int] = []
    generate = rollout.model.generate

    def counted(*args, **kwargs):
        calls.append(len(kwargs["input_ids"]))
        return generate(*args, **kwargs)

    rollout.model.generate = counted
    try:
        prompts = next(trainer.prompt_batches)
        params = dataclasses.replace(trainer.sampling, seed=1234, log_probs=log_probs)
        whole = rollout.generate(prompts, params)
        parts: list[tuple[list[int], Batch]] = []
        assert not rollout.generate_stream(prompts, params, lambda rows, samples: parts.append((rows, samples)) or False)
    finally:
        trainer.close()
    assert calls == [16, 16], "the stream is one generate call on the whole batch (8 prompts, 2 samples each)"
    assert len(parts) > 1, "a group that ended early is handed over before the call returns"
    assert sorted(g for rows, _ in parts for g in rows) == list(range(8))
    streamed = _reassembled(parts, 2)
    for key in ("prompts", "responses", "response_mask", "input_ids", "attention_mask") + (("rollout_log_probs",) if log_probs else ()):
        assert torch.equal(whole[key], streamed[key]), key
    assert streamed.meta == whole.meta
    # Every part but the last holds only ended groups: an EOS in each of its samples.
    for _, samples in parts[:-1]:
        assert (samples["response_mask"].sum(-1) < 64).all()


def test_a_hand_over_that_asks_to_stop_ends_the_hf_call_and_leaves_the_engine_as_it_was(tmp_path):
    trainer = PPOTrainer(tiny_config(tmp_path, "actor_rollout_ref.rollout.n=2", "data.train_batch_size=8",
                                     "data.max_response_length=64"))
    rollout = trainer.actor.rollout
    try:
        prompts = next(trainer.prompt_batches)
        params = dataclasses.replace(trainer.sampling, seed=1234)
        whole = rollout.generate(prompts, params)
        taken: list[list[int]] = []
        assert rollout.generate_stream(prompts, params, lambda rows, samples: taken.append(rows) or True)
        again = rollout.generate(prompts, params)
    finally:
        trainer.close()
    assert len(taken) == 1 and len(taken[0]) < 8, "nothing is handed over after the stop"
    assert torch.equal(again["responses"], whole["responses"])


@pytest.mark.parametrize("overlap, filtered, streamed", [(True, False, True), (False, True, True), (False, False, False)])
def test_requests_stream_only_where_scoring_runs_beside_the_engine_or_can_stop_it(tmp_path, overlap, filtered, streamed):
    """Inline scoring with no dynamic sampling gains nothing from streaming, whose watch for ended groups costs each
    token step a host sync: the batch is then generated in one call and handed over once."""
    extra = ("algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=seq_reward",
             "data.gen_batch_size=6") if filtered else ()
    cfg = tiny_config(tmp_path, write_reward(tmp_path, ALTERNATING), *GRPO, *extra, "reward_model.timeout=null",
                      f"reward_model.launch_reward_fn_async={overlap}", "data.max_response_length=16")
    trainer = PPOTrainer(cfg)
    calls = []
    generate_stream = trainer.actor.generate_stream

    def recorded(*args, **kwargs):
        calls.append(1)
        return generate_stream(*args, **kwargs)

    trainer.actor.generate_stream = recorded
    try:
        trainer.global_step = 1
        trainer.make_experience(next(trainer.prompt_batches), {})
    finally:
        trainer.close()
    assert bool(calls) is streamed


def test_hf_streamed_scoring_starts_before_the_generate_call_returns_and_changes_no_result(tmp_path):
    starts = tmp_path / "starts.txt"
    reward = write_reward(tmp_path, f"STARTS = {str(starts)!r}\n" + TIMED_DIGITS)
    runs, calls = {}, []
    for streamed in (True, False):
        cfg = tiny_config(tmp_path / str(streamed), reward, *GRPO, "data.max_response_length=64",
                          "actor_rollout_ref.rollout.n=2", "data.train_batch_size=8",
                          "actor_rollout_ref.actor.ppo_mini_batch_size=4", "reward_model.launch_reward_fn_async=true",
                          f"actor_rollout_ref.rollout.stream_requests={streamed}")
        trainer = PPOTrainer(cfg)
        if streamed:
            rollout = trainer.actor.rollout
            generate, forward = rollout.model.generate, rollout.model.forward

            def timed(*args, **kwargs):
                began = time.time()
                out = generate(*args, **kwargs)
                calls.append((began, time.time()))
                return out

            def slow_forward(*args, **kwargs):
                # The tiny model steps in ~1 ms, less than starting the scorer's worker takes: a real
                # model's token steps give the scorer time to start while the call goes on.
                time.sleep(0.03)
                return forward(*args, **kwargs)

            rollout.model.generate, rollout.model.forward = timed, slow_forward
        try:
            runs[streamed] = two_steps(trainer)
        finally:
            trainer.close()
        if streamed:
            scored = [float(line) for line in starts.read_text().split()]
    assert_same_steps(runs[False], runs[True])
    # A group was scored, on the reward thread, while the call that generated it still generated the rest
    # (the seed gives the second step groups that end early).
    assert any(began < t < returned for began, returned in calls for t in scored)


def test_dynamic_sampling_ends_the_hf_call_once_the_first_groups_handed_over_suffice(tmp_path):
    kept, decode_steps = {}, {}
    for streamed in (False, True):
        cfg = tiny_config(tmp_path / str(streamed), write_reward(tmp_path, ALTERNATING), "algorithm.adv_estimator=grpo",
                          "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=seq_reward",
                          "data.train_batch_size=2", "data.gen_batch_size=8", "actor_rollout_ref.rollout.n=4",
                          "actor_rollout_ref.actor.ppo_mini_batch_size=2", "reward_model.timeout=null",
                          "data.max_response_length=32", f"actor_rollout_ref.rollout.stream_requests={streamed}")
        trainer = PPOTrainer(cfg)
        model, eos = trainer.actor.rollout.model, trainer.tokenizer.eos_token_id
        forward, steps = model.forward, []

        def early_eos(*args, forward=forward, steps=steps, **kwargs):
            out = forward(*args, **kwargs)
            if out.logits.shape[1] == 1:  # a decode step of generate
                steps.append(1)
                if len(steps) >= 3:
                    # Prompts 0 and 1 (rows 0-7) end after 3 tokens; the others run to the length limit.
                    out.logits[:8, -1, eos] += 1e4
            return out

        model.forward = early_eos
        try:
            trainer.global_step = 1
            batch, metrics = trainer.make_experience(next(trainer.prompt_batches), {})
        finally:
            trainer.close()
        assert metrics["train/num_gen_batches"] == 1.0
        kept[streamed], decode_steps[streamed] = batch, len(steps)
    # Whole, the call runs to the limit; streamed, it ends a step after groups 0 and 1 are handed over and scored.
    assert decode_steps[False] == 32
    assert decode_steps[True] <= 5
    assert kept[True].meta["uid"] == kept[False].meta["uid"]
    assert torch.equal(kept[True]["responses"], kept[False]["responses"])
