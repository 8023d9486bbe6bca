"""Loading a user's verl-style ``compute_score`` from ``custom_reward_function``."""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Callable

from rewardkit.common.errors import CustomFunctionError
from rewardkit.common.function_refs import FILE_PREFIX, FunctionRef, load_file_module

PKG_PREFIX = "pkg://"


def load_custom_function(path: str, name: str = "compute_score") -> Callable[..., Any]:
    """Load ``name`` from a Python file or from ``pkg://dotted.module``, as verl does.

    The returned function carries a :class:`FunctionRef`, so worker processes
    of the parallel manager re-import it from the same file.
    """
    if path.startswith(PKG_PREFIX):
        module_name = path[len(PKG_PREFIX):]
        where = f"module '{module_name}' (custom_reward_function.path={path})"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise CustomFunctionError(f"cannot import {where}: {type(exc).__name__}: {exc}") from exc
        ref_module = module_name
    else:
        file = Path(path).expanduser()
        where = f"file '{path}' (custom_reward_function.path)"
        if not file.is_file():
            raise CustomFunctionError(f"custom reward function file not found: '{path}' (custom_reward_function.path)")
        try:
            module = load_file_module(str(file))
        except Exception as exc:
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
    try:
        fn.__rewardkit_ref__ = FunctionRef(ref_module, name)
    except AttributeError:  # a builtin or C function: importable by module path anyway
        pass
    return fn
