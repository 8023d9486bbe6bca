"""The CLI sub-commands, one module each: ``configure(parser)`` and ``run(args)``."""
