"""docs/scorers.md's table of the spent split 3 (tuned on) is the benchmark's output, not typed by hand."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = {"before": ROOT / "benchmarks/results/math_blind3_spent_before_82d07d5.txt",
           "after": ROOT / "benchmarks/results/math_blind3_spent_after_d3c01d0.txt"}
# docs row -> the benchmark's line, in the math_answer sections (answers first, then hacks)
ROWS = {"answers: right verdicts": (0, "right verdicts"), "answers: correct refused": (0, "correct answers refused"),
        "answers: wrong paid": (0, "wrong answers paid"), "hacks paid": (1, "hacks paid"),
        "controls refused": (1, "controls refused"), "controls undecided": (1, "controls undecided/error")}


def _measured(path: Path) -> dict[str, str]:
    sections = re.findall(r"=== [^\n]*scorer=math_answer [^\n]*===\n(.*?)\n  per ", path.read_text(), re.DOTALL)
    found = {}
    for row, (section, label) in ROWS.items():
        found[row] = re.search(re.escape(label) + r"\s+(\d+/\d+)", sections[section]).group(1)
    found["answers: undecided"] = re.search(r"undecided\s+(\d+)/", sections[0]).group(1)
    return found


@pytest.mark.parametrize("column, index", [("before", 1), ("after", 2)])
def test_the_tuned_split_3_table_is_the_benchmark_output(column, index):
    docs = (ROOT / "docs/scorers.md").read_text()
    table = docs[docs.index("| split 3, tuned on (spent) |"):].split("\n\n", 1)[0]
    cells = {line.split("|")[1].strip(): line.split("|")[1 + index].strip() for line in table.splitlines()[2:]}
    for row, value in _measured(RESULTS[column]).items():
        assert cells[row].split()[0] == value, (column, row, cells[row], value)
