"""The marker plugins put on their hook implementations (``@hookimpl``).

It lives in the leaf package so that scorers, managers and the engine's
advantage estimators can register themselves without importing the plugin
host; pluggy matches markers by the project name, not by object identity.
"""
from __future__ import annotations

import pluggy

hookimpl = pluggy.HookimplMarker("rewardsmith")
