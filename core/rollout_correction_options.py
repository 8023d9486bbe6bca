"""The options of rollout correction (``algorithm.rollout_correction.*``): thresholds and rejection options, parsed
and checked when the config loads (no torch here: the config is checked before the engine is imported).
The weights and the rejection themselves are in :mod:`rewardsmith.core.rollout_correction`."""
from __future__ import annotations

from typing import Optional, Union

Threshold = Union[str, float, None]
RS_OPTIONS = ("token_k1", "token_k2", "token_k3", "seq_sum_k1", "seq_sum_k2", "seq_sum_k3", "seq_mean_k1",
              "seq_mean_k2", "seq_mean_k3", "seq_max_k2", "seq_max_k3")


def _number(text: str, key: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"algorithm.rollout_correction.{key}: {text!r} is not a number") from None
    if value <= 0:
        raise ValueError(f"algorithm.rollout_correction.{key}: thresholds must be > 0, got {text!r}")
    return value


def parse_bounds(spec: Threshold, key: str, two_sided: bool) -> tuple[Optional[float], float]:
    """``(lower, upper)`` of one threshold: ``u`` or ``"l_u"`` (only where ``two_sided``); lower None when absent."""
    if isinstance(spec, bool) or spec is None:
        raise ValueError(f"algorithm.rollout_correction.{key}: a number or a 'lower_upper' string is needed, got {spec!r}")
    text = str(spec).strip()
    if "_" not in text:
        return None, _number(text, key)
    if not two_sided:
        raise ValueError(f"algorithm.rollout_correction.{key}: {text!r}: only k1 options take 'lower_upper'; give one upper bound")
    low, high = (_number(part, key) for part in text.split("_", 1))
    if low > high:
        raise ValueError(f"algorithm.rollout_correction.{key}: lower bound above the upper one in {text!r}")
    return low, high


def rejection_options(rollout_rs: str, rollout_rs_threshold: Threshold) -> dict[str, tuple[Optional[float], float]]:
    """Each rejection option (duplicates dropped, in order) with its ``(lower, upper)`` bound."""
    options = list(dict.fromkeys(o.strip() for o in str(rollout_rs).split(",") if o.strip()))
    unknown = [o for o in options if o not in RS_OPTIONS]
    if not options or unknown:
        raise ValueError(f"algorithm.rollout_correction.rollout_rs: unknown option {unknown[0] if unknown else rollout_rs!r}; "
                         f"allowed: {', '.join(RS_OPTIONS)} (comma-separated)")
    if rollout_rs_threshold is None:
        raise ValueError("algorithm.rollout_correction.rollout_rs_threshold must be set when rollout_rs is")
    specs = [s.strip() for s in str(rollout_rs_threshold).split(",") if s.strip()]
    if len(specs) not in (1, len(options)):
        raise ValueError(f"algorithm.rollout_correction.rollout_rs_threshold: {len(specs)} thresholds for {len(options)} "
                         "rollout_rs options (give one for all, or one each)")
    specs = specs * len(options) if len(specs) == 1 else specs
    bounds = {}
    for option, spec in zip(options, specs):
        low, high = parse_bounds(spec, "rollout_rs_threshold", two_sided=option.endswith("k1"))
        bounds[option] = (1.0 / high if low is None else low, high) if option.endswith("k1") else (None, high)
    return bounds
