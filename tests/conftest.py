"""Shared fixtures: temporary plugin distributions and configs."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from rewardsmith.common.config import load_config
from rewardsmith.core.schema import Config
from rewardsmith.plugins import loader as plugin_host

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture
def make_config():
    """``make_config("key=value", ...)`` -> a validated Config."""
    return lambda *overrides: load_config(Config, None, list(overrides))


@pytest.fixture
def installed_plugins(tmp_path, monkeypatch):
    """Install fake plugin distributions (real dist-info + entry points) on sys.path.

    ``installed_plugins({"dist-name": ("module_name", "source code")})``; worker
    processes see them too, through PYTHONPATH. The registry cache is cleared.
    """
    site = tmp_path / "site"
    site.mkdir()

    def install(dists: dict[str, tuple[str, str]]) -> Path:
        for dist, (module, source) in dists.items():
            (site / f"{module}.py").write_text(textwrap.dedent(source))
            info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
            (info / "entry_points.txt").write_text(f"[rewardsmith]\n{module} = {module}\n")
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.setenv("PYTHONPATH", str(site) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        plugin_host._cache.clear()
        return site

    yield install
    plugin_host._cache.clear()
    for name in [m for m in sys.modules if m.startswith("fakeplug")]:
        del sys.modules[name]
