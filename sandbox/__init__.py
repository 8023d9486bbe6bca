"""The code-execution sandbox service and its client."""
