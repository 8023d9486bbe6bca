"""Datasets, the batch loader, the shipped arithmetic data and the Batch container."""
from pathlib import Path

import pytest
import torch

from rewardsmith.demo.arith_problems import FORMATS, make_dataset
from rewardsmith.core.batch import Batch
from rewardsmith.demo.char_tokenizer import build_char_tokenizer
from rewardsmith.common.config import load_config
from rewardsmith.core.data import PromptDataset, PromptLoader, read_files
from rewardsmith.common.rows import read_rows, write_rows
from rewardsmith.core.schema import Config

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "data"


@pytest.fixture(scope="module")
def tokenizer():
    return build_char_tokenizer()


def data_cfg(*overrides):
    return load_config(Config, None, list(overrides)).data


def row(prompt="What is 1+1?", source="openai/gsm8k", answer="2"):
    return {"data_source": source, "prompt": [{"role": "user", "content": prompt}], "reward_model": {"style": "rule", "ground_truth": answer}}


def test_shipped_arith_files_are_the_generator_output():
    for split, rows in make_dataset().items():
        assert read_rows(EXAMPLES / f"arith_{split}.jsonl") == rows, split


def test_arith_validation_is_held_out_and_mixes_sources():
    data = make_dataset()
    seen = {r["prompt"][0]["content"] for r in data["sft"] + data["train"]}
    assert not seen & {r["prompt"][0]["content"] for r in data["val"]}
    assert {r["data_source"] for r in data["val"]} == set(FORMATS)


def test_arith_answers_score_one_with_the_builtin_scorers():
    from rewardsmith.plugins.batch import RewardBatch
    from rewardsmith.plugins.factory import build_reward_manager

    rows = make_dataset()["val"]
    manager = build_reward_manager(load_config(Config).reward_settings())
    try:
        out = manager(RewardBatch(
            data_sources=[r["data_source"] for r in rows], solutions=[r["response"] for r in rows],
            ground_truths=[r["reward_model"]["ground_truth"] for r in rows],
        ))
        assert out.scores.tolist() == [1.0] * len(rows)
        # the same answers in another source's format do not count
        wrong = [FORMATS[next(s for s in FORMATS if s != r["data_source"])][1].format(e="1+1", x=r["reward_model"]["ground_truth"]) for r in rows]
        out = manager(RewardBatch(data_sources=[r["data_source"] for r in rows], solutions=wrong,
                                  ground_truths=[r["reward_model"]["ground_truth"] for r in rows]))
        assert max(out.scores.tolist()) <= 0.0
    finally:
        manager.close()


def test_sft_rows_use_random_formats_with_correct_answers():
    sft = make_dataset()["sft"]
    mismatched = 0
    for r in sft:
        expression, answer = r["extra_info"]["expression"], int(r["reward_model"]["ground_truth"])
        assert eval(expression) == answer  # noqa: S307 - our own "a+b" / "a-b" strings
        candidates = [template.format(e=expression, x=answer) for _cue, template in FORMATS.values()]
        assert r["response"] in candidates
        mismatched += r["response"] != FORMATS[r["data_source"]][1].format(e=expression, x=answer)
    assert 0.5 * len(sft) < mismatched < 0.8 * len(sft)  # about 2/3 use another source's format


def test_prompt_dataset_tokenizes_and_left_pads(tokenizer, tmp_path):
    write_rows(tmp_path / "d.jsonl", [row("hi"), row("a longer prompt", source="math_dapo", answer="7")])
    ds = PromptDataset(read_files(str(tmp_path / "d.jsonl"), "data.train_files"), tokenizer, data_cfg())
    batch = ds.collate([0, 1], uid_prefix="x-")
    assert batch["input_ids"].shape[0] == 2
    assert batch["attention_mask"][0].tolist()[0] == 0 and batch["attention_mask"][0].tolist()[-1] == 1
    text = tokenizer.decode(batch["input_ids"][0][batch["attention_mask"][0].bool()].tolist())
    assert text == "<|user|>hi<|end|><|assistant|>"
    assert batch.meta["data_source"] == ["openai/gsm8k", "math_dapo"]
    assert batch.meta["ground_truth"] == ["2", "7"] and batch.meta["uid"] == ["x-0", "x-1"]
    assert ds.data_sources() == ["math_dapo", "openai/gsm8k"]


def test_plain_string_prompts_are_one_user_turn(tokenizer):
    r = row()
    r["prompt"] = "just text"
    ds = PromptDataset([r], tokenizer, data_cfg())
    assert tokenizer.decode(ds.token_ids[0]) == "<|user|>just text<|end|><|assistant|>"


def test_bad_rows_are_named(tokenizer, tmp_path):
    write_rows(tmp_path / "bad.jsonl", [row(), {"data_source": "x", "reward_model": {"ground_truth": "1"}}])
    rows = read_files(str(tmp_path / "bad.jsonl"), "data.train_files")
    with pytest.raises(ValueError, match=r"bad.jsonl row 1: missing prompt field 'prompt'"):
        PromptDataset(rows, tokenizer, data_cfg())
    with pytest.raises(ValueError, match="missing reward_model.ground_truth"):
        PromptDataset([{"data_source": "x", "prompt": "p"}], tokenizer, data_cfg())
    with pytest.raises(ValueError, match="missing field 'source'"):
        PromptDataset([row()], tokenizer, data_cfg("data.reward_fn_key=source"))
    with pytest.raises(ValueError, match="data.train_files is empty"):
        read_files([], "data.train_files")


def test_overlong_prompts(tokenizer):
    long_row = row("x" * 50)
    with pytest.raises(ValueError, match="max_prompt_length=20"):
        PromptDataset([long_row], tokenizer, data_cfg("data.max_prompt_length=20"))
    left = PromptDataset([long_row], tokenizer, data_cfg("data.max_prompt_length=20", "data.truncation=left"))
    assert len(left.token_ids[0]) == 20 and tokenizer.decode(left.token_ids[0]).endswith("<|assistant|>")
    right = PromptDataset([long_row], tokenizer, data_cfg("data.max_prompt_length=20", "data.truncation=right"))
    assert tokenizer.decode(right.token_ids[0]).startswith("<|user|>xxx")
    kept = PromptDataset([long_row, row()], tokenizer, data_cfg("data.max_prompt_length=30", "data.filter_overlong_prompts=true"))
    assert len(kept) == 1


def test_loader_order_is_seeded_and_resumable(tokenizer):
    rows = [row(f"q{i}", answer=str(i)) for i in range(10)]
    ds = PromptDataset(rows, tokenizer, data_cfg())
    first = PromptLoader(ds, 3, shuffle=True, seed=5)
    it = iter(first)
    seen = [next(it).meta["ground_truth"] for _ in range(4)]
    assert first.batches_per_epoch == 3  # the last incomplete batch is dropped
    assert len(set(sum(seen[:3], []))) == 9  # one epoch: no repeats
    assert seen[3] != seen[0]  # the next epoch is reshuffled
    again = [next(iter(PromptLoader(ds, 3, shuffle=True, seed=5))).meta["ground_truth"]]
    assert again[0] == seen[0]
    resumed = PromptLoader(ds, 3, shuffle=True, seed=5)
    state = PromptLoader(ds, 3, shuffle=True, seed=5)
    state.load_state_dict({"epoch": 0, "position": 2})
    resumed.load_state_dict(state.state_dict())
    assert next(iter(resumed)).meta["ground_truth"] == seen[2]
    assert next(iter(PromptLoader(ds, 3, shuffle=False, seed=5))).meta["ground_truth"] == ["0", "1", "2"]
    with pytest.raises(ValueError, match="train_batch_size=11"):
        PromptLoader(ds, 11, shuffle=True, seed=0)


def test_batch_select_chunks_and_checks():
    b = Batch({"x": torch.arange(5)}, {"m": list("abcde")})
    picked = b.select([4, 0])
    assert picked["x"].tolist() == [4, 0] and picked.meta["m"] == ["e", "a"]
    assert [len(c) for c in b.chunks(2)] == [2, 2, 1]
    with pytest.raises(ValueError, match="'y' has 3 rows"):
        b["y"] = torch.zeros(3)


def test_batch_split_concat_and_pad_to_a_multiple():
    b = Batch({"x": torch.arange(5), "response_mask": torch.ones(5, 2)}, {"m": list("abcde")})
    padded, added = b.pad_to_multiple(4, zero=("response_mask",))
    assert added == 3 and len(padded) == 8
    assert padded["x"].tolist() == [0, 1, 2, 3, 4, 0, 1, 2] and padded.meta["m"][5:] == ["a", "b", "c"]
    assert padded["response_mask"][:5].eq(1).all() and padded["response_mask"][5:].eq(0).all()
    assert b["response_mask"].eq(1).all()  # the original is untouched
    parts = padded.split(4)
    assert [p["x"].tolist() for p in parts] == [[0, 1], [2, 3], [4, 0], [1, 2]]
    again = Batch.concat(parts)
    assert torch.equal(again["x"], padded["x"]) and again.meta == padded.meta
    same, none_added = b.pad_to_multiple(5)
    assert same is b and none_added == 0
    with pytest.raises(ValueError, match="5 samples into 2 equal parts"):
        b.split(2)
    with pytest.raises(ValueError, match="different keys"):
        Batch.concat([b, Batch({"x": torch.arange(2)}, {"m": ["f", "g"]})])


def test_mini_batches_shuffle_from_the_generator_and_count_tokens():
    from rewardsmith.core.batch import mini_batches

    mask = torch.tensor([[1, 1], [1, 0], [0, 0], [1, 1], [1, 0], [1, 1]])
    b = Batch({"i": torch.arange(6), "response_mask": mask})
    plain = mini_batches(b, 4, 2, False, torch.Generator().manual_seed(0))
    assert [m.batch["i"].tolist() for m in plain] == [[0, 1, 2, 3], [4, 5]] * 2
    # sample 2 has no valid token (an unscored sample's mask is zeroed): it is in no loss's count
    assert [(m.tokens, m.samples) for m in plain] == [(5.0, 3), (3.0, 2)] * 2
    shuffled = mini_batches(b, 3, 2, True, torch.Generator().manual_seed(0))
    first, second = torch.cat([m.batch["i"] for m in shuffled[:2]]), torch.cat([m.batch["i"] for m in shuffled[2:]])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(6))
    assert not torch.equal(first, second)  # each epoch draws its own order
    again = mini_batches(b, 3, 2, True, torch.Generator().manual_seed(0))
    assert all(torch.equal(x.batch["i"], y.batch["i"]) for x, y in zip(shuffled, again))
    assert all(m.tokens == float(m.batch["response_mask"].sum()) for m in shuffled)
