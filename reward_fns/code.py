"""Code reward: run the response's program against the problem's test cases in a sandbox.

Registered as scorer ``sandbox_code`` for verl's code data sources
(``codecontests``, ``apps``, ``codeforces``, ``taco``). The sandbox is any
SandboxFusion-compatible server (``rewardsmith sandbox serve`` or SandboxFusion
itself) at ``reward_model.sandbox_fusion.url``.

Test cases (``ground_truth``, a dict or its JSON string, as in verl):

* ``{"inputs": [...], "outputs": [...]}`` — stdin/stdout pairs; output
  matches when its whitespace-separated tokens equal the expected ones, as
  competitive-programming checkers compare: an expected integer must be
  matched exactly (by value: ``-0`` = ``0``, ``1e9`` = ``1000000000``); a
  tolerance (default 1e-6, absolute or relative) applies only where the
  expected token is a real number with a fractional part or an exponent;
* the same plus ``"fn_name"`` — LeetCode/APPS call-based: each input is the
  argument list (or JSON lines), the function (global or ``Solution``
  method) is called and its return value compared with the output;
* ``{"assert_case": [...]}`` — Python snippets of asserts run after the
  program.

APPS' ``{"input_output": "<json>"}`` wrapper is unwrapped.

Call-based and assert cases run inside a harness that prints a fresh random
token only after the checks complete, so a program that exits early
(``sys.exit(0)`` before the asserts) or raises never passes, whatever the
expected output. One program serves every case of a sample, with the case
in stdin, so the sandbox's batch endpoint compiles and loads it once.
"""
from __future__ import annotations

import fnmatch
import json
import math
import re
from decimal import Decimal, InvalidOperation
import secrets
from dataclasses import dataclass, field
from typing import Any, Optional

from rewardsmith.common.errors import ScorerInfrastructureError
from rewardsmith.sandbox.client import SandboxRequestError, SandboxUnavailable, shared_client

_FENCE = re.compile(r"```([\w+#.-]*)[ \t]*\n(.*?)```", re.DOTALL)
_LANGUAGE_TAGS = {
    "python": ("python", "py", "python3"),
    "cpp": ("cpp", "c++", "cc", "cxx"),
    "c": ("c",),
    "bash": ("bash", "sh"),
    "nodejs": ("javascript", "js", "node", "nodejs"),
    "perl": ("perl", "pl"),
}
_CASE_VERDICTS = {"TimeLimitExceeded": "timeout", "MemoryLimitExceeded": "memory_limit", "RuntimeError": "runtime_error"}

DEFAULT_TOLERANCE = 1e-6


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Optional[dict] = None,
    *,
    sandbox_fusion_url: Optional[str] = None,
    memory_limit_mb: int = 1024,
    continuous: bool = True,
    timeout: float = 10,
    float_tolerance: float | dict[str, float] | None = None,
    sandbox_max_concurrent: int = 64,
    sandbox_retry_backoff: float = 0.5,
    **kwargs: Any,
) -> dict[str, Any]:
    """Pass fraction of the test cases (``continuous``) or 1.0 only if all pass.

    ``float_tolerance`` is the tolerance for real-number tokens: a number, or
    ``{data_source or glob: number}`` (``reward_model.sandbox_fusion.float_tolerance``);
    default 1e-6. ``sandbox_max_concurrent`` caps requests in flight to the
    sandbox (shared by every sample of this process), ``sandbox_retry_backoff``
    is the client's retry back-off base in seconds.

    Returns ``{"score", "passed", "total", "verdicts"}``; ``verdicts`` holds one
    of ``passed``, ``wrong_answer``, ``runtime_error``, ``timeout``,
    ``memory_limit``, ``compile_error``, ``no_result`` per case. Raises
    ``ScorerInfrastructureError`` when the sandbox cannot be reached, so the
    sample counts as unavailable rather than wrong.
    """
    spec = parse_test_cases(ground_truth, data_source)
    program = extract_program(solution_str, spec.language)
    if program is None:
        return _summary(["no_code"] * len(spec.inputs), continuous)
    if not sandbox_fusion_url:
        raise ScorerInfrastructureError(
            f"data_source '{data_source}' needs a code sandbox: set reward_model.sandbox_fusion.url "
            "(e.g. start one with `rewardsmith sandbox serve`)"
        )
    token = secrets.token_hex(16)
    source, stdins = spec.program_and_stdins(program, token)
    try:
        client = shared_client(sandbox_fusion_url, max_concurrency=sandbox_max_concurrent,
                               backoff_s=sandbox_retry_backoff)
        reply = client.run_batch(
            source, stdins, spec.language, compile_timeout=timeout, run_timeout=timeout,
            memory_limit_mb=memory_limit_mb,
        )
    except SandboxUnavailable as exc:
        raise ScorerInfrastructureError(str(exc)) from exc
    except SandboxRequestError as exc:
        raise ScorerInfrastructureError(f"the sandbox rejected the request: {exc}") from exc
    if reply.get("status") == "SandboxError":
        raise ScorerInfrastructureError(f"sandbox error: {reply.get('message')}")
    results = reply.get("results") or []
    if len(results) != len(stdins):
        compile_result = reply.get("compile_result") or {}
        if compile_result.get("return_code") != 0 or compile_result.get("status") != "Finished":
            return _summary(["compile_error"] * len(stdins), continuous)
        raise ScorerInfrastructureError(f"sandbox returned {len(results)} results for {len(stdins)} cases")
    tolerance = tolerance_for(data_source, float_tolerance)
    verdicts = [spec.judge(i, result, token, tolerance) for i, result in enumerate(results)]
    return _summary(verdicts, continuous)


# The scoring plan refuses, at start-up, to route a row here without a sandbox URL.
compute_score.requires = ("sandbox_fusion_url",)


def _summary(verdicts: list[str], continuous: bool) -> dict[str, Any]:
    passed = sum(v == "passed" for v in verdicts)
    total = len(verdicts)
    if continuous:
        score = passed / total if total else 0.0
    else:
        score = 1.0 if total and passed == total else 0.0
    return {"score": score, "passed": passed, "total": total, "verdicts": verdicts}


def extract_program(response: str, language: str = "python") -> Optional[str]:
    """The last fenced block tagged with ``language``, else the last fenced block, else None."""
    blocks = _FENCE.findall(response)
    tags = _LANGUAGE_TAGS.get(language, (language,))
    tagged = [body for tag, body in blocks if tag.lower() in tags]
    if tagged:
        return tagged[-1]
    untagged = [body for tag, body in blocks if not tag]
    if untagged:
        return untagged[-1]
    return blocks[-1][1] if blocks else None


# -- test cases ------------------------------------------------------------------

_PRELUDE = """\
import sys as _rk_sys
_rk_payload = _rk_sys.stdin.read()
import collections, functools, heapq, itertools, math, bisect, re, string
from collections import *
from typing import *
"""

_CALL_EPILOGUE = """
import json as _rk_json
_rk_token, _rk_case = _rk_payload.split("\\n", 1)
def _rk_plain(value):
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, tuple):
        return list(value)
    return repr(value)
_rk_name = {fn_name!r}
_rk_fn = globals()[_rk_name] if _rk_name in globals() else getattr(globals()["Solution"](), _rk_name)
_rk_result = _rk_fn(*_rk_json.loads(_rk_case))
print("\\n" + _rk_token + _rk_json.dumps(_rk_result, default=_rk_plain), flush=True)
"""

_ASSERT_EPILOGUE = """
_rk_token, _rk_case = _rk_payload.split("\\n", 1)
exec(compile(_rk_case, "<test case>", "exec"), globals())
print("\\n" + _rk_token, flush=True)
"""


@dataclass
class TestSpec:
    """Parsed test cases of one problem."""

    kind: str  # "stdio" | "call" | "assert"
    inputs: list[Any]
    outputs: list[Any]
    fn_name: Optional[str] = None
    language: str = "python"
    asserts: list[str] = field(default_factory=list)

    def program_and_stdins(self, program: str, token: str) -> tuple[str, list[str]]:
        """The program to run once per case, and each case's stdin."""
        if self.kind == "stdio":
            return program, [_as_text(x) for x in self.inputs]
        if self.kind == "call":
            source = _PRELUDE + program + "\n" + _CALL_EPILOGUE.format(fn_name=self.fn_name)
            return source, [token + "\n" + json.dumps(_call_args(x)) for x in self.inputs]
        source = _PRELUDE + program + "\n" + _ASSERT_EPILOGUE
        return source, [token + "\n" + case for case in self.asserts]

    def judge(self, index: int, result: Optional[dict], token: str, tolerance: float = DEFAULT_TOLERANCE) -> str:
        """One case's verdict from its run result."""
        if not result:
            return "compile_error"
        verdict = result.get("verdict")
        if verdict is None:  # a plain SandboxFusion server: derive it
            if result.get("status") == "TimeLimitExceeded":
                verdict = "TimeLimitExceeded"
            else:
                verdict = "OK" if result.get("return_code") == 0 else "RuntimeError"
        if verdict != "OK":
            return _CASE_VERDICTS.get(verdict, "runtime_error")
        stdout = result.get("stdout") or ""
        if self.kind == "stdio":
            return "passed" if outputs_match(stdout, _as_text(self.outputs[index]), tolerance) else "wrong_answer"
        marked = [line[len(token):] for line in stdout.splitlines() if line.startswith(token)]
        if not marked:
            return "no_result"  # exited before the checks finished
        if self.kind == "assert":
            return "passed"
        try:
            actual = json.loads(marked[-1])
        except ValueError:
            return "wrong_answer"
        expected = self.outputs[index]
        wrapped = isinstance(expected, list) and len(expected) == 1 and values_match(actual, expected[0], tolerance)
        return "passed" if values_match(actual, expected, tolerance) or wrapped else "wrong_answer"


def parse_test_cases(ground_truth: Any, data_source: str = "?") -> TestSpec:
    """Read verl's code ground truth (dict or JSON string); raises ``ValueError`` naming the problem."""
    where = f"data_source '{data_source}': ground_truth"
    if isinstance(ground_truth, (str, bytes)):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError as exc:
            raise ValueError(f"{where} is not valid JSON ({exc})") from exc
    if isinstance(ground_truth, dict) and "input_output" in ground_truth:
        return parse_test_cases(ground_truth["input_output"], data_source)
    if not isinstance(ground_truth, dict):
        raise ValueError(f"{where} must be a dict of test cases, got {type(ground_truth).__name__}")
    language = ground_truth.get("language", "python")
    asserts = ground_truth.get("assert_case")
    if asserts is not None:
        if not isinstance(asserts, list) or not all(isinstance(a, str) for a in asserts) or not asserts:
            raise ValueError(f"{where}: 'assert_case' must be a non-empty list of strings")
        return TestSpec("assert", [None] * len(asserts), [None] * len(asserts), language=language, asserts=asserts)
    if "inputs" not in ground_truth or "outputs" not in ground_truth:
        raise ValueError(f"{where} needs 'inputs' and 'outputs' (or 'assert_case'); got keys {sorted(ground_truth)}")
    inputs, outputs = ground_truth["inputs"], ground_truth["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs) or not inputs:
        raise ValueError(f"{where}: 'inputs' and 'outputs' must be non-empty lists of equal length")
    fn_name = ground_truth.get("fn_name")
    if fn_name:
        if language != "python":
            raise ValueError(f"{where}: 'fn_name' cases are Python-only, got language {language!r}")
        return TestSpec("call", inputs, outputs, fn_name=str(fn_name))
    return TestSpec("stdio", inputs, outputs, language=language)


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value) + "\n"
    return "" if value is None else str(value)


def _call_args(value: Any) -> list:
    if isinstance(value, list):
        return value
    if isinstance(value, str):  # one JSON value per line (verl/PRIME style)
        return [json.loads(line) for line in value.splitlines() if line.strip()]
    return [value]


_INTEGER = re.compile(r"[+-]?\d+")
_REAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def tolerance_for(data_source: str, setting: float | dict[str, float] | None) -> float:
    """The tolerance for ``data_source``: a number applies everywhere; in a dict an exact
    key wins over a glob, the longest glob over shorter ones; default 1e-6."""
    if setting is None:
        return DEFAULT_TOLERANCE
    if not isinstance(setting, dict):
        return float(setting)
    if data_source in setting:
        return float(setting[data_source])
    globs = [k for k in setting if fnmatch.fnmatchcase(data_source, k)]
    return float(setting[max(globs, key=len)]) if globs else DEFAULT_TOLERANCE


def tokens_match(actual: str, expected: str, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """One output token against the expected one.

    Equal text matches. An expected integer needs an actual number of exactly
    that value (``-0`` = ``0``, ``1e9`` = ``1000000000``, never ``2000000001``
    for ``2000000000``). An expected real number (a fractional part or an
    exponent) matches an actual number within ``tolerance``, absolute or
    relative. Anything else must be equal text.
    """
    if actual == expected:
        return True
    if not _REAL.fullmatch(actual) or not _REAL.fullmatch(expected):
        return False
    if _INTEGER.fullmatch(expected):
        try:
            return Decimal(actual) == Decimal(expected)
        except InvalidOperation:
            return False
    return math.isclose(float(actual), float(expected), rel_tol=tolerance, abs_tol=tolerance)


def outputs_match(actual: str, expected: str, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """Token-wise equality of whitespace-separated outputs (see :func:`tokens_match`)."""
    got, want = actual.split(), expected.split()
    return len(got) == len(want) and all(tokens_match(a, b, tolerance) for a, b in zip(got, want))


def values_match(actual: Any, expected: Any, tolerance: float = DEFAULT_TOLERANCE) -> bool:
    """Structural equality (tuples compare as lists); integers exactly, floats within ``tolerance``."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return actual == expected
    if isinstance(actual, (int, float)) and isinstance(expected, (int, float)):
        if isinstance(expected, int):
            return actual == expected
        return math.isclose(actual, expected, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(actual, list) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(values_match(a, e, tolerance) for a, e in zip(actual, expected))
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(values_match(actual[k], expected[k], tolerance) for k in actual)
    return actual == expected
