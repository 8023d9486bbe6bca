"""Shared primitives every folder may import: config building blocks, row I/O,
function references, the hard-timeout process pool, error types and the hook
marker. This package imports nothing else of the project."""
