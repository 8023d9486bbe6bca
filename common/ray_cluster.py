"""Joining or starting the Ray cluster a run uses."""
from __future__ import annotations

import os


def ensure_ray() -> None:
    """Connect to ``RAY_ADDRESS`` if set, else start a local cluster bound to loopback; no-op if connected."""
    import ray

    if ray.is_initialized():
        return
    # Without this Ray may advertise the machine's public address for a local cluster.
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False, log_to_driver=False)
