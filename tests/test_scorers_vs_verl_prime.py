"""Differential test: the prime_math (numina_*) and geo3k ports against verl 0.9.1's own files.

verl's scorer package imports ``verl`` (and its GPU stack) on the way in, so
the test registers empty package modules for ``verl``, ``verl.utils`` and
``verl.utils.reward_score`` and lets Python load only the scorer files (and
verl's ``py_functional`` timeout helper) from the installed wheel, then puts
``sys.modules`` back.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from rewardsmith.reward_fns import geo3k, prime_math
from test_scorers_vs_verl import PAIRS

_SPEC = importlib.util.find_spec("verl")
pytestmark = pytest.mark.skipif(_SPEC is None, reason="verl is not installed (make test installs it with pip --no-deps)")

CRAFTED = [
    ("The answer is $2\\pi$.", "6.28"), ("so we get \\boxed{\\pi/2}", "1.5708"), ("\\boxed{2\\pi}", "2\\pi"),
    ("\\boxed{\\frac{\\pi}{3}}", "\\frac{\\pi}{3}"), ("Answer: 25\\%", "0.25"), ("Answer: 25%", "25"),
    ("the answer is $12", "12"), ("Answer: 101_2", "5"), ("Answer: 1011_2", "1011"), ("Answer: x_1", "3"),
    ("\\boxed{[1, 2]}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"), ("\\boxed{[1, 3]}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"),
    ("Answer: Matrix([[1], [2]])", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"), ("Answer: Matrix([[1, 2]])", "\\begin{pmatrix} 1 & 2 \\end{pmatrix}"),
    ("\\boxed{[x, y]}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}"), ("\\boxed{[2^3, 1]}", "\\begin{pmatrix} 10 \\\\ 1 \\end{pmatrix}"),
    ("\\boxed{(1, 2)}", "(1,2)"), ("\\boxed{[1, 2)}", "[1,2)"), ("\\boxed{(1,2]}", "[1,2]"), ("Answer: Interval(0, 1)", "[0, 1]"),
    ("Answer: Interval.open(0, 1)", "(0, 1)"), ("Answer: Point(1, 2)", "(1, 2)"), ("Answer: 1, 2, 3", "1,2,3"),
    ("Answer: 1,000", "1000"), ("Answer: 3.0001", "3"), ("Answer: 0.5", "\\frac{1}{2}"), ("Answer: \\frac12", "0.5"),
    ("\\boxed{\\text{Monday}}", "Monday"), ("\\boxed{x^2+2x}", "x(x+2)"), ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"),
    ("\\boxed{2/4}", "1/2"), ("\\boxed{10 \\text{ cm}}", "10"), ("Answer: 5 liters", "5"), ("\\boxed{3 meters}", "3"),
    ("We have 7 3/4 is the answer", "31/4"), ("Step 2: \\boxed{9}", "9"), ("\\fbox{12}", "12"), ("no digits here", "x"),
    ("\\boxed{\\$5}", "5"), ("\\boxed{50\\%}", "50"), ("\\boxed{1e3}", "1000"), ("\\boxed{2 and 3}", "2, 3"),
    ("\\boxed{}", "0"), ("\\boxed{(1, 2, 3)}", "(1, 2)"), ("\\boxed{\\infty}", "\\infty"), ("\\boxed{-\\sqrt{3}}", "-\\sqrt3"),
    ("<think>geometry</think> the angle is \\boxed{30}", "30"), ("<think>x</think>\\boxed{30^\\circ}", "30"),
    ("\\boxed{2\\sqrt{3}}", "2 \\sqrt{3}"), ("\\boxed{\\frac{3}{4}}", "0.75"), ("Answer: 3 1/2", "7/2"),
    ("<think>a</think> answer \\boxed{{5}}", "5"), ("\\boxed{9^9^9}", "1"), ("Answer: __import__('os')", "0"),
    ("\\boxed{2^{10}}", "1024"), ("\\boxed{1.5 million}", "1500000"), ("the answer is \\boxed{A}", "A"),
]


@pytest.fixture(scope="module")
def verl_scorers():
    root = Path(_SPEC.submodule_search_locations[0])
    saved = {name: mod for name, mod in sys.modules.items() if name == "verl" or name.startswith("verl.")}
    for name, sub in (("verl", ""), ("verl.utils", "utils"), ("verl.utils.reward_score", "utils/reward_score")):
        package = types.ModuleType(name)
        package.__path__ = [str(root / sub)]
        sys.modules[name] = package
    try:
        yield (importlib.import_module("verl.utils.reward_score.prime_math"),
               importlib.import_module("verl.utils.reward_score.geo3k"))
    finally:
        for name in [n for n in sys.modules if n == "verl" or n.startswith("verl.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def _diffs(verl_scorers, pairs):
    verl_prime, verl_geo3k = verl_scorers
    diffs = []
    for response, gold in pairs:
        # verl's default_compute_score returns float(is_correct) for prime_math's tuple.
        theirs = (float(verl_prime.compute_score(response, gold)[0]), verl_geo3k.compute_score(response, gold))
        ours = (prime_math.compute_score("numina_olympiads", response, gold),
                geo3k.compute_score("hiyouga/geometry3k", response, gold))
        if ours != theirs:
            diffs.append((response, gold, ours, theirs))
    return diffs


def test_crafted_cases_match_verl(verl_scorers):
    # Cases that reach every branch: pi, percent, base subscripts, pmatrix and
    # Matrix golds, intervals, points, tuples, units, sympy, unsafe text.
    assert _diffs(verl_scorers, CRAFTED) == []
    scores = [prime_math.compute_score("numina_olympiads", r, g) for r, g in CRAFTED]
    assert 0 < sum(scores) < len(scores)  # the cases split both ways


def test_labelled_cases_sample_matches_verl(verl_scorers):
    assert _diffs(verl_scorers, PAIRS[::25]) == []


@pytest.mark.slow
def test_all_labelled_cases_match_verl(verl_scorers):
    assert _diffs(verl_scorers, PAIRS) == []
