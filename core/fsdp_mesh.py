"""The shape of the FSDP device mesh for verl's ``fsdp_size`` (no torch here: the config is checked with it
before the engine is imported)."""
from __future__ import annotations

from rewardsmith.common.config import InvalidValue


def fsdp_mesh_shape(key: str, fsdp_size: int, world_size: int) -> tuple[int, ...]:
    """The FSDP device mesh verl builds for ``fsdp_size`` on ``world_size`` ranks.

    Negative or at least the world size: ``(world_size,)``, every parameter
    sharded over every rank (plain FSDP). Smaller: ``(world_size // fsdp_size,
    fsdp_size)``, dimensions ``("ddp", "fsdp")``: sharded within each group of
    ``fsdp_size`` consecutive ranks and replicated across the groups (HSDP).
    Raises :class:`InvalidValue` naming ``key`` when ``fsdp_size`` does not
    divide the world size (verl's ``init_device_mesh`` would fail there too).
    """
    if fsdp_size < 0 or fsdp_size >= world_size:
        return (world_size,)
    if world_size % fsdp_size:
        divisors = ", ".join(str(d) for d in range(1, world_size) if world_size % d == 0)
        raise InvalidValue(key, f"is {fsdp_size}, which does not divide the {world_size} ranks: hybrid sharding shards "
                           f"within groups of fsdp_size ranks and replicates across world_size / fsdp_size groups; use "
                           f"one of {divisors}, or -1 (shard over all {world_size} ranks)")
    return (world_size // fsdp_size, fsdp_size)
