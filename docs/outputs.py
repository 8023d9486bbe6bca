"""Regenerate (or check) the command output pasted into the docs.

A pasted output is a fenced block right after a marker line::

    <!-- output: NAME -->
    ```
    $ rewardsmith ...
    ...
    ```

``NAME`` is one of :data:`BLOCKS`: a function that runs the block's commands
for real, in a fresh scratch directory, and returns the block's text. The
scratch directory holds a link to the checkout's ``examples/`` (so
``examples/data/...`` paths work as they do from the checkout) and is written
``/tmp/docs`` in the output. A command's output is its stdout and stderr as a
terminal shows them, less progress bars.

    python docs/outputs.py            # rewrite every block in docs/*.md (`make docs`)
    python docs/outputs.py --check    # exit 1, with a diff, if a block is stale
    python docs/outputs.py --only diff --check

``tests/test_docs_outputs.py`` runs ``--check`` for every block. Outputs that
take minutes to reproduce (training runs, benchmarks) are not regenerated
here; the docs name the commit and date they were measured at. Blocks that
need the sandbox start a real one (``rewardsmith sandbox serve``) and show it
on port 8080.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHOWN_SCRATCH = "/tmp/docs"
MARKER = re.compile(r"^<!-- output: ([\w-]+) -->$")
# A duration such as pytest's "2 passed in 0.48s" differs on every run: the check ignores it.
DURATION = re.compile(r"\b\d+\.\d+s\b")


class StaleOutput(RuntimeError):
    """A command of a block did not end as the block expects."""


class Session:
    """Commands run in one scratch directory, and the transcript of those shown."""

    def __init__(self, scratch: Path) -> None:
        self.dir = scratch
        self.lines: list[str] = []
        # What varies run to run -> how the docs show it (the scratch dir, a server's port).
        self.shown_as: dict[str, str] = {str(scratch): SHOWN_SCRATCH}
        bin_dir = str(Path(sys.executable).parent)  # `rewardsmith`, `python` and `pytest` of this venv
        self.env = {**{k: v for k, v in os.environ.items() if k not in ("REWARDSMITH_DEBUG", "PYTHONPATH")},
                    "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "COLUMNS": "80"}

    def write(self, name: str, text: str) -> Path:
        """A file in the scratch directory."""
        path = self.dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def run(self, command: str, *, shown: bool = True, last: Optional[int] = None, first_paragraph: bool = False,
            status: int = 0) -> str:
        """Run ``command`` (bash) and return its output; when ``shown``, add it, with stderr, to the
        transcript: only its ``last`` lines after a ``...`` when given (what comes before varies run
        to run), only its lines up to the first blank one when ``first_paragraph``. A command not
        shown returns its stdout alone."""
        # Bytes, decoded here: text mode would turn a progress bar's carriage returns into newlines.
        proc = subprocess.run(["bash", "-c", command], cwd=self.dir, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if shown else subprocess.PIPE, timeout=600)
        out = self.stable(proc.stdout.decode())
        if proc.returncode != status:
            raise StaleOutput(f"`{command}` exited {proc.returncode}, expected {status}:\n{out}"
                              f"{(proc.stderr or b'').decode()}")
        if shown:
            # A line holding a carriage return is a progress bar redrawn in place (its rate differs every run).
            lines = [line for line in out.rstrip("\n").split("\n") if "\r" not in line] if out.strip() else []
            if last is not None and len(lines) > last:
                lines = ["...", *lines[-last:]]
            if first_paragraph and "" in lines:
                lines = lines[:lines.index("")]
            self.lines += [f"$ {self.stable(command)}", *lines]
        return out

    def stable(self, text: str) -> str:
        """``text`` as the docs show it: :attr:`shown_as` applied."""
        for actual, shown in self.shown_as.items():
            text = text.replace(actual, shown)
        return text

    def text(self) -> str:
        return "\n".join(self.lines)


BLOCKS: dict[str, Callable[[Session], None]] = {}


def block(name: str) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    """Register a block's recipe under ``name``."""
    def register(fn: Callable[[Session], None]) -> Callable[[Session], None]:
        BLOCKS[name] = fn
        return fn
    return register


# -- docs/tools.md ---------------------------------------------------------------------
@block("diff")
def _diff(s: Session) -> None:
    s.run("rewardsmith diff examples/data/math_responses.jsonl math_answer gsm8k")


@block("diff-json")
def _diff_json(s: Session) -> None:
    command = "rewardsmith diff examples/data/math_responses.jsonl math_answer gsm8k --json"
    s.lines += [f"$ {command}", *excerpt(s.run(command, shown=False), ("a", "b", "samples", "compared", "mcnemar"))]


def excerpt(pretty_json: str, keys: tuple[str, ...]) -> list[str]:
    """The lines of an indented JSON object's top-level ``keys``, a ``...`` for each run of others left out."""
    entries: list[tuple[str, list[str]]] = []
    for line in pretty_json.rstrip().split("\n")[1:-1]:
        if line.startswith('  "'):
            entries.append((json.loads(line.split(":", 1)[0]), []))
        entries[-1][1].append(line)
    out = ["{"]
    for key, lines in entries:
        if key in keys:
            out += lines
        elif out[-1] != "  ...":
            out.append("  ...")
    return out


@block("receipt")
def _receipt(s: Session) -> None:
    s.run("rewardsmith score examples/data/math_responses.jsonl -o scored.jsonl", shown=False)
    s.run("""python -c "import json; print(json.dumps(json.loads(open('scored.jsonl').readline())['receipt'][0], indent=2))\"""")


MY_REWARD = '''def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0 if str(ground_truth) in solution_str else 0.0
'''


@block("reproduce")
def _reproduce(s: Session) -> None:
    shutil.copy(ROOT / "examples" / "data" / "math_responses.jsonl", s.dir / "math_responses.jsonl")
    s.write("my_reward.py", MY_REWARD)
    s.run("cat my_reward.py")
    s.run("rewardsmith score math_responses.jsonl -o mine.jsonl custom_reward_function.path=my_reward.py", last=1)
    s.run("sed -i 's/str(ground_truth) in solution_str/solution_str.rstrip().endswith(str(ground_truth))/' my_reward.py")
    s.run("rewardsmith score --reproduce mine.jsonl; echo \"exit $?\"")


@block("validate-math-answer")
def _validate_math_answer(s: Session) -> None:
    s.run("rewardsmith validate math_answer")


CONSTANT = '''def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 0.5
'''
SLOW = '''import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    time.sleep(30)
    return 1.0
'''
GOLD = '{"data_source": "toy", "prompt": "What is 6 * 7?", "reward_model": {"ground_truth": "42"}, "response": "6 * 7 = 42"}\n'


@block("validate-constant")
def _validate_constant(s: Session) -> None:
    s.write("constant.py", CONSTANT)
    s.write("gold.jsonl", GOLD)
    s.run("cat constant.py")
    s.run("cat gold.jsonl")
    s.run('rewardsmith validate constant.py --rows gold.jsonl; echo "exit $?"')


@block("validate-slow")
def _validate_slow(s: Session) -> None:
    s.write("slow.py", SLOW)
    s.write("gold.jsonl", GOLD)
    s.run("cat slow.py")
    s.run('rewardsmith validate slow.py --rows gold.jsonl --timeout 1; echo "exit $?"')


CODE_GOLD = json.dumps({"data_source": "codecontests", "prompt": "Print the sum of two integers.",
                        "reward_model": {"ground_truth": {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}},
                        "response": "```python\na, b = map(int, input().split())\nprint(a + b)\n```"}) + "\n"


@contextlib.contextmanager
def sandbox(s: Session) -> Iterator[str]:
    """A real sandbox server for the block, shown as listening on port 8080 (weakly isolated where
    this host cannot isolate: the verdicts are the same)."""
    from rewardsmith.sandbox.testing import isolation_unavailable, running_server

    weak = ("--allow-weak-isolation",) if isolation_unavailable() else ()
    with running_server("--workers", "1", *weak) as url:
        s.shown_as[url] = "http://127.0.0.1:8080"
        yield url


@block("validate-sandbox")
def _validate_sandbox(s: Session) -> None:
    s.write("code_gold.jsonl", CODE_GOLD)
    s.run("cat code_gold.jsonl")
    with sandbox(s) as url:
        s.run(f"rewardsmith validate sandbox_code --rows code_gold.jsonl reward_model.sandbox_fusion.url={url}")


@block("validate-batch")
def _validate_batch(s: Session) -> None:
    s.run("rewardsmith validate batch custom_reward_function.path=examples/custom_reward/batched_rarity.py")


@block("new-plugin")
def _new_plugin(s: Session) -> None:
    s.run("rewardsmith new-plugin my-reward")
    s.run("rewardsmith validate my-reward/my_reward/__init__.py")
    s.run("cd my-reward && PYTHONPATH=. pytest -q -p no:cacheprovider tests")


GRPO = '''import torch

from rewardsmith.core.advantages import compute_grpo_outcome_advantage


def first_token_advantages(rewards, **kwargs):
    n = len(rewards)
    advantages, _returns = compute_grpo_outcome_advantage(
        token_level_rewards=torch.tensor(rewards).unsqueeze(-1), response_mask=torch.ones(n, 1),
        index=["prompt 0"] * n, **kwargs)
    return advantages[:, 0]


print("placeholder counted:", first_token_advantages([1.0, 0.0, 1.0, 0.0]))
print("left out (scored=): ", first_token_advantages([1.0, 0.0, 1.0, 0.0], scored=torch.tensor([True, True, True, False])))
print("group of three:     ", first_token_advantages([1.0, 0.0, 1.0]))
'''


@block("grpo-scored")
def _grpo_scored(s: Session) -> None:
    s.write("grpo.py", GRPO)
    s.run("python grpo.py     # one group of 4; sample 3 unscored (placeholder 0)")


# -- docs/scorers.md -------------------------------------------------------------------
@block("stress-routed")
def _stress_routed(s: Session) -> None:
    s.run("rewardsmith stress examples/data/math_rows.jsonl", first_paragraph=True)


@block("stress-math-answer")
def _stress_math_answer(s: Session) -> None:
    s.run("rewardsmith stress examples/data/math_rows.jsonl --scorer math_answer", first_paragraph=True)


@block("stress-responses")
def _stress_responses(s: Session) -> None:
    s.run("rewardsmith stress examples/data/math_responses.jsonl", first_paragraph=True)


@block("stress-code")
def _stress_code(s: Session) -> None:
    with sandbox(s) as url:
        s.run(f"rewardsmith stress examples/data/code_rows.jsonl reward_model.sandbox_fusion.url={url}/run_code "
              "reward_model.reward_manager=sandbox", first_paragraph=True)


MATH_ACCURACY = "python benchmarks/math_accuracy.py --no-timing"


def _math_accuracy_paragraphs(s: Session) -> list[str]:
    # Run in the checkout: the benchmark reads the labelled set beside it.
    s.env["PYTHONPATH"] = ""
    return s.run(f"cd {ROOT} && {MATH_ACCURACY}", shown=False).rstrip("\n").split("\n\n")


@block("math-accuracy")
def _math_accuracy(s: Session) -> None:
    s.lines += _math_accuracy_paragraphs(s)[1].split("\n")


@block("math-accuracy-categories")
def _math_accuracy_categories(s: Session) -> None:
    s.lines += _math_accuracy_paragraphs(s)[2].split("\n")


# -- regenerating and checking ---------------------------------------------------------
def produce(name: str) -> str:
    """The text of block ``name``, from a fresh run of its commands."""
    with tempfile.TemporaryDirectory(prefix="rewardsmith-docs-") as tmp:
        scratch = Path(tmp)
        (scratch / "examples").symlink_to(ROOT / "examples")
        session = Session(scratch)
        BLOCKS[name](session)
        return session.text()


def blocks_in(text: str, where: str) -> list[tuple[str, int, int]]:
    """``(name, first line, end line)`` of each marked block's body in ``text`` (lines, 0-based, end exclusive)."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        name = match.group(1)
        if name not in BLOCKS:
            raise SystemExit(f"{where}:{i + 1}: no recipe for output block '{name}' in docs/outputs.py")
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"{where}:{i + 1}: the marker of '{name}' must be followed by a fenced block")
        end = next((j for j in range(i + 2, len(lines)) if lines[j] == "```"), None)
        if end is None:
            raise SystemExit(f"{where}:{i + 1}: the block of '{name}' is never closed")
        found.append((name, i + 2, end))
    return found


def comparable(text: str) -> str:
    return DURATION.sub("<seconds>", text)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the command output pasted into docs/*.md.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 with a diff when a block is stale")
    parser.add_argument("--only", action="append", metavar="NAME", help="only this block (repeatable)")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the folder of markdown files (default: docs/)")
    args = parser.parse_args(argv)
    unknown = set(args.only or ()) - set(BLOCKS)
    if unknown:
        raise SystemExit(f"no such block: {', '.join(sorted(unknown))}; blocks: {', '.join(BLOCKS)}")
    stale, seen = [], set()
    for doc in sorted(args.docs.glob("*.md")):
        text = doc.read_text()
        lines = text.split("\n")
        where = str(doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc)
        changed = False
        for name, start, end in reversed(blocks_in(text, where)):
            seen.add(name)
            if args.only and name not in args.only:
                continue
            old, new = "\n".join(lines[start:end]), produce(name)
            if comparable(old) == comparable(new):
                continue
            stale.append(name)
            if args.check:
                sys.stdout.writelines(difflib.unified_diff((old + "\n").splitlines(True), (new + "\n").splitlines(True),
                                                           f"{where} ({name}) as pasted", f"{name} now"))
            else:
                lines[start:end] = new.split("\n")
                changed = True
                print(f"{where}: regenerated '{name}'")
        if changed:
            doc.write_text("\n".join(lines))
    missing = set(args.only or BLOCKS) - seen
    if missing:
        raise SystemExit(f"block(s) with a recipe but no marker in {args.docs}/*.md: {', '.join(sorted(missing))}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run `make docs` (python docs/outputs.py) and commit the result")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
