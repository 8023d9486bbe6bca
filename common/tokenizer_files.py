"""Loading a tokenizer from a local directory, whatever model sits beside it, and saying in one line
when a directory is missing."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Iterator

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
    with hub_errors_in_one_line(path, "tokenizer"):
        if declared in GENERIC_TOKENIZER_CLASSES:
            return PreTrainedTokenizerFast.from_pretrained(path)
        return AutoTokenizer.from_pretrained(path)


@contextlib.contextmanager
def hub_errors_in_one_line(path: str, what: str) -> Iterator[None]:
    """Turn transformers' long chained error for a ``path`` that is no local directory (it then
    tries the Hugging Face hub) into one ``FileNotFoundError`` line naming the path."""
    try:
        yield
    except OSError as exc:
        if Path(path).expanduser().is_dir():
            raise
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FileNotFoundError(f"{what} {path}: no such local directory, and the Hugging Face hub could not "
                                f"give it ({reason})") from None
