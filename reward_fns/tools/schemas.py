"""The OpenAI function-tool schema and a tool's response, with verl 0.9.1's fields.

Field for field what ``verl.tools.schemas`` defines, so a tool ported from
verl changes only its import. The classes are our own (verl is optional);
code that handles tool results reads them by attribute, so verl's classes
pass through it as well.
"""
from __future__ import annotations

import json
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, Field, model_validator


class OpenAIFunctionPropertySchema(BaseModel):
    """One parameter of a function, in OpenAI format."""

    type: Union[str, list[str]]
    description: Optional[str] = None
    enum: Optional[list[Any]] = None


class OpenAIFunctionParametersSchema(BaseModel):
    """A function's parameters, in OpenAI format."""

    type: str
    properties: dict[str, OpenAIFunctionPropertySchema]
    required: list[str] = Field(default_factory=list)


class OpenAIFunctionSchema(BaseModel):
    """A function, in OpenAI format."""

    name: str
    description: str
    parameters: OpenAIFunctionParametersSchema = Field(
        default_factory=lambda: OpenAIFunctionParametersSchema(type="object", properties={}, required=[]))
    strict: bool = False


class OpenAIFunctionToolSchema(BaseModel):
    """A tool, in OpenAI format: ``{"type": "function", "function": {...}}``."""

    type: str
    function: OpenAIFunctionSchema


class OpenAIFunctionParsedSchema(BaseModel):
    """A parsed call whose arguments are still a JSON string."""

    name: str
    arguments: str


class OpenAIFunctionCallSchema(BaseModel):
    """A call: the function's name and its decoded arguments."""

    name: str
    arguments: dict[str, Any]

    @staticmethod
    def from_openai_function_parsed_schema(
        parsed_schema: OpenAIFunctionParsedSchema,
    ) -> tuple["OpenAIFunctionCallSchema", bool]:
        """Decode the arguments; ``(call with {} arguments, True)`` when they are not a JSON object."""
        try:
            arguments = json.loads(parsed_schema.arguments)
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments={}), True
        return OpenAIFunctionCallSchema(name=parsed_schema.name, arguments=arguments), False


class OpenAIFunctionToolCall(BaseModel):
    """A tool call in OpenAI format."""

    id: str
    type: Literal["function"] = "function"
    function: OpenAIFunctionCallSchema


class ToolResponse(BaseModel):
    """What a tool returns to the conversation: text, images and/or videos."""

    text: Optional[str] = None
    image: Optional[list[Any]] = None
    video: Optional[list[Any]] = None

    @model_validator(mode="before")
    @classmethod
    def _media_are_lists(cls, values: Any) -> Any:
        if isinstance(values, dict):
            for key in ("image", "video"):
                if key in values and values[key] is not None and not isinstance(values[key], list):
                    raise ValueError(f"ToolResponse.{key} must be a list, got {type(values[key]).__name__}; "
                                     f"wrap a single item as [{key}]")
        return values

    def is_empty(self) -> bool:
        """True when the response carries nothing."""
        return not self.text and not self.image and not self.video

    def is_text_only(self) -> bool:
        """True when the response carries text and no media."""
        return bool(self.text) and not self.image and not self.video
