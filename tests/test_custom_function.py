"""custom_reward_function: verl-style files, pkg:// modules, and errors naming file and function."""
from __future__ import annotations

import sys

import pytest

from rewardsmith.plugins.batch import RewardBatch
from rewardsmith.plugins.custom import load_custom_function
from rewardsmith.common.errors import CustomFunctionError
from rewardsmith.plugins.factory import build_reward_manager

# Exactly the shape of a verl user's file: positional parameters, no **kwargs, a helper import.
VERL_FILE = '''
import re

def _last_number(text):
    found = re.findall(r"-?\\d+", text)
    return found[-1] if found else None

def my_reward(data_source, solution_str, ground_truth, extra_info=None, bonus=0.0):
    return float(_last_number(solution_str) == str(ground_truth)) + bonus
'''


@pytest.fixture
def verl_file(tmp_path):
    path = tmp_path / "my_reward.py"
    path.write_text(VERL_FILE)
    return path


def batch():
    return RewardBatch(["anything"] * 3, ["so 12", "so 13", "no digits"], ["12", "12", "12"])


def test_verl_style_file_with_reward_kwargs(make_config, verl_file):
    cfg = make_config(f"custom_reward_function.path={verl_file}", "custom_reward_function.name=my_reward",
                      "custom_reward_function.reward_kwargs.bonus=0.5")
    with build_reward_manager(cfg.reward_settings()) as manager:
        assert manager(batch()).scores.tolist() == [1.5, 0.5, 0.5]


@pytest.mark.slow
def test_custom_file_in_the_parallel_manager(make_config, verl_file):
    cfg = make_config(f"custom_reward_function.path={verl_file}", "custom_reward_function.name=my_reward",
                      "reward_model.reward_manager=parallel", "reward_model.num_workers=2")
    with build_reward_manager(cfg.reward_settings()) as manager:
        out = manager(batch())
    assert out.scores.tolist() == [1.0, 0.0, 0.0]
    assert out.extra_info["reward_status"] == ["ok"] * 3


def test_pkg_path_loads_a_module():
    fn = load_custom_function("pkg://rewardsmith.reward_fns.gsm8k")
    assert fn("openai/gsm8k", "#### 3", "3") == 1.0


def test_missing_file_is_named(tmp_path):
    with pytest.raises(CustomFunctionError, match=r"not found: '.*nope\.py' \(custom_reward_function\.path\)"):
        load_custom_function(str(tmp_path / "nope.py"))


def test_missing_function_lists_what_the_file_defines(verl_file):
    with pytest.raises(CustomFunctionError, match=r"'compute_score' not found in file '.*my_reward\.py'.*my_reward"):
        load_custom_function(str(verl_file))


def test_import_error_names_file(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import not_a_module_anywhere\n")
    with pytest.raises(CustomFunctionError, match=r"error while importing .*broken\.py.*ModuleNotFoundError"):
        load_custom_function(str(path))


def test_a_file_importing_verl_without_verl_names_the_import_and_the_fix(tmp_path, monkeypatch):
    """verl's genrm recipe imports verl's own scorers; where verl is absent the error says how to install it."""
    for name in [m for m in sys.modules if m == "verl" or m.startswith("verl.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "verl", None)  # as if verl were not installed
    path = tmp_path / "genrm_reward.py"
    path.write_text("import re\n\nfrom verl.utils.reward_score.math_reward import last_boxed_only_string\n\n"
                    "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n")
    with pytest.raises(CustomFunctionError) as err:
        load_custom_function(str(path))
    message = str(err.value)
    assert "genrm_reward.py" in message and "line 3" in message
    assert "from verl.utils.reward_score.math_reward import last_boxed_only_string" in message
    assert "pip install 'verl==0.9.1'" in message and "--no-deps" in message


def test_missing_pkg_module_is_named():
    with pytest.raises(CustomFunctionError, match=r"cannot import module 'no_such_pkg\.mod'"):
        load_custom_function("pkg://no_such_pkg.mod")
