"""What a reward manager takes and gives back."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import torch


@dataclass
class RewardBatch:
    """Decoded rollouts to score, one entry per sample.

    ``response_mask`` (B, T) marks valid response tokens; when given, the
    manager also returns token-level scores and the DAPO penalty uses its row
    sums as response lengths. ``response_lengths`` serves when there is no mask
    (offline scoring). ``prompts`` are the rows' prompts (chat messages or
    strings), which reward models and judges read; without them a model sees
    the response alone (counted in ``reward/<model>/missing_prompt``).
    """

    data_sources: list[str]
    solutions: list[str]
    ground_truths: list[Any]
    extra_infos: list[Optional[dict]] = None  # type: ignore[assignment]
    styles: list[str] = None  # type: ignore[assignment]
    prompts: Optional[list[Any]] = None
    response_mask: Optional[torch.Tensor] = None
    response_lengths: Optional[list[int]] = None

    def __post_init__(self) -> None:
        n = len(self.solutions)
        if self.extra_infos is None:
            self.extra_infos = [None] * n
        if self.styles is None:
            self.styles = ["rule"] * n
        for name in ("data_sources", "ground_truths", "extra_infos", "styles") + (("prompts",) if self.prompts is not None else ()):
            if len(getattr(self, name)) != n:
                raise ValueError(f"RewardBatch.{name} has {len(getattr(self, name))} entries for {n} solutions")
        if self.response_mask is not None:
            if self.response_mask.shape[0] != n:
                raise ValueError(f"RewardBatch.response_mask has {self.response_mask.shape[0]} rows for {n} solutions")
            if self.response_lengths is None:
                self.response_lengths = self.response_mask.sum(-1).long().tolist()

    def __len__(self) -> int:
        return len(self.solutions)

    @staticmethod
    def concat(batches: Sequence["RewardBatch"]) -> "RewardBatch":
        """The samples of ``batches``, one after the other (prompts, masks and lengths where every one has them)."""
        def joined(name: str) -> Optional[list]:
            parts = [getattr(b, name) for b in batches]
            return None if any(p is None for p in parts) else [x for p in parts for x in p]

        masks = [b.response_mask for b in batches]
        return RewardBatch(data_sources=joined("data_sources"), solutions=joined("solutions"),
                           ground_truths=joined("ground_truths"), extra_infos=joined("extra_infos"),
                           styles=joined("styles"), prompts=joined("prompts"),
                           response_mask=None if any(m is None for m in masks) else torch.cat(masks),
                           response_lengths=joined("response_lengths"))


@dataclass(init=False)
class RewardOutput:
    """Per-sample rewards plus everything the scorers said about them.

    ``extra_info`` holds the union of every sample's extra keys, one list entry
    per sample (``None`` where a sample had no such key). ``unscored`` (B,) marks
    the unscored samples, those no component could score (every one abstained,
    was undecided or failed under ``on_failure: abstain``): their score is
    ``reward_model.fallback_score``, a placeholder that belongs out of the
    advantage, the loss and every reported mean (:func:`scored_mean`).

    ``masked`` is the field's old name: still accepted (``masked=``) and
    readable, with a DeprecationWarning, until the next release.
    """

    scores: torch.Tensor
    extra_info: dict[str, list] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    token_level_scores: Optional[torch.Tensor] = None
    unscored: Optional[torch.Tensor] = None

    def __init__(self, scores: torch.Tensor, extra_info: Optional[dict[str, list]] = None,
                 metrics: Optional[dict[str, float]] = None, token_level_scores: Optional[torch.Tensor] = None,
                 unscored: Optional[torch.Tensor] = None, *, masked: Optional[torch.Tensor] = None) -> None:
        if masked is not None:
            if unscored is not None:
                raise TypeError("RewardOutput takes unscored= or its deprecated name masked=, not both")
            _warn_masked()
            unscored = masked
        self.scores = scores
        self.extra_info = {} if extra_info is None else extra_info
        self.metrics = {} if metrics is None else metrics
        self.token_level_scores = token_level_scores
        self.unscored = unscored

    @property
    def masked(self) -> Optional[torch.Tensor]:
        """Deprecated name of :attr:`unscored`."""
        _warn_masked()
        return self.unscored

    @masked.setter
    def masked(self, value: Optional[torch.Tensor]) -> None:
        _warn_masked()
        self.unscored = value


def _warn_masked() -> None:
    # stacklevel 3: the plugin's line that used the old name, past this helper and the property or __init__.
    warnings.warn("RewardOutput.masked is renamed RewardOutput.unscored; the old name goes in the next release",
                  DeprecationWarning, stacklevel=3)


def token_level_scores(scores: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Place each sample's score on its last valid response token, zeros elsewhere.

    ``out[i, last_i] = scores[i]`` where ``last_i = max{t : mask[i, t] = 1}``;
    a sample with an empty response gets no reward token.
    """
    out = torch.zeros(response_mask.shape, dtype=torch.float32)
    lengths = response_mask.long().sum(-1)
    positions = torch.arange(response_mask.shape[1]).expand_as(response_mask)
    last = torch.where(response_mask.bool(), positions, torch.full_like(positions, -1)).max(-1).values
    rows = torch.nonzero(lengths > 0).squeeze(-1)
    out[rows, last[rows]] = scores[rows].float()
    return out


def scored_mean(scores: Sequence[float], unscored: Sequence[bool]) -> Optional[float]:
    """The mean score of the scored samples; None when there is none.

    An unscored sample's score is a placeholder (``reward_model.fallback_score``),
    not a reward, so it never enters a reported mean; it is counted beside it.
    """
    kept = [float(s) for s, bad in zip(scores, unscored) if not bad]
    return sum(kept) / len(kept) if kept else None
