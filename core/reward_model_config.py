"""The config of ``rewardsmith rm train`` (reward-model training on preference pairs), without
torch: the command checks it before it loads the engine (core/reward_model_training.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from rewardsmith.common.config import InvalidValue, opt, require_positive, section

Files = Union[str, list[str]]


@dataclass
class RMDataConfig:
    train_files: Files = opt([], "Preference pairs: jsonl or parquet rows with prompt, chosen, rejected (and optionally margin).")
    val_files: Files = opt([], "Held-out pairs; empty = hold out val_ratio of train_files.")
    val_ratio: float = opt(0.1, "Share of train_files held out when val_files is empty.")
    prompt_key: str = opt("prompt", "Row field with the prompt (chat messages or a string; empty or null = no prompt).")
    chosen_key: str = opt("chosen", "Row field with the preferred response.")
    rejected_key: str = opt("rejected", "Row field with the other response.")
    margin_key: str = opt("margin", "Row field with a margin m (loss -log sigmoid(r_c - r_r - m)); used where present.")
    max_length: int = opt(512, "Maximum tokens of prompt + response; the prompt's start is cut first.")

    def __post_init__(self) -> None:
        require_positive("max_length", self.max_length, allow_none=False)
        if not 0.0 <= self.val_ratio < 1.0:
            raise InvalidValue("val_ratio", f"must be in [0, 1), got {self.val_ratio}")


@dataclass
class RMModelConfig:
    path: Optional[str] = opt(None, "A causal LM (or reward model) checkpoint directory; a new one-output score head is added.")
    config: dict[str, Any] = opt({}, "Used when path is null: a transformers config mapping with model_type (random weights).")
    tokenizer: Optional[str] = opt(None, "Tokenizer directory; null = path.")
    dtype: Literal["float32", "bfloat16", "float16"] = opt("float32", "Parameter dtype.")


@dataclass
class RMTrainConfig:
    data: RMDataConfig = section(RMDataConfig, "Preference pairs.")
    model: RMModelConfig = section(RMModelConfig, "The model to train.")
    save_dir: Optional[str] = opt(None, "Where the reward model and its tokenizer are saved (save_pretrained).")
    batch_size: int = opt(16, "Pairs per optimizer step.")
    epochs: int = opt(1, "Passes over the training pairs.")
    lr: float = opt(1e-5, "AdamW learning rate.")
    weight_decay: float = opt(0.0, "AdamW weight decay.")
    grad_clip: float = opt(1.0, "Clip the gradient's global norm.")
    center_rewards_coefficient: Optional[float] = opt(None, "Add coef * mean((r_c + r_r)^2) to the loss, centring rewards on 0 (TRL); null = off.")
    seed: int = opt(1, "Seed of initialisation, split and order.")
    device: Literal["auto", "cpu", "cuda"] = opt("auto", "auto = cuda when available.")
    cpu_threads: Optional[int] = opt(None, "torch threads on CPU; null = torch's default.")
    progress_bar: bool = opt(True, "Show a progress bar over steps.")

    def __post_init__(self) -> None:
        for key in ("batch_size", "epochs", "lr"):
            require_positive(key, getattr(self, key), allow_none=False)
        require_positive("cpu_threads", self.cpu_threads)
