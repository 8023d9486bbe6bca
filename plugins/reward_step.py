"""What one training step's reward call knows beyond its batch: its budget and its profile.

The trainer opens a :func:`reward_step` around a reward manager's call; the
executors and model scorers read its deadline (samples not scored by then
abstain as over budget) and record each call's latency per scorer. Outside a
step (``rewardsmith score``, validation) there is no deadline and nothing is
recorded. A context variable carries it, so no manager's signature changes
and the call may run on a background thread (the step's own context).
"""
from __future__ import annotations

import contextvars
import threading
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from rewardsmith.plugins.scoring import ABSTAIN, ScoreOutcome

# The extra-info key that marks a sample cut by the step's budget.
OVER_BUDGET = "over_budget"


@dataclass
class RewardStep:
    """One step's reward call: ``deadline`` (``time.perf_counter()`` clock, None: none) and latencies per scorer."""

    budget_s: Optional[float] = None
    deadline: Optional[float] = None
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, scorer: str, seconds: float) -> None:
        """One call of ``scorer`` (a rule scorer's name, or a model kind) took ``seconds``."""
        with self._lock:
            self.latencies[scorer].append(seconds)

    def current_deadline(self) -> Optional[float]:
        """The deadline as it stands now (:meth:`cancel` brings it forward)."""
        return self.deadline

    def cancel(self) -> None:
        """Stop the step's scoring now: what is not finished is cut as if over budget."""
        self.deadline = time.perf_counter()

    def remaining(self) -> Optional[float]:
        """Seconds left before the deadline (never negative); None without a budget."""
        return None if self.deadline is None else max(0.0, self.deadline - time.perf_counter())

    def expired(self) -> bool:
        """Whether the budget has run out."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def over_budget(self) -> ScoreOutcome:
        """The outcome of a sample not scored when the budget ran out: it abstains (unscored), marked."""
        why = "scoring was cancelled" if self.budget_s is None else \
            f"not scored within the step's reward budget (reward_model.step_budget_s={self.budget_s:g})"
        return ScoreOutcome(ABSTAIN, extras={OVER_BUDGET: True}, error=why)


_NO_STEP = RewardStep()
_current: contextvars.ContextVar[RewardStep] = contextvars.ContextVar("reward_step", default=_NO_STEP)


def current_step() -> RewardStep:
    """The reward step this call belongs to (one without a deadline that records nowhere outside a step)."""
    step = _current.get()
    return RewardStep() if step is _NO_STEP else step


@contextmanager
def reward_step(step: RewardStep) -> Iterator[RewardStep]:
    """Run the reward calls inside under ``step``'s deadline, recording into it."""
    token = _current.set(step)
    try:
        yield step
    finally:
        _current.reset(token)


def count_over_budget(extra_info: dict[str, list[Any]]) -> int:
    """Samples whose score (any component's) was cut by the budget, read from a reward output's extra info."""
    columns = [v for k, v in extra_info.items() if k == OVER_BUDGET or k.endswith("/" + OVER_BUDGET)]
    return sum(any(col[i] is True for col in columns) for i in range(len(columns[0]))) if columns else 0
