"""Generate docs/config.md, the reference of every config key with its default.

``python -m rewardsmith.config_doc docs/config.md`` rewrites the file; a
test checks that the committed file is up to date.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rewardsmith.common.config import describe
from rewardsmith.core.schema import Config
from rewardsmith.core.verl_fork_keys import FORK_KEYS
from rewardsmith.core.verl_keys import key_statuses, release_of

HEADER = """# Config reference

Every key of a rewardsmith config, with its type and default. Set keys in a YAML
file (nested mappings) or on the command line as `key=value` (values are parsed
as YAML: `data.train_files=[a.jsonl,b.jsonl]`, `trainer.save_freq=10`). An
unknown key or a bad value is an error naming the key. Names follow verl's
`ppo_trainer.yaml` wherever verl has the same setting.

This file is generated from the schema (`core/schema.py`) by
`python -m rewardsmith.config_doc docs/config.md`.
"""


VERL_KEYS_HEADER = """
## verl's keys

Every key that verl's example and recipe launch scripts pass (all 217
`examples/**/*.sh` and `recipe/**/*.sh` of verl v0.7.0, commit f9c855f: the
list is `core/verl_script_keys.txt`), every key of verl's PPO trainer config in
each tagged release from v0.1 to v0.7.0 and in verl 0.9.1 (read from verl's
git and package by `benchmarks/verl_release_keys.py` into
`core/verl_release_keys.tsv`, with the commits it read; the column gives the
first and last release that has the key, "v0.7.0 scripts" a key only the
scripts pass), and the keys and older spellings of verl forks' scripts
("fork: project", [below](#keys-of-verl-forks)), with what each does here. A key is
*implemented* (it does what verl does; its entry above says how), *accepted
with a notice* (it tunes speed or memory on hardware or kernels this run does
not have, so the results are the same with it and without it; `rewardsmith train`
prints one `notice:` line per such key it was given), both (implemented
where the run can do it, a notice elsewhere: `use_remove_padding` packs the
forwards only with an attention implementation that keeps packed sequences
apart efficiently), or *refused* with an error naming the key and what to do
instead. Some implemented keys refuse values this run cannot honour, each by
name (`ulysses_sequence_parallel_size` above 1, an `fsdp_size` below the
world size that does not divide it, `hybrid_engine=false`). Most
refused keys belong to verl engines, entry points and recipes that are not
here (Megatron-LM, the SFT and generation trainers, the fully-async, embodied,
PRIME and GKD recipes, multi-turn agent loops, profilers). The table is
generated from `core/verl_keys.py`, `core/verl_refusals.py` and the schema.

| verl key | verl releases | here |
|---|---|---|"""


FORK_KEYS_HEADER = """
## Keys of verl forks

Popular projects built on verl added options to their own verl forks, and their
launch scripts pass them. Each key below was looked up in public code (the
launch scripts passing `<key>=`, November 2026; "10+" where the search stopped
at its 10 results) and then implemented, the fork's code read and followed, or
refused by name; the table above says what each does here, and
[training.md](training.md#options-of-verl-forks) how the implemented ones
compute. The table is generated from `core/verl_fork_keys.py`.

| key | project | public scripts passing it |
|---|---|---|"""


def _default(value: Any) -> str:
    return "`" + json.dumps(value) + "`"


def render() -> str:
    """The whole docs/config.md text."""
    out = [HEADER]
    section = None
    for key, type_name, default, help_text in describe(Config):
        top = key.split(".")[0]
        if top != section:
            section = top
            out.append(f"\n## `{top}`\n\n| key | type | default | meaning |\n|---|---|---|---|")
        cell = help_text.replace("|", "\\|")
        out.append(f"| `{key}` | {type_name.replace('|', '&#124;')} | {_default(default)} | {cell} |")
    out.append(VERL_KEYS_HEADER)
    schema_keys = {key for key, *_ in describe(Config)}
    out.extend(f"| `{key}` | {release_of(key)} | {status.replace('|', chr(92) + '|')} |"
               for key, status in key_statuses(schema_keys))
    out.append(FORK_KEYS_HEADER)
    out.extend(f"| `{f.key}` | {f.projects} | {f.scripts} |" for f in FORK_KEYS)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/config.md")
    target.write_text(render())
    print(f"wrote {target}")
