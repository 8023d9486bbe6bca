"""``calculator``: exact arithmetic on an expression the model writes, without ``eval``.

The expression is parsed with :mod:`ast` and only numbers, parentheses, unary
``+``/``-`` and ``+ - * / // % **`` are evaluated, in exact fractions (so
``0.1 + 0.2`` is ``0.3``). Exponents and result sizes are bounded so a call
cannot burn the host's CPU or memory.
"""
from __future__ import annotations

import ast
import operator
from fractions import Fraction
from typing import Any, Callable, Optional

from rewardsmith.reward_fns.tools.base import BaseTool
from rewardsmith.reward_fns.tools.config_keys import check_keys
from rewardsmith.reward_fns.tools.errors import ToolInputError
from rewardsmith.reward_fns.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

MAX_EXPRESSION_CHARS = 1000
MAX_EXPONENT = 256
MAX_RESULT_DIGITS = 400

SCHEMA = OpenAIFunctionToolSchema.model_validate({
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression with + - * / // % ** and parentheses; returns the exact result.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. (1234 * 5678) - 9"}},
            "required": ["expression"],
        },
    },
})

_BINARY: dict[type, Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: lambda a, b: Fraction(a // b), ast.Mod: operator.mod,
}


def evaluate(expression: str) -> Fraction:
    """The exact value of an arithmetic expression; :class:`ToolInputError` says what is wrong."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolInputError("expression must be a non-empty string")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolInputError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip().replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ToolInputError(f"not an arithmetic expression: {exc.msg}") from None
    return _eval(tree.body)


def _eval(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Fraction(str(node.value)) if isinstance(node.value, float) else Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(left, right))
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ToolInputError(f"operator {type(node.op).__name__} is not allowed")
        if right == 0 and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
            raise ToolInputError("division by zero")
        return _bounded(op(left, right))
    raise ToolInputError(f"only numbers and + - * / // % ** are allowed, found {type(node).__name__}")


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise ToolInputError("only whole-number exponents are allowed")
    if abs(exponent) > MAX_EXPONENT:
        raise ToolInputError(f"exponent larger than {MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise ToolInputError("division by zero")
    return base ** int(exponent)


def _bounded(value: Fraction) -> Fraction:
    # Each step is bounded, so a chain of multiplications cannot grow without limit either.
    if max(len(str(abs(value.numerator))), len(str(value.denominator))) > MAX_RESULT_DIGITS:
        raise ToolInputError(f"result has more than {MAX_RESULT_DIGITS} digits")
    return value


def format_value(value: Fraction) -> str:
    """An integer as itself; other values as a decimal with up to 12 significant digits."""
    if value.denominator == 1:
        return str(value.numerator)
    return format(float(value), ".12g")


class CalculatorTool(BaseTool):
    """The ``calculator`` tool: ``{"expression": "..."}`` -> the exact result as text."""

    def __init__(self, config: Optional[dict] = None, tool_schema: Optional[OpenAIFunctionToolSchema] = None):
        check_keys("calculator", config or {}, ("type",))
        super().__init__(config or {}, tool_schema or SCHEMA)

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        return ToolResponse(text=format_value(evaluate(parameters.get("expression", "")))), 0.0, {}
