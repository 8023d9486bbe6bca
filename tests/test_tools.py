"""Tools and interactions as plugins: hooks, verl's config files, built-ins, concurrent calls (docs/environments.md)."""
from __future__ import annotations

import asyncio
import importlib.util
import json
import textwrap
import time
from pathlib import Path

import pytest

from rewardsmith.common.errors import ConfigError
from rewardsmith.plugins.environments import load_interactions, load_tools
from rewardsmith.plugins.loader import get_registry, load_registry
from rewardsmith.reward_fns.interactions import BaseInteraction
from rewardsmith.reward_fns.tools import BaseTool, ToolCall, ToolResponse, ToolStats, call_tools
from rewardsmith.reward_fns.tools.calculator import CalculatorTool, evaluate, format_value
from rewardsmith.reward_fns.tools.errors import ToolInputError
from rewardsmith.sandbox.testing import free_port, isolation_unavailable, running_server

GSM8K_TOOL_CONFIG = """\
tools:
  - class_name: "verl.tools.gsm8k_tool.Gsm8kTool"
    config:
      type: native
    tool_schema:
      type: "function"
      function:
        name: "calc_gsm8k_reward"
        description: "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)"
        parameters:
          type: "object"
          properties:
            answer:
              type: "string"
              description: "The model's answer to the GSM8K math problem, must be a digits"
          required: ["answer"]
"""

GSM8K_INTERACTION_CONFIG = """\
interaction:
  - name: "gsm8k"
    class_name: "verl.interactions.gsm8k_interaction.Gsm8kInteraction"
    config: {}
"""


def run(coro):
    return asyncio.run(coro)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# -- the hooks and `rewardsmith plugins` ---------------------------------------------

def test_builtins_register_through_the_tool_and_interaction_hooks():
    registry = load_registry()
    by_name = {p.name: p for p in registry.plugins}
    assert by_name["rewardsmith.reward_fns.tools"].tools == ["calculator", "gsm8k", "code_interpreter", "search"]
    assert by_name["rewardsmith.reward_fns.interactions"].interactions == ["gsm8k"]
    assert issubclass(registry.tool("calculator"), BaseTool)
    assert issubclass(registry.interaction("gsm8k"), BaseInteraction)


def test_a_third_party_tool_is_listed_and_loads_from_a_config_by_its_name(installed_plugins, tmp_path, capsys):
    installed_plugins({"fake-tools": ("fakeplug_tools", '''
        from rewardsmith import hookimpl
        from rewardsmith.reward_fns.tools import BaseTool, ToolResponse, OpenAIFunctionToolSchema

        class Echo(BaseTool):
            async def execute(self, instance_id, parameters, **kwargs):
                return ToolResponse(text="echo:" + parameters["text"]), 0.5, {}

        @hookimpl
        def register_tools(register):
            register("echo", Echo)
    ''')})
    from rewardsmith.commands import plugins as plugins_command

    plugins_command.run(type("Args", (), {"json": True})())
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed["fakeplug_tools"]["tools"] == ["echo"]
    assert listed["rewardsmith.reward_fns.tools"]["tools"][0] == "calculator"
    config = write(tmp_path, "tools.yaml", """\
        tools:
          - class_name: echo
            config: {type: native}
            tool_schema: {type: function, function: {name: echo, description: repeats}}
    """)
    tools = load_tools(config, get_registry())
    [result] = run(call_tools(tools, [ToolCall("echo", {"text": "hi"})]))
    assert (result.response.text, result.reward, result.status) == ("echo:hi", 0.5, "ok")


# -- verl's config files ----------------------------------------------------------------

def test_verl_gsm8k_tool_config_loads_unchanged_and_scores_like_verl(tmp_path):
    tools = load_tools(write(tmp_path, "gsm8k_tool_config.yaml", GSM8K_TOOL_CONFIG))
    tool = tools["calc_gsm8k_reward"]
    assert type(tool).__module__ == "rewardsmith.reward_fns.tools.gsm8k"

    async def episode():
        instance_id, created = await tool.create(create_kwargs={"ground_truth": "72"})
        wrong = await tool.execute(instance_id, {"answer": "70"})
        right = await tool.execute(instance_id, {"answer": "72"})
        again = await tool.execute(instance_id, {"answer": "#### 72"})
        reward = await tool.calc_reward(instance_id)
        await tool.release(instance_id)
        return created, wrong, right, again, reward

    created, wrong, right, again, reward = run(episode())
    assert created.is_empty()
    assert (wrong[0].text, wrong[1]) == ("Current parsed answer='70' reward=0.0", -0.05)  # no improvement on 0.0
    assert (right[0].text, right[1]) == ("Current parsed answer='72' reward=1.0", 0.0)
    assert again[1] == -0.05 and reward == 1.0


def test_verl_gsm8k_interaction_config_loads_unchanged(tmp_path):
    interaction = load_interactions(write(tmp_path, "gsm8k_interaction_config.yaml", GSM8K_INTERACTION_CONFIG))["gsm8k"]
    assert interaction.name == "gsm8k"

    async def episode():
        instance_id = await interaction.start_interaction(ground_truth="18")
        first = await interaction.generate_response(instance_id, [{"role": "user", "content": "q"},
                                                                  {"role": "assistant", "content": "It is 17."}])
        second = await interaction.generate_response(instance_id, [{"role": "assistant", "content": "#### 18"}])
        score = await interaction.calculate_score(instance_id)
        await interaction.finalize_interaction(instance_id)
        return first, second, score

    first, second, score = run(episode())
    assert first == (False, "Your response is incorrect! You need to reflect on your answer and try again.", 0.0, {})
    assert second == (True, "Your response is correct!", 1.0, {})
    assert score == 1.0


def test_interaction_name_defaults_to_verls_rule(tmp_path):
    path = write(tmp_path, "i.yaml", """\
        interaction:
          - class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction
    """)
    assert list(load_interactions(path)) == ["gsm8k"]


@pytest.mark.parametrize("text, expected", [
    ("tools:\n  - config: {type: native}\n", "tools[0].class_name is missing"),
    ("tools:\n  - class_name: no_such_tool\n", "tools[0].class_name: unknown tool 'no_such_tool'; known: calculator, code_interpreter, gsm8k, search"),
    ("tools:\n  - class_name: nowhere.module.Tool\n", "tools[0].class_name: cannot import module 'nowhere.module'"),
    ("tools:\n  - class_name: json.NoSuchClass\n", "tools[0].class_name: module 'json' has no class 'NoSuchClass'"),
    ("tools:\n  - class_name: calculator\n    config: {type: mcp}\n", "tools[0].config.type: 'mcp' is not supported"),
    ("tools:\n  - class_name: calculator\n    tool_schema: {type: function}\n", "tools[0].tool_schema: not a valid"),
    ("tools:\n  - class_name: calculator\n    config: {precision: 3}\n", "unknown config key(s) 'precision'"),
    ("tools:\n  - class_name: verl.tools.sandbox_fusion_tools.SandboxFusionTool\n    config: {type: native}\n",
     "tools[0] (verl.tools.sandbox_fusion_tools.SandboxFusionTool): ValueError: code_interpreter: config.sandbox_fusion_url is not set"),
    ("tools:\n  - class_name: rewardsmith.reward_fns.tools.BaseTool\n",
     "tools[0] (rewardsmith.reward_fns.tools.BaseTool): ValueError: BaseTool: no tool_schema given and the class defines none"),
    ("tools:\n  - class_name: calculator\n  - class_name: calculator\n", "tools[1]: a second tool named 'calculator'"),
    ("tool:\n  - class_name: calculator\n", "expected a top-level 'tools:' list"),
    ("tools:\n  - class_name: search\n    config: {retrieval_service_url: '${oc.env:URL}'}\n",
     "tools[0].config.retrieval_service_url: OmegaConf interpolation '${oc.env:URL}' is not supported"),
])
def test_bad_tool_configs_name_the_file_entry_and_key(tmp_path, text, expected):
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(ConfigError) as err:
        load_tools(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_duplicate_interaction_names_are_refused(tmp_path):
    path = write(tmp_path, "i.yaml", GSM8K_INTERACTION_CONFIG + "  - name: gsm8k\n    class_name: gsm8k\n")
    with pytest.raises(ConfigError, match=r"interaction\[1\]\.name: duplicate interaction name 'gsm8k'"):
        load_interactions(path)


# -- a class written against verl's base classes ---------------------------------------------

VERL_USER_TOOL = '''
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse


class Doubler(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        return ToolResponse(text=str(2 * int(parameters["n"]))), 0.25, {"doubled": 1}
'''


def test_a_tool_written_against_verls_base_tool_runs_unchanged(tmp_path, monkeypatch):
    pytest.importorskip("verl.tools.base_tool")
    from verl.tools.schemas import OpenAIFunctionToolSchema as VerlSchema

    (tmp_path / "user_tools.py").write_text(VERL_USER_TOOL)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(tmp_path, "tools.yaml", """\
        tools:
          - class_name: user_tools.Doubler
            config: {type: native}
            tool_schema:
              type: function
              function:
                name: double
                description: doubles n
                parameters: {type: object, properties: {n: {type: integer}}, required: [n]}
    """)
    tool = load_tools(path)["double"]
    assert isinstance(tool.tool_schema, VerlSchema)  # verl's own schema class, as under verl
    [result] = run(call_tools({"double": tool}, [ToolCall("double", {"n": 21})]))
    assert (result.response.text, result.reward, result.metrics, result.status) == ("42", 0.25, {"doubled": 1}, "ok")


def test_the_same_tool_ports_by_changing_its_import(tmp_path, monkeypatch):
    (tmp_path / "ported_tools.py").write_text(VERL_USER_TOOL.replace(
        "from verl.tools.base_tool import BaseTool\nfrom verl.tools.schemas import ToolResponse",
        "from rewardsmith.reward_fns.tools import BaseTool, ToolResponse"))
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(tmp_path, "tools.yaml", """\
        tools:
          - class_name: ported_tools.Doubler
            tool_schema: {type: function, function: {name: double, description: doubles n}}
    """)
    [result] = run(call_tools(load_tools(path), [ToolCall("double", {"n": 4})]))
    assert (result.response.text, result.reward) == ("8", 0.25)


# -- the calculator ----------------------------------------------------------------------------

@pytest.mark.parametrize("expression, value", [
    ("1234 * 5678 - 9", "7006643"), ("0.1 + 0.2", "0.3"), ("(2 + 3) ** 3 / 5", "25"), ("-7 // 2", "-4"),
    ("17 % 5", "2"), ("2^10", "1024"), ("1 / 3", "0.333333333333"),
])
def test_calculator_evaluates_exactly(expression, value):
    assert format_value(evaluate(expression)) == value


@pytest.mark.parametrize("expression, why", [
    ("__import__('os').system('echo hi')", "only numbers"), ("x + 1", "only numbers"), ("1 / 0", "division by zero"),
    ("9 ** 9 ** 9", "exponent larger"), ("2 ** 0.5", "whole-number exponents"), ("1 +", "not an arithmetic"),
    ("(10 ** 200) * (10 ** 200) * (10 ** 200)", "more than 400 digits"), ("", "non-empty"),
])
def test_calculator_refuses_what_is_not_bounded_arithmetic(expression, why):
    with pytest.raises(ToolInputError, match=why):
        evaluate(expression)


def test_a_bad_expression_is_an_invalid_call_the_model_sees():
    stats = ToolStats()
    [result] = run(call_tools({"calculator": CalculatorTool()}, [ToolCall("calculator", {"expression": "open('x')"})],
                              stats=stats))
    assert result.status == "invalid" and result.response.text.startswith("Error when executing tool: only numbers")
    assert stats.summary()["calculator"]["invalid"] == 1


# -- running calls: concurrency, failures, timeouts --------------------------------------------

class Sleeper(BaseTool):
    """Records when each call ran; ``hang`` sleeps far past any timeout, ``fail`` raises."""

    def __init__(self, delay_s: float):
        super().__init__({}, None)
        self.delay_s = delay_s
        self.spans: list[tuple[float, float]] = []
        self.released: list[str] = []

    def get_openai_tool_schema(self):
        from rewardsmith.reward_fns.tools import OpenAIFunctionToolSchema

        return OpenAIFunctionToolSchema.model_validate({"type": "function", "function": {"name": "sleep", "description": "d"}})

    async def execute(self, instance_id, parameters, **kwargs):
        if parameters.get("fail"):
            raise RuntimeError("the tool broke")
        started = time.perf_counter()
        await asyncio.sleep(3600 if parameters.get("hang") else self.delay_s)
        self.spans.append((started, time.perf_counter()))
        return ToolResponse(text="slept"), 0.0, {}

    async def release(self, instance_id, **kwargs):
        self.released.append(instance_id)


def test_tool_calls_of_a_turn_run_concurrently_up_to_max_parallel_calls():
    tool = Sleeper(0.3)
    stats = ToolStats()
    calls = [ToolCall("sleep", {}) for _ in range(6)]
    started = time.perf_counter()
    results = run(call_tools({"sleep": tool}, calls, max_parallel_calls=4, stats=stats))
    elapsed = time.perf_counter() - started
    assert [r.status for r in results] == ["ok"] * 4  # verl runs the first max_parallel_calls calls
    assert elapsed < 0.3 * 2, f"4 calls of 0.3 s took {elapsed:.2f} s: they did not overlap"
    assert max(s for s, _ in tool.spans) < min(e for _, e in tool.spans)  # every call started before any ended
    assert stats.summary()["sleep"]["dropped"] == 2 and len(tool.released) == 4


def test_a_failing_a_hanging_and_an_unknown_tool_become_counted_error_results():
    tool = Sleeper(0.01)
    stats = ToolStats()
    calls = [ToolCall("sleep", {"fail": True}), ToolCall("sleep", {"hang": True}), ToolCall("sleep", {}),
             ToolCall("nope", {})]
    started = time.perf_counter()
    results = run(call_tools({"sleep": tool}, calls, max_parallel_calls=4, timeout_s=0.5, stats=stats))
    assert time.perf_counter() - started < 2
    assert [r.status for r in results] == ["failed", "timeout", "ok", "unknown_tool"]
    assert results[0].response.text == "Error when executing tool: RuntimeError: the tool broke"
    assert "timed out after 0.5 s" in results[1].response.text
    summary = stats.summary()
    counts = {k: summary["sleep"][k] for k in ("calls", "failures", "failed", "timeout")}
    assert counts == {"calls": 3, "failures": 2, "failed": 1, "timeout": 1}
    assert summary["nope"]["unknown_tool"] == 1
    assert len(tool.released) == 3  # the hanging call's instance is released too


# -- the search tool against a real retrieval server --------------------------------------------

_spec = importlib.util.spec_from_file_location(
    "retrieval_server", Path(__file__).resolve().parents[1] / "benchmarks" / "retrieval_server.py")
retrieval_server = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(retrieval_server)


@pytest.fixture
def retrieval_url():
    with retrieval_server.serving() as url:
        yield url


def search_config(tmp_path, url):
    return write(tmp_path, "search_tool_config.yaml", f"""\
        tools:
          - class_name: verl.tools.search_tool.SearchTool
            config:
              retrieval_service_url: {url}
              num_workers: 120
              rate_limit: 120
              timeout: 5
              topk: 2
              type: native
            tool_schema:
              type: function
              function:
                name: search
                description: Searches for relevant information based on the given query.
                parameters:
                  type: object
                  properties:
                    query_list:
                      type: array
                      item:
                        type: string
                      description: A list of fully-formed semantic queries.
                  required: [query_list]
    """)


def test_search_tool_retrieves_from_a_real_retrieval_server(tmp_path, retrieval_url):
    tools = load_tools(search_config(tmp_path, retrieval_url))
    [result] = run(call_tools(tools, [ToolCall("search", {"query_list": ["capital of France", "plants light"]})]))
    assert result.status == "ok", result.error
    text = json.loads(result.response.text)["result"]
    first, second = text.split("\n---\n")
    assert first.startswith("Doc 1(Title: Paris) Paris is the capital of France.\nDoc 2(Title: Berlin)")
    assert second.startswith("Doc 1(Title: Photosynthesis) Plants turn light into chemical energy.")
    assert result.metrics == {"query_count": 2, "status": "success", "total_results": 4}


def test_an_unreachable_retrieval_server_is_an_unavailable_call_not_a_crash(tmp_path):
    tools = load_tools(search_config(tmp_path, f"http://127.0.0.1:{free_port()}/retrieve"))
    stats = ToolStats()
    [result] = run(call_tools(tools, [ToolCall("search", {"query_list": ["x"]})], stats=stats))
    assert result.status == "unavailable" and "retrieval server" in result.error
    assert stats.summary()["search"]["unavailable"] == 1


# -- the code interpreter on `rewardsmith sandbox serve` ------------------------------------------

def sandbox_config(tmp_path, url):
    return write(tmp_path, "sandbox_fusion_tool_config.yaml", f"""\
        tools:
          - class_name: "verl.tools.sandbox_fusion_tools.SandboxFusionTool"
            config:
              sandbox_fusion_url: "{url}"
              num_workers: 10
              enable_global_rate_limit: true
              rate_limit: 10
              default_timeout: 30
              default_language: "python"
              memory_limit_mb: 1024
              retry_backoff: 0.01
              type: native
            tool_schema:
              type: "function"
              function:
                name: "code_interpreter"
                description: "A tool for executing code."
                parameters:
                  type: "object"
                  properties:
                    code: {{type: "string", description: "The code to execute."}}
                  required: ["code"]
    """)


def test_code_interpreter_runs_code_on_the_rewardsmith_sandbox(tmp_path):
    if isolation_unavailable():
        pytest.skip(isolation_unavailable())
    with running_server("--workers", "2") as url:
        tools = load_tools(sandbox_config(tmp_path, f"{url}/run_code"))
        results = run(call_tools(tools, [
            ToolCall("code_interpreter", {"code": "print(sum(range(101)))"}),
            ToolCall("code_interpreter", {"code": "import time; time.sleep(30)", "timeout": 1}),
        ], max_parallel_calls=2))
    assert [r.status for r in results] == ["ok", "ok"]
    assert results[0].response.text == "5050\n" and results[0].reward is None
    assert results[1].response.text == "no stdout here"  # verl's answer for a run that did not finish


def test_an_unreachable_sandbox_is_an_unavailable_call(tmp_path):
    tools = load_tools(sandbox_config(tmp_path, f"http://127.0.0.1:{free_port()}/run_code"))
    stats = ToolStats()
    [result] = run(call_tools(tools, [ToolCall("code_interpreter", {"code": "print(1)"})], stats=stats))
    assert result.status == "unavailable" and "cannot be reached" in result.error
    assert stats.summary()["code_interpreter"]["failures"] == 1


def test_the_docs_example_prints_what_the_docs_say(tmp_path):
    import re
    import subprocess
    import sys
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "environments.md").read_text()
    code, output = re.search(r"## Running tool calls.*?```python\n(.*?)```\n\nOutput:\n\n```\n(.*?)```", doc, re.S).groups()
    script = tmp_path / "example.py"
    script.write_text(code)
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == output


@pytest.mark.parametrize("config, expected", [
    ({}, 10), ({"rate_limit": 3, "num_workers": 8}, 3), ({"rate_limit": 3, "num_workers": 8, "enable_global_rate_limit": False}, 8),
])
def test_code_interpreter_caps_requests_in_flight_as_verls_keys_say(config, expected):
    from rewardsmith.reward_fns.tools.code_interpreter import CodeInterpreterTool

    tool = CodeInterpreterTool({"sandbox_fusion_url": f"http://127.0.0.1:{free_port()}/run_code", **config})
    assert tool.client.max_concurrency == expected
    assert tool._pool._max_workers == config.get("num_workers", 10)


def test_a_users_interaction_class_loads_by_its_dotted_name(tmp_path, monkeypatch):
    (tmp_path / "user_interactions.py").write_text(textwrap.dedent('''
        from rewardsmith.reward_fns.interactions import BaseInteraction

        class Counter(BaseInteraction):
            async def generate_response(self, instance_id, messages, **kwargs):
                done = len(messages) >= self.config["turns"]
                return done, f"turn {len(messages)}", float(done), {}
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(tmp_path, "i.yaml", """\
        interaction:
          - class_name: user_interactions.Counter
            config: {turns: 2}
    """)
    interaction = load_interactions(path)["counter"]  # verl's default name: the class name, lower-cased
    assert interaction.config == {"turns": 2, "name": "counter"}

    async def episode():
        instance_id = await interaction.start_interaction()
        return [await interaction.generate_response(instance_id, [{}] * n) for n in (1, 2)]

    assert run(episode()) == [(False, "turn 1", 0.0, {}), (True, "turn 2", 1.0, {})]
