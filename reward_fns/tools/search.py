"""``search``: verl's ``SearchTool`` against a retrieval server (Search-R1's protocol).

Config keys are verl's: ``retrieval_service_url`` (required, e.g.
``http://127.0.0.1:8000/retrieve``), ``topk`` (3), ``timeout`` (s, 30),
``num_workers`` (the tool's thread pool) and ``rate_limit`` (requests in
flight when ``enable_global_rate_limit`` is true; verl's limiter is
Ray-wide). The model passes ``query_list``; the
tool POSTs ``{"queries", "topk", "return_scores": true}`` and answers, as
verl does, ``{"result": "Doc 1(Title: ..) ..\\n..."}`` with the passages of
each query joined by ``\\n---\\n``. A server that cannot be reached, times out
or answers an error raises :class:`ToolUnavailable`.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
import json
import threading
from typing import Any, Optional

import requests

from rewardsmith.reward_fns.tools.base import BaseTool
from rewardsmith.reward_fns.tools.config_keys import check_keys, rate_limit
from rewardsmith.reward_fns.tools.errors import ToolInputError, ToolUnavailable
from rewardsmith.reward_fns.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

KEYS = ("type", "retrieval_service_url", "topk", "timeout", "num_workers", "rate_limit", "enable_global_rate_limit")

SCHEMA = OpenAIFunctionToolSchema.model_validate({
    "type": "function",
    "function": {
        "name": "search",
        "description": "Searches the web for relevant information based on the given query.",
        "parameters": {
            "type": "object",
            "properties": {"query_list": {"type": "array", "description": "A list of fully-formed semantic queries."}},
            "required": ["query_list"],
        },
    },
})


def passages_to_text(passages: list[dict[str, Any]]) -> str:
    """One query's passages as Search-R1 formats them: the first line of ``contents`` is the title."""
    text = ""
    for index, item in enumerate(passages):
        title, _, body = item["document"]["contents"].partition("\n")
        text += f"Doc {index + 1}(Title: {title}) {body}\n"
    return text


class SearchTool(BaseTool):
    """Retrieves passages for the model's queries."""

    def __init__(self, config: dict, tool_schema: Optional[OpenAIFunctionToolSchema] = None):
        check_keys("search", config, KEYS)
        super().__init__(config, tool_schema or SCHEMA)
        self.url = config.get("retrieval_service_url") or ""
        if not self.url:
            raise ValueError("search: config.retrieval_service_url is not set (e.g. http://127.0.0.1:8000/retrieve)")
        self.topk = int(config.get("topk", 3))
        self.timeout = float(config.get("timeout", 30))
        workers = max(1, int(config.get("num_workers", 120)))
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="search")
        self._in_flight = threading.BoundedSemaphore(rate_limit(config, workers, default=120))
        self._session = requests.Session()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        queries = parameters.get("query_list")
        if not isinstance(queries, list) or not queries:
            raise ToolInputError("'query_list' is missing, empty, or not a list")
        results = await asyncio.get_running_loop().run_in_executor(self._pool, self._retrieve, [str(q) for q in queries])
        total = sum(len(r) for r in results)
        text = "\n---\n".join(passages_to_text(r) for r in results) if total else "No search results found."
        metrics = {"query_count": len(queries), "status": "success" if total else "no_results", "total_results": total}
        return ToolResponse(text=json.dumps({"result": text})), 0.0, metrics

    def _retrieve(self, queries: list[str]) -> list[list[dict[str, Any]]]:
        payload = {"queries": queries, "topk": self.topk, "return_scores": True}
        with self._in_flight:
            try:
                reply = self._session.post(self.url, json=payload, timeout=self.timeout)
                reply.raise_for_status()
                results = reply.json()["result"]
            except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
                raise ToolUnavailable(f"retrieval server {self.url}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(results, list) or len(results) != len(queries):
            raise ToolUnavailable(f"retrieval server {self.url} answered {len(queries)} queries with "
                                  f"{len(results) if isinstance(results, list) else type(results).__name__} results")
        return results
