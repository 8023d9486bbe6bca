"""Turn a worker's raw report of one process into an API ``CommandResult``.

Verdicts, in order of precedence:

* ``TimeLimitExceeded``: the wall-clock deadline passed, or the CPU-time
  rlimit ended the program (the worker tells: ``cpu_limit_exceeded``);
* ``MemoryLimitExceeded``: non-zero exit, and the run's memory cgroup
  OOM-killed a process of it, or the worker killed the run for thrashing at
  its memory limit, or the program reported failing to allocate
  (Python ``MemoryError``, C++ ``std::bad_alloc``, ``ENOMEM``: with an
  address-space limit an allocation fails inside the program);
* ``RuntimeError``: any other non-zero exit or death by signal;
* ``OK``: exit status 0.

Output beyond the cap is dropped and flagged; it never changes the verdict:
the allocation-failure markers are looked for in the last 4 KiB of the whole
stderr, which the worker keeps apart from the capped text
(``stderr_tail``).
"""
from __future__ import annotations

import os

from rewardsmith.sandbox.schema import CommandResult

_OOM_MARKERS = (b"MemoryError", b"std::bad_alloc", b"Cannot allocate memory", b"out of memory")


def command_result(report: dict) -> CommandResult:
    """SandboxFusion-shaped result for one worker report (see ``worker.Worker.run``)."""
    fields = {
        "execution_time": round(report["wall_time"], 6),
        "stdout": report["stdout"].decode("utf-8", errors="replace"),
        "stderr": report["stderr"].decode("utf-8", errors="replace"),
        "cpu_time": round(report["cpu_time"], 6),
        "max_rss_kb": report["max_rss_kb"],
        "stdout_truncated": report["stdout_truncated"],
        "stderr_truncated": report["stderr_truncated"],
    }
    exit_code = os.waitstatus_to_exitcode(report["wait_status"])
    killed_by = -exit_code if exit_code < 0 else None
    if report["timed_out"] or report["cpu_limit_exceeded"]:
        return CommandResult(status="TimeLimitExceeded", verdict="TimeLimitExceeded", signal=killed_by, **fields)
    if exit_code == 0:
        verdict = "OK"
    elif (report["oom_killed"] or report["thrashed"]
          or any(marker in report["stderr_tail"] for marker in _OOM_MARKERS)):
        verdict = "MemoryLimitExceeded"
    else:
        verdict = "RuntimeError"
    return CommandResult(status="Finished", return_code=exit_code, verdict=verdict, signal=killed_by, **fields)
