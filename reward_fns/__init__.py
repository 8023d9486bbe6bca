"""Built-in scorers, registered through the same hook as any third-party plugin.

Routing follows verl's ``default_compute_score`` so that verl users get the
same verdicts for the same data_source.
"""
from __future__ import annotations

import importlib

from rewardsmith.common.hooks import hookimpl

# (scorer name, module under rewardsmith.reward_fns, data sources it answers for)
BUILTIN_SCORERS: list[tuple[str, str, tuple[str, ...]]] = [
    ("gsm8k", "gsm8k", ("openai/gsm8k",)),
    ("math_reward", "math_reward", ("lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500")),
    ("math_dapo", "math_dapo", ("math_dapo", "math", "math_dapo_reasoning", "aime*")),
    ("math_verify", "math_verify_port", ("math_verify",)),
    ("prime_math", "prime_math", ("numina_aops_forum", "numina_synthetic_math", "numina_amc_aime",
                                  "numina_synthetic_amc", "numina_cn_k12", "numina_olympiads")),
    ("geo3k", "geo3k", ("hiyouga/geometry3k",)),
    ("search_r1_qa_em", "search_r1_qa_em", ("searchR1_*",)),
    ("math_answer", "math_answer", ()),
    ("sandbox_code", "code", ("codecontests", "apps", "codeforces", "taco")),
]


@hookimpl
def register_scorers(register):
    # One broken module must not hide the others: register what imports, then
    # report the rest (the plugin host keeps registrations made before a raise).
    failures = []
    for name, module, data_sources in BUILTIN_SCORERS:
        try:
            fn = importlib.import_module(f"{__name__}.{module}").compute_score
        except Exception as exc:  # noqa: BLE001 - reported below by name
            failures.append(f"{name} ({type(exc).__name__}: {exc})")
            continue
        register(name, fn, data_sources=data_sources)
    if failures:
        raise ImportError("built-in scorers failed to load: " + "; ".join(failures))


@hookimpl
def register_attacks(register):
    # Imported here, not at the top: training never pays for the stress families.
    from rewardsmith.reward_fns.attacks import CODE_FAMILIES, MATH_FAMILIES

    for name, fn in {**MATH_FAMILIES, **CODE_FAMILIES}.items():
        register(name, fn, data_sources=("*",))
