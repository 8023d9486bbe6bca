"""Keys that popular verl-based projects added in their verl forks, with the decision taken on each.

A project's launch scripts run here only if its fork's keys have a status. Each
row names the project, how many public launch scripts were found passing the key
(a search of public code for ``<key>=``, November 2026; "10+" where the search
stopped at its 10 results), and why the key is implemented or refused;
core/verl_keys.py gives every row its status in docs/config.md, and
docs/config.md's "Keys of verl forks" table is generated from this one.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ForkKey:
    """``key`` of ``projects``' verl forks: ``scripts`` public scripts pass it; ``why`` the decision."""

    key: str
    projects: str
    scripts: str
    why: str


_RLLM = "rllm (DeepScaleR, DeepCoder)"
_SKYWORK = "Skywork-OR1"
_SIMPLERL = "SimpleRL-Zoo"
_ADAPTIVE = ("implemented (core/fork_options.py EntropyControl, Skywork-OR1's EntController step for step): a few lines, "
             "used by all 6 of Skywork-OR1's scripts")

FORK_KEYS: tuple[ForkKey, ...] = (
    ForkKey("algorithm.mask_truncated_samples", _RLLM, "10+ (3 of the 10 found set it true)",
            "implemented (core/fork_options.py mask_truncated_advantages, rllm's GRPO loop's rule): small and exactly "
            "defined; refused with another estimator, where rllm's fork ignores it"),
    ForkKey("algorithm.clip_advantages", "rllm", "10+ (7 found set it false; 2 of a distillation fork set it true, "
            "with adv_clip_min/max)",
            "false accepted (rllm's default); true refused: clamping needs the bounds of a fork that is not rllm's, "
            "and the policy loss's clip_ratio and clip_ratio_c already bound each token's update"),
    ForkKey("trainer.rejection_sample", f"{_RLLM}, {_SKYWORK}", "10+ (6 of the 10 found, and all 6 of "
            "Skywork-OR1's, set it true)",
            "implemented (core/fork_options.py rejection_rows, the forks' filter and cut step for step): used by most "
            "scripts that pass it, and small; the step's batch size varies, as in the forks"),
    ForkKey("trainer.rejection_sample_multiplier", f"{_RLLM}, {_SKYWORK}", "10+",
            "implemented: the prompts a step loads with trainer.rejection_sample, as a multiple of train_batch_size"),
    ForkKey("trainer.remove_clip", _SIMPLERL, "10+",
            "implemented (core/fork_options.py truncated; the trainer drops those samples from both losses): small and "
            "exactly defined"),
    ForkKey("actor_rollout_ref.rollout.micro_rollout_batch_size", _SIMPLERL, "1 (SimpleRL-Zoo's own script)",
            "accepted with a notice: a memory key (its vLLM generate calls in chunks of prompts), the same samples"),
    ForkKey("trainer.remove_previous_ckpt", _SIMPLERL, "10+",
            "accepted as max_ckpt_to_keep=1 (the fork deletes the previous checkpoint at each save)"),
    *(ForkKey(f"actor_rollout_ref.actor.adaptive_entropy.{name}", _SKYWORK, "6 (in the search, and all 6 of Skywork-OR1's own)",
              _ADAPTIVE)
      for name in ("enabled", "target_entropy", "max_ent_coef", "min_ent_coef", "delta_ent_coef")),
    ForkKey("trainer.stats_path", _SKYWORK, "6 (Skywork-OR1's own)",
            "refused: files of per-step statistics, which metrics.jsonl and trainer.rollout_data_dir cover"),
    ForkKey("trainer.stats_save_freq", _SKYWORK, "6 (Skywork-OR1's own)", "refused with trainer.stats_path"),
    ForkKey("rllm.mask_truncated_samples", "rllm (its own trainer, not verl's main_ppo)", "10+",
            "refused with every rllm.* key: rllm's agent trainer is another entry point; its older fork's "
            "algorithm.mask_truncated_samples is implemented"),
)
