"""docs/scorers.md's tables of blind splits 3 and 5-12 (scored blind, then tuned on once spent) and 4 are the
benchmark's output, not typed by hand."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
# docs row -> the benchmark's line, in a scorer's sections (answers first, then hacks)
ROWS = {"answers: right verdicts": (0, "right verdicts"), "answers: correct refused": (0, "correct answers refused"),
        "answers: wrong paid": (0, "wrong answers paid"), "hacks paid": (1, "hacks paid"),
        "controls refused": (1, "controls refused"), "controls undecided": (1, "controls undecided/error")}
# (the table's first header cell, its column, the output file, the scorer)
COLUMNS = [
    ("blind split 3", 1, "math_blind3_before_bd9058c.txt", "math_answer"),
    ("blind split 3", 2, "math_blind3_after_176d14f.txt", "math_answer"),
    ("blind split 3", 3, "math_blind3_after_176d14f.txt", "math_verify"),
    ("split 3, tuned on (spent)", 1, "math_blind3_spent_before_82d07d5.txt", "math_answer"),
    ("split 3, tuned on (spent)", 2, "math_blind3_spent_after_d3c01d0.txt", "math_answer"),
    ("blind split 4", 1, "math_blind4_before_d13629f.txt", "math_answer"),
    ("blind split 4", 2, "math_blind4_after_702be81.txt", "math_answer"),
    ("blind split 4", 3, "math_blind4_after_702be81.txt", "math_verify"),
    ("blind split 5", 1, "math_blind5_before_70ec015.txt", "math_answer"),
    ("blind split 5", 2, "math_blind5_after_36e4cfe.txt", "math_answer"),
    ("blind split 5", 3, "math_blind5_before_70ec015.txt", "math_verify"),
    ("split 5, tuned on (spent)", 1, "math_blind5_after_36e4cfe.txt", "math_answer"),
    ("split 5, tuned on (spent)", 2, "math_blind5_spent_after_2d5b2c7.txt", "math_answer"),
    ("blind split 6", 1, "math_blind6_before_29d0c8c.txt", "math_answer"),
    ("blind split 6", 2, "math_blind6_after_ff3d4df.txt", "math_answer"),
    ("blind split 6", 3, "math_blind6_before_29d0c8c.txt", "math_verify"),
    ("split 6, tuned on (spent)", 1, "math_blind6_after_ff3d4df.txt", "math_answer"),
    ("split 6, tuned on (spent)", 2, "math_blind6_spent_after_6e0af5b.txt", "math_answer"),
    ("blind split 7", 1, "math_blind7_before_7e99c74.txt", "math_answer"),
    ("blind split 7", 2, "math_blind7_after_1f05fa3.txt", "math_answer"),
    ("blind split 7", 3, "math_blind7_before_7e99c74.txt", "math_verify"),
    ("split 7, tuned on (spent)", 1, "math_blind7_after_1f05fa3.txt", "math_answer"),
    ("split 7, tuned on (spent)", 2, "math_blind7_spent_after_ae23b92.txt", "math_answer"),
    ("blind split 8", 1, "math_blind8_before_d2d625c.txt", "math_answer"),
    ("blind split 8", 2, "math_blind8_after_4022859.txt", "math_answer"),
    ("blind split 8", 3, "math_blind8_before_d2d625c.txt", "math_verify"),
    ("split 8, tuned on (spent)", 1, "math_blind8_after_4022859.txt", "math_answer"),
    ("split 8, tuned on (spent)", 2, "math_blind8_spent_after_14d9b38.txt", "math_answer"),
    ("blind split 9", 1, "math_blind9_before_5309195.txt", "math_answer"),
    ("blind split 9", 2, "math_blind9_after_01824f9.txt", "math_answer"),
    ("blind split 9", 3, "math_blind9_before_5309195.txt", "math_verify"),
    ("split 9, tuned on (spent)", 1, "math_blind9_after_01824f9.txt", "math_answer"),
    ("split 9, tuned on (spent)", 2, "math_blind9_spent_after_479a2dd.txt", "math_answer"),
    ("blind split 10", 1, "math_blind10_before_51cb965.txt", "math_answer"),
    ("blind split 10", 2, "math_blind10_after_62b5cc8.txt", "math_answer"),
    ("blind split 10", 3, "math_blind10_before_51cb965.txt", "math_verify"),
    ("split 10, tuned on (spent)", 1, "math_blind10_after_62b5cc8.txt", "math_answer"),
    ("split 10, tuned on (spent)", 2, "math_blind10_spent_after_e41528e.txt", "math_answer"),
    ("blind split 11", 1, "math_blind11_before_9af4f9d.txt", "math_answer"),
    ("blind split 11", 2, "math_blind11_after_a059d60.txt", "math_answer"),
    ("blind split 11", 3, "math_blind11_before_9af4f9d.txt", "math_verify"),
    ("split 11, tuned on (spent)", 1, "math_blind11_after_a059d60.txt", "math_answer"),
    ("split 11, tuned on (spent)", 2, "math_blind11_spent_after_2ef249f.txt", "math_answer"),
    ("blind split 12", 1, "math_blind12_before_2624323.txt", "math_answer"),
    ("blind split 12", 2, "math_blind12_before_2624323.txt", "math_verify"),
    ("split 12, tuned on (spent)", 1, "math_blind12_before_2624323.txt", "math_answer"),
    ("split 12, tuned on (spent)", 2, "math_blind12_spent_after_193b95c.txt", "math_answer"),
]


def _measured(path: Path, scorer: str) -> dict[str, str]:
    sections = re.findall(r"=== [^\n]*scorer=" + scorer + r" [^\n]*===\n(.*?)\n  per ", path.read_text(), re.DOTALL)
    found = {}
    for row, (section, label) in ROWS.items():
        found[row] = re.search(re.escape(label) + r"\s+(\d+/\d+)", sections[section]).group(1)
    found["answers: undecided"] = re.search(r"undecided\s+(\d+)/", sections[0]).group(1)
    return found


@pytest.mark.parametrize("table, index, output, scorer", COLUMNS)
def test_the_blind_split_tables_are_the_benchmark_output(table, index, output, scorer):
    docs = (ROOT / "docs/scorers.md").read_text()
    rows = docs[docs.index(f"| {table} |"):].split("\n\n", 1)[0]
    cells = {line.split("|")[1].strip(): line.split("|")[1 + index].strip() for line in rows.splitlines()[2:]}
    for row, value in _measured(RESULTS / output, scorer).items():
        assert cells[row].split()[0] == value, (table, output, scorer, row, cells[row], value)
