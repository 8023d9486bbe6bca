"""Packed (unpadded) forward passes: verl's ``use_remove_padding``.

A micro-batch's attended tokens (``attention_mask == 1``) go into one row
``(1, total)`` with position ids restarting at 0 for each sequence and no
attention mask. transformers (``masking_utils``: ``find_packed_sequence_indices``)
reads the sequence boundaries from the position ids and gives each sequence
its own causal block (sdpa, eager, flex_attention), or runs flash-attention's
variable-length kernel (flash_attention_2/3). No token attends across
sequences and no compute goes to padding; the outputs are gathered back to
each response token's predicting position, the layout the padded forward gives.
"""
from __future__ import annotations

import sys
from typing import Optional

import torch

from rewardsmith.core.tensor_ops import position_ids_from_mask

# Layer kinds (a config's ``layer_types``) that see the packed row only through the attention mask; a
# recurrent one (mamba, linear attention) would carry its state from one sequence into the next.
_ATTENTION_LAYERS = frozenset({"full_attention", "sliding_attention", "chunked_attention"})
_MASK_BUILDERS = ("create_causal_mask", "create_sliding_window_causal_mask")


def unpackable(model: torch.nn.Module) -> Optional[str]:
    """Why ``model``'s own code would mix packed sequences, or None when it keeps them apart: its
    backbone must build its masks with transformers' ``masking_utils`` (every decoder built into
    transformers 5 does; remote code may not) and have attention layers only."""
    base = model.base_model
    module = sys.modules.get(type(base).__module__)
    if not any(hasattr(module, name) for name in _MASK_BUILDERS):
        return f"{type(base).__name__} does not build its attention mask with transformers' masking_utils"
    recurrent = set(getattr(model.config, "layer_types", None) or ()) - _ATTENTION_LAYERS
    if recurrent:
        return f"{type(base).__name__} has {', '.join(sorted(recurrent))} layers, whose state would cross a packed row"
    return None


def pack(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The attended tokens of a (B, L) batch as one row.

    Returns the (1, N) token ids, their (1, N) position ids (each sequence
    counts from 0, as the padded forward's :func:`position_ids_from_mask`),
    and a (B, L) index of each token's place in the row (meaningless where
    ``attention_mask`` is 0).
    """
    valid = attention_mask.bool()
    positions = position_ids_from_mask(attention_mask)
    index = valid.flatten().long().cumsum(0).view_as(valid) - 1
    return input_ids[valid].unsqueeze(0), positions[valid].unsqueeze(0), index


def packed_outputs(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   response_length: int) -> torch.Tensor:
    """(B, R, ...) ``model``'s outputs (``.logits``) at position ``t - 1`` of each of the last
    ``response_length`` tokens ``t``, from one packed forward; zero for response tokens that are padding."""
    ids, positions, index = pack(input_ids, attention_mask)
    # attention_mask=None is what makes transformers look for sequence boundaries in the position ids.
    out = model(input_ids=ids, attention_mask=None, position_ids=positions, use_cache=False).logits[0]
    before = index[:, -response_length - 1: -1].clamp(min=0)
    scored = attention_mask[:, -response_length:].bool()
    return out[before].masked_fill(~scored.unsqueeze(-1), 0.0)
