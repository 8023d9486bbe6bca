"""A character-level tokenizer built locally with the ``tokenizers`` library.

Tiny models learn fastest when every character is one token, and building the
tokenizer here means no model hub is needed. It is a normal
``PreTrainedTokenizerFast`` with a chat template: save it with
``save_pretrained`` and load it with ``AutoTokenizer.from_pretrained``.
"""
from __future__ import annotations

import string

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, EOS, BOS, UNK = "<|pad|>", "<|end|>", "<|begin|>", "<|unk|>"
USER, ASSISTANT, SYSTEM = "<|user|>", "<|assistant|>", "<|system|>"
SPECIAL_TOKENS = [PAD, EOS, BOS, UNK, USER, ASSISTANT, SYSTEM]

# One turn is `<|role|>content<|end|>`; the generation prompt opens the assistant
# turn, so the policy's response ends with `<|end|>` (its EOS).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def build_char_tokenizer(alphabet: str = string.printable) -> PreTrainedTokenizerFast:
    """A tokenizer with one token per character of ``alphabet`` plus the chat special tokens."""
    chars = sorted(set(alphabet))
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        additional_special_tokens=[USER, ASSISTANT, SYSTEM],
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
    )
