"""`rewardsmith validate`, the `rewardsmith.testing` pytest plugin and `rewardsmith new-plugin`."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.cli import main
from rewardsmith.commands.new_plugin import write_plugin
from rewardsmith.common.rows import write_rows
from rewardsmith.testing import assert_valid_scorer
from rewardsmith.validate import Case, render, validate, validate_scorer

# One scorer per way of breaking the contract; `good` keeps it.
SCORERS = '''
import os, random, time

SALT = random.random()  # differs in every process


def _exact(solution_str, ground_truth):
    return 1.0 if solution_str.strip().endswith(str(ground_truth)) else 0.0


def good(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if not isinstance(solution_str, str) or not isinstance(ground_truth, str):
        raise TypeError("good: strings only")
    return _exact(solution_str, ground_truth)


def constant(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 0.5


def noisy(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return _exact(solution_str, ground_truth) * 0.5 + random.random() * 0.5


def per_process(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return _exact(solution_str, ground_truth) * 0.9 + SALT * 0.1


def too_big(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 2.0 * _exact(solution_str, ground_truth)
too_big.score_range = (0.0, 1.0)


def slow_on_long(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    if len(solution_str) > 50_000:
        time.sleep(30)
    return _exact(solution_str, ground_truth)


def careless(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return _exact(solution_str.strip(), ground_truth.strip())


def two_args(solution, truth):
    return 1.0


def scaled(data_source, solution_str, ground_truth, extra_info=None, scale=None, **kwargs):
    return scale * _exact(solution_str, ground_truth)


def nan_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return float("nan")


def stringy(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return "1.0"


def hangs(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    time.sleep(60)
'''

CASES = [Case("toy", "42", "so the answer is 42"), Case("toy", "Paris", "It is Paris")]


@pytest.fixture(scope="module")
def scorers(tmp_path_factory):
    """The scorer of SCORERS named ``name``, carrying the file reference worker processes re-import it by."""
    from rewardsmith.common.function_refs import FILE_PREFIX, FunctionRef, load_file_module

    path = str(tmp_path_factory.mktemp("scorers") / "scorers.py")
    Path(path).write_text(SCORERS)

    def get(name):
        fn = getattr(load_file_module(path), name)
        fn.__rewardsmith_ref__ = FunctionRef(FILE_PREFIX + path, name)
        return fn

    return get


def verdicts(report):
    return {c.name: c.ok for c in report.checks}


def failed(report):
    return {c.name for c in report.failures()}


def test_a_good_scorer_passes_every_check(scorers):
    report = validate_scorer(scorers("good"), cases=CASES, score_range=(0.0, 1.0))
    assert report.ok, report.to_dict()
    assert set(verdicts(report)) == {"signature", "picklable", "survives odd inputs", "None inputs", "finite and in range",
                                     "gold scores max, empty scores min", "deterministic across calls",
                                     "deterministic across processes"}


@pytest.mark.parametrize("name, check", [
    ("constant", "gold scores max, empty scores min"),
    ("noisy", "deterministic across calls"),
    ("per_process", "deterministic across processes"),
    ("too_big", "finite and in range"),
    ("two_args", "signature"),
])
def test_each_broken_scorer_fails_its_check(scorers, name, check):
    report = validate_scorer(scorers(name), cases=CASES, timeout=5)
    assert not report.ok and check in failed(report), report.to_dict()


def test_a_hang_is_cut_at_the_timeout(scorers):
    report = validate_scorer(scorers("slow_on_long"), cases=CASES[:1], timeout=1)
    assert failed(report) == {"survives odd inputs"}
    assert "very long" in next(c.detail for c in report.checks if c.name == "survives odd inputs")


@pytest.mark.parametrize("name, says", [("nan_score", "non-finite score (nan)"), ("stringy", "returned str '1.0'")])
def test_a_score_that_is_no_finite_number_fails_finite_and_in_range(scorers, name, says):
    report = validate_scorer(scorers(name), cases=CASES[:1], timeout=5)
    check = next(c for c in report.checks if c.name == "finite and in range")
    assert not check.ok and not check.skipped and says in check.detail, report.to_dict()


def test_a_scorer_that_always_hangs_passes_nothing_but_its_signature(scorers):
    """Every probe hangs: no check that needs a probe's answer passes, and each kind of probe
    costs one timeout, not one per probe (two cases: 14 probes, 3 timeouts)."""
    lines = []
    report = validate_scorer(scorers("hangs"), cases=CASES, timeout=1, progress=lines.append)
    marks = {c.name: ("PASS" if c.ok else "SKIP" if c.skipped else "FAIL") for c in report.checks}
    assert marks == {"signature": "PASS", "picklable": "SKIP", "survives odd inputs": "FAIL", "None inputs": "FAIL",
                     "finite and in range": "SKIP", "gold scores max, empty scores min": "FAIL",
                     "deterministic across calls": "SKIP", "deterministic across processes": "SKIP"}, report.to_dict()
    assert not report.ok
    assert [line for line in lines if "timed out" in line] == [
        "validate hangs: case 0 probe 'gold' timed out after 1s: the other 1 gold probe(s) are not run",
        "validate hangs: case 0 probe 'empty' timed out after 1s: the other 7 odd inputs probe(s) are not run",
        "validate hangs: case 0 probe 'None response' timed out after 1s: the other 3 None inputs probe(s) are not run"]
    assert "SKIP  deterministic across calls: no probe scored or abstained" in render([report])


def test_careless_none_handling_is_a_warning(scorers):
    report = validate_scorer(scorers("careless"), cases=CASES[:1])
    assert report.ok  # the manager would count failed samples, not crash
    none = next(c for c in report.checks if c.name == "None inputs")
    assert not none.ok and none.level == "warn" and "AttributeError" in none.detail


def test_a_closure_cannot_travel_to_worker_processes():
    def local(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
        return 1.0

    assert failed(validate_scorer(local, cases=CASES)) == {"picklable"}


def test_without_cases_it_says_where_to_get_them(scorers):
    report = validate_scorer(scorers("good"))
    assert failed(report) == {"cases"} and "--rows" in report.checks[-1].detail


@pytest.mark.parametrize("name", ["gsm8k", "math_dapo", "math_answer"])
def test_builtin_scorers_pass(name):
    (report,) = validate(name)
    assert report.ok, report.to_dict()


def test_cli_rows_json_and_exit_status(scorers, tmp_path, capsys):
    path = tmp_path / "scorers.py"
    path.write_text(SCORERS)
    rows = tmp_path / "gold.jsonl"
    write_rows(rows, [{"data_source": "toy", "prompt": "q", "reward_model": {"ground_truth": "7"}, "response": "it is 7"}])
    assert main(["validate", f"{path}:good", "--rows", str(rows), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["target"] == f"{path}:good"
    assert main(["validate", f"{path}:constant", "--rows", str(rows)]) == 1
    assert "FAIL  gold scores max, empty scores min" in capsys.readouterr().out
    assert main(["validate", "no_such_scorer"]) == 2
    assert "no_such_scorer" in capsys.readouterr().err


def test_cli_prints_a_progress_line_per_stage_on_stderr(tmp_path, capsys):
    path = tmp_path / "scorers.py"
    path.write_text(SCORERS)
    rows = tmp_path / "gold.jsonl"
    write_rows(rows, [{"data_source": "toy", "prompt": "q", "reward_model": {"ground_truth": "7"}, "response": "it is 7"}])
    assert main(["validate", f"{path}:hangs", "--rows", str(rows), "--timeout", "1", "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["ok"] is False  # stdout stays the report alone
    label = f"validate {path}:hangs"
    assert err.splitlines() == [
        f"{label}: probing gold on 1 case(s), 1s each",
        f"{label}: case 0 probe 'gold' timed out after 1s",
        f"{label}: probing odd inputs (empty, unrelated, non-ASCII, very long) on 1 case(s), 1s each",
        f"{label}: case 0 probe 'empty' timed out after 1s: the other 3 odd inputs probe(s) are not run",
        f"{label}: probing None inputs (None response, None ground truth) on 1 case(s), 1s each",
        f"{label}: case 0 probe 'None response' timed out after 1s: the other 1 None inputs probe(s) are not run"]


def test_assert_valid_scorer_raises_with_the_report(scorers):
    assert assert_valid_scorer(scorers("good"), cases=CASES)[0].ok
    with pytest.raises(AssertionError, match="deterministic across calls"):
        assert_valid_scorer(scorers("noisy"), cases=CASES)


def test_new_plugin_passes_validate_and_its_own_tests(tmp_path, capsys):
    assert main(["new-plugin", "my-reward", "--dir", str(tmp_path / "my-reward")]) == 0
    package = tmp_path / "my-reward"
    assert {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()} == {
        "pyproject.toml", "my_reward/__init__.py", "tests/conftest.py", "tests/test_scorer.py", "README.md"}
    assert main(["validate", str(package / "my_reward" / "__init__.py")]) == 0
    assert "gold scores max, empty scores min: on 2 case(s)" in capsys.readouterr().out
    # The template's own tests, through the rewardsmith.testing fixture.
    env = {**os.environ, "PYTHONPATH": str(package)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=package, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_new_plugin_refuses_bad_names_and_full_directories(tmp_path):
    with pytest.raises(ValueError, match="letters"):
        write_plugin("9lives", tmp_path / "a")
    with pytest.raises(ValueError, match="keyword"):
        write_plugin("class", tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        write_plugin("fine", tmp_path / "c")


@pytest.mark.slow
def test_installed_template_plugin_is_found_and_validated_by_name(tmp_path):
    """pip-install the generated package (into a target folder, leaving the venv alone) and
    validate it through its entry point, as a user would after `pip install`."""
    write_plugin("my-reward", tmp_path / "src")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--quiet",
                    "--target", str(target), str(tmp_path / "src")], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target)}
    cli = [sys.executable, "-m", "rewardsmith"]
    listed = subprocess.run([*cli, "plugins"], env=env, capture_output=True, text=True, timeout=120)
    assert "my_reward" in listed.stdout and "my-reward 0.1.0" in listed.stdout, listed.stdout + listed.stderr
    done = subprocess.run([*cli, "validate", "my-reward"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0 and "my_reward: ok" in done.stdout, done.stdout + done.stderr


# -- reward managers ---------------------------------------------------------------------
def test_builtin_manager_passes():
    from rewardsmith.validate import validate

    (report,) = validate("naive")
    assert report.ok and report.target == "reward manager 'naive'", report.to_dict()
    assert {c.name for c in report.checks} == {"builds", "scores a batch", "gold scores above empty and unrelated",
                                               "deterministic across calls"}


def test_broken_managers_fail_their_checks():
    import random

    import torch

    from rewardsmith import RewardManager
    from rewardsmith.validate import validate_manager

    class Jittery(RewardManager):
        name = "jittery"

        def postprocess(self, batch, scores, extra_info):
            return scores + random.random()

    class Flat(RewardManager):
        name = "flat"

        def postprocess(self, batch, scores, extra_info):
            return torch.zeros_like(scores)

    class Strict(RewardManager):
        name = "strict"

        def __init__(self, plan, settings, required, **options):
            super().__init__(plan, settings, **options)

    assert failed(validate_manager(Jittery)) == {"deterministic across calls"}
    assert failed(validate_manager(Flat)) == {"gold scores above empty and unrelated"}
    assert "required" in validate_manager(Strict).checks[0].detail


def test_cli_manager_with_overrides(capsys):
    assert main(["validate", "batch"]) == 1
    assert "FAIL  builds" in capsys.readouterr().out
    batched = Path(__file__).parents[1] / "examples" / "custom_reward" / "batched_rarity.py"
    assert main(["validate", "batch", f"custom_reward_function.path={batched}"]) == 0
    assert "reward manager 'batch': ok" in capsys.readouterr().out


def test_example_plugin_scorer_passes_with_its_own_examples():
    (report,) = validate(str(Path(__file__).parents[1] / "examples" / "plugin" / "rewardsmith_example" / "__init__.py"))
    assert report.ok and all(c.ok for c in report.checks), report.to_dict()


def test_scorer_gets_the_managers_keyword_arguments(tmp_path, capsys):
    path = tmp_path / "scorers.py"
    path.write_text(SCORERS)
    rows = tmp_path / "gold.jsonl"
    write_rows(rows, [{"data_source": "toy", "prompt": "q", "reward_model": {"ground_truth": "7"}, "response": "it is 7"}])
    # Without its reward_kwargs the scorer multiplies by None and never scores.
    assert main(["validate", f"{path}:scaled", "--rows", str(rows)]) == 1
    assert "TypeError" in capsys.readouterr().out
    assert main(["validate", f"{path}:scaled", "--rows", str(rows), "custom_reward_function.reward_kwargs.scale=1.0"]) == 0


def test_sandbox_code_validates_against_a_real_sandbox(tmp_path, capsys):
    from rewardsmith.sandbox.testing import isolation_unavailable, running_server

    rows = tmp_path / "code_gold.jsonl"
    write_rows(rows, [{"data_source": "codecontests", "prompt": "Print the sum of two integers.",
                       "reward_model": {"ground_truth": {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}},
                       "response": "```python\na, b = map(int, input().split())\nprint(a + b)\n```"}])
    weak = ("--allow-weak-isolation",) if isolation_unavailable() else ()
    with running_server("--workers", "1", *weak) as url:
        assert main(["validate", "sandbox_code", "--rows", str(rows), f"reward_model.sandbox_fusion.url={url}"]) == 0
    assert "gold scores max, empty scores min: on 1 case(s)" in capsys.readouterr().out


def test_a_manager_whose_gold_is_unscored_fails_instead_of_comparing_the_placeholder(tmp_path):
    """Gold abstains, the rest score -1: the fallback placeholder (0) must not count as gold paying more."""
    from rewardsmith.validate import validate_manager

    path = tmp_path / "abstains_on_gold.py"
    path.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
                    "    return None if solution_str.strip().endswith(str(ground_truth)) else -1.0\n")
    report = validate_manager("naive", cases=[Case("toy", "42", "so it is 42")],
                              overrides=[f"custom_reward_function.path={path}", "reward_model.fallback_score=0"])
    check = next(c for c in report.checks if c.name == "gold scores above empty and unrelated")
    assert not check.ok and "gold unscored (abstain)" in check.detail, report.to_dict()


def test_a_manager_that_scores_nothing_is_not_called_deterministic(tmp_path):
    """Every sample unscored: the two calls' placeholders agree, but nothing was compared."""
    from rewardsmith.validate import validate_manager

    path = tmp_path / "abstains.py"
    path.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
                    "    return None\n")
    report = validate_manager("naive", cases=[Case("toy", "42", "so it is 42")],
                              overrides=[f"custom_reward_function.path={path}"])
    check = next(c for c in report.checks if c.name == "deterministic across calls")
    assert check.skipped and not check.ok and "no sample was scored" in check.detail, report.to_dict()
    assert "SKIP  deterministic across calls" in render([report]) and not report.ok
