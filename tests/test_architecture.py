"""The folders import one way (docs/architecture.md): a test so the picture stays true.

Every import (top-level or inside a function) and every string that names a
project module (``importlib.import_module("rewardsmith.core.x")``, function
references) counts as an arrow from the importing folder to the imported one.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"rewardsmith": "face", "core": "core", "plugins": "plugins", "reward_fns": "reward_fns",
           "sandbox": "sandbox", "common": "common"}
# Which folders each folder may import (besides itself); every folder may import
# the leaf (common), as DESIGN.md says. The sandbox service is
# self-contained; the others reach it only through its client.
ALLOWED = {
    "face": {"core", "plugins", "reward_fns", "sandbox", "common"},
    "core": {"plugins", "reward_fns", "sandbox.client", "common"},
    "plugins": {"reward_fns", "sandbox.client", "common"},
    "reward_fns": {"sandbox.client", "common"},
    "sandbox": {"common"},
    "common": set(),
}
MODULE_NAME = re.compile(r"rewardsmith(\.[a-z_][a-z0-9_]*)+")


def folder_of(module: str) -> str:
    """The folder a ``rewardsmith.*`` module lives in ('face' for the public face)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in FOLDERS and parts[1] != "rewardsmith":
        return FOLDERS[parts[1]]
    return "face"


def target(module: str) -> str:
    """What an import of ``module`` counts as: its folder, or ``sandbox.client`` for the client."""
    folder = folder_of(module)
    if folder == "sandbox" and (module == "rewardsmith.sandbox" or module.startswith("rewardsmith.sandbox.client")):
        return "sandbox.client"
    return folder


def project_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every project module ``path`` imports or names in code."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("rewardsmith")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rewardsmith") and node.level == 0:
            found += [(node.lineno, node.module)]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and MODULE_NAME.fullmatch(node.value)):
            found.append((node.lineno, node.value))
    return found


def source_files() -> list[tuple[str, Path]]:
    return [(folder, path) for name, folder in FOLDERS.items() for path in sorted((ROOT / name).rglob("*.py"))]


def test_folders_import_one_way():
    broken = []
    for folder, path in source_files():
        for line, module in project_imports(path):
            to = target(module)
            if to != folder and to not in ALLOWED[folder] and not (to == "sandbox.client" and folder == "sandbox"):
                broken.append(f"{path.relative_to(ROOT)}:{line}: {folder} imports {module} ({to})")
    assert not broken, "imports against docs/architecture.md:\n" + "\n".join(broken)


def test_the_checker_sees_every_kind_of_arrow(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text('"""rewardsmith.core.trainer in a docstring is not an import."""\n'
                      "import rewardsmith.core.trainer\n"
                      "def f():\n    from rewardsmith.plugins.loader import get_registry\n"
                      "X = 'rewardsmith.reward_fns.gsm8k'\n")
    assert [m for _, m in project_imports(sample)] == [
        "rewardsmith.core.trainer", "rewardsmith.plugins.loader", "rewardsmith.reward_fns.gsm8k"]
    assert target("rewardsmith.sandbox.client") == "sandbox.client"
    assert target("rewardsmith.sandbox.server") == "sandbox"
    assert target("rewardsmith.commands.train") == "face"
    assert "face" not in ALLOWED["core"] and "core" not in ALLOWED["plugins"]


def test_plugin_core_stays_small():
    # The hooks, loader and registry are the part plugin authors read to see how
    # their plugin is loaded: kept plain, in the style of datasette's and llm's.
    # Seven hooks (scorers, managers, estimators, policy losses, stress attacks, tools,
    # interactions) and the lookups the host needs (receipts name who registered a
    # scorer) fit in 380 lines.
    core = ["plugins/hookspecs.py", "plugins/loader.py", "plugins/registry.py"]
    lines = sum(len((ROOT / f).read_text().splitlines()) for f in core)
    assert lines < 380, f"the plugin core grew to {lines} lines"
