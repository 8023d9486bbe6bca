"""Days of the week and calendar dates: ``Tuesday``, ``Tue.``, ``March 5``, ``5 Mar 2024``, ``2024-03-05``.

Read from the answers as written (canonical form would read "March 5" as
the number 5), and decided only when both sides are of the same kind:

* a weekday is its full name or an English abbreviation ("Tue", "Tues.",
  "thu"), in any case; two weekdays are equal when they name the same day;
* a date is a month (its name or abbreviation, from :mod:`calendar`) and a
  day in either order ("March 5", "5th of March", "Mar. 5, 2024") or an
  ISO date ``2024-03-05``. Two dates are equal when month and day are, and
  the year too when both give one (a side without a year takes it from the
  question, as a time without AM/PM does). Numeric dates such as ``03/05``
  are not read: they are month/day or day/month by country.
"""
from __future__ import annotations

import calendar
import re

_TEXT_GROUP = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_WEEKDAYS = {name.lower(): index for index, name in enumerate(calendar.day_name)}
_WEEKDAYS.update({name.lower(): index for index, name in enumerate(calendar.day_abbr)})
_WEEKDAYS.update({"tues": 1, "thur": 3, "thurs": 3})
_MONTHS = {name.lower(): index for index, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): index for index, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_WEEKDAY = re.compile(r"^(?:on\s+)?(?:an?\s+|the\s+)?([A-Za-z]+)\.?$")
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
_MONTH_DAY = re.compile(rf"^([A-Za-z]+)\.?\s+{_DAY}{_YEAR}$")
_DAY_MONTH = re.compile(rf"^(?:the\s+)?{_DAY}(?:\s+of)?\s+([A-Za-z]+)\.?{_YEAR}$")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")

Date = tuple[int | None, int, int]  # (year or None, month, day)


def _plain(text: str) -> str:
    text = text.strip().replace("$", "").replace("\\,", " ").replace("~", " ").replace("\\ ", " ")
    for box in ("\\boxed", "\\fbox"):
        if text.startswith(box + "{") and text.endswith("}"):
            text = text[len(box) + 1 : -1]
    return " ".join(_TEXT_GROUP.sub(lambda m: " " + m.group(1) + " ", text).split()).rstrip(".").strip()


def weekday(text: str) -> int | None:
    """The day of the week ``text`` names (Monday = 0), else ``None``."""
    match = _WEEKDAY.match(_plain(text))
    return None if match is None else _WEEKDAYS.get(match.group(1).lower())


def date(text: str) -> Date | None:
    """``(year or None, month, day)`` of a calendar date written as described above, else ``None``."""
    plain = _plain(text)
    iso = _ISO.match(plain)
    if iso:
        year, month, day = (int(g) for g in iso.groups())
    elif match := _MONTH_DAY.match(plain):
        month, day, year = _MONTHS.get(match.group(1).lower()), int(match.group(2)), match.group(3)
    elif match := _DAY_MONTH.match(plain):
        day, month, year = int(match.group(1)), _MONTHS.get(match.group(2).lower()), match.group(3)
    else:
        return None
    if month is None or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    return (int(year) if year else None), month, day


def date_verdict(pred: str, gold: str) -> tuple[bool, str] | None:
    """``(correct, why)`` when both are weekdays or both are dates, else ``None``."""
    answer_day, target_day = weekday(pred), weekday(gold)
    if answer_day is not None and target_day is not None:
        same = answer_day == target_day
        return same, (f"weekdays: {calendar.day_name[answer_day]} {'=' if same else '!='} "
                      f"{calendar.day_name[target_day]}")
    answer, target = date(pred), date(gold)
    if answer is None or target is None:
        return None
    same = answer[1:] == target[1:] and (answer[0] is None or target[0] is None or answer[0] == target[0])
    return same, f"dates: {_show(answer)} {'=' if same else '!='} {_show(target)}"


def _show(value: Date) -> str:
    year, month, day = value
    return f"{calendar.month_name[month]} {day}" + (f", {year}" if year else "")
