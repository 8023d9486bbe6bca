"""Every key of verl's PPO trainer config in each tagged release, read from verl's git, into core/verl_release_keys.tsv.

A release's keys are the leaves of its ``verl/trainer/config/ppo_trainer.yaml``
(v0.1 to v0.4.x: one flat file) or of ``_generated_ppo_trainer.yaml`` (v0.5.0
on: the composed config verl generates from its defaults list), as dotted keys;
Hydra's ``_target_`` entries (class paths, never set by a launch script) are
left out. Releases newer than the git snapshot's tags come from an installed
verl package's generated config (``--package``, e.g. verl 0.9.1 from the
package index), recorded with its version instead of a commit.

The output starts with one ``# release<TAB>commit`` line per source, then one
``key<TAB>first<TAB>last`` line per key: the first and the last release that
has it. tests/test_verl_keys.py fails on a key of this file without a status in
core/verl_keys.py.

Usage: ``python benchmarks/verl_release_keys.py --git /path/to/verl/.git
[--package DIR_OF_INSTALLED_VERL] [--out core/verl_release_keys.tsv]``.
"""
from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

OUT = Path(__file__).resolve().parent.parent / "core" / "verl_release_keys.tsv"
CONFIG_DIR = "verl/trainer/config"
GENERATED, FLAT = "_generated_ppo_trainer.yaml", "ppo_trainer.yaml"


def version_key(tag: str) -> tuple:
    """Sort order of verl's tags: v0.1rc < v0.1; v0.3.0.rc0 < v0.3.0 < v0.3.0.post0 < v0.3.0.post1; v0.2 == v0.2.0."""
    release, stage_name, extra = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:\.?(rc|post)(\d*))?", tag).groups()
    numbers = [int(n) for n in release.split(".")] + [0] * (3 - release.count(".") - 1)
    stage = {"rc": 0, None: 1, "post": 2}[stage_name]
    return (*numbers, stage, int(extra or 0))


def leaves(tree: Any, prefix: str = "") -> Iterator[str]:
    """The dotted keys of ``tree``'s leaves (an empty mapping is a leaf; ``_target_`` entries are skipped)."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            if key != "_target_":
                yield from leaves(value, f"{prefix}{key}.")
    elif prefix:
        yield prefix[:-1]


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True).stdout


def release_config(git_dir: Path, tag: str) -> Optional[str]:
    """The trainer YAML of ``tag``: the generated one where the release has it, else the flat one."""
    names = _git(git_dir, "ls-tree", "--name-only", f"{tag}:{CONFIG_DIR}").split()
    for name in (GENERATED, FLAT):
        if name in names:
            return _git(git_dir, "show", f"{tag}:{CONFIG_DIR}/{name}")
    return None


def extract(git_dir: Path, package: Optional[Path]) -> tuple[list[tuple[str, str]], dict[str, tuple[str, str]]]:
    """(release, commit or package version) per source, and each key's first and last release."""
    sources, keys_of = [], {}
    for tag in sorted(_git(git_dir, "tag").split(), key=version_key):
        text = release_config(git_dir, tag)
        if text is not None:
            sources.append((tag, _git(git_dir, "rev-parse", f"{tag}^{{commit}}").strip()))
            keys_of[tag] = set(leaves(yaml.safe_load(text)))
    if package is not None:
        version = re.search(r"\d+\.\d+\.\d+", (package / "version" / "version").read_text()).group(0)
        tag = f"v{version}"
        sources.append((tag, f"verl=={version} (package index; {CONFIG_DIR}/{GENERATED})"))
        keys_of[tag] = set(leaves(yaml.safe_load((package / "trainer" / "config" / GENERATED).read_text())))
    span: dict[str, tuple[str, str]] = {}
    for tag, _ in sources:
        for key in keys_of[tag]:
            span[key] = (span.get(key, (tag, tag))[0], tag)
    return sources, span


def write(out: Path, sources: list[tuple[str, str]], span: dict[str, tuple[str, str]]) -> None:
    lines = ["# Every key of verl's PPO trainer config per release (benchmarks/verl_release_keys.py): key, first, last release."]
    lines += [f"# {tag}\t{commit}" for tag, commit in sources]
    lines += [f"{key}\t{first}\t{last}" for key, (first, last) in sorted(span.items())]
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git", type=Path, required=True, help="verl's git directory (a clone's .git, or a bare repo)")
    parser.add_argument("--package", type=Path, help="an installed verl package directory, for a release newer than the tags")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sources, span = extract(args.git, args.package)
    write(args.out, sources, span)
    print(f"{len(span)} keys of {len(sources)} releases -> {args.out}")


if __name__ == "__main__":
    main()
