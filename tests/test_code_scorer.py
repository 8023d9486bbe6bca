"""The code scorer (``sandbox_code``) against a real sandbox server on 127.0.0.1."""
from __future__ import annotations

import json
import shutil

import pytest

from rewardsmith.common.errors import ScorerInfrastructureError
from rewardsmith.reward_fns.code import (compute_score, extract_program, outputs_match, parse_test_cases, tolerance_for,
                                        values_match)
from rewardsmith.sandbox.testing import free_port, isolation_unavailable, running_server

NO_ISOLATION = isolation_unavailable()


@pytest.fixture(scope="module")
def url():
    if NO_ISOLATION:
        pytest.skip(NO_ISOLATION)
    with running_server("--workers", "3") as base:
        yield base + "/run_code"  # verl-style URL, as in reward_model.sandbox_fusion.url


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is my solution.\n```{tag}\n{code}\n```\nHope it helps."


ADD = {"inputs": ["1 2\n", "10 20\n", "-5 5\n"], "outputs": ["3\n", "30\n", "0\n"]}


def score(url, response, ground_truth, source="codecontests", **kw):
    return compute_score(source, response, ground_truth, sandbox_fusion_url=url, **kw)


def test_stdio_all_pass_with_json_string_ground_truth(url):
    result = score(url, fenced("a, b = map(int, input().split())\nprint(a + b)"), json.dumps(ADD))
    assert result == {"score": 1.0, "passed": 3, "total": 3, "verdicts": ["passed"] * 3}


def test_partial_credit_continuous_or_all_or_nothing(url):
    wrong_on_negative = fenced("a, b = map(int, input().split())\nprint(abs(a) + abs(b))")
    assert score(url, wrong_on_negative, ADD)["score"] == pytest.approx(2 / 3)
    strict = score(url, wrong_on_negative, ADD, continuous=False)
    assert strict["score"] == 0.0 and strict["verdicts"] == ["passed", "passed", "wrong_answer"]


def test_runtime_error_timeout_and_memory_verdicts(url):
    gt = {"inputs": ["1\n", "2\n", "3\n"], "outputs": ["1\n", "2\n", "3\n"]}
    program = fenced("n = int(input())\nif n == 1: raise ValueError\n"
                     "if n == 2:\n    while True: pass\nx = bytearray(2 * 1024 ** 3)\nprint(n)")
    result = score(url, program, gt, timeout=1, memory_limit_mb=256)
    assert result["verdicts"] == ["runtime_error", "timeout", "memory_limit"]
    assert result["score"] == 0.0


def test_whitespace_and_float_tolerance(url):
    gt = {"inputs": [""], "outputs": ["0.3333333 2\n"]}
    assert score(url, fenced("print(1/3)\nprint(2)"), gt)["score"] == 1.0


def test_call_based_function_and_solution_class(url):
    gt = {"fn_name": "twoSum", "inputs": [[[2, 7, 11, 15], 9], [[3, 2, 4], 6]], "outputs": [[0, 1], [1, 2]]}
    leetcode = fenced(
        "class Solution:\n"
        "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n"
        "        for i, n in enumerate(nums):\n"
        "            if target - n in seen:\n"
        "                return [seen[target - n], i]\n"
        "            seen[n] = i\n"
    )
    assert score(url, leetcode, gt, source="apps")["verdicts"] == ["passed", "passed"]
    apps_style = {"fn_name": "double", "inputs": [[2], [5]], "outputs": [[4], [11]]}  # APPS wraps outputs
    result = score(url, fenced("def double(x):\n    print('debug output is fine')\n    return 2 * x"), apps_style,
                   source="taco")
    assert result["verdicts"] == ["passed", "wrong_answer"]


def test_call_based_inputs_as_json_lines(url):
    gt = {"fn_name": "join", "inputs": ['["a", "b"]\n"-"'], "outputs": ["a-b"]}
    assert score(url, fenced("def join(parts, sep):\n    return sep.join(parts)"), gt)["score"] == 1.0


def test_assert_cases(url):
    gt = {"assert_case": ["assert square(3) == 9", "assert square(-2) == 4", "assert square(0) == 1"]}
    result = score(url, fenced("def square(x):\n    return x * x"), gt)
    assert result["verdicts"] == ["passed", "passed", "runtime_error"]


def test_hack_exit_before_asserts_scores_zero(url):
    gt = {"assert_case": ["assert solve() == 42"]}
    for exit_call in ("import sys\nsys.exit(0)", "import os\nos._exit(0)", "exit()", "raise SystemExit"):
        result = score(url, fenced(f"def solve():\n    return 0\n{exit_call}"), gt)
        assert result["score"] == 0.0, exit_call
        assert result["verdicts"] == ["no_result"], exit_call


def test_hack_raising_function_with_empty_expected_output_scores_zero(url):
    for empty in ("", None, []):
        gt = {"fn_name": "solve", "inputs": [[1]], "outputs": [empty]}
        result = score(url, fenced("def solve(x):\n    raise RuntimeError('no idea')"), gt)
        assert result["score"] == 0.0 and result["verdicts"] == ["runtime_error"], empty


def test_apps_input_output_wrapper(url):
    gt = {"input_output": json.dumps({"inputs": ["4\n"], "outputs": ["16\n"]})}
    assert score(url, fenced("print(int(input()) ** 2)"), gt, source="apps")["score"] == 1.0


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed (Debian package g++)")
def test_cpp_solutions(url):
    gt = {"language": "cpp", **ADD}
    code = "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}"
    assert score(url, fenced(code, "cpp"), gt)["score"] == 1.0
    broken = score(url, fenced("int main( {", "cpp"), gt)
    assert broken["verdicts"] == ["compile_error"] * 3 and broken["score"] == 0.0


def test_no_code_block_scores_zero_without_calling_the_sandbox():
    result = compute_score("codecontests", "I would use a loop.", ADD, sandbox_fusion_url="http://127.0.0.1:1")
    assert result["score"] == 0.0 and result["verdicts"] == ["no_code"] * 3


def test_unreachable_sandbox_is_an_infrastructure_error_not_a_wrong_answer():
    dead = f"http://127.0.0.1:{free_port()}/run_code"
    with pytest.raises(ScorerInfrastructureError, match="cannot be reached: ConnectionError: Connection refused"):
        compute_score("codecontests", fenced("print(3)"), ADD, sandbox_fusion_url=dead)


def test_missing_url_is_an_infrastructure_error_naming_the_config_key():
    with pytest.raises(ScorerInfrastructureError, match="reward_model.sandbox_fusion.url"):
        compute_score("taco", fenced("print(3)"), ADD)


@pytest.mark.parametrize(
    "ground_truth, problem",
    [
        ("{not json", "not valid JSON"),
        ({"inputs": ["1"]}, "needs 'inputs' and 'outputs'"),
        ({"inputs": ["1"], "outputs": []}, "equal length"),
        ({"assert_case": "assert True"}, "assert_case"),
        (["1", "2"], "must be a dict"),
    ],
)
def test_bad_ground_truth_names_the_data_source(ground_truth, problem):
    with pytest.raises(ValueError, match=f"data_source 'codeforces'.*{problem}"):
        parse_test_cases(ground_truth, "codeforces")


def test_extract_program_prefers_the_last_python_fence():
    response = "```python\nfirst()\n```\ntext\n```python\nsecond()\n```\n```\noutput sample\n```"
    assert extract_program(response) == "second()\n"
    assert extract_program("```\nonly_generic()\n```") == "only_generic()\n"
    assert extract_program("```cpp\nint main(){}\n```", "cpp") == "int main(){}\n"
    assert extract_program("no fences here") is None
    assert extract_program("```js\nconsole.log(1)\n```\n```\nsample\n```", "nodejs") == "console.log(1)\n"


def test_outputs_match_rules():
    assert outputs_match("1 2\n3\n", "1 2 3")
    assert outputs_match("0.50000001\n", "0.5")
    assert not outputs_match("1 2", "1 2 3")
    assert not outputs_match("YES", "NO")


@pytest.mark.parametrize("actual, expected, ok", [
    ("2000000001", "2000000000", False),   # integers compare exactly, not within 1e-6 relative
    ("2000000000", "2000000000", True),
    ("99999999999999999999", "99999999999999999998", False),
    ("-0", "0", True),
    ("0", "-0", True),
    ("007", "7", True),
    ("1e9", "1000000000", True),           # the same value
    ("2.000000001e9", "2000000000", False),
    ("1000000000", "1e9", True),           # an expected real number: tolerance applies
    ("1.0000001e9", "1e9", True),
    ("1.1e9", "1e9", False),
    ("-0.0", "0.0", True),
    ("3.1415927", "3.14159265", True),
    ("3.1416", "3.14159265", False),
    ("1e-7", "0.0", True),
    ("7.0", "7", True),
    ("7.5", "7", False),
    ("nan", "0.5", False),
    ("inf", "inf", True),
    ("0x10", "16", False),
])
def test_number_tokens_at_the_edges(actual, expected, ok):
    assert outputs_match(actual, expected) is ok


def test_tolerance_is_configurable_per_data_source():
    assert tolerance_for("codeforces", None) == 1e-6
    setting = {"geometry/*": 1e-3, "geometry/exact": 1e-9, "*": 1e-5}
    assert tolerance_for("geometry/circles", setting) == 1e-3
    assert tolerance_for("geometry/exact", setting) == 1e-9
    assert tolerance_for("apps", setting) == 1e-5
    assert outputs_match("3.1416", "3.14159265", tolerance_for("geometry/circles", setting))
    assert not outputs_match("3.1416", "3.14159265", tolerance_for("geometry/exact", setting))


def test_call_based_values_compare_integers_exactly():
    assert not values_match(2000000001, 2000000000)
    assert values_match(2000000000.0, 2000000000)
    assert values_match([0.1 + 0.2], [0.3]) and not values_match([3], [2])
