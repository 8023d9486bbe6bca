"""Model-based scoring: a local reward model, reward-model servers and LLM judges.

Each is a :class:`~rewardkit.plugins.model_scoring.interface.ModelScorer`: it
scores a batch of (prompt, response) requests at once and reports one
:class:`~rewardkit.plugins.scoring.ScoreOutcome` per request, so a failure
costs one sample and follows its component's policy.
"""
