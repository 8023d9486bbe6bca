"""benchmarks/reward_overlap.py --quick end to end: real sandbox and judge servers, a tiny model, TRL, one round."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.sandbox.testing import isolation_unavailable

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "reward_overlap.py"
KINDS = ("none", "math", "sandbox", "judge")
CONFIGS = ("sequential", "overlapped", "trl")
DOCS = ROOT / "docs" / "training.md"


def table(text: str) -> tuple[str, dict[tuple[str, str], list[float]]]:
    """The header line and the rows (figures by kind and configuration) of the script's table in ``text``."""
    header = next(line for line in text.splitlines() if line.startswith("reward") and line.split()[-1] == "TRL")
    rows = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 9 and fields[0] in KINDS and fields[1] in CONFIGS:
            rows[(fields[0], fields[1])] = [float(x) for x in fields[2:]]
    return header, rows


@pytest.mark.slow  # twelve training runs, each its own process importing torch (and TRL): minutes on 2 cores
def test_quick_run_prints_every_configuration_and_the_targets():
    pytest.importorskip("trl")
    if isolation_unavailable():
        pytest.skip(f"the sandbox server cannot start here: {isolation_unavailable()}")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    header, rows = table(proc.stdout)
    assert set(rows) == {(k, c) for k in KINDS for c in CONFIGS}, proc.stdout
    for (kind, config), (rate, step, waited, reward, peak_mb, x_seq, x_trl) in rows.items():
        assert rate > 0 and step > 0 and peak_mb > 0 and 0 <= waited <= step, (kind, config)
        if config == "sequential":
            assert x_seq == 1.0
        if config == "trl":
            assert x_trl == 1.0
        if kind == "judge":
            # The judge server answers each request in 200 ms: the run really asked it.
            assert reward >= 0.2, (config, reward)
    targets = proc.stdout.split("targets (overlapped):", 1)[1]
    for kind in ("math", "sandbox", "judge"):
        assert f"  {kind}: step " in targets and f"  {kind}: the overlapped step waited " in targets
    assert "  judge: " in targets and "x TRL's samples/s" in targets and "  none: " in targets
    # The table quoted in docs/training.md is this script's, every configuration in it.
    docs_header, docs_rows = table(DOCS.read_text())
    assert docs_header == header and set(docs_rows) == set(rows)
