"""Tools for multi-turn episodes: the base class, verl's schemas, the built-ins, running calls.

Built-ins are registered through ``register_tools``, the hook any plugin
implements (docs/environments.md).
"""
from __future__ import annotations

from rewardsmith.common.hooks import hookimpl
from rewardsmith.reward_fns.tools.base import BaseTool
from rewardsmith.reward_fns.tools.errors import ToolInputError, ToolUnavailable
from rewardsmith.reward_fns.tools.execution import ToolCall, ToolResult, ToolStats, call_tool, call_tools, unused_tool_reward
from rewardsmith.reward_fns.tools.schemas import (
    OpenAIFunctionCallSchema, OpenAIFunctionParametersSchema, OpenAIFunctionParsedSchema,
    OpenAIFunctionPropertySchema, OpenAIFunctionSchema, OpenAIFunctionToolCall, OpenAIFunctionToolSchema,
    ToolResponse,
)

__all__ = [
    "BaseTool", "ToolResponse", "OpenAIFunctionToolSchema", "OpenAIFunctionSchema", "OpenAIFunctionParametersSchema",
    "OpenAIFunctionPropertySchema", "OpenAIFunctionParsedSchema", "OpenAIFunctionCallSchema", "OpenAIFunctionToolCall",
    "ToolInputError", "ToolUnavailable", "ToolCall", "ToolResult", "ToolStats", "call_tool", "call_tools", "unused_tool_reward",
]

# (registered name, module under rewardsmith.reward_fns.tools, class)
BUILTIN_TOOLS = (
    ("calculator", "calculator", "CalculatorTool"),
    ("gsm8k", "gsm8k", "Gsm8kTool"),
    ("code_interpreter", "code_interpreter", "CodeInterpreterTool"),
    ("search", "search", "SearchTool"),
)


@hookimpl
def register_tools(register):
    import importlib

    for name, module, cls in BUILTIN_TOOLS:
        register(name, getattr(importlib.import_module(f"{__name__}.{module}"), cls))
