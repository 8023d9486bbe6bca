"""``code_interpreter``: verl's ``SandboxFusionTool`` on rewardsmith's sandbox (or any SandboxFusion server).

Its config keys are verl's: ``sandbox_fusion_url`` (required; ``rewardsmith
sandbox serve``'s ``http://host:port/run_code``), ``default_timeout`` (s),
``default_language``, ``memory_limit_mb``, ``num_workers`` (the tool's
thread pool, as verl's execution pool) and ``rate_limit`` (requests in flight
through the process's one shared client per URL, when
``enable_global_rate_limit`` is true; verl's limiter is Ray-wide). Our own key
``retry_backoff`` (s) sets the client's back-off between retries. The model
passes ``code`` (and optionally ``timeout``, ``language``); the response is
stdout + stderr of a run that finished, and verl's ``no stdout here`` for one
that did not (timeout, compile error). A sandbox that cannot be reached
raises :class:`ToolUnavailable`.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from rewardsmith.reward_fns.tools.base import BaseTool
from rewardsmith.reward_fns.tools.config_keys import check_keys, rate_limit
from rewardsmith.reward_fns.tools.errors import ToolUnavailable
from rewardsmith.reward_fns.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from rewardsmith.sandbox.client import SandboxRequestError, SandboxUnavailable, shared_client

KEYS = ("type", "sandbox_fusion_url", "default_timeout", "default_language", "memory_limit_mb",
        "num_workers", "rate_limit", "enable_global_rate_limit", "retry_backoff")
NOT_FINISHED = "no stdout here"

SCHEMA = OpenAIFunctionToolSchema.model_validate({
    "type": "function",
    "function": {
        "name": "code_interpreter",
        "description": "A tool for executing code.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The code to execute."}},
            "required": ["code"],
        },
    },
})


class CodeInterpreterTool(BaseTool):
    """Runs the model's code in the sandbox and returns its output."""

    def __init__(self, config: dict, tool_schema: Optional[OpenAIFunctionToolSchema] = None):
        check_keys("code_interpreter", config, KEYS)
        super().__init__(config, tool_schema or SCHEMA)
        url = config.get("sandbox_fusion_url") or ""
        if not url:
            raise ValueError("code_interpreter: config.sandbox_fusion_url is not set "
                             "(e.g. http://127.0.0.1:8080/run_code of `rewardsmith sandbox serve`)")
        self.default_timeout = float(config.get("default_timeout", 30))
        self.default_language = str(config.get("default_language", "python"))
        self.memory_limit_mb = int(config.get("memory_limit_mb", 1024))
        workers = max(1, int(config.get("num_workers", 10)))
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="code_interpreter")
        self.client = shared_client(url, max_concurrency=rate_limit(config, workers, default=10),
                                    backoff_s=float(config.get("retry_backoff", 0.5)))

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, Optional[float], Optional[dict]]:
        code = parameters.get("code", "")
        code = code if isinstance(code, str) else str(code)
        timeout = float(parameters.get("timeout", self.default_timeout))
        language = str(parameters.get("language", self.default_language))
        try:
            reply = await asyncio.get_running_loop().run_in_executor(self._pool, lambda: self.client.run_code(
                code, language, run_timeout=timeout, memory_limit_mb=self.memory_limit_mb))
        except SandboxUnavailable as exc:
            raise ToolUnavailable(str(exc)) from exc
        except SandboxRequestError as exc:
            raise ToolUnavailable(f"the sandbox refused the request: {exc}") from exc
        if reply.get("status") == "SandboxError":
            raise ToolUnavailable(f"the sandbox failed: {reply.get('message', '')}")
        run = reply.get("run_result") or {}
        if run.get("status") != "Finished":
            # verl's wording, so that a model trained on verl reads the same thing.
            return ToolResponse(text=NOT_FINISHED), None, None
        return ToolResponse(text=(run.get("stdout") or "") + (run.get("stderr") or "")), None, None
