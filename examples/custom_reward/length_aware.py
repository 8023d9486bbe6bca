"""A verl-style custom reward file: point custom_reward_function.path at it.

    rewardsmith score examples/data/math_responses.jsonl \
        custom_reward_function.path=examples/custom_reward/length_aware.py \
        custom_reward_function.reward_kwargs.max_words=60

It reuses rewardsmith's built-in routing for correctness and subtracts a small
penalty for rambling answers.
"""
from rewardsmith import compute_score as builtin_score


def compute_score(data_source, solution_str, ground_truth, extra_info=None, max_words=100):
    result = builtin_score(data_source, solution_str, ground_truth, extra_info)
    correct = result["score"] if isinstance(result, dict) else result
    words = len(solution_str.split())
    penalty = 0.1 if words > max_words else 0.0
    return {"score": float(correct) - penalty, "words": words}
