"""The verl ports give verl's verdicts, quirks included.

Each expected value below was derived by reading verl's
``verl/utils/reward_score/{gsm8k,math_reward,math_dapo,math_verify,
search_r1_like_qa_em}.py``; the comment says which rule of verl's decides it.
"""
from __future__ import annotations

import pytest

from rewardsmith.reward_fns import gsm8k, latex_boxes, math_dapo, math_reward, math_verify_port, search_r1_qa_em

FILLER = " and so on" * 40  # 400 characters, longer than the 300-character tails


@pytest.mark.parametrize(
    "response, gold, method, expected",
    [
        ("48 + 24 = 72\n#### 72", "72", "strict", 1.0),
        ("#### 72.", "72", "strict", 0.0),  # the trailing "." is captured: "72." != "72"
        ("#### 72.00", "72", "strict", 0.0),  # string equality, not numeric
        ("#### 1,000", "1000", "strict", 1.0),  # commas are removed
        ("#### $75", "75", "strict", 0.0),  # "$" right after "#### " defeats the number pattern
        ("####72", "72", "strict", 0.0),  # the space after #### is required
        ("#### -8", "-8", "strict", 1.0),
        ("#### 12\nno, 12 + 3 = 15\n#### 15", "15", "strict", 1.0),  # the last "#### " wins
        ("#### 12\nno, 12 + 3 = 15\n#### 15", "12", "strict", 0.0),
        ("#### 7" + FILLER, "7", "strict", 0.0),  # the marker is outside the last 300 characters
        ("So she has 72 clips", "72", "strict", 0.0),  # no marker, no answer
        ("so 3 and then 4", "4", "flexible", 1.0),  # the last number
        ("The answer is 42.", "42", "flexible", 0.0),  # "42." is the last match
        ("no digits here", "1", "flexible", 0.0),
        ("7 and then . .", "7", "flexible", 1.0),  # bare "." matches are skipped
    ],
)
def test_gsm8k_matches_verl(response, gold, method, expected):
    assert gsm8k.compute_score("openai/gsm8k", response, gold, method=method) == expected


def test_gsm8k_scores_and_format_score():
    assert gsm8k.compute_score("openai/gsm8k", "#### 5", "5", score=2.0) == 2.0
    assert gsm8k.compute_score("openai/gsm8k", "#### 5", "6", format_score=0.1) == 0.1
    assert gsm8k.compute_score("openai/gsm8k", "five", "5", format_score=0.1) == 0.0  # no answer: 0, not format_score


def test_gsm8k_rejects_bad_input_by_name():
    with pytest.raises(TypeError, match="gsm8k: ground_truth must be a string, got int"):
        gsm8k.compute_score("openai/gsm8k", "#### 72", 72)
    with pytest.raises(ValueError, match="'strict' or 'flexible'"):
        gsm8k.compute_score("openai/gsm8k", "#### 72", "72", method="loose")


@pytest.mark.parametrize(
    "response, gold, expected",
    [
        ("so $\\boxed{\\frac12}$", "\\frac{1}{2}", 1.0),  # \frac12 -> \frac{1}{2}
        ("so $\\boxed{0.5}$", "\\frac{1}{2}", 1.0),  # the one hard-coded decimal
        ("so $\\boxed{0.50}$", "\\frac{1}{2}", 0.0),
        ("so $\\boxed{1/2}$", "\\frac12", 1.0),  # a/b -> \frac{a}{b}
        ("so $\\boxed{\\frac{2}{4}}$", "\\frac12", 0.0),  # no arithmetic
        ("so $\\boxed{\\dfrac{1}{2}}$", "\\tfrac12", 1.0),
        ("so $\\boxed{x = 5}$", "5", 1.0),  # a left side of <= 2 characters is dropped
        ("so $\\boxed{abc = 5}$", "5", 0.0),
        ("so $\\boxed{10\\text{ cm}}$", "10", 1.0),  # "\text{ " starts a unit
        ("so $\\boxed{10\\text{cm}}$", "10", 0.0),  # ... but only with the space
        ("$\\boxed{5\\text{ cm}\\text{ m}}$", "5\\text{ cm}\\text{ m}", 1.0),  # two units: raw comparison
        ("$\\boxed{5\\text{ cm}\\text{ m}}$", "5", 0.0),
        ("so $\\boxed{30^\\circ}$", "30", 1.0),
        ("so $\\boxed{50\\%}$", "50", 1.0),
        ("so $\\boxed{\\sqrt2}$", "\\sqrt{2}", 1.0),
        ("$\\boxed{1\\sqrt}$", "1\\sqrt", 1.0),  # a dangling \sqrt fails normalisation: raw equality
        ("$\\boxed{1\\sqrt}$", "1 \\sqrt", 0.0),
        ("so $\\fbox{5}$", "5", 0.0),  # \fbox is found but remove_boxed rejects it
        ("so \\boxed 5$ done", "5", 1.0),  # the "\boxed " form runs to the next "$"
        ("so \\boxed 5 and then 6", "5", 0.0),
        ("first $\\boxed{3}$, then $\\boxed{4}$", "4", 1.0),  # the last box
        ("first $\\boxed{3}$, then $\\boxed{4}$", "3", 0.0),
        ("so $\\boxed{5", "5", 0.0),  # never closed
        ("The answer is 5.", "5", 0.0),  # no box
    ],
)
def test_math_reward_matches_verl(response, gold, expected):
    assert math_reward.compute_score("lighteval/MATH", response, gold) == expected


def test_math_reward_helpers():
    assert math_reward.strip_string(" .5") == "\\frac{1}{2}"  # " ." -> " 0.", spaces go, 0.5 special
    assert math_reward.is_equiv(None, None) and not math_reward.is_equiv("1", None)


@pytest.mark.parametrize(
    "text, brace_form, any_form",
    [
        ("a \\boxed{\\frac{1}{2}} b", "\\boxed{\\frac{1}{2}}", "\\boxed{\\frac{1}{2}}"),
        ("so \\boxed 5$ then \\boxed{6}", "\\boxed{6}", "\\boxed 5"),  # math_reward: "\boxed " wins
        ("so \\fbox{5}", None, "\\fbox{5}"),  # math_dapo never looks for \fbox
        ("so \\boxed{5", None, None),  # never closed
    ],
)
def test_the_two_verl_box_rules(text, brace_form, any_form):
    # verl's math_dapo.py and math_reward.py each define last_boxed_only_string, differently.
    assert latex_boxes.last_boxed_brace_form(text) == brace_form
    assert latex_boxes.last_boxed_any_form(text) == any_form


def test_the_two_verl_unwrap_rules():
    assert latex_boxes.unwrap_boxed_brace_form("\\boxed{7}") == latex_boxes.unwrap_boxed_any_form("\\boxed{7}") == "7"
    assert latex_boxes.unwrap_boxed_any_form("\\boxed 7") == "7"
    for unwrap in (latex_boxes.unwrap_boxed_brace_form, latex_boxes.unwrap_boxed_any_form):
        with pytest.raises(ValueError):
            unwrap("\\fbox{7}")
    with pytest.raises(ValueError):
        latex_boxes.unwrap_boxed_brace_form("\\boxed 7")


@pytest.mark.parametrize(
    "response, gold, score, pred",
    [
        ("Answer: 42", "42", 1.0, "42"),
        ("the answer : 42", "42", 1.0, "42"),  # case-insensitive, spaces around ":"
        ("no marker at all", "42", -1.0, "[INVALID]"),
        ("Answer: $\\frac{1}{2}$", "\\frac{1}{2}", 1.0, "\\frac{1}{2}"),
        ("Answer: 1,000", "1000", 1.0, "1000"),  # commas go from plain integers
        ("Answer: x = 5", "5", 1.0, "5"),  # the text after the last "="
        ("Answer: 5 dollars", "5", 1.0, "5"),  # listed unit words are removed
        ("Answer: 12 apples", "12", -1.0, "12apples"),  # others are not
        ("Answer: 0.5", "\\frac{1}{2}", -1.0, "0.5"),  # no numeric comparison
        ("Answer: \\fraca2", "\\frac{a}{2}", 1.0, "\\frac{a}{2}"),
        ("Answer: 4\nAnswer: 5", "5", 1.0, "5"),  # the last "Answer:"
        ("Answer: 7" + FILLER, "7", -1.0, "[INVALID]"),  # outside the last 300 characters
        ("Answer: Issue", "Is", 1.0, "Is"),  # "sue" is a removed expression
    ],
)
def test_math_dapo_matches_verl(response, gold, score, pred):
    result = math_dapo.compute_score("math_dapo", response, gold)
    assert result == {"score": score, "acc": score > 0, "pred": pred}
    assert isinstance(result["acc"], bool)


def test_math_dapo_strict_box():
    strict = {"strict_box_verify": True}
    assert math_dapo.compute_score("aime", "so \\boxed{42}", "42", **strict) == {"score": 1.0, "acc": True, "pred": "42"}
    # compared verbatim: no normalisation at all
    assert math_dapo.compute_score("aime", "so \\boxed{ 42}", "42", **strict)["pred"] == " 42"
    assert math_dapo.compute_score("aime", "so \\boxed{ 42}", "42", **strict)["score"] == -1.0
    # only the last 100 characters are searched
    far = math_dapo.compute_score("aime", "\\boxed{42}" + "." * 120, "42", **strict)
    assert far == {"score": -1.0, "acc": False, "pred": None}
    with pytest.raises(ValueError, match="pause_tokens_index needs 4 entries"):
        math_dapo.compute_score("aime", "\\boxed{1}", "1", pause_tokens_index=[1, 2, 3], **strict)


def test_math_dapo_rejects_non_string_gold():
    with pytest.raises(TypeError, match="math_dapo: ground_truth must be a string"):
        math_dapo.compute_score("aime", "Answer: 5", 5)


@pytest.mark.parametrize(
    "response, gold, expected",
    [
        ("The answer is $\\boxed{\\frac{1}{2}}$.", "0.5", 1.0),
        ("The answer is $\\boxed{(x+1)^2}$.", "x^2+2x+1", 1.0),
        ("The answer is 42 or 43.", "42", 1.0),  # math-verify takes the first number: hedges pass
        # Undelimited boxes are all collected into the set {3, 4}.
        ("First I thought \\boxed{3}. Wait, that is wrong; the correct value is \\boxed{4}.", "4", 0.0),
        ("The probability is $\\boxed{0.333}$.", "\\frac{1}{3}", 0.0),  # 6-decimal rounding
        ("The answer is $\\boxed{7}$.", "", 0.0),  # a gold that parses to nothing
        ("I cannot solve it.", "7", 0.0),
    ],
)
def test_math_verify_matches_verl(response, gold, expected):
    assert math_verify_port.compute_score("math_verify", response, gold) == expected


@pytest.mark.slow
def test_math_verify_hard_timeout_gives_timeout_score():
    # sympy never finishes 9^(9^(9^9)); math-verify's alarm is off, the guard process is killed.
    score = math_verify_port.compute_score("math_verify", "$\\boxed{9^{9^{9^{9}}}}$", "1", timeout=2, timeout_score=-1.0)
    assert score == -1.0
    assert math_verify_port.compute_score("math_verify", "$\\boxed{2}$", "2", timeout=20) == 1.0  # guard replaced


@pytest.mark.parametrize(
    "response, target, expected",
    [
        ("<answer>Paris</answer>", ["Paris"], 1.0),
        ("<answer> The Paris! </answer>", ["paris"], 1.0),  # articles, punctuation, case
        ("<answer>London</answer> wait <answer>Paris</answer>", ["Paris"], 1.0),  # the last span
        ("<answer>New\nYork</answer>", "New York", 1.0),  # spans lines; whitespace collapsed; str target
        ("Paris", ["Paris"], 0.0),  # no tags
        ("<answer>Lyon</answer>", ["Paris", "Lyon"], 1.0),
        ("<answer>Paris, France</answer>", ["Paris"], 0.0),  # exact, not substring
        ("<answer>x</answer>" * 10 + "<answer>Paris</answer>", ["Paris"], 0.25),  # > 10 tags: score / 4
    ],
)
def test_search_r1_qa_em_matches_verl(response, target, expected):
    assert search_r1_qa_em.compute_score("searchR1_nq", response, {"target": target}) == expected


def test_search_r1_format_score_subem_and_bad_gold():
    assert search_r1_qa_em.compute_score("searchR1_nq", "<answer>Rome</answer>", {"target": ["Paris"]},
                                         format_score=0.2) == 0.2
    assert search_r1_qa_em.compute_score_subem("searchR1_nq", "<answer>Paris, France</answer>",
                                               {"target": ["Paris"]}) == 1.0
    with pytest.raises(TypeError, match="search_r1_qa_em: ground_truth must be a dict with a 'target' key"):
        search_r1_qa_em.compute_score("searchR1_nq", "<answer>Paris</answer>", "Paris")


@pytest.mark.parametrize(
    "data_source, response, gold, expected",
    [
        ("openai/gsm8k", "#### 72", "72", 1.0),
        ("HuggingFaceH4/MATH-500", "$\\boxed{0.5}$", "\\frac{1}{2}", 1.0),
        ("aime2025", "Answer: 7", "7", {"score": 1.0, "acc": True, "pred": "7"}),
        ("math", "Answer: 8", "7", {"score": -1.0, "acc": False, "pred": "8"}),
        ("math_verify", "$\\boxed{\\frac{2}{4}}$", "0.5", 1.0),
        ("searchR1_hotpotqa", "<answer>Paris</answer>", {"target": ["Paris"]}, 1.0),
    ],
)
def test_routing_by_data_source_as_in_verl(data_source, response, gold, expected):
    from rewardsmith import compute_score

    assert compute_score(data_source, response, gold) == expected


def test_prime_math_never_runs_answer_text_as_python(tmp_path):
    # verl's prime_math evaluates \pi answers and list answers with eval(); the port
    # evaluates only numbers and arithmetic, so an answer that is code scores 0 and runs nothing.
    from rewardsmith.reward_fns import prime_math

    marker = tmp_path / "ran"
    code = f"[__import__('pathlib').Path({str(marker)!r}).touch()]"
    assert prime_math.compute_score("numina_olympiads", f"\\boxed{{{code}}}", "\\begin{pmatrix} 1 \\end{pmatrix}") == 0.0
    assert prime_math.compute_score("numina_olympiads", f"Answer: {code} \\pi", "3.14") == 0.0
    assert not marker.exists()
    assert prime_math.safe_eval("[2*3, 1/2, -(4)]") == [6, 0.5, -4]
    with pytest.raises(ValueError):
        prime_math.safe_eval("9**9**9")
