"""Loading a tokenizer from a local directory, whatever model sits beside it."""
from __future__ import annotations

import json
from pathlib import Path

# Tokenizers whose whole pipeline lives in tokenizer.json.
GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer_dir(path: str):
    """The tokenizer saved in ``path``.

    A generic fast tokenizer (tokenizer_config.json's ``tokenizer_class``) is
    loaded as such: ``AutoTokenizer`` would pick the class of the model in
    ``config.json`` beside it (e.g. Qwen2's), whose own pre-tokenizer replaces
    the one in tokenizer.json.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config_file = Path(path) / "tokenizer_config.json"
    declared = json.loads(config_file.read_text()).get("tokenizer_class") if config_file.is_file() else None
    if declared in GENERIC_TOKENIZER_CLASSES:
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)
