"""Metric sinks: metrics.jsonl (fresh and resumed runs), the console, TensorBoard."""
import io
import json

import pytest

from rewardsmith.common.errors import ConfigError
from rewardsmith.core.tracking import Tracker


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_jsonl_and_console(tmp_path):
    stream = io.StringIO()
    tracker = Tracker(tmp_path, ["console", "jsonl"], stream=stream)
    tracker.log(1, {"critic/score/mean": 0.5, "other": float("nan")})
    tracker.close()
    assert lines(tmp_path / "metrics.jsonl") == [{"step": 1, "critic/score/mean": 0.5, "other": None}]
    assert "step 1: critic/score/mean=0.5" in stream.getvalue()


def test_fresh_run_starts_a_new_file_and_resumed_run_drops_later_steps(tmp_path):
    tracker = Tracker(tmp_path, ["jsonl"])
    for step in range(4):
        tracker.log(step, {"x": float(step)})
    Tracker(tmp_path, ["jsonl"], resume_step=2).log(3, {"x": 30.0})
    assert [(r["step"], r["x"]) for r in lines(tmp_path / "metrics.jsonl")] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 30.0)]
    Tracker(tmp_path, ["jsonl"]).log(1, {"x": 5.0})
    assert lines(tmp_path / "metrics.jsonl") == [{"step": 1, "x": 5.0}]


def test_tensorboard_writes_events_or_says_how_to_install_it(tmp_path):
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"pip install 'rewardsmith\[tensorboard\]'"):
            Tracker(tmp_path, ["tensorboard"])
        return
    tracker = Tracker(tmp_path, ["tensorboard"])
    tracker.log(1, {"x": 1.0})
    tracker.close()
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
