"""Function references a worker process can re-import (nothing unpicklable crosses processes)."""
from __future__ import annotations

import importlib
import importlib.util
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

FILE_PREFIX = "file:"


@dataclass(frozen=True)
class FunctionRef:
    """A module-level function named by ``module`` (dotted path, or ``file:/abs/path.py``) and ``name``."""

    module: str
    name: str

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> "FunctionRef":
        """The reference of ``fn``; raises ``ValueError`` if a worker could not re-import it."""
        ref = getattr(fn, "__rewardsmith_ref__", None)
        if ref is not None:
            return ref
        module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
        if not module or not name or "<" in name or module == "__main__":
            raise ValueError(
                f"{fn!r} cannot be re-imported by a worker process: define it at the top level of an importable "
                "module (or a custom_reward_function file)"
            )
        return cls(module, name)

    def load(self) -> Callable[..., Any]:
        """Import and return the function."""
        if self.module.startswith(FILE_PREFIX):
            module = load_file_module(self.module[len(FILE_PREFIX):])
        else:
            module = importlib.import_module(self.module)
        obj: Any = module
        for part in self.name.split("."):
            obj = getattr(obj, part)
        return obj


@dataclass(frozen=True)
class AdaptedRef:
    """A callable built by a module-level factory from a module-level function:
    ``adapter(target, **dict(options))``, e.g. a TRL reward function wrapped as a scorer.

    ``module`` (the target's) is what a worker pool preloads.
    """

    adapter: FunctionRef
    target: FunctionRef
    options: tuple = ()

    @property
    def module(self) -> str:
        return self.target.module

    @property
    def name(self) -> str:
        return self.target.name

    def load(self) -> Callable[..., Any]:
        """Import both and build the callable."""
        return self.adapter.load()(self.target.load(), **dict(self.options))


def load_file_module(path: str) -> Any:
    """Import a Python file as a module, once per process, under a name derived from its path.

    The module is put in ``sys.modules`` so that objects defined in it pickle
    by reference, and the file's own directory-relative imports behave as in verl.
    """
    resolved = str(Path(path).resolve())
    mod_name = "rewardsmith_custom_" + hashlib.sha1(resolved.encode()).hexdigest()[:12]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, resolved)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {resolved} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module
