"""The plugin system: hooks, registry, reward managers and custom compute_score loading."""
