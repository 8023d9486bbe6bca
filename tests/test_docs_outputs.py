"""Command output pasted into docs/*.md is what the commands print now (docs/outputs.py, `make docs`)."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("docs_outputs", ROOT / "docs" / "outputs.py")
outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outputs)


# Runs 28 programs in a sandbox: about a minute on a busy machine.
SLOW_BLOCKS = {"stress-code"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW_BLOCKS else name
                                  for name in sorted(outputs.BLOCKS)])
def test_pasted_output_is_current(name, capsys):
    status = outputs.main(["--check", "--only", name])
    assert status == 0, f"docs block '{name}' is stale; run `make docs`:\n{capsys.readouterr().out}"


def test_a_stale_block_is_reported_then_regenerated(tmp_path, capsys):
    text = (ROOT / "docs" / "tools.md").read_text()
    (tmp_path / "tools.md").write_text(text.replace("agreement: 0.", "agreement: 9.", 1))
    assert outputs.main(["--check", "--only", "diff", "--docs", str(tmp_path)]) == 1
    report = capsys.readouterr().out
    assert "-agreement: 9." in report and "+agreement: 0." in report and "stale: diff" in report
    assert outputs.main(["--only", "diff", "--docs", str(tmp_path)]) == 0
    assert (tmp_path / "tools.md").read_text() == text


def test_markers_and_recipes_match(tmp_path):
    shutil.copy(ROOT / "docs" / "tools.md", tmp_path / "tools.md")
    with pytest.raises(SystemExit, match="recipe but no marker.*stress-routed"):
        outputs.main(["--check", "--only", "stress-routed", "--docs", str(tmp_path)])
    (tmp_path / "extra.md").write_text("<!-- output: no-such-block -->\n```\n```\n")
    with pytest.raises(SystemExit, match="no recipe for output block 'no-such-block'"):
        outputs.main(["--check", "--only", "diff", "--docs", str(tmp_path)])
