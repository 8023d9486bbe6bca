"""Quantities with physical units, compared through ``pint``.

A quantity is a number followed by a unit pint knows ("5 km", ``5\\text{ km}``,
``\\SI{5}{\\kilo\\meter}``, ``12 m/s^2``, ``100^\\circ C``), or several such
parts of one dimension that add up ("2 hours 30 minutes", "1 h and 15 min").
Only physical dimensions count (length, mass, time, temperature, amount of
substance, electric current and their products); pint's other names (``a``
for a year, ``c`` for the speed of light, counting units, angles, percent)
are not read as units, so "5 apples" or "30 degrees" is no quantity here.

The rule (:func:`quantity_verdict`), decided only when the gold is a quantity:

* the answer is a quantity of the same dimension: converted to the gold's unit
  and compared (``5 km`` = ``5000 m``; ``100 °C`` = ``373.15 K``); the same
  unit is compared exactly, another unit to a relative 1e-9 (the conversion
  factors are floats);
* the answer is a quantity of another dimension: wrong (``5 kg`` for ``5 m``);
* the answer has no unit, or one pint does not know: not decided here (the
  number is compared, the gold's unit is implied by the question).

When the gold has no unit, the answer's unit is not checked: the verifier
does not know the unit the question asked for, so only the number counts
("5 cm" is right for gold ``5``, and so is "5 m").
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rewardsmith.reward_fns.math_verifier.normalize import parse_number, unwrap_command
from rewardsmith.reward_fns.math_verifier.notation import typeset_quantities
from rewardsmith.reward_fns.math_verifier.numerals import DIGIT_GROUPS, plain_digits

REL_TOL = 1e-9
_PHYSICAL = frozenset({"[length]", "[mass]", "[time]", "[temperature]", "[substance]", "[current]"})
# pint names that are ordinary words, constants or letters more often than units.
_NOT_UNITS = frozenset({"a", "at", "c", "e", "pi", "unit", "units", "t", "u", "b", "B", "to", "per", "and", "of", "am",
                        "pm", "AM", "PM"})
_SI_PREFIXES = ("yotta", "zetta", "exa", "peta", "tera", "giga", "mega", "kilo", "hecto", "deca", "deci", "centi",
                "milli", "micro", "nano", "pico", "femto")
_TEXT_GROUP = re.compile(r"\\(?:text|textrm|mathrm|mbox|operatorname)\s*\{([^{}]*)\}")
_TEMPERATURE = re.compile(r"(?:°|\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\degree)\s*([CF])(?![A-Za-z])")
_POWER = re.compile(r"\^\s*\{?\s*(-?\d+)\s*\}?")
_NUMBER = re.compile(r"(?<![\w.*^/])([+-]?(?:" + DIGIT_GROUPS + r"|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?|[+-]?\.\d+"
                     r"|\\frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\})(?:\s*\*\s*10\*\*(-?\d+))?")
_UNIT_TEXT = re.compile(r"^[A-Za-zµμΩ°][A-Za-zµμΩ°/*. ]*(?:\*\*-?\d[A-Za-z/*. ]*)*$")
_JOINER = re.compile(r"^(?:,|and|,\s*and)\s+|\s+(?:,|and)$|,$")


@dataclass(frozen=True)
class Quantity:
    """A number and a unit pint knows (the unit as pint spells it)."""

    value: Fraction
    unit: str


@lru_cache(maxsize=1)
def _registry() -> Any:
    import pint

    return pint.UnitRegistry()


@lru_cache(maxsize=4096)
def _pint_unit(text: str) -> str | None:
    """pint's name for a unit written as ``text``, when it is a physical unit; else ``None``."""
    text = " ".join(text.replace(".", " ").split())
    if not text or text in _NOT_UNITS:
        return None
    words = text.split(" ")
    if len(words) > 1 and words[0] in _SI_PREFIXES:  # siunitx's \kilo\meter reads "kilo meter"
        text = words[0] + " ".join(words[1:])
    registry = _registry()
    try:
        units = registry.parse_units(text)
    except Exception:  # noqa: BLE001 - pint raises many types for a name it does not know
        return None
    dimensions = dict(registry.Quantity(1, units).dimensionality)
    if not dimensions or not set(dimensions) <= _PHYSICAL:
        return None
    return str(units)


def _plain(text: str) -> str:
    text = plain_digits(text).strip()
    for box in ("\\boxed", "\\fbox"):
        text = unwrap_command(text, box)
    text = typeset_quantities(_TEMPERATURE.sub(lambda m: f" deg{m.group(1)}", text))
    for token in ("\\(", "\\)", "\\[", "\\]", "$", "\\displaystyle", "\\left", "\\right"):
        text = text.replace(token, "")
    for token in ("\\,", "\\;", "\\:", "\\!", "\\quad", "\\qquad", "~", "\\ "):
        text = text.replace(token, " ")
    text = _TEXT_GROUP.sub(lambda m: f" {m.group(1)} ", text)
    text = text.replace("\\cdot", "*").replace("·", "*").replace("\\times", "*")
    text = _POWER.sub(r"**\1", text)
    return " ".join(text.split()).rstrip(".").strip()


def read_quantity(text: str) -> Quantity | None:
    """``text`` as a :class:`Quantity` (parts of one dimension added up), else ``None``."""
    if len(text) > 200:
        return None
    pieces = _NUMBER.split(_plain(text))
    if len(pieces) < 4 or pieces[0].strip() or not pieces[-1].strip():
        return None  # no number first, or nothing after the last number: no quantity (and no pint to load)
    total: Any = None
    for number_text, exponent, unit_text in zip(pieces[1::3], pieces[2::3], pieces[3::3]):
        unit_text = _JOINER.sub("", unit_text.strip()).strip()
        number = parse_number(number_text.replace(" ", ""))
        unit = _pint_unit(unit_text) if _UNIT_TEXT.match(unit_text or "-") else None
        if number is None or unit is None:
            return None
        value = number.value * Fraction(10) ** int(exponent or 0)  # 3 \times 10^8 m/s
        part = _registry().Quantity(float(value), unit)
        if total is None:
            total, first = part, (value, unit)
            continue
        try:
            total = total + part.to(total.units)
        except Exception:  # noqa: BLE001 - parts of different dimensions (or offset units) do not add up
            return None
    if len(pieces) == 4:
        return Quantity(*first)
    return Quantity(Fraction(total.magnitude).limit_denominator(10**12), str(total.units))


def quantity_verdict(pred: str, gold: str) -> tuple[bool, str] | None:
    """``(correct, why)`` when the gold and the answer are quantities, else ``None`` (see the module docstring)."""
    target = read_quantity(gold)
    if target is None:
        return None
    answer = read_quantity(pred)
    if answer is None:
        return None
    if answer.unit == target.unit:
        same = answer.value == target.value
        return same, f"{_show(answer)} {'=' if same else '!='} {_show(target)}"
    registry = _registry()
    try:
        converted = registry.Quantity(float(answer.value), answer.unit).to(target.unit).magnitude
    except Exception:  # noqa: BLE001 - pint's DimensionalityError and offset-unit errors
        return False, f"{answer.unit} is not a unit of what {target.unit} measures"
    same = math.isclose(converted, float(target.value), rel_tol=REL_TOL, abs_tol=1e-12)
    return same, f"{_show(answer)} is {converted:g} {target.unit}, {'=' if same else '!='} {_show(target)}"


def _show(quantity: Quantity) -> str:
    value = quantity.value
    return f"{value.numerator if value.denominator == 1 else float(value):g} {quantity.unit}"
