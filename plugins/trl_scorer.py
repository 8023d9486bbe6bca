"""A TRL reward function as a rewardsmith scorer.

TRL calls ``f(prompts=[...], completions=[...], **dataset_columns) -> list[float | None]``
on a batch; a scorer takes one sample. :func:`scorer_from_trl` wraps the
former as the latter, so a TRL user's functions (``trl.rewards.accuracy_reward``,
``think_format_reward``, their own) run in rewardsmith's managers with
timeouts, worker processes and metrics.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

from rewardsmith.common.function_refs import AdaptedRef, FunctionRef


class TRLScorer:
    """``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``
    that calls a TRL reward function on a batch of one.

    The completion is passed as TRL passes it for conversational data (verl's
    rows hold chat prompts): ``[{"role": "assistant", "content": text}]``, or
    as the plain string when ``conversational`` is false. The ground truth is
    offered under TRL's usual column names (``solution``, ``ground_truth``,
    ``answer``) and as ``reward_model``; ``extra_info``'s keys become columns
    too. Only the arguments the function accepts are passed. ``None`` from the
    function means abstain.
    """

    def __init__(self, fn: Callable[..., Any], conversational: bool = True) -> None:
        self.fn = fn
        self.conversational = conversational
        self.__name__ = getattr(fn, "__name__", "trl_reward")
        self.__doc__ = getattr(fn, "__doc__", None)
        params = inspect.signature(fn).parameters
        self._takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        self._params = set(params)

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[dict] = None,
                 **kwargs: Any) -> Optional[float]:
        extra = dict(extra_info or {})
        completion: Any = [{"role": "assistant", "content": solution_str}] if self.conversational else solution_str
        prompt = extra.get("prompt")
        columns = {
            **{key: [value] for key, value in extra.items()},
            **{key: [value] for key, value in kwargs.items()},
            "solution": [ground_truth], "ground_truth": [ground_truth], "answer": [ground_truth],
            "reward_model": [{"ground_truth": ground_truth}],
            "data_source": [data_source], "extra_info": [extra_info],
            "prompts": [prompt], "completions": [completion],
        }
        if not self._takes_any:
            columns = {k: v for k, v in columns.items() if k in self._params}
        result = self.fn(**columns)
        values = list(result)
        if len(values) != 1:
            raise ValueError(f"TRL reward function {self.__name__} returned {len(values)} values for one completion")
        return values[0]


def _adapt(fn: Callable[..., Any], conversational: bool = True) -> TRLScorer:
    return TRLScorer(fn, conversational)


def scorer_from_trl(fn: Callable[..., Any], *, conversational: bool = True) -> TRLScorer:
    """Wrap TRL reward function ``fn`` as a scorer; register it like any other::

        register("accuracy", scorer_from_trl(accuracy_reward), data_sources=["my/math"])

    ``fn`` must be importable (defined at the top level of a module), so worker
    processes of the ``parallel`` manager can rebuild the scorer.
    """
    scorer = TRLScorer(fn, conversational)
    try:
        target = FunctionRef.of(fn)
    except ValueError:  # usable in process (naive, sandbox); a worker would say why it cannot load it
        return scorer
    scorer.__rewardsmith_ref__ = AdaptedRef(FunctionRef(__name__, "_adapt"), target, (("conversational", conversational),))
    return scorer
