"""A pytest plugin for plugin authors: run ``rewardsmith validate``'s checks in your own tests.

In a plugin package's ``conftest.py``::

    pytest_plugins = ["rewardsmith.testing"]

and in a test::

    def test_my_scorer_keeps_the_contract(validate_scorer):
        validate_scorer("my_scorer")            # a registered name, a file.py[:function], or the function

or, without the fixture, ``from rewardsmith.testing import assert_valid_scorer``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

from rewardsmith.validate import Case, Report, render, resolve_targets
from rewardsmith.validate import validate_scorer as run_checks

try:
    import pytest
except ImportError:  # outside a test run the assertion helper still works
    pytest = None  # type: ignore[assignment]


def assert_valid_scorer(scorer: Union[str, Callable[..., Any]], *, cases: Optional[Sequence[Case]] = None,
                        score_range: Optional[tuple[float, float]] = None, timeout: float = 10.0) -> list[Report]:
    """Run every validate check on ``scorer`` (a callable, a registered scorer name, a plugin's
    name or ``file.py[:function]``); raise ``AssertionError`` with the reports if a check fails,
    else return them."""
    if callable(scorer):
        targets = [(getattr(scorer, "__name__", repr(scorer)), scorer, (), None)]
    else:
        targets = [(t.label, t.fn, t.data_sources, t.builtin_name) for t in resolve_targets(scorer)]
    reports = [run_checks(fn, label=label, data_sources=sources, cases=cases, score_range=score_range,
                               timeout=timeout, builtin_name=builtin) for label, fn, sources, builtin in targets]
    if not all(r.ok for r in reports):
        raise AssertionError("rewardsmith validate failed:\n" + render(reports))
    return reports


if pytest is not None:

    @pytest.fixture
    def validate_scorer() -> Callable[..., list[Report]]:
        """:func:`assert_valid_scorer`, as a fixture."""
        return assert_valid_scorer
