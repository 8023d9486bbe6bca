"""``BaseTool``: rewardsmith's tool base class, with the methods and signatures of verl 0.9.1's.

A tool is created once per call (``create`` -> ``execute`` -> ``release``,
as verl's tool agent loop does), may keep per-instance state between those,
and may carry its own reward (``execute``'s step reward, ``calc_reward``).
A class written against ``verl.tools.base_tool.BaseTool`` ports by changing
its import to ``rewardsmith.reward_fns.tools``.
"""
from __future__ import annotations

from typing import Any, Optional
from uuid import uuid4

from rewardsmith.reward_fns.tools.schemas import OpenAIFunctionToolSchema, ToolResponse


class BaseTool:
    """A tool the model can call; subclass and override ``execute`` (and the others as needed)."""

    def __init__(self, config: dict, tool_schema: Optional[OpenAIFunctionToolSchema]):
        self.config = config
        self.tool_schema = tool_schema
        if self.tool_schema is None:  # a subclass may define its schema in get_openai_tool_schema
            self.tool_schema = self.get_openai_tool_schema()
        if self.tool_schema is None:
            raise ValueError(f"{type(self).__name__}: no tool_schema given and the class defines none")
        self.name = self.tool_schema.function.name

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        """The tool's schema in OpenAI format (what the chat template shows the model)."""
        return self.tool_schema

    async def create(self, instance_id: Optional[str] = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        """Create an instance for one call; returns its id and a creation response (usually empty)."""
        return (instance_id if instance_id is not None else str(uuid4())), ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        """Run the tool: ``(response, step reward, metrics)``."""
        return ToolResponse(text="Updated the tool state."), 0.0, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The instance's reward from its state."""
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Free the instance's state."""
