"""Identity keys and content hashes come from one canonical form: arrays whole, numpy scalars as
Python numbers, unknown types refused by name (common/canonical.py)."""
from __future__ import annotations

import datetime

import numpy as np
import pytest

from rewardsmith.common.canonical import NotCanonical, canonical, canonical_json
from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.factory import build_reward_manager
from rewardsmith.plugins.receipts import config_hash

# Pays the ground truth's middle element: two samples whose long arrays differ there must score differently.
MIDDLE = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return float(ground_truth[len(ground_truth) // 2])
'''


def long_arrays():
    a = np.zeros(5000, dtype=np.int64)
    b = a.copy()
    b[2500] = 1  # numpy's repr shows neither: both print as [0 0 0 ... 0 0 0]
    assert repr(a) == repr(b)
    return a, b


def test_long_arrays_that_differ_get_different_keys():
    a, b = long_arrays()
    assert canonical_json(a) != canonical_json(b)
    assert canonical_json({"gt": a}) == canonical_json({"gt": a.copy()})


def test_numpy_values_equal_their_python_values():
    assert canonical_json(np.int64(3)) == canonical_json(3)
    assert canonical_json(np.float32(0.5)) == canonical_json(0.5)
    assert canonical_json(np.bool_(True)) == canonical_json(True)
    assert canonical_json(np.array([[1, 2], [3, 4]])) == canonical_json([[1, 2], [3, 4]])
    assert canonical_json({"b": 1, "a": (2, 3)}) == canonical_json({"a": [2, 3], "b": 1})


def test_forms_json_would_merge_stay_apart():
    assert canonical_json(b"ab") != canonical_json("ab") != canonical_json(b"ab".hex())
    assert canonical_json({1: "x"}) != canonical_json({"1": "x"})
    assert canonical_json(float("nan")) != canonical_json("nan")
    assert canonical_json({3, 1, 2}) == canonical_json({2, 3, 1})


def test_unknown_types_are_refused_by_name():
    with pytest.raises(NotCanonical, match=r"ground_truth\['when'\] holds a datetime.date"):
        canonical({"when": datetime.date(2026, 1, 1)}, "ground_truth")
    with pytest.raises(NotCanonical, match="builtins.object"):
        canonical_json([object()])


def test_identical_sample_dedup_does_not_merge_different_long_arrays(make_config, tmp_path):
    path = tmp_path / "middle.py"
    path.write_text(MIDDLE)
    a, b = long_arrays()
    cfg = make_config(f"custom_reward_function.path={path}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(RewardBatch(["src"] * 3, ["x", "x", "x"], [a, b, a.copy()]))
    assert out.scores.tolist() == [0.0, 1.0, 0.0]
    assert out.metrics["reward/unique_calls_ratio"] == pytest.approx(2 / 3)


def test_a_row_holding_an_unknown_type_is_refused_naming_the_row(make_config, tmp_path):
    path = tmp_path / "middle.py"
    path.write_text(MIDDLE)
    cfg = make_config(f"custom_reward_function.path={path}")
    with build_reward_manager(cfg.reward_settings()) as manager:
        with pytest.raises(NotCanonical, match=r"row 1 \(data_source 'src'\) extra_info\['t'\] holds a datetime.date"):
            manager(RewardBatch(["src"] * 2, ["x", "x"], [[1, 2, 3]] * 2, extra_infos=[{}, {"t": datetime.date(2026, 1, 1)}]))


def test_config_hash_sees_all_of_an_array():
    a, b = long_arrays()
    assert config_hash({"reward_model": {"reward_kwargs": {"w": a}}}) != config_hash({"reward_model": {"reward_kwargs": {"w": b}}})
    # Plain config trees hash as they did before (receipts recorded earlier still match).
    import hashlib
    import json
    tree = {"reward_model": {"fallback_score": 0.0, "reward_kwargs": {"k": [1, "é"]}}, "data": {"reward_fn_key": "data_source"}}
    assert config_hash(tree) == hashlib.sha256(json.dumps(tree, sort_keys=True, default=repr).encode()).hexdigest()[:16]
