"""Plugin discovery through entry points, built-ins through the same hooks, clashes and broken plugins."""
from __future__ import annotations

import logging

import pytest

from rewardsmith.common.errors import PluginConflict, NotRegistered
from rewardsmith.plugins.loader import get_registry, load_registry

SCORER_PLUGIN = '''
from rewardsmith import hookimpl

def {fn}(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return {value}

@hookimpl
def register_scorers(register):
    register("{name}", {fn}, data_sources={sources!r})
'''


def scorer_plugin(name, sources, value=1.0, fn="score"):
    return SCORER_PLUGIN.format(name=name, sources=sources, value=value, fn=fn)


def test_builtins_register_through_the_hooks():
    registry = load_registry()
    by_name = {p.name: p for p in registry.plugins}
    builtins = {"rewardsmith.reward_fns", "rewardsmith.plugins.managers", "rewardsmith.core.advantages"}
    assert builtins <= {name for name, p in by_name.items() if p.builtin and p.distribution == "rewardsmith"}
    assert "gsm8k" in by_name["rewardsmith.reward_fns"].scorers
    assert {"naive", "parallel", "dapo"} <= set(by_name["rewardsmith.plugins.managers"].reward_managers)
    assert registry.route("openai/gsm8k")[0] == "gsm8k"
    assert registry.route("aime2024")[0] == "math_dapo"  # glob route


def test_installed_plugin_is_discovered(installed_plugins):
    installed_plugins({"fake-plugin-a": ("fakeplug_a", scorer_plugin("alpha", ["fake/alpha", "fake_*"]))})
    registry = get_registry()
    info = next(p for p in registry.plugins if p.name == "fakeplug_a")
    assert (info.distribution, info.version, info.scorers, info.error) == ("fake-plugin-a", "1.0", ["alpha"], None)
    assert registry.route("fake/alpha")[0] == "alpha"
    assert registry.route("fake_beta")[0] == "alpha"


def test_exact_route_wins_over_glob_and_longest_glob_wins(installed_plugins):
    source = (
        "from rewardsmith import hookimpl\n"
        "def wide(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n"
        "def narrow(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.5\n"
        "def exact(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n"
        "@hookimpl\n"
        "def register_scorers(register):\n"
        "    register('wide', wide, data_sources=['fake_*'])\n"
        "    register('narrow', narrow, data_sources=['fake_math_*'])\n"
        "    register('exact', exact, data_sources=['fake_math_x'])\n"
    )
    installed_plugins({"fake-plugin-a": ("fakeplug_a", source)})
    registry = get_registry()
    assert registry.route("fake_other")[0] == "wide"
    assert registry.route("fake_math_y")[0] == "narrow"
    assert registry.route("fake_math_x")[0] == "exact"


def test_unknown_data_source_lists_known_ones():
    with pytest.raises(NotRegistered, match=r"no scorer for data_source 'nope'.*openai/gsm8k"):
        load_registry().route("nope")


def test_a_missing_data_source_says_what_to_install(capsys):
    from pathlib import Path

    from rewardsmith.cli import main

    registry = load_registry()
    if "example/keywords" in registry.known_data_sources():
        pytest.skip("the example plugin is installed here")
    with pytest.raises(NotRegistered, match=r"A plugin may score it: install that plugin's package \(`rewardsmith plugins` lists"):
        registry.route("nope")
    keywords = Path(__file__).resolve().parents[1] / "examples" / "data" / "keywords.jsonl"
    assert main(["score", str(keywords)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rewardsmith score: error: dataset row 0: no scorer for data_source "
                                               "'example/keywords'")
    assert err[0].endswith("'example/keywords' is the example plugin's: install it with `pip install ./examples/plugin` "
                           "(from a clone of rewardsmith's repository; see docs/plugins.md)")


def test_two_third_party_plugins_clash_unless_preferred(installed_plugins):
    installed_plugins({
        "fake-plugin-a": ("fakeplug_a", scorer_plugin("same", ["fake/shared"], 1.0)),
        "fake-plugin-b": ("fakeplug_b", scorer_plugin("same", ["fake/shared"], 0.0)),
    })
    registry = load_registry()
    with pytest.raises(PluginConflict, match=r"fake-plugin-a.*fake-plugin-b|fake-plugin-b.*fake-plugin-a"):
        registry.scorer("same")
    with pytest.raises(PluginConflict, match="plugins.prefer"):
        registry.route("fake/shared")
    settled = load_registry(prefer={"same": "fake-plugin-b", "fake/shared": "fakeplug_b"})
    assert settled.scorer("same")(None, "", "") == 0.0
    assert settled.route("fake/shared")[1](None, "", "") == 0.0


def test_third_party_may_override_builtin_and_it_is_logged(installed_plugins, caplog):
    installed_plugins({"fake-plugin-a": ("fakeplug_a", scorer_plugin("gsm8k", ["openai/gsm8k"], 0.25))})
    with caplog.at_level(logging.WARNING, logger="rewardsmith.plugins"):
        registry = load_registry()
    assert registry.route("openai/gsm8k")[1](None, "", "") == 0.25
    assert "overrides the built-in scorer 'gsm8k'" in caplog.text


def test_broken_plugins_are_reported_and_the_host_keeps_working(installed_plugins):
    installed_plugins({
        "fake-broken-import": ("fakeplug_bad", "raise RuntimeError('boom at import')\n"),
        "fake-broken-hook": ("fakeplug_hook", "from rewardsmith import hookimpl\n@hookimpl\n"
                             "def register_scorers(register):\n    raise ValueError('bad registration')\n"),
    })
    registry = load_registry()
    errors = {p.name: p.error for p in registry.plugins}
    assert "RuntimeError: boom at import" in errors["fakeplug_bad"]
    assert "ValueError: bad registration" in errors["fakeplug_hook"]
    assert registry.route("openai/gsm8k")[0] == "gsm8k"
    with pytest.raises(NotRegistered, match=r"fakeplug_bad.*failed to load.*boom at import"):
        registry.scorer("something_only_it_had")


def test_disabled_plugin_is_not_loaded(installed_plugins):
    installed_plugins({"fake-plugin-a": ("fakeplug_a", scorer_plugin("alpha", ["fake/alpha"]))})
    registry = load_registry(disable=("fakeplug_a",))
    with pytest.raises(NotRegistered):
        registry.scorer("alpha")
