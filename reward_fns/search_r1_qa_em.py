"""Search-R1 QA exact match: verl's ``search_r1_like_qa_em.compute_score``.

Extraction: the last ``<answer>...</answer>`` span (across newlines), stripped;
none -> 0.0. The ground truth is ``{"target": str | list[str]}``. The answer
and each target are normalised SQuAD-style (lower-case, punctuation and the
articles a/an/the removed, whitespace collapsed); an exact match with any
target scores ``score`` (1.0), divided by 4 when the response holds more than
10 ``<answer>`` or ``</answer>`` tags (tag spamming); otherwise
``format_score`` (0.0).

``compute_score_subem`` is verl's substring variant: a target contained in the
normalised answer counts.
"""
from __future__ import annotations

import re
import string
from collections.abc import Iterable
from typing import Any

from rewardsmith.reward_fns.scorer_inputs import require_text

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
MAX_ANSWER_TAGS = 10


def normalize_answer(text: str) -> str:
    """Lower-case; drop punctuation, then the articles a/an/the; collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _targets(golden_answers: str | Iterable[str]) -> list[str]:
    return [golden_answers] if isinstance(golden_answers, str) else list(golden_answers)


def em_check(prediction: str, golden_answers: str | Iterable[str]) -> int:
    """1 when the normalised prediction equals a normalised golden answer, else 0."""
    pred = normalize_answer(prediction)
    return int(any(normalize_answer(gold) == pred for gold in _targets(golden_answers)))


def subem_check(prediction: str, golden_answers: str | Iterable[str]) -> int:
    """1 when a normalised golden answer is a substring of the normalised prediction, else 0."""
    pred = normalize_answer(prediction)
    return int(any(normalize_answer(gold) in pred for gold in _targets(golden_answers)))


def extract_solution(solution_str: str) -> str | None:
    """The stripped text of the last ``<answer>...</answer>``, or ``None``."""
    matches = _ANSWER.findall(solution_str)
    return matches[-1].strip() if matches else None


def _target_of(ground_truth: Any) -> Any:
    if not isinstance(ground_truth, dict) or "target" not in ground_truth:
        raise TypeError(
            "search_r1_qa_em: ground_truth must be a dict with a 'target' key (a string or a list of strings), "
            f"got {type(ground_truth).__name__} {ground_truth!r:.80}"
        )
    return ground_truth["target"]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    method: str = "strict",
    format_score: float = 0.0,
    score: float = 1.0,
    **kwargs: Any,
) -> float:
    """Exact-match score of the last ``<answer>`` (see the module docstring)."""
    target = _target_of(ground_truth)
    solution_str = require_text("search_r1_qa_em", "solution_str", solution_str)
    answer = extract_solution(solution_str)
    if answer is None:
        return 0.0
    if not em_check(answer, target):
        return float(format_score)
    tags = max(solution_str.count("<answer>"), solution_str.count("</answer>"))
    return float(score / 4 if tags > MAX_ANSWER_TAGS else score)


def compute_score_subem(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    method: str = "strict",
    format_score: float = 0.0,
    score: float = 1.0,
    **kwargs: Any,
) -> float:
    """Substring exact-match score of the last ``<answer>`` (no tag-spam penalty, as in verl)."""
    target = _target_of(ground_truth)
    answer = extract_solution(require_text("search_r1_qa_em", "solution_str", solution_str))
    if answer is None:
        return 0.0
    return float(score if subem_check(answer, target) else format_score)
