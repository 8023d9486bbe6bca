"""``BaseInteraction``: rewardsmith's interaction base class, with the methods of verl's.

An interaction plays the other side of a conversation (a simulated user, a
grader that answers): ``start_interaction`` per episode, ``generate_response``
after each assistant turn, ``calculate_score``, ``finalize_interaction``. A
class written against ``verl.interactions.base.BaseInteraction`` ports by
changing its import to ``rewardsmith.reward_fns.interactions``.
"""
from __future__ import annotations

from typing import Any, Optional
from uuid import uuid4


class BaseInteraction:
    """The other side of a multi-turn conversation; subclass and override ``generate_response``."""

    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.name: str = config.get("name", "interaction_agent")

    async def start_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> str:
        """Start an episode's instance; returns its id."""
        return instance_id if instance_id is not None else str(uuid4())

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        """Answer the conversation so far: ``(should_terminate_sequence, content, turn score, extra data)``."""
        return False, "Your current result seems acceptable.", 0.8, {}

    async def calculate_score(self, instance_id: Optional[str] = None, **kwargs: Any) -> float:
        """The interaction's score (verl calls it per turn)."""
        return 0.0

    async def finalize_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> None:
        """End the episode's instance and free its state."""
