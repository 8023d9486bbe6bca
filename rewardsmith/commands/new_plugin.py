"""``rewardsmith new-plugin NAME``: write a plugin package that passes ``rewardsmith validate`` as written.

The package holds a pyproject with the ``rewardsmith`` entry point, one scorer
(the answer after a final ``Answer:`` must equal the ground truth), its
validation cases and score range, and tests that use ``rewardsmith.testing``.
"""
from __future__ import annotations

import argparse
import keyword
import re
from pathlib import Path

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "A rewardsmith plugin: the {pkg} scorer"
requires-python = ">=3.10"
dependencies = ["rewardsmith"]

[project.optional-dependencies]
test = ["pytest>=8"]

# This entry point is all rewardsmith needs to find the plugin after `pip install`.
[project.entry-points.rewardsmith]
{pkg} = "{pkg}"

[tool.setuptools]
packages = ["{pkg}"]
'''

PACKAGE = '''"""The {pkg} rewardsmith plugin: one scorer, ``{pkg}``, for the data source ``{pkg}``."""
from __future__ import annotations

import re

from rewardsmith import hookimpl

ANSWER = re.compile(r"Answer:[ \\t]*(.+?)[ \\t]*$", re.MULTILINE)


def normalize(text: str) -> str:
    """Lower case, single spaces, no trailing period."""
    return " ".join(text.lower().split()).rstrip(".")


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """1.0 when the response's last ``Answer:`` line equals ``ground_truth`` (after
    :func:`normalize`), else 0.0. A response without an ``Answer:`` line scores 0.0."""
    if not isinstance(solution_str, str):
        raise TypeError(f"{pkg}: solution_str must be a string, got {{type(solution_str).__name__}}")
    if not isinstance(ground_truth, str):
        raise TypeError(f"{pkg}: ground_truth must be a string, got {{type(ground_truth).__name__}}")
    answers = ANSWER.findall(solution_str[-10_000:])  # the end of the response decides
    if not answers:
        return 0.0
    return 1.0 if normalize(answers[-1]) == normalize(ground_truth) else 0.0


# What `rewardsmith validate` and `rewardsmith.testing` check the scorer against:
# correct responses in this data source's canonical format, and the score range.
compute_score.examples = [
    {{"data_source": "{pkg}", "ground_truth": "Paris", "response": "The capital of France is Paris.\\nAnswer: Paris"}},
    {{"data_source": "{pkg}", "ground_truth": "42", "response": "6 * 7 = 42\\nAnswer: 42"}},
]
compute_score.score_range = (0.0, 1.0)


@hookimpl
def register_scorers(register):
    register("{pkg}", compute_score, data_sources=["{pkg}"])
'''

CONFTEST = '''# rewardsmith's pytest plugin: the `validate_scorer` fixture.
pytest_plugins = ["rewardsmith.testing"]
'''

TEST = '''from {pkg} import compute_score


def test_pays_the_final_answer_only():
    assert compute_score("{pkg}", "Answer: Paris", "Paris") == 1.0
    assert compute_score("{pkg}", "Answer: paris.", "Paris") == 1.0
    assert compute_score("{pkg}", "Answer: Paris\\nAnswer: Lyon", "Paris") == 0.0
    assert compute_score("{pkg}", "Paris", "Paris") == 0.0


def test_keeps_the_rewardsmith_contract(validate_scorer):
    # gold scores max, empty scores min, finite, deterministic across processes, odd inputs survived ...
    validate_scorer(compute_score)
'''

README = '''# {name}

A [rewardsmith](https://pypi.org/project/rewardsmith/) plugin that registers the
scorer `{pkg}` for rows whose `data_source` is `{pkg}`.

```bash
pip install -e .
rewardsmith plugins            # lists {pkg}
rewardsmith validate {pkg}     # checks the scorer against the contract
pip install -e '.[test]' && pytest
```
'''


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the distribution name, e.g. my-reward (the package is my_reward)")
    parser.add_argument("--dir", help="where to write it (default: ./NAME)")


def write_plugin(name: str, directory: Path) -> list[Path]:
    """Write the template package for ``name`` under ``directory``; returns the files written."""
    if not NAME.match(name):
        raise ValueError(f"plugin name {name!r}: use letters, digits, '-' and '_', starting with a letter")
    pkg = name.lower().replace("-", "_")
    if keyword.iskeyword(pkg):
        raise ValueError(f"plugin name {name!r} makes the package name {pkg!r}, a Python keyword")
    if directory.exists() and any(directory.iterdir()):
        raise ValueError(f"{directory} exists and is not empty; choose another --dir")
    files = {
        "pyproject.toml": PYPROJECT, f"{pkg}/__init__.py": PACKAGE, "tests/conftest.py": CONFTEST,
        "tests/test_scorer.py": TEST, "README.md": README,
    }
    written = []
    for rel, template in files.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(name=name, pkg=pkg))
        written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    directory = Path(args.dir or args.name)
    for path in write_plugin(args.name, directory):
        print(f"wrote {path}")
    print(f"next: pip install -e {directory} && rewardsmith validate {args.name.lower().replace('-', '_')}")
    return 0
