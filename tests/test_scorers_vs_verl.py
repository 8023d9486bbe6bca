"""Differential test: our verl ports against verl's own scorer files, verdict for verdict.

verl is not a dependency; `make test` installs it with --no-deps, and this test
loads its pure-Python scorer files by path (not the `verl` package and its GPU
stack). Every labelled case of tests/data plus seeded random variants of them
go through both implementations.
"""
from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from rewardsmith.reward_fns import gsm8k, math_dapo, math_reward, math_verify_port, search_r1_qa_em

CASES = [json.loads(line) for line in (Path(__file__).parent / "data" / "math_answer_cases.jsonl").read_text().splitlines()]


def _verl_module(name: str):
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "utils" / "reward_score" / f"{name}.py"
    if not path.exists():
        return None
    module_spec = importlib.util.spec_from_file_location(f"verl_reward_score_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _variants(text: str, rng: random.Random, n: int = 4) -> list[str]:
    """Seeded mutations that stress extraction: truncation, padding, doubled answers, case changes."""
    out = [text]
    for _ in range(n):
        k = rng.randint(0, len(text))
        out.append(rng.choice([
            text[:k],
            text + rng.choice([" ", "\n", ".", " ####", " Answer:", "\\boxed{", "}", "#### 0"]),
            "x" * rng.randint(250, 400) + text,
            text.upper(),
            text.replace(" ", "  "),
        ]))
    return out


def _pairs():
    rng = random.Random(1234)
    for case in CASES:
        for response in _variants(case["response"], rng):
            yield response, case["gold"]


PAIRS = [p for p in _pairs() if isinstance(p[1], str)]

VERL_GSM8K = _verl_module("gsm8k")
VERL_MATH = _verl_module("math_reward")
VERL_DAPO = _verl_module("math_dapo")
VERL_SEARCH = _verl_module("search_r1_like_qa_em")
needs_verl = pytest.mark.skipif(VERL_GSM8K is None, reason="verl is not installed (make test installs it with pip --no-deps)")


@needs_verl
@pytest.mark.parametrize("method", ["strict", "flexible"])
def test_gsm8k_matches_verl(method):
    diffs = [(r, g) for r, g in PAIRS
             if gsm8k.compute_score("openai/gsm8k", r, g, method=method) != VERL_GSM8K.compute_score(r, g, method=method)]
    assert diffs == []


@needs_verl
def test_math_reward_matches_verl():
    diffs = [(r, g) for r, g in PAIRS
             if math_reward.compute_score("lighteval/MATH", r, g) != VERL_MATH.compute_score(r, g)]
    assert diffs == []


@needs_verl
def test_math_dapo_matches_verl():
    diffs = []
    for r, g in PAIRS:
        ours = math_dapo.compute_score("math_dapo", r, g)
        theirs = VERL_DAPO.compute_score(r, g)
        if (ours["score"], ours["acc"], ours["pred"]) != (theirs["score"], theirs["acc"], theirs["pred"]):
            diffs.append((r, g, ours, theirs))
    assert diffs == []


@needs_verl
def test_search_r1_matches_verl():
    rng = random.Random(7)
    answers = ["Paris", "paris.", "The Eiffel Tower", "an apple", "42", ""]
    for _ in range(300):
        pred = rng.choice(answers)
        tags = rng.choice(["<answer>{}</answer>", "<answer> {} </answer>" * rng.randint(1, 6), "{}", "<answer>{}"])
        response = "<think>hm</think>" + tags.replace("{}", pred)
        truth = {"target": rng.sample(answers[:-1], rng.randint(1, 3))}
        assert search_r1_qa_em.compute_score("searchR1_nq", response, truth) == VERL_SEARCH.compute_score(response, truth)


@needs_verl
@pytest.mark.slow
def test_math_verify_matches_verl(tmp_path, monkeypatch):
    # verl runs math-verify in a spawn pool, whose children import the module by
    # name: give verl's file an importable home on sys.path.
    source = Path(importlib.util.find_spec("verl").submodule_search_locations[0]) / "utils/reward_score/math_verify.py"
    (tmp_path / "verl_math_verify_copy.py").write_text(source.read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    verl_math_verify = importlib.import_module("verl_math_verify_copy")
    diffs = [(c["response"], c["gold"]) for c in CASES if isinstance(c["gold"], str)
             and math_verify_port.compute_score("math_verify", c["response"], c["gold"]) != verl_math_verify.compute_score(c["response"], c["gold"])]
    assert diffs == []
