"""Metric sinks backed by experiment trackers: TensorBoard, Weights & Biases, MLflow, SwanLab.

Each is the tracker's own package, called as verl's ``Tracking`` calls it, so
a verl launch script's ``trainer.logger=[console,wandb]`` logs where it did
under verl. A sink whose package is missing is a config error naming the
package to install (:func:`check_packages`), raised when the config is
checked, before any work: never a run that logs nowhere.

Where each writes (the trackers' own environment variables are honoured):

* ``tensorboard``: ``<output dir>/tensorboard``.
* ``wandb``: ``wandb.init(project=trainer.project_name, name=trainer.experiment_name,
  config=<the run's config>)`` in ``$WANDB_DIR`` or the output directory;
  ``WANDB_MODE=offline`` keeps the run on disk (``wandb sync`` uploads it).
* ``mlflow``: ``$MLFLOW_TRACKING_URI``, else a file store ``file:<output dir>/mlruns``;
  the experiment is the project name, the run the experiment name, the config
  its parameters.
* ``swanlab``: ``swanlab.init(project=..., experiment_name=..., config=...)`` in
  ``$SWANLAB_LOG_DIR`` or ``<output dir>/swanlog``, in ``$SWANLAB_MODE``
  (``cloud``/``online``, ``local``, ``offline``, ``disabled``; swanlab's default when unset).
"""
from __future__ import annotations

import importlib.util
import math
import os
import re
from pathlib import Path
from typing import Any, Optional

from rewardsmith.common.errors import ConfigError

# logger name -> (module to import, pip extra of rewardsmith that installs it)
PACKAGES = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb"),
            "mlflow": ("mlflow", "mlflow"), "swanlab": ("swanlab", "swanlab")}


def check_packages(loggers: list[str]) -> None:
    """Raise :class:`ConfigError` naming the package for each logger whose package is not installed."""
    for name in loggers:
        if name in PACKAGES and importlib.util.find_spec(PACKAGES[name][0]) is None:
            module, extra = PACKAGES[name]
            raise ConfigError(f"trainer.logger includes {name} but the {module} package is not installed: "
                              f"pip install 'rewardsmith[{extra}]'")


def _finite(metrics: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)}


def _flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


class TensorboardSink:
    """TensorBoard event files under ``<out_dir>/tensorboard``."""

    def __init__(self, out_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(out_dir / "tensorboard"))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    """A Weights & Biases run (see the module docstring)."""

    def __init__(self, out_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> None:
        import wandb

        self.run = wandb.init(project=project, name=experiment, config=config,
                              dir=os.environ.get("WANDB_DIR") or str(out_dir))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


# MLflow accepts these characters in metric names; verl maps "@" to "_at_", the rest become "_".
_MLFLOW_BAD = re.compile(r"[^A-Za-z0-9_\-. :/]")


class MlflowSink:
    """An MLflow run (see the module docstring)."""

    def __init__(self, out_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> None:
        import mlflow

        uri = os.environ.get("MLFLOW_TRACKING_URI") or (out_dir / "mlruns").resolve().as_uri()
        if uri.startswith("file:"):
            # MLflow 3 refuses a file store unless opted in; naming one is that choice.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.mlflow = mlflow
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(project)
        self.run = mlflow.start_run(run_name=experiment)
        params = {k: str(v)[:6000] for k, v in _flatten(config).items()}
        items = list(params.items())
        for i in range(0, len(items), 100):  # MLflow takes at most 100 params per call
            mlflow.log_params(dict(items[i:i + 100]))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        clean = {_MLFLOW_BAD.sub("_", k.replace("@", "_at_")): v for k, v in _finite(metrics).items()}
        self.mlflow.log_metrics(clean, step=step)

    def close(self) -> None:
        self.mlflow.end_run()


class SwanlabSink:
    """A SwanLab run (see the module docstring)."""

    def __init__(self, out_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> None:
        import swanlab

        self.swanlab = swanlab
        self.run = swanlab.init(project=project, name=experiment, config=config,
                                log_dir=os.environ.get("SWANLAB_LOG_DIR") or str(out_dir / "swanlog"),
                                mode=os.environ.get("SWANLAB_MODE") or None)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.swanlab.log(_finite(metrics), step=step)

    def close(self) -> None:
        self.swanlab.finish()


SINKS = {"tensorboard": TensorboardSink, "wandb": WandbSink, "mlflow": MlflowSink, "swanlab": SwanlabSink}


def open_sinks(loggers: list[str], out_dir: Path, project: str, experiment: str,
               config: Optional[dict[str, Any]] = None) -> list[Any]:
    """The tracker sinks among ``loggers``, opened (packages checked first)."""
    check_packages(loggers)
    sinks: list[Any] = []
    try:
        for name in loggers:
            if name in SINKS:
                sinks.append(SINKS[name](out_dir, project, experiment, config or {}))
    except BaseException:
        for sink in sinks:
            sink.close()
        raise
    return sinks
