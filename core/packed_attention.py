"""Which attention implementations run packed (unpadded) rows correctly: known from the config
alone, without torch, so the config checks (core/verl_keys.py) stay light; the packing is in
core/packing.py."""
from __future__ import annotations

from typing import Optional

# Attention implementations that pack: transformers builds their block-diagonal mask from the position ids
# (sdpa, flex_attention) or hands the flash kernels the sequence boundaries. eager keeps packed sequences apart
# too, but materialises the whole row's scores: 2-3x slower than padded (docs/training.md), so it stays padded.
# Any other (a hub kernel, paged attention, a registered custom function) gets no packed mask and would let
# sequences attend to each other.
PACKED_ATTENTION = frozenset({"sdpa", "flex_attention", "flash_attention_2", "flash_attention_3"})


def _transformers_packs() -> bool:
    """Whether the installed transformers detects packed rows from position ids (its ``masking_utils``)."""
    try:
        from transformers import masking_utils
    except ImportError:  # transformers before masking_utils (4.5x) masks padded batches only
        return False
    return hasattr(masking_utils, "find_packed_sequence_indices")


def packs(attn_implementation: Optional[str]) -> bool:
    """Whether a model with ``attn_implementation`` runs packed rows correctly with this transformers.

    ``None`` is the library's default, which resolves to sdpa (eager for a
    model without sdpa, which the worker then sees and keeps padded).
    """
    return _transformers_packs() and (attn_implementation or "sdpa") in PACKED_ATTENTION
