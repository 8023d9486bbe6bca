"""An example rewardsmith plugin.

It registers one scorer, ``keyword_match``, for the data sources
``example/keywords`` and ``example_*``, and one reward manager,
``brevity_bonus``, that adds a small bonus to short correct answers.
"""
from __future__ import annotations

import torch

from rewardsmith import RewardManager, hookimpl


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """Fraction of the ground truth's keywords that appear in the response.

    ``ground_truth`` is a list of keywords (or one comma-separated string).
    Returns a dict: the score plus which keywords were found.
    """
    if not isinstance(solution_str, str):
        raise TypeError(f"keyword_match: solution_str must be a string, got {type(solution_str).__name__}")
    keywords = ground_truth.split(",") if isinstance(ground_truth, str) else list(ground_truth)
    keywords = [k.strip().lower() for k in keywords if k.strip()]
    if not keywords:
        return None  # nothing to judge: abstain
    text = solution_str.lower()
    found = [k for k in keywords if k in text]
    return {"score": len(found) / len(keywords), "found": len(found)}


# What `rewardsmith validate` and the `rewardsmith.testing` pytest plugin check the
# scorer against: correct responses in this data source's format, and the score range.
compute_score.examples = [
    {"data_source": "example/keywords", "ground_truth": ["red", "green", "blue"], "response": "Red, green and blue."},
    {"data_source": "example_colours", "ground_truth": "blue", "response": "The sky is blue."},
]
compute_score.score_range = (0.0, 1.0)


class BrevityBonusManager(RewardManager):
    """Adds ``bonus`` to perfect answers shorter than ``max_chars`` characters.

    Options come from ``reward_model.reward_kwargs``, as in verl.
    """

    name = "brevity_bonus"

    def __init__(self, plan, settings, bonus: float = 0.1, max_chars: int = 40, **options):
        super().__init__(plan, settings, **options)
        self.bonus = bonus
        self.max_chars = max_chars

    def postprocess(self, batch, scores, extra_info):
        short = torch.tensor([len(s) <= self.max_chars for s in batch.solutions])
        bonus = torch.where(short & (scores >= 1.0), self.bonus, 0.0)
        extra_info["brevity_bonus"] = bonus.tolist()
        return scores + bonus


@hookimpl
def register_scorers(register):
    register("keyword_match", compute_score, data_sources=["example/keywords", "example_*"])


@hookimpl
def register_reward_managers(register):
    register("brevity_bonus", BrevityBonusManager)
