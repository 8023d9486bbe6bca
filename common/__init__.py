"""Shared primitives every folder may import: config building blocks, row I/O,
function references, the hard-timeout process pool, error types, the hook
marker, credential redaction and the servers' loopback/token rule. This package
imports nothing else of the project."""
