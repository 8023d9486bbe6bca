"""A verl-style *batched* reward file: one call per batch (``reward_manager=batch``).

    rewardsmith score examples/data/math_responses.jsonl \
        reward_model.reward_manager=batch \
        custom_reward_function.path=examples/custom_reward/batched_rarity.py \
        custom_reward_function.reward_kwargs.rarity_bonus=0.5

Correctness comes from rewardsmith's built-in routing; the batched shape lets
each response be judged against the others for the same question: a correct
answer that most of its siblings missed earns up to ``rarity_bonus`` more.
"""
from collections import defaultdict

from rewardsmith import compute_score as builtin_score


def compute_score(data_sources, solution_strs, ground_truths, extra_infos, rarity_bonus=0.0, **kwargs):
    results = [builtin_score(s, r, g) for s, r, g in zip(data_sources, solution_strs, ground_truths)]
    correct = [float(r["score"] if isinstance(r, dict) else r) > 0 for r in results]
    siblings = defaultdict(list)  # responses to one question share its data_source and ground truth
    for i, (source, truth) in enumerate(zip(data_sources, ground_truths)):
        siblings[(source, str(truth))].append(i)
    scores = [0.0] * len(results)
    for group in siblings.values():
        solved = sum(correct[i] for i in group) / len(group)
        for i in group:
            base = results[i]["score"] if isinstance(results[i], dict) else results[i]
            bonus = rarity_bonus * (1.0 - solved) if correct[i] else 0.0
            scores[i] = {"score": float(base) + bonus, "solved_share": solved}
    return scores
