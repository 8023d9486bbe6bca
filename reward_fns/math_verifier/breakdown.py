"""A value's breakdown in parentheses: "Total: 18 (10 on Monday + 8 on Tuesday).".

Models often follow their result with how it was made: "He has 35 cards
left (60 − 25).", "She spent $47 ($20 for the shirt, $15 for the jeans, $12
for the shoes).", "Answer: 84 (= 7·12)", "The answer is 28 (1 + 2 + 4 + 7 +
14, the proper divisors of 28)". The numbers inside are operands, not other
answers. A parenthesis is read as a breakdown only when its arithmetic checks
out: an expression that evaluates to the number right before it (words beside
the numbers are labels and are skipped), or a list of amounts that add up to
it. Anything else ("18 (or 20)", "20 (wait: 18)", "18 (10 + 9)") is left for
the commitment rules to read. Only plain text is read: inside ``$..$`` a
number before a parenthesis multiplies it (``3(1 + 2)``).
"""
from __future__ import annotations

import ast
import operator
import re
from fractions import Fraction

from rewardsmith.reward_fns.math_verifier.numerals import DIGIT_GROUPS

# The number a breakdown explains, then the parenthesis (at least one space or a currency sign's space between:
# "3(1 + 2)" is a product).
_NUMBER = rf"(?:{DIGIT_GROUPS}|\d+)(?:\.\d+)?"
_BREAKDOWN = re.compile(rf"(?<![\w.,^_/])(?P<value>{_NUMBER})(?P<words>(?:\s+[A-Za-z][A-Za-z'-]*){{0,4}})\s+"
                        r"(?P<paren>\((?P<inside>[^()\n]{3,160})\))")
_MATH_SPAN = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|(?<![\\\d])\$(?!\s*\d)[^$\n]*?\$", re.DOTALL)
_LEAD = re.compile(r"(?i)^\s*(?:=|that is,?|i\.e\.,?|which is)\s*")
_OPERATORS = {"+": "+", "-": "-", "−": "-", "–": "-", "×": "*", "x": "*", "*": "*", "·": "*", "⋅": "*", "/": "/",
              "÷": "/"}
_TOKEN = re.compile(rf"{_NUMBER}|[+\-−–×*·⋅/÷]|(?<=\s)x(?=\s)|[A-Za-z][A-Za-z'-]*|[$€£¥%,]|\S")
_LABEL = re.compile(r"[A-Za-z][A-Za-z'-]*|[$€£¥]")
_ITEM_SEPARATOR = re.compile(r"\s*(?:,|;|\band\b|\bplus\b)\s*")
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _evaluate(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return Fraction(str(node.value))
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    raise ValueError("not plain arithmetic")


def _expression_value(text: str) -> Fraction | None:
    """The value of ``text`` as arithmetic on numbers whose labels are skipped ("10 on Monday + 8 on Tuesday":
    18); ``None`` when it holds no operator or anything but numbers, labels and operators."""
    pieces, operators = [], 0
    for token in _TOKEN.findall(text):
        if token in _OPERATORS:
            pieces.append(_OPERATORS[token])
            operators += 1
        elif token[0].isdigit():
            pieces.append(token.replace(",", "").replace("_", ""))
        elif not _LABEL.fullmatch(token):
            return None
    if not operators:
        return None
    try:
        return _evaluate(ast.parse(" ".join(pieces), mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return None


def _amounts_total(text: str) -> Fraction | None:
    """The sum of a list of labelled amounts ("$20 for the shirt, $15 for the jeans"), each item one number;
    ``None`` when ``text`` is no such list of two or more."""
    items = [item for item in _ITEM_SEPARATOR.split(text) if item]
    total = Fraction(0)
    for item in items:
        found = re.findall(_NUMBER, item)
        if len(found) != 1 or not all(_LABEL.fullmatch(t) for t in _TOKEN.findall(item.replace(found[0], " "))):
            return None
        total += Fraction(found[0].replace(",", "").replace("_", ""))
    return total if len(items) >= 2 else None


def _explains(value: str, inside: str) -> bool:
    """Whether ``inside`` (a parenthesis after ``value``) is a derivation of ``value``: its first clause
    evaluates to it, and any remark after a comma names no other number."""
    target = Fraction(value.replace(",", "").replace("_", ""))
    inside = _LEAD.sub("", inside)
    if _amounts_total(inside) == target:
        return True
    first, _, remark = inside.partition(",")
    if _expression_value(first) != target:
        return False
    return all(Fraction(n.replace(",", "")) == target for n in re.findall(_NUMBER, remark))


def without_breakdowns(text: str) -> str:
    """``text`` with each parenthesis that breaks down the number before it blanked out (the same length, so
    that positions in ``text`` stay where they were)."""
    if "(" not in text:
        return text
    math = [m.span() for m in _MATH_SPAN.finditer(text)]

    def blank(match: re.Match) -> str:
        if any(start <= match.start() < end for start, end in math) or not _explains(match.group("value"), match.group("inside")):
            return match.group(0)
        paren = match.start("paren") - match.start()
        return match.group(0)[:paren] + " " * len(match.group("paren"))

    return _BREAKDOWN.sub(blank, text)
