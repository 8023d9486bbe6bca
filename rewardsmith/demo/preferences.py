"""A synthetic preference made on the spot, for reward-model demos and tests.

Among two short responses, the one with the larger share of the letter 'a' is
preferred: learnable by a tiny model, and checkable (:func:`a_share`).
"""
from __future__ import annotations

import random
from typing import Optional

OPEN_PROMPTS = ["Say something.", "Write a word.", "Tell me anything.", "Make a sound.", "Speak up.", "Type a line."]
LETTERS = "bcdefghijklmnopqrstuvwxyz .,0123456789"


def a_share(text: str) -> float:
    """The preference: the share of the letter 'a' in a response (more is better)."""
    return text.count("a") / max(1, len(text))


def preference_pairs(n: int, seed: int, max_length: int = 20) -> list[dict]:
    """``n`` rows ``{prompt, chosen, rejected}`` whose chosen response has more 'a's;
    half with an open-ended prompt, half without (``prompt`` None)."""
    rng = random.Random(seed)

    def response(k: int, length: int) -> str:
        chars = [rng.choice(LETTERS) for _ in range(length)]
        for i in rng.sample(range(length), k):
            chars[i] = "a"
        return "".join(chars)

    pairs = []
    for _ in range(n):
        length = rng.randint(4, max_length)
        k1, k2 = rng.sample(range(length + 1), 2)
        prompt: Optional[list] = rng.choice([[{"role": "user", "content": rng.choice(OPEN_PROMPTS)}], None])
        pairs.append({"prompt": prompt, "chosen": response(max(k1, k2), length), "rejected": response(min(k1, k2), length)})
    return pairs
