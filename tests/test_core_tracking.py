"""Metric sinks: metrics.jsonl (fresh and resumed runs), the console, TensorBoard."""
import io
import sys
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


def _needs(module):
    import importlib.util

    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed (pip install 'rewardsmith[test]' installs it)")


CONFIG = {"trainer": {"project_name": "proj", "seed": 3}, "data": {"train_batch_size": 8}}


@_needs("wandb")
def test_wandb_offline_writes_the_run_with_its_metrics(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    tracker = Tracker(tmp_path, ["wandb"], project="proj", experiment="exp", config=CONFIG)
    tracker.log(1, {"critic/score/mean": 0.625, "actor/pg_loss": -1.5})
    tracker.log(2, {"critic/score/mean": 0.875})
    tracker.close()
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    # The .wandb file is wandb's own record log: the history rows carry each key and value.
    data = next(runs[0].glob("run-*.wandb")).read_bytes()
    for text in (b"critic/score/mean", b"0.625", b"0.875", b"actor/pg_loss", b"proj", b"exp", b"train_batch_size"):
        assert text in data, text


@_needs("mlflow")
def test_mlflow_file_store_holds_params_and_metric_history(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    tracker = Tracker(tmp_path, ["mlflow"], project="proj", experiment="exp", config=CONFIG)
    tracker.log(1, {"critic/score/mean": 0.5, "val@k/x": 2.0, "other": float("nan")})
    tracker.log(2, {"critic/score/mean": 0.75})
    tracker.close()
    from mlflow.tracking import MlflowClient

    client = MlflowClient((tmp_path / "mlruns").resolve().as_uri())
    experiment = client.get_experiment_by_name("proj")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "exp"
    assert run.data.params["trainer.seed"] == "3" and run.data.params["data.train_batch_size"] == "8"
    history = client.get_metric_history(run.info.run_id, "critic/score/mean")
    assert [(m.step, m.value) for m in history] == [(1, 0.5), (2, 0.75)]
    assert run.data.metrics["val_at_k/x"] == 2.0 and "other" not in run.data.metrics


@_needs("swanlab")
def test_swanlab_offline_writes_the_run_locally(tmp_path, monkeypatch):
    monkeypatch.setenv("SWANLAB_MODE", "offline")
    monkeypatch.delenv("SWANLAB_LOG_DIR", raising=False)
    tracker = Tracker(tmp_path, ["swanlab"], project="proj", experiment="exp", config=CONFIG)
    tracker.log(1, {"critic/score/mean": 0.5})
    tracker.log(2, {"critic/score/mean": 0.75, "actor/entropy": 1.25})
    tracker.close()
    (run,) = (tmp_path / "swanlog").glob("run-*")
    data = next(run.glob("run-*.swanlab")).read_bytes()
    for text in (b"critic/score/mean", b"actor/entropy", b"proj"):
        assert text in data, text
    assert "train_batch_size: 8" in (run / "files" / "config.yaml").read_text()


@pytest.mark.parametrize("logger,module", [("wandb", "wandb"), ("mlflow", "mlflow"), ("swanlab", "swanlab"),
                                           ("tensorboard", "tensorboard")])
def test_a_logger_without_its_package_fails_the_config_check(make_config, monkeypatch, logger, module):
    monkeypatch.setitem(sys.modules, module, None)  # what an absent package looks like to the import system
    with pytest.raises(ConfigError, match=rf"trainer.logger includes {logger} but the {module} package is not "
                                          rf"installed: pip install 'rewardsmith\[{logger}\]'"):
        make_config(f"trainer.logger=[console,{logger}]")


@_needs("wandb")
@_needs("mlflow")
@_needs("swanlab")
def test_a_training_run_logs_every_step_to_each_tracker(tmp_path, monkeypatch):
    from core_helpers import tiny_config
    from mlflow.tracking import MlflowClient

    from rewardsmith.core.trainer import PPOTrainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("SWANLAB_MODE", "offline")
    for var in ("WANDB_DIR", "MLFLOW_TRACKING_URI", "SWANLAB_LOG_DIR"):
        monkeypatch.delenv(var, raising=False)
    config = tiny_config(tmp_path, "algorithm.adv_estimator=grpo", "trainer.logger=[console,jsonl,wandb,mlflow,swanlab]",
                         "trainer.project_name=verlproj", "trainer.experiment_name=run1")
    PPOTrainer(config).fit()
    out = tmp_path / "run"
    scores = [(r["step"], r["critic/score/mean"]) for r in lines(out / "metrics.jsonl")]
    assert [s for s, _ in scores] == [1, 2]

    client = MlflowClient((out / "mlruns").resolve().as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("verlproj").experiment_id])
    history = client.get_metric_history(run.info.run_id, "critic/score/mean")
    assert [(m.step, m.value) for m in history] == [(s, pytest.approx(v)) for s, v in scores]
    assert run.data.params["algorithm.adv_estimator"] == "grpo"

    (wandb_run,) = (out / "wandb").glob("offline-run-*")
    assert b"critic/score/mean" in next(wandb_run.glob("run-*.wandb")).read_bytes()
    (swan_run,) = (out / "swanlog").glob("run-*")
    assert b"critic/score/mean" in next(swan_run.glob("run-*.swanlab")).read_bytes()
