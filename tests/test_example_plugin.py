"""The example plugin package, pip-installed into a fresh virtual environment, discovered and used."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_installed_example_plugin_is_discovered_and_used(tmp_path):
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # The fresh venv sees rewardsmith and its (large) dependencies from the test's
    # environment, so that only the plugin itself is installed here.
    (Path(site) / "_parent_env.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")

    def rewardsmith(*args):
        proc = subprocess.run([py, "-m", "rewardsmith", *map(str, args)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    names = [p["name"] for p in json.loads(rewardsmith("plugins", "--json"))]
    assert "example" not in names

    subprocess.run([py, "-m", "pip", "install", "-q", ROOT / "examples" / "plugin"],
                   check=True, timeout=300)

    plugin = next(p for p in json.loads(rewardsmith("plugins", "--json")) if p["name"] == "example")
    assert plugin["distribution"] == "rewardsmith-example-plugin"
    assert plugin["version"] == "0.2.0"
    assert plugin["scorers"] == ["keyword_match"]
    assert plugin["reward_managers"] == ["brevity_bonus"]
    assert plugin["error"] is None

    out = tmp_path / "scored.jsonl"
    rewardsmith("score", ROOT / "examples/data/keywords.jsonl", "-o", out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["score"] == [1.0, pytest.approx(1 / 3)]
    assert rows[0]["reward_extra_info"][0]["found"] == 3
    assert rows[1]["score"] == 1.0

    rewardsmith("score", ROOT / "examples/data/keywords.jsonl", "-o", out,
                "reward_model.reward_manager=brevity_bonus", "reward_model.reward_kwargs.bonus=0.5")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["score"] == [1.5, pytest.approx(1 / 3)]  # short and perfect earns the bonus
    assert rows[1]["score"] == 1.0  # perfect but long: no bonus

    # Its scorer and manager keep the contract (validate exits 1 otherwise).
    checked = rewardsmith("validate", "rewardsmith-example-plugin")
    assert "keyword_match: ok" in checked and "reward manager 'brevity_bonus': ok" in checked

    # Receipts name the plugin's distribution and version; --reproduce reports a newer release.
    receipt = rows[0]["receipt"][0]
    assert receipt["manager"]["name"] == "brevity_bonus" and receipt["components"][0]["scorer"] == "keyword_match"
    for origin in (receipt["manager"], receipt["components"][0]):
        assert (origin["distribution"], origin["version"]) == ("rewardsmith-example-plugin", "0.2.0")
    newer = tmp_path / "plugin-0.3.0"
    shutil.copytree(ROOT / "examples" / "plugin", newer, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    pyproject = newer / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.2.0"', 'version = "0.3.0"'))
    subprocess.run([py, "-m", "pip", "install", "-q", newer], check=True, timeout=300)
    reproduced = rewardsmith("score", "--reproduce", out)  # same code, same scores: exit 0
    assert ("reward manager 'brevity_bonus': plugin rewardsmith-example-plugin 0.2.0 when scored, "
            "rewardsmith-example-plugin 0.3.0 installed now") in reproduced
    assert "0 differ" in reproduced

    subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "rewardsmith-example-plugin"], check=True)
    assert "example" not in [p["name"] for p in json.loads(rewardsmith("plugins", "--json"))]
