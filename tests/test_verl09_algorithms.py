"""verl 0.9's estimators (core/advantages.py): each equals verl 0.9.1's own function on random batches with
padding and groups, and a run trains with it through the trainer."""
import numpy as np
import pytest
import torch

from core_helpers import tiny_config
from test_policy_losses import verl_core_algos

from rewardsmith.common.errors import ConfigError
from rewardsmith.core.advantages import BUILTIN_ESTIMATORS
from rewardsmith.core.trainer import PPOTrainer

torch.set_num_threads(1)

INDEX = ["a"] * 4 + ["b"] * 3 + ["c"] + ["d"] * 2


def _padded_batch(seed: int, rows: int = len(INDEX), width: int = 7):
    """Right-padded responses (1..width valid tokens) with the score on the last valid token, as the trainer builds."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, width + 1, (rows,), generator=g)
    mask = (torch.arange(width).expand(rows, width) < lengths.unsqueeze(-1)).float()
    components = {"format_reward": torch.randint(0, 2, (rows,), generator=g).float(),
                  "accuracy_reward": torch.rand(rows, generator=g) * 3}
    rewards = torch.zeros(rows, width)
    rewards[torch.arange(rows), lengths - 1] = sum(components.values())
    return g, mask, rewards, components


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("norm_by_std", [True, False])
@pytest.mark.parametrize("weights", [None, [0.7, 2.0]])
def test_gdpo_equals_verls_function(seed, norm_by_std, weights):
    core_algos, _, _ = verl_core_algos()
    g, mask, rewards, components = _padded_batch(seed)
    keys = list(components)
    prompt = torch.ones(len(INDEX), 5, dtype=torch.long)
    verl_batch = {"prompts": prompt, "attention_mask": torch.cat([prompt, mask.long()], dim=-1)}
    config = {"gdpo_reward_keys": keys, "gdpo_reward_weights": weights}
    theirs = core_algos.get_adv_estimator_fn("gdpo")(
        token_level_rewards=rewards, response_mask=mask, index=np.array(INDEX, dtype=object),
        norm_adv_by_std_in_grpo=norm_by_std, config=config,
        non_tensor_batch={k: v.numpy() for k, v in components.items()}, batch=verl_batch)
    ours = BUILTIN_ESTIMATORS["gdpo"](
        token_level_rewards=rewards, response_mask=mask, index=INDEX, norm_adv_by_std_in_grpo=norm_by_std,
        reward_extra_info={k: v.tolist() for k, v in components.items()}, gdpo_reward_keys=keys,
        gdpo_reward_weights=weights)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_gdpo_without_components_equals_verls_fallback():
    """verl's function with no config normalises the total score alone: so does ours with no keys."""
    core_algos, _, _ = verl_core_algos()
    _, mask, rewards, _ = _padded_batch(5)
    theirs = core_algos.get_adv_estimator_fn("gdpo")(token_level_rewards=rewards, response_mask=mask,
                                                    index=np.array(INDEX, dtype=object))
    ours = BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards, response_mask=mask, index=INDEX)
    torch.testing.assert_close(ours[0], theirs[0], atol=1e-5, rtol=1e-5)


def test_gdpo_leaves_unscored_samples_out():
    """An unscored sample changes nobody's advantage: the same as the batch without it."""
    _, mask, rewards, components = _padded_batch(3)
    info = {k: v.tolist() for k, v in components.items()}
    info["format_reward"][1] = None  # an unscored sample may have returned nothing
    scored = torch.ones(len(INDEX), dtype=torch.bool)
    scored[1] = False
    kwargs = dict(gdpo_reward_keys=list(info))
    adv, _ = BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards, response_mask=mask, index=INDEX,
                                        reward_extra_info=info, scored=scored, **kwargs)
    keep = [i for i in range(len(INDEX)) if i != 1]
    alone, _ = BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards[keep], response_mask=mask[keep],
                                          index=[INDEX[i] for i in keep],
                                          reward_extra_info={k: [v[i] for i in keep] for k, v in info.items()}, **kwargs)
    assert not adv[1].any()
    torch.testing.assert_close(adv[keep], alone, atol=1e-6, rtol=1e-6)


def test_gdpo_names_a_component_the_reward_did_not_return():
    _, mask, rewards, components = _padded_batch(0)
    with pytest.raises(KeyError, match=r"'length_reward' is not a key the reward function returned .*accuracy_reward, "
                                       r"format_reward"):
        BUILTIN_ESTIMATORS["gdpo"](token_level_rewards=rewards, response_mask=mask, index=INDEX,
                                   reward_extra_info={k: v.tolist() for k, v in components.items()},
                                   gdpo_reward_keys=["length_reward"])


def test_gdpo_needs_its_reward_keys(tmp_path):
    with pytest.raises(ConfigError, match="gdpo_reward_keys"):
        tiny_config(tmp_path, "algorithm.adv_estimator=gdpo")


COMPONENT_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    digits = sum(ch.isdigit() for ch in solution_str) / max(1, len(solution_str))
    short = float(len(solution_str) < 6)
    return {"score": digits + short, "digits": digits, "short": short}
'''


def test_a_run_trains_with_gdpo(tmp_path):
    reward = tmp_path / "components.py"
    reward.write_text(COMPONENT_REWARD)
    trainer = PPOTrainer(tiny_config(tmp_path, "algorithm.adv_estimator=gdpo", f"custom_reward_function.path={reward}",
                                     "algorithm.gdpo_reward_keys=[digits,short]", "algorithm.gdpo_reward_weights=[1.0,0.5]"))
    try:
        before = {k: v.clone() for k, v in trainer.actor.model.state_dict().items()}
        last = trainer.fit()
        after = trainer.actor.model.state_dict()
    finally:
        trainer.close()
    assert torch.isfinite(torch.tensor(last["actor/pg_loss"]))
    assert any(not torch.equal(before[k], after[k]) for k in before)
