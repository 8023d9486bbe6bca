"""The ``rewardsmith`` command line.

Each subcommand is a module (``rewardsmith.commands.*``, or the sandbox's own)
providing ``configure(parser)`` and ``run(args) -> int``. User errors (config,
data, plugins) are reported here, and only here, as one line. Modules are imported
only when their subcommand runs, so ``rewardsmith plugins`` never pays for torch.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import os
import signal
import sys
import threading

# The exit status of a command stopped by Ctrl-C (SIGINT), as a shell reports it: 128 + 2.
INTERRUPTED = 130

COMMANDS: dict[str, tuple[str, str]] = {
    "plugins": ("rewardsmith.commands.plugins", "List installed plugins and what they registered."),
    "score": ("rewardsmith.commands.score", "Score a jsonl/parquet file of responses offline."),
    "stress": ("rewardsmith.commands.stress", "Stress-test a scorer: how many reward hacks derived from the rows does it pay?"),
    "diff": ("rewardsmith.commands.diff", "Score the same responses two ways (scorers, files, configs) and report what changes."),
    "validate": ("rewardsmith.commands.validate", "Check a scorer or plugin against the scorer contract."),
    "new-plugin": ("rewardsmith.commands.new_plugin", "Write a template plugin package that passes validate."),
    "train": ("rewardsmith.commands.train", "Train a policy with PPO/GRPO from a config."),
    "sft": ("rewardsmith.commands.sft", "Supervised warm start of a policy."),
    "demo": ("rewardsmith.commands.demo", "The embedded end-to-end demo: warm start, then RL, then a before/after table."),
    "sandbox": ("rewardsmith.sandbox.cli", "Run the code-execution sandbox service."),
    "rm": ("rewardsmith.commands.rm", "Train a reward model on preference pairs, or serve one (OpenRLHF protocol)."),
}


def _raise_swallowed_interrupts(unraisable) -> None:
    """``sys.unraisablehook``: raise a Ctrl-C that landed in a finalizer again, where the command runs.

    Python only prints an exception raised in a ``__del__`` or a weakref
    callback (seen: a library's ``__del__`` during training), so a SIGINT
    that arrives there would be lost and the command would go on.
    Another thread sends the SIGINT to the main thread again, a moment later
    (sent from this hook, it would be raised inside the hook, whose exceptions
    are swallowed too): it wakes the main thread from a blocking call and is
    raised in the command's own code.
    """
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        timer = threading.Timer(0.05, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
        timer.daemon = True  # never holds up an exit
        timer.start()
    else:
        sys.__unraisablehook__(unraisable)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rewardsmith`` console script."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="rewardsmith", description="Plugin-based rewards and a lean PPO engine.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        parser.parse_args(argv or ["--help"])
        return 2
    name = argv[0]
    module = importlib.import_module(COMMANDS[name][0])
    command_parser = argparse.ArgumentParser(prog=f"rewardsmith {name}", description=COMMANDS[name][1])
    module.configure(command_parser)
    # key=value overrides may follow options (`score IN -o OUT a.b=1`), which a
    # plain positional nargs="*" would reject: collect the stragglers here.
    args, extra = command_parser.parse_known_args(argv[1:])
    if extra:
        if hasattr(args, "overrides") and all("=" in item and not item.startswith("-") for item in extra):
            args.overrides = list(args.overrides or []) + extra
        else:
            command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    sys.unraisablehook = _raise_swallowed_interrupts
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt as exc:
        # Ctrl-C is the user's choice, not a crash: one line, and what survives it
        # (commands that write checkpoints say where the last one is in the exception).
        if os.environ.get("REWARDSMITH_DEBUG"):
            raise
        print(f"rewardsmith {name}: interrupted{f'; {exc}' if str(exc) else ''}", file=sys.stderr)
        return INTERRUPTED
    except (ValueError, KeyError, FileNotFoundError) as exc:
        # Config, data and plugin errors name what was wrong; a traceback adds
        # nothing for the user. REWARDSMITH_DEBUG=1 shows it anyway.
        if os.environ.get("REWARDSMITH_DEBUG"):
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"rewardsmith {name}: error: {message}", file=sys.stderr)
        return 2


def console() -> None:
    """The ``rewardsmith`` command: :func:`main`'s status as the process's exit status.

    The process ends as Python's own exit does, less the interpreter's
    teardown of native objects: the program's non-daemon threads are waited
    for and the atexit callbacks run (Ray, multiprocessing, temporary
    directories), the standard streams are flushed, then ``os._exit``. Every
    command has closed what it started (workers, engines, trackers, the
    process group) before it returns. Left to finalization, torch's native
    threads (gloo's run loops, a joinable thread beside a reward thread that a
    Ctrl-C stopped) now and then abort a finished run at teardown ("terminate
    called without an active exception", SIGABRT, exit -6): a torchrun rank's
    failure fails the whole launch. After a Ctrl-C the command has said so
    in one line and the process ends at once.
    """
    status = main()
    if status != INTERRUPTED:  # after a Ctrl-C nothing more is waited for: a thread may be stuck in a scorer
        threading._shutdown()  # as Py_FinalizeEx (sandbox/template.py ends a run the same way)
        atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    console()
