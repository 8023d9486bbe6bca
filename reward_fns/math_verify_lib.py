"""Calls into the math-verify library, with its ``signal.alarm`` timeouts switched off.

Those timeouts raise outside the main thread and cannot interrupt C-level
work, so rewardsmith's scorers run math-verify under a hard process-level
timeout instead (``rewardsmith.common.hard_timeout_pool.run_with_hard_timeout``) and
call it through these wrappers. math-verify logs a warning the first time its
timeout is disabled; that warning is expected here and is filtered out.

Importing this module imports math-verify (and sympy): scorers import it
lazily, and the timeout guard preloads it before its clock starts.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from math_verify.grader import verify as _mv_verify
from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig
from math_verify.parser import parse as _mv_parse

_DISABLED_TIMEOUT_WARNING = "Timeout is disabled"


class _DropDisabledTimeoutWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_DISABLED_TIMEOUT_WARNING)


_FILTER = _DropDisabledTimeoutWarning()
for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_FILTER)


def parse(text: str, extraction_config: Sequence[Any], fallback_mode: str = "first_match") -> list[Any]:
    """``math_verify.parse`` without its alarm-based timeout."""
    return _mv_parse(text, extraction_config, fallback_mode=fallback_mode, parsing_timeout=None)


def verify(gold: list[Any], target: list[Any], allow_set_relation_comp: bool = False) -> bool:
    """``math_verify.verify`` (default precision) without its alarm-based timeout.

    ``allow_set_relation_comp`` lets an inequality match an interval
    (``x \\ge 3`` = ``[3, \\infty)``) whichever side is the gold.
    """
    return _mv_verify(gold, target, allow_set_relation_comp=allow_set_relation_comp, timeout_seconds=None)


def verify_boxed_gold(ground_truth_boxed: str, model_output: str) -> float:
    """verl's math-verify check: 1.0 when ``model_output`` verifies against the boxed gold, else 0.0.

    The gold is parsed as LaTeX, the output as expressions and LaTeX; no
    parse on either side scores 0.0.
    """
    golds = parse(ground_truth_boxed, (LatexExtractionConfig(),))
    preds = parse(model_output, (ExprExtractionConfig(), LatexExtractionConfig()))
    if not golds or not preds:
        return 0.0
    return 1.0 if verify(golds, preds) else 0.0
