"""The PPO engine: algorithms, models, rollout, data, checkpoints and the trainer."""
