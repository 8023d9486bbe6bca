"""Model-based scoring: a local reward model, reward-model servers and LLM judges.

Each is a :class:`~rewardsmith.plugins.model_scoring.interface.ModelScorer`: it
scores a batch of (prompt, response) requests at once and reports one
:class:`~rewardsmith.plugins.scoring.ScoreOutcome` per request, so a failure
costs one sample and follows its component's policy.
"""
