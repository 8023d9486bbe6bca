"""``gsm8k`` interaction: verl's ``Gsm8kInteraction``, behaviour for behaviour.

After each assistant turn it scores the last assistant message against the
ground truth given to ``start_interaction`` (flexible extraction): right ends
the episode with "Your response is correct!" and score 1.0, otherwise the
model is asked to reflect and try again (score 0.0).
"""
from __future__ import annotations

from typing import Any, Optional
from uuid import uuid4

from rewardsmith.reward_fns.interactions.base import BaseInteraction
from rewardsmith.reward_fns.tools.gsm8k import gsm8k_score

CORRECT = "Your response is correct!"
INCORRECT = "Your response is incorrect! You need to reflect on your answer and try again."


class Gsm8kInteraction(BaseInteraction):
    """Grades GSM8K answers turn by turn."""

    def __init__(self, config: dict[str, Any]):
        super().__init__(config)
        self._instances: dict[str, dict[str, Any]] = {}

    async def start_interaction(self, instance_id: Optional[str] = None, ground_truth: Optional[str] = None,
                                **kwargs: Any) -> str:
        if instance_id is None:
            instance_id = str(uuid4())
        self._instances[instance_id] = {"response": "", "ground_truth": ground_truth, "reward": 0.0}
        return instance_id

    async def generate_response(self, instance_id: str, messages: list[dict[str, Any]],
                                **kwargs: Any) -> tuple[bool, str, float, dict]:
        content = next((m.get("content") for m in reversed(messages) if m.get("role") == "assistant"), "")
        state = self._instances[instance_id]
        state["response"] = content if content and content.startswith("#### ") else "#### " + (content or "")
        reward = await self.calculate_score(instance_id)
        if reward == 1.0:
            return True, CORRECT, reward, {}
        return False, INCORRECT, reward, {}

    async def calculate_score(self, instance_id: Optional[str] = None, **kwargs: Any) -> float:
        state = self._instances[instance_id]
        return gsm8k_score(state["response"], state["ground_truth"])

    async def finalize_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> None:
        self._instances.pop(instance_id, None)
