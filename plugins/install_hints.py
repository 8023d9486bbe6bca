"""What to install for a data_source no loaded plugin scores (the end of the registry's error)."""
from __future__ import annotations

import fnmatch

# data_sources of plugins that ship in rewardsmith's repository but are installed on their own.
SHIPPED_PLUGINS: dict[tuple[str, ...], str] = {
    ("example/keywords", "example_*"): "the example plugin's: install it with `pip install ./examples/plugin` "
                                       "(from a clone of rewardsmith's repository; see docs/plugins.md)",
}


def install_hint(data_source: str) -> str:
    """What to install for a ``data_source`` no loaded plugin scores: the shipped plugin that
    scores it, or where to look."""
    for patterns, plugin in SHIPPED_PLUGINS.items():
        if any(fnmatch.fnmatchcase(data_source, p) for p in patterns):
            return f"'{data_source}' is {plugin}"
    return ("A plugin may score it: install that plugin's package (`rewardsmith plugins` lists the installed "
            "plugins and what they register), or set custom_reward_function.path")
