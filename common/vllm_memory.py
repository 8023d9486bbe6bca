"""How much host memory a vLLM engine on CPU may take for its KV cache."""
from __future__ import annotations

from typing import Any


def kv_cache_bytes(text_config: Any, element_size: int, max_num_seqs: int, max_model_len: int,
                   memory_utilization: float) -> int:
    """KV-cache bytes for ``max_num_seqs`` sequences of ``max_model_len`` tokens, capped by
    ``memory_utilization`` of the memory available now (never below one full-length sequence).

    Per token: 2 (K and V) x layers x KV heads x head size x ``element_size``.
    On CPU vLLM would otherwise reserve ``gpu_memory_utilization`` of all host memory.
    """
    heads = getattr(text_config, "num_key_value_heads", None) or text_config.num_attention_heads
    head = getattr(text_config, "head_dim", None) or text_config.hidden_size // text_config.num_attention_heads
    per_token = 2 * text_config.num_hidden_layers * heads * head * element_size
    wanted = per_token * max_num_seqs * max_model_len
    import psutil  # a requirement of vLLM, the only caller's engine: not one of rewardsmith's own

    cap = int(memory_utilization * psutil.virtual_memory().available)
    return max(per_token * max_model_len, min(wanted, cap))
