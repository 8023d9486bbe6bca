"""``rewardsmith plugins``: what is installed and what each plugin registered."""
from __future__ import annotations

import argparse
import json

from rewardsmith.plugins.loader import load_registry


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list of plugin objects")


def run(args: argparse.Namespace) -> int:
    registry = load_registry()
    records = [
        {
            "name": p.name,
            "distribution": p.distribution or "rewardsmith",
            "version": p.version,
            "builtin": p.builtin,
            "scorers": p.scorers,
            "reward_managers": p.reward_managers,
            "advantage_estimators": p.advantage_estimators,
            "policy_losses": p.policy_losses,
            "attacks": p.attacks,
            "tools": p.tools,
            "interactions": p.interactions,
            "error": p.error,
        }
        for p in registry.plugins
    ]
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    for r in records:
        print(f"{r['name']}  ({r['distribution']} {r['version']}{', built-in' if r['builtin'] else ''})")
        for kind in ("scorers", "reward_managers", "advantage_estimators", "policy_losses", "attacks", "tools",
                     "interactions"):
            if r[kind]:
                print(f"  {kind.replace('_', ' ')}: {', '.join(r[kind])}")
        if r["error"]:
            print(f"  ERROR: {r['error']}")
    print(f"\ndata sources: {', '.join(registry.known_data_sources())}")
    return 0

