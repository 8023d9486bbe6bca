"""The project's error types. Each message names what was wrong (key, row, plugin, data_source)."""
from __future__ import annotations

from rewardsmith.common.redaction import redact_text


class _Redacted:
    """An error whose message may quote a URL or a config value: credentials in it are masked."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact_text(a) if isinstance(a, str) else a for a in args))


class ConfigError(_Redacted, ValueError):
    """A config key is unknown or its value is invalid; the message names the key."""


class RewardError(ValueError):
    """Base class for reward configuration and routing errors."""


class NotRegistered(RewardError, KeyError):
    """A scorer, data_source, reward manager or advantage estimator that no loaded plugin provides."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class PluginConflict(RewardError):
    """Two third-party plugins claim the same scorer name or data_source."""


class CustomFunctionError(RewardError):
    """A custom compute_score file could not be loaded."""


class ScorerInfrastructureError(_Redacted, Exception):
    """Raised by a scorer that could not judge a sample because something it depends
    on (a sandbox, a model server) is unreachable. Counted as ``unavailable``,
    never as a wrong answer."""


class SystematicScorerError(_Redacted, RewardError):
    """A scorer failed with the same exception on several distinct inputs and scored none: a broken scorer, not hard samples.

    Stops ``rewardsmith score`` (non-zero exit) and training (before the update),
    as verl does; ``reward_model.stop_when_all_fail=false`` scores them with
    ``fallback_score`` instead.
    """
