"""Brace matching and box extraction for ``\\boxed{...}``-style LaTeX answers.

verl has two functions named ``last_boxed_only_string`` / ``remove_boxed``
that behave differently; both are kept here, each under a name that says what
it accepts: the ``brace_form`` pair reproduces ``verl/utils/reward_score/math_dapo.py``
and the ``any_form`` pair ``verl/utils/reward_score/math_reward.py``.
``math_answer``'s own extraction uses :func:`brace_partners`.
"""
from __future__ import annotations


def closing_brace_index(text: str, start: int) -> int | None:
    """Index of the ``}`` that closes the first ``{`` at or after ``start``.

    Braces are counted naively (no escapes), exactly as verl and the
    lm-evaluation-harness do; ``None`` when the group never closes.
    """
    depth = 0
    for i in range(start, len(text)):
        char = text[i]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def brace_partners(text: str) -> dict[int, int]:
    """For every ``{`` that closes, the index of its ``}``, in one pass.

    Same pairing as :func:`closing_brace_index`, but linear in ``len(text)``
    however many groups are asked about.
    """
    partners: dict[int, int] = {}
    open_at: list[int] = []
    for i, char in enumerate(text):
        if char == "{":
            open_at.append(i)
        elif char == "}" and open_at:
            partners[open_at.pop()] = i
    return partners


def last_boxed_brace_form(string: str) -> str | None:
    """The last ``\\boxed{...}`` group of ``string`` (wrapper included), or ``None``.

    verl's ``math_dapo.last_boxed_only_string``: only the ``\\boxed{`` form
    counts; a group that never closes gives ``None``.
    """
    start = string.rfind("\\boxed{")
    if start < 0:
        return None
    end = closing_brace_index(string, start)
    return None if end is None else string[start : end + 1]


def unwrap_boxed_brace_form(boxed: str) -> str:
    """The content of a ``\\boxed{...}`` group; ``ValueError`` for anything else.

    verl's ``math_dapo.remove_boxed``.
    """
    if not (boxed.startswith("\\boxed{") and boxed.endswith("}")):
        raise ValueError(f"box error: {boxed}")
    return boxed[len("\\boxed{") : -1]


def last_boxed_any_form(string: str) -> str | None:
    """The last ``\\boxed{...}``, ``\\boxed X`` or (failing those) ``\\fbox{...}`` of ``string``.

    verl's ``math_reward.last_boxed_only_string`` (Hendrycks MATH): when the
    text contains ``"\\boxed "`` anywhere, the answer is what follows its last
    occurrence, up to the next ``$``, whatever boxes come later.
    """
    if "\\boxed " in string:
        return "\\boxed " + string.split("\\boxed ")[-1].split("$")[0]
    start = string.rfind("\\boxed")
    if start < 0:
        start = string.rfind("\\fbox")
        if start < 0:
            return None
    end = closing_brace_index(string, start)
    return None if end is None else string[start : end + 1]


def unwrap_boxed_any_form(boxed: str) -> str:
    """The content of a ``\\boxed X`` or ``\\boxed{...}`` string; ``ValueError`` otherwise.

    verl's ``math_reward.remove_boxed``: an ``\\fbox{..}`` found by
    :func:`last_boxed_any_form` is rejected here, as in verl.
    """
    if "\\boxed " in boxed:
        if not boxed.startswith("\\boxed "):
            raise ValueError(f"not a boxed answer: {boxed!r}")
        return boxed[len("\\boxed ") :]
    if not (boxed.startswith("\\boxed{") and boxed.endswith("}")):
        raise ValueError(f"not a boxed answer: {boxed!r}")
    return boxed[len("\\boxed{") : -1]
