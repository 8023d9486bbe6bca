"""Times of day: ``3:45 PM``, ``3:45 p.m.``, ``15:45``, ``9 AM``, ``9:00 a.m.``.

Read from the answer as written (canonical form drops ``\\text{ PM}`` as a
unit), and only when either side carries a meridiem (AM/PM), so that a ratio
``3:4`` is never taken for a time. Both are read as minutes after midnight:
``3:45 PM`` = ``15:45``, ``9 AM`` = ``9:00 a.m.``; ``3:45 AM`` != ``3:45 PM``.
A side without a meridiem whose hour is 1-12 may be either half of the day
(``3:45`` is right for ``3:45 PM``: the question's context fixes it).
"""
from __future__ import annotations

import re

_TEXT_GROUP = re.compile(r"\\(?:text|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_CLOCK = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(?:([ap])\.?\s*m\.?)?\.?$", re.IGNORECASE)
_MERIDIEM = re.compile(r"\d\s*[ap]\.?\s*m\.?$", re.IGNORECASE)


# Named times of day: the word is the time it names.
_NAMED = {"noon": "12:00 pm", "midday": "12:00 pm", "12 noon": "12:00 pm", "midnight": "12:00 am",
          "12 midnight": "12:00 am"}


def _plain(text: str) -> str:
    text = text.replace("$", "").replace("\\,", " ").replace("~", " ").replace("\\ ", " ").replace("{:}", ":")
    text = " ".join(_TEXT_GROUP.sub(lambda m: " " + m.group(1) + " ", text).split())
    return _NAMED.get(text.lower().rstrip("."), text)


def _read(text: str) -> tuple[int, int, str | None] | None:
    """``(hour, minute, "a" | "p" | None)`` of a time of day, else ``None``."""
    match = _CLOCK.match(_plain(text))
    if match is None:
        return None
    hour, minute, meridiem = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if minute > 59 or hour > 23 or (meridiem and not 1 <= hour <= 12) or (match.group(2) is None and not meridiem):
        return None
    return hour, minute, meridiem.lower() if meridiem else None


def _candidates(hour: int, minute: int, meridiem: str | None) -> set[int]:
    """Minutes after midnight the time may mean."""
    if meridiem is not None:
        return {(hour % 12 + (12 if meridiem == "p" else 0)) * 60 + minute}
    if 1 <= hour <= 12:
        return {(hour % 12) * 60 + minute, (hour % 12 + 12) * 60 + minute}
    return {hour * 60 + minute}


def clock_verdict(pred: str, gold: str) -> tuple[bool, str] | None:
    """``(correct, why)`` when both are times of day and one has a meridiem, else ``None``."""
    if not (_MERIDIEM.search(_plain(pred)) or _MERIDIEM.search(_plain(gold))):
        return None
    answer, target = _read(pred), _read(gold)
    if answer is None or target is None:
        return None
    same = bool(_candidates(*answer) & _candidates(*target))
    return same, f"times of day: {_show(answer)} {'=' if same else '!='} {_show(target)}"


def _show(time: tuple[int, int, str | None]) -> str:
    hour, minute, meridiem = time
    return f"{hour}:{minute:02d}" + (f" {meridiem.upper()}M" if meridiem else "")
