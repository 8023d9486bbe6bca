"""Building the actor, reference and critic models, and running them on a batch.

The actor and reference are ``AutoModelForCausalLM``. The critic is a
backbone with a one-output token head (``AutoModelForTokenClassification``
with ``num_labels=1``, as in verl): a value at each token. Each loads from a local directory (``from_pretrained``)
or is built from a config mapping with random weights.
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Optional

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForTokenClassification,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from rewardsmith.common.tokenizer_files import hub_errors_in_one_line, load_tokenizer_dir
from rewardsmith.core.packing import packed_outputs
from rewardsmith.core.tensor_ops import (entropy_from_logits, logprobs_from_logits, position_ids_from_mask,
                                         sum_pi_squared_from_logits)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_tokenizer(path: str) -> PreTrainedTokenizerBase:
    """A tokenizer from a local directory (:func:`load_tokenizer_dir`), set up for left-padded generation."""
    tokenizer = load_tokenizer_dir(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.pad_token_id is None:
        raise ValueError(f"tokenizer at {path} has neither a pad nor an eos token")
    return tokenizer


def run_tokenizer(config: Any) -> PreTrainedTokenizerBase:
    """The run's tokenizer: ``data.tokenizer``, else ``actor_rollout_ref.model.path``."""
    path = config.data.tokenizer or config.actor_rollout_ref.model.path
    if not path:
        raise ValueError("set data.tokenizer (a tokenizer directory) when actor_rollout_ref.model.path is null")
    return load_tokenizer(path)


def _config_from_mapping(mapping: dict[str, Any], tokenizer: PreTrainedTokenizerBase, **extra: Any):
    """A transformers config from ``{model_type: ..., ...}``; the vocabulary and special ids default to the tokenizer's."""
    values = dict(mapping)
    model_type = values.pop("model_type")
    values.setdefault("vocab_size", len(tokenizer))
    values.setdefault("pad_token_id", tokenizer.pad_token_id)
    values.setdefault("eos_token_id", tokenizer.eos_token_id)
    values.setdefault("bos_token_id", tokenizer.bos_token_id)
    values.update(extra)
    return AutoConfig.for_model(model_type, **values)


def apply_overrides(config: PretrainedConfig, overrides: dict[str, Any], key: str) -> PretrainedConfig:
    """Set ``overrides`` (verl's ``override_config``) on a transformers ``config``; an attribute it lacks is an error
    naming ``key``, not a silent new attribute the model never reads."""
    for name, value in overrides.items():
        if not hasattr(config, name):
            raise ValueError(f"{key}.{name}: {type(config).__name__} has no attribute {name!r}")
        setattr(config, name, value)
    return config


def _common_kwargs(model_cfg: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"dtype": DTYPES[model_cfg.dtype]}
    if model_cfg.attn_implementation:
        kwargs["attn_implementation"] = model_cfg.attn_implementation
    return kwargs


def set_mode(model: PreTrainedModel, training: bool) -> None:
    """``model.train(training)`` with dropout always off.

    Dropout would make recomputed log-probs differ from the rollout's, so RL
    runs dropout-free; training mode only matters to gradient checkpointing,
    which transformers applies in training mode alone.
    """
    model.train(training)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.eval()


def _finish(model: PreTrainedModel, model_cfg: Any) -> PreTrainedModel:
    set_mode(model, False)
    if model_cfg.enable_gradient_checkpointing:
        model.gradient_checkpointing_enable()
        set_mode(model, True)
    return model


def build_causal_lm(model_cfg: Any, tokenizer: PreTrainedTokenizerBase, path: Optional[str] = None) -> PreTrainedModel:
    """The policy (or reference) model from ``path`` (default ``model_cfg.path``) or ``model_cfg.config``."""
    path = path or model_cfg.path
    kwargs = _common_kwargs(model_cfg)
    key = "actor_rollout_ref.model.override_config"
    if path:
        with hub_errors_in_one_line(path, "model"):
            config = AutoConfig.from_pretrained(path, trust_remote_code=model_cfg.trust_remote_code)
            model = AutoModelForCausalLM.from_pretrained(
                path, config=apply_overrides(config, model_cfg.override_config, key),
                trust_remote_code=model_cfg.trust_remote_code, **kwargs)
    else:
        if not model_cfg.config:
            raise ValueError("actor_rollout_ref.model: set either path (a local model directory) or config (a mapping with model_type)")
        config = apply_overrides(_config_from_mapping(model_cfg.config, tokenizer), model_cfg.override_config, key)
        model = AutoModelForCausalLM.from_config(config, **kwargs)
    return _finish(model, model_cfg)


def _drop_load_report(record: logging.LogRecord) -> bool:
    return "LOAD REPORT" not in record.getMessage()


def load_with_new_head(auto_class: Any, path: str, what: str, head: str, **kwargs: Any) -> PreTrainedModel:
    """``auto_class.from_pretrained(path, **kwargs)`` for a model that adds a head to a checkpoint
    (a critic's value head, a reward model's score head), saying so in one line on stderr.

    A head missing from the checkpoint is expected, so transformers' load report (a table in
    terminal colours) is silenced; weights missing from the backbone are a warning naming them.
    """
    logger = logging.getLogger("transformers.modeling_utils")
    logger.addFilter(_drop_load_report)  # only the report: a level would change what transformers checks
    try:
        model, info = auto_class.from_pretrained(path, output_loading_info=True, **kwargs)
    finally:
        logger.removeFilter(_drop_load_report)
    backbone = model.base_model_prefix + "."
    missing = sorted(info["missing_keys"])
    new = [k for k in missing if not k.startswith(backbone)]
    lost = [k for k in missing if k.startswith(backbone)]
    if new:
        print(f"{what}: a new {head} ({', '.join(new)}) on the weights of {path}, starting from random values "
              "(expected when the checkpoint has no such head, e.g. a causal LM)", file=sys.stderr)
    if lost:
        print(f"warning: {what}: {len(lost)} weights of the model are not in {path} and start from random values: "
              f"{', '.join(lost[:5])}{', ...' if len(lost) > 5 else ''}", file=sys.stderr)
    return model


def build_value_model(
    model_cfg: Any, tokenizer: PreTrainedTokenizerBase, path: Optional[str] = None, config: Optional[dict] = None
) -> PreTrainedModel:
    """A backbone with a one-output token head (the critic).

    From ``path`` the backbone's weights are loaded and the head is new
    (unless the directory already holds a token-classification model).
    """
    kwargs = _common_kwargs(model_cfg)
    key = "critic.model.override_config"
    if path:
        loaded = AutoConfig.from_pretrained(path, num_labels=1, trust_remote_code=model_cfg.trust_remote_code)
        model = load_with_new_head(AutoModelForTokenClassification, path, "critic", "value head",
                                   config=apply_overrides(loaded, model_cfg.override_config, key),
                                   trust_remote_code=model_cfg.trust_remote_code, **kwargs)
    else:
        mapping = config or model_cfg.config
        if not mapping:
            raise ValueError("critic.model: no path or config to build the critic from")
        built = apply_overrides(_config_from_mapping(mapping, tokenizer, num_labels=1), model_cfg.override_config, key)
        model = AutoModelForTokenClassification.from_config(built, **kwargs)
    return _finish(model, model_cfg)


def response_outputs(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_length: int,
                     packed: bool = False) -> torch.Tensor:
    """(B, R, ...) ``model``'s outputs (``.logits``) at position ``t - 1`` of each of the last ``response_length``
    tokens ``t``: the padded batch's forward, or with ``packed`` one forward over its attended tokens
    (:func:`packed_outputs`, zero at padding)."""
    if packed:
        return packed_outputs(model, input_ids, attention_mask, response_length)
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids_from_mask(attention_mask), use_cache=False)
    return out.logits[:, -response_length - 1 : -1]


def response_logprobs(
    model: PreTrainedModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_length: int,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = False,
    packed: bool = False,
) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Log-probs (and entropy) of the last ``response_length`` tokens of ``input_ids``.

    ``logits / temperature`` at position ``t - 1`` scores token ``t``, the
    distribution the rollout sampled from. The entropy carries gradients only
    with ``entropy_grad`` (an entropy bonus), which saves memory otherwise.
    ``packed`` runs the forward unpadded (:func:`response_outputs`).
    """
    logits = _scaled_response_logits(model, input_ids, attention_mask, response_length, temperature, packed)
    logprob = logprobs_from_logits(logits, input_ids[:, -response_length:])
    entropy = None
    if with_entropy:
        entropy = entropy_from_logits(logits if entropy_grad else logits.detach())
    return logprob, entropy


def response_logprobs_and_sum_pi_squared(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                                         response_length: int, temperature: float = 1.0,
                                         packed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`response_logprobs` without entropy, and ``sum_v pi(v)^2`` of each response token's distribution
    (the optimal token baseline's statistic, verl's ``calculate_sum_pi_squared``)."""
    logits = _scaled_response_logits(model, input_ids, attention_mask, response_length, temperature, packed)
    return logprobs_from_logits(logits, input_ids[:, -response_length:]), sum_pi_squared_from_logits(logits)


def _scaled_response_logits(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                            response_length: int, temperature: float, packed: bool) -> torch.Tensor:
    logits = response_outputs(model, input_ids, attention_mask, response_length, packed)
    return logits / temperature if temperature != 1.0 else logits


def response_values(model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_length: int,
                    packed: bool = False) -> torch.Tensor:
    """``V(t)`` for each response token: the head's output at position ``t - 1``, the state the
    token was generated from (verl's layout); ``packed`` runs the forward unpadded."""
    return response_outputs(model, input_ids, attention_mask, response_length, packed)[..., 0].float()
