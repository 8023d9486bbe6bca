"""verl's own sandbox client, unchanged, against our server.

verl is not a dependency: the test runs when it is importable (``pip install
--no-deps verl`` is enough) and loads only verl's stdlib-and-requests client
file, not the ``verl`` package and its GPU stack.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.sandbox.testing import isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()


def _verl_client():
    spec = importlib.util.find_spec("verl")  # locates the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "utils" / "reward_score" / "sandbox_fusion" / "utils.py"
    if not path.exists():
        return None
    module_spec = importlib.util.spec_from_file_location("verl_sandbox_fusion_utils", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


VERL = _verl_client()
pytestmark = [
    pytest.mark.skipif(VERL is None, reason="verl is not installed (pip install --no-deps verl)"),
    pytest.mark.skipif(NO_ISOLATION is not None, reason=str(NO_ISOLATION)),
]


@pytest.fixture(scope="module")
def url():
    with running_server("--workers", "3") as base:
        yield base + "/run_code"


def test_verl_check_correctness_stdin_cases(url):
    cases = {"inputs": ["1 2\n", "3 4\n", "5 5\n"], "outputs": ["3\n", "7\n", "11\n"]}
    results, metadata = VERL.check_correctness(url, cases, "print(sum(map(int, input().split())))", timeout=5)
    assert results == [True, True, False]
    assert [m["status"] for m in metadata] == ["success", "success", "wrong_answer"]


def test_verl_sees_runtime_errors_timeouts_and_compile_errors(url):
    cases = {"inputs": ["1\n", "2\n"], "outputs": ["1\n", "2\n"]}
    code = "n = int(input())\nif n == 1: raise ValueError\nwhile True: pass"
    results, metadata = VERL.check_correctness(url, cases, code, timeout=1)
    assert results == [-2, -3]  # verl's codes: runtime error, timeout
    cpp_results, _ = VERL.check_correctness(url, cases, "int main( {", timeout=5, language="cpp")
    assert cpp_results == [-4, -4]  # compile error


def test_verl_call_api_direct(url):
    reply, error = VERL.call_sandbox_api(url, "print(input())", "echo\n", 5, 5, 256)
    assert error is None
    assert reply["status"] == "Success" and reply["run_result"]["stdout"] == "echo\n"


def test_verl_call_based_wrapper(url):
    cases = {"fn_name": "add", "inputs": ["1\n2", "3\n4"], "outputs": ["3", "8"]}
    results, _ = VERL.check_correctness(url, cases, "def add(a, b):\n    return a + b", timeout=5)
    assert results == [True, False]


VERL_TEST_FILE = Path(__file__).parent / "data" / "verl" / "test_sandbox_fusion_on_cpu.py"


@pytest.mark.slow
def test_verls_own_client_test_file_in_order(tmp_path):
    """verl's own test file for its SandboxFusion client, whole and in order, against the server's defaults."""
    with running_server() as base:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
             "--rootdir", str(tmp_path), str(VERL_TEST_FILE)],
            env={**os.environ, "SANDBOX_FUSION_URL": base + "/run_code"}, cwd=tmp_path,
            capture_output=True, text=True, timeout=1500)
    failed = set(re.findall(r"^FAILED \S*::(\w+)", done.stdout, re.MULTILINE))
    # 100 concurrent 10-second CPU-bound loops need 1,000 s of CPU: on a 2-core host no server gives each its
    # 10 s of own time within verl's 30 s client timeout, so the ones it cannot start in time get 429 (an
    # API error to verl) instead of a timeout charged for other runs' load (docs/sandbox.md, the time limit).
    assert failed <= {"test_integration_concurrency_all_timeout"}, done.stdout[-6000:] + done.stderr[-2000:]
    assert re.search(r"\b1[45] passed", done.stdout) and "skipped" not in done.stdout, done.stdout[-2000:]
