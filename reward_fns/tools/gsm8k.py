"""``gsm8k`` tool: verl's ``Gsm8kTool``, behaviour for behaviour.

The model submits an answer; the tool scores it against the row's ground
truth with the gsm8k scorer (flexible extraction, 1.0 when right), returns
``Current parsed answer='..' reward=..``, and its step reward is 0.0 when the
score improved on the instance's last one and -0.05 otherwise; ``calc_reward``
is the score of the last parsed answer.
"""
from __future__ import annotations

from typing import Any, Optional
from uuid import uuid4

from rewardsmith.reward_fns import gsm8k
from rewardsmith.reward_fns.tools.base import BaseTool
from rewardsmith.reward_fns.tools.config_keys import check_keys
from rewardsmith.reward_fns.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

NO_IMPROVEMENT_PENALTY = -0.05

SCHEMA = OpenAIFunctionToolSchema.model_validate({
    "type": "function",
    "function": {
        "name": "calc_gsm8k_reward",
        "description": "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "The model's answer to the GSM8K math problem, must be a digits"}},
            "required": ["answer"],
        },
    },
})


class Gsm8kTool(BaseTool):
    """Scores a submitted GSM8K answer; the ground truth comes from the row's ``create_kwargs``."""

    def __init__(self, config: Optional[dict] = None, tool_schema: Optional[OpenAIFunctionToolSchema] = None):
        check_keys("gsm8k", config or {}, ("type",))
        super().__init__(config or {}, tool_schema or SCHEMA)
        self._instances: dict[str, dict[str, Any]] = {}

    async def create(self, instance_id: Optional[str] = None, ground_truth: Optional[str] = None,
                     **kwargs: Any) -> tuple[str, ToolResponse]:
        if instance_id is None:
            instance_id = str(uuid4())
        if ground_truth is None:
            ground_truth = (kwargs.get("create_kwargs") or {}).get("ground_truth")
        self._instances[instance_id] = {"response": "", "ground_truth": ground_truth, "reward": 0.0}
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        answer = parameters.get("answer", "")
        if not isinstance(answer, str):
            answer = str(answer)
        state = self._instances[instance_id]
        state["response"] = answer if answer.startswith("#### ") else "#### " + answer
        reward = await self.calc_reward(instance_id)
        tool_reward = 0.0 if reward > state["reward"] else NO_IMPROVEMENT_PENALTY
        state["reward"] = reward
        return ToolResponse(text=f"Current parsed {answer=} {reward=}"), tool_reward, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        state = self._instances[instance_id]
        return gsm8k_score(state["response"], state["ground_truth"])

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._instances.pop(instance_id, None)


def gsm8k_score(response: str, ground_truth: Any) -> float:
    """verl's score for a gsm8k tool or interaction: flexible extraction, 1.0 right, 0.0 otherwise."""
    return gsm8k.compute_score("openai/gsm8k", response, ground_truth, method="flexible", format_score=0.0, score=1.0)
