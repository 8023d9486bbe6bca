"""Why a tool call failed, as the caller counts it."""
from __future__ import annotations


class ToolInputError(ValueError):
    """The model's call was malformed (a bad expression, a missing argument): its fault, not the tool's."""


class ToolUnavailable(ConnectionError):
    """The service behind a tool (sandbox, retrieval server) could not be reached or kept failing."""
