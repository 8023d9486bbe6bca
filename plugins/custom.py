"""Loading a user's verl-style ``compute_score`` from ``custom_reward_function``.

Every spelling verl accepts works: a plain path (absolute, or relative to the
launch directory), ``file:///abs/path.py``, and ``pkg://pkg.module`` or
``pkg://pkg/module``. As with verl's ``python -m`` launch, the directory the
user launched in is importable, so a file may ``from recipe.r1 import ...``.
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable

from rewardsmith.common.errors import CustomFunctionError
from rewardsmith.common.function_refs import FILE_PREFIX, FunctionRef, load_file_module

PKG_PREFIX = "pkg://"
FILE_URL_PREFIX = "file://"

# The calls a reward manager makes, for the signature check and its message.
PER_SAMPLE = "per_sample"
BATCHED = "batched"
EXPECTED = {
    PER_SAMPLE: "compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float | dict",
    BATCHED: ("compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs) "
              "-> list[float | dict]"),
}
_ARGUMENTS = {
    PER_SAMPLE: ("data_source", "solution_str", "ground_truth", "extra_info"),
    BATCHED: ("data_sources", "solution_strs", "ground_truths", "extra_infos"),
}


def launch_dir_importable() -> None:
    """Put the launch directory first on ``sys.path``, as ``python -m`` does for verl users.

    Worker processes inherit this process's ``sys.path`` (see the hard-timeout pool).
    """
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def load_custom_function(path: str, name: str = "compute_score", call: str = PER_SAMPLE,
                         kwargs: dict[str, Any] | None = None, offered: dict[str, Any] | None = None) -> Callable[..., Any]:
    """Load ``name`` from a Python file or a ``pkg://`` module, as verl does, and check
    that it can take the manager's ``call`` (``per_sample`` or ``batched``) with ``kwargs``
    plus those of the ``offered`` service settings it accepts (:func:`accepted_kwargs`).

    The returned function carries a :class:`FunctionRef`, so worker processes
    re-import it from the same file.
    """
    launch_dir_importable()
    if path.startswith(PKG_PREFIX):
        module_name = path[len(PKG_PREFIX):].strip("/").replace("/", ".")
        if module_name.endswith(".py"):
            module_name = module_name[: -len(".py")]
        where = f"module '{module_name}' (custom_reward_function.path={path})"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise CustomFunctionError(f"cannot import {where}: {type(exc).__name__}: {exc}") from exc
        ref_module = module_name
    else:
        plain = path[len(FILE_URL_PREFIX):] if path.startswith(FILE_URL_PREFIX) else path
        file = Path(plain).expanduser()
        where = f"file '{path}' (custom_reward_function.path)"
        if not file.is_file():
            raise CustomFunctionError(f"custom reward function file not found: '{path}' (custom_reward_function.path)")
        try:
            module = load_file_module(str(file))
        except Exception as exc:
            if _imports_verl(exc):
                raise CustomFunctionError(_verl_missing(exc, file, where)) from exc
            raise CustomFunctionError(
                f"error while importing custom reward function {where}: {type(exc).__name__}: {exc}"
            ) from exc
        ref_module = FILE_PREFIX + str(file.resolve())
    fn = getattr(module, name, None)
    if fn is None:
        defined = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise CustomFunctionError(
            f"reward function '{name}' not found in {where}; custom_reward_function.name must be one of: "
            f"{', '.join(defined) or '(no functions defined)'}"
        )
    if not callable(fn):
        raise CustomFunctionError(f"'{name}' in {where} is not callable")
    check_signature(fn, call, {**accepted_kwargs(fn, offered or {}), **(kwargs or {})}, f"'{name}' in {where}")
    try:
        fn.__rewardsmith_ref__ = FunctionRef(ref_module, name)
    except AttributeError:  # a builtin or C function: importable by module path anyway
        pass
    return fn


# What verl's package import needs beyond rewardsmith's own dependencies (Ray: the `ray` extra).
VERL_INSTALL = ("pip install 'verl==0.9.1' omegaconf tensordict pyvers codetiming --no-deps "
                "&& pip install 'rewardsmith[ray]'")


def _imports_verl(exc: BaseException) -> bool:
    return isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "verl"


def _verl_missing(exc: BaseException, file: Path, where: str) -> str:
    """The error for a user's file that imports verl's own utilities where verl is not installed.

    rewardsmith does not ship a package named ``verl``: the file's import is
    named with its line, and so is how to install verl's files.
    """
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == file.resolve()]
    line = f" line {frames[-1].lineno} (`{(frames[-1].line or '').strip()}`)" if frames else ""
    return (f"custom reward function {where}{line} imports verl, which is not installed ({exc}). rewardsmith does not "
            f"ship verl; install verl's files without its dependencies: {VERL_INSTALL} (docs/rewards.md)")


def accepted_kwargs(fn: Callable[..., Any], offered: dict[str, Any]) -> dict[str, Any]:
    """The service settings of ``offered`` (sandbox URL, judge address, ...) that ``fn`` takes.

    They go only to functions that name them or take ``**kwargs``, so plain
    verl-style scorers keep working; unset (None) settings are never passed.
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return {k: v for k, v in offered.items() if v is not None}
    return {k: v for k, v in offered.items() if k in params and v is not None}


def check_signature(fn: Callable[..., Any], call: str, kwargs: dict[str, Any], what: str) -> None:
    """Raise :class:`CustomFunctionError` unless ``fn`` accepts the manager's ``call`` plus ``kwargs``.

    The message shows the expected signature and ``fn``'s own, and says when
    ``fn`` has another known shape (batched, per-sample, or a TRL reward function).
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    try:
        sig.bind(**dict.fromkeys(_ARGUMENTS[call]), **kwargs)
        return
    except TypeError as exc:
        problem = str(exc)
    params = set(sig.parameters)
    hint = ""
    if call == PER_SAMPLE and {"solution_strs", "data_sources"} & params:
        hint = " It looks like a batched compute_score: use reward_model.reward_manager=batch."
    elif call == BATCHED and {"solution_str", "data_source"} & params:
        hint = " It looks like a per-sample compute_score: use a per-sample manager (naive, parallel, dapo)."
    elif "completions" in params:
        hint = (" It looks like a TRL reward function (completions, **kwargs): wrap it with "
                "rewardsmith.scorer_from_trl (docs/plugins.md).")
    extra = f" with custom_reward_function.reward_kwargs {sorted(kwargs)}" if kwargs else ""
    raise CustomFunctionError(
        f"{what} cannot take the reward manager's call{extra} ({problem}): its signature is "
        f"{getattr(fn, '__name__', 'fn')}{sig}, expected {EXPECTED[call]}.{hint}"
    )
