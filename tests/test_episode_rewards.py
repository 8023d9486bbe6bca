"""Rewards of a multi-turn episode (core/episode_rewards.py, plugins/episode_rewards.py): the tools' own rewards and
the interaction's score reach the scorer and the reward components, turn rewards sit on the tokens where the turns
end, and an episode whose tool server was unreachable or hung is unscored, counted, without stopping the step."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

from multi_turn_helpers import TOOL, ScriptedEngine, tool_tokenizer
from core_helpers import no_argument_schema, tiny_config
from rewardsmith.common.config import ConfigError
from rewardsmith.common.rows import write_rows
from rewardsmith.core.batch import Batch
from rewardsmith.core.multi_turn import MultiTurnRollout, episode_metrics, multi_turn_engine
from rewardsmith.core.rollout import SamplingParams
from rewardsmith.core.schema import MultiTurnConfig
from rewardsmith.core.trainer import PPOTrainer
from rewardsmith.plugins.loader import get_registry
from rewardsmith.reward_fns.tools import BaseTool, ToolResponse
from rewardsmith.sandbox.testing import free_port
from test_tools import GSM8K_INTERACTION_CONFIG, GSM8K_TOOL_CONFIG, search_config

torch.set_num_threads(1)

MODEL = ("{model_type: qwen2, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, "
         "num_key_value_heads: 2, max_position_embeddings: 512, tie_word_embeddings: true}")
GSM8K = "calc_gsm8k_reward"


def prompts(*questions: str, extra_info=None) -> Batch:
    return Batch(meta={"raw_prompt": [[{"role": "user", "content": q}] for q in questions],
                       "extra_info": list(extra_info or [None] * len(questions)), "uid": [str(i) for i in range(len(questions))]})


def gsm8k_script(conversation: str) -> str:
    """A question with "tool" in it: a wrong answer to the gsm8k tool, then a right one, then the final answer;
    any other question: the final answer at once, the tool never called."""
    if "tool" not in conversation.split("<|end|>")[1]:
        return "#### 72"
    checked = conversation.count("Current parsed answer")
    if checked < 2:
        return '<tool_call>{"name": "%s", "arguments": {"answer": "%s"}}</tool_call>' % (GSM8K, ("70", "72")[checked])
    return "#### 72"


def gsm8k_row_info() -> dict:
    # As verl's examples/data_preprocess/gsm8k_multiturn_w_tool.py and _w_interaction.py write a row.
    return {"tools_kwargs": {GSM8K: {"create_kwargs": {"ground_truth": "72"}}},
            "interaction_kwargs": {"name": "gsm8k", "query": "q", "ground_truth": "72"}}


def test_the_scorer_gets_each_tools_own_reward_and_the_interactions_score_in_verls_shape(tmp_path):
    (tmp_path / "tool.yaml").write_text(GSM8K_TOOL_CONFIG)
    (tmp_path / "interaction.yaml").write_text(GSM8K_INTERACTION_CONFIG)
    tok = tool_tokenizer()
    config = MultiTurnConfig(enable=True, tool_config_path=str(tmp_path / "tool.yaml"),
                             interaction_config_path=str(tmp_path / "interaction.yaml"))
    engine = multi_turn_engine(ScriptedEngine(tok, gsm8k_script), config, tok, get_registry(), None)
    out = engine.generate(prompts("use the tool: 6*12?", "say 6*12?", extra_info=[gsm8k_row_info()] * 2),
                          SamplingParams(n=1, max_new_tokens=400))
    called, direct = out.meta["extra_info"]
    # The tool's calc_reward after its last call (1.0: "72" is right); the interaction's turn scores under
    # verl's user_turn_rewards, and its calculate_score at the end.
    assert called["rollout_reward_scores"] == {GSM8K: 1.0, "user_turn_rewards": [1.0]}
    assert called["interaction_score"] == 1.0 and called["tool_rewards"] == [-0.05, 0.0]
    # A tool the row offers but the model never called: a fresh instance's calc_reward, as verl's sglang rollout.
    assert direct["rollout_reward_scores"] == {GSM8K: 0.0, "user_turn_rewards": [1.0]}
    assert direct["tool_calls"] == [] and direct["interaction_score"] == 1.0
    # Each assistant turn's own rewards, and where it ends.
    first, second = out.meta["multi_turn"]
    assert first["turn_rewards"] == [-0.05, 0.0, 1.0] and second["turn_rewards"] == [1.0]
    mask = out["response_mask"][0]
    assert [int(mask[p]) for p in first["turn_ends"]] == [1, 1, 1]
    assert all(mask[p + 1] == 0 for p in first["turn_ends"][:-1])
    assert engine.tools[GSM8K]._instances == {}  # every instance, the fresh ones too, released


class KeptTool(BaseTool):
    """Remembers ``calc_reward_kwargs``; its calc_reward raises when ``config.broken``."""

    def __init__(self, config, tool_schema=None):
        super().__init__(config, no_argument_schema(config["name"]))
        self.seen: list[dict] = []

    async def execute(self, instance_id, parameters, **kwargs):
        return ToolResponse(text="kept"), 0.25, {}

    async def calc_reward(self, instance_id, **kwargs):
        if self.config.get("broken"):
            raise RuntimeError("no reward today")
        self.seen.append(kwargs)
        return kwargs["bonus"]


def test_calc_reward_gets_the_rows_kwargs_and_a_failing_one_costs_only_its_reward_counted():
    tools = {"good": KeptTool({"name": "good"}), "bad": KeptTool({"name": "bad", "broken": True})}
    tok = tool_tokenizer()

    def script(conversation: str) -> str:
        if TOOL in conversation:
            return "done"
        return '<tool_call>{"name": "good", "arguments": {}}</tool_call><tool_call>{"name": "bad", "arguments": {}}</tool_call>'

    engine = MultiTurnRollout(ScriptedEngine(tok, script), tok, tools, MultiTurnConfig(enable=True, max_parallel_calls=2),
                              [tok.eos_token_id])
    info = {"tools_kwargs": {"good": {"calc_reward_kwargs": {"bonus": 0.75}}}}
    out = engine.generate(prompts("q", extra_info=[info]), SamplingParams(n=1, max_new_tokens=300))
    got = out.meta["extra_info"][0]
    assert tools["good"].seen == [{"bonus": 0.75}]
    assert got["rollout_reward_scores"] == {"good": 0.75, "user_turn_rewards": []}
    assert [c["status"] for c in got["tool_calls"]] == ["ok", "ok"] and got["tool_rewards"] == [0.25, 0.25]
    metrics = episode_metrics(out)
    assert metrics["tool/bad/reward_failed"] == 1 and metrics["tool/bad/failures"] == 0
    assert metrics["tool/good/reward_failed"] == 0


# -- training: components, turn rewards, unavailable tools ---------------------------------------------------------

ANSWER_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 0.5 if solution_str.endswith("#### " + ground_truth) else 0.0
'''


def gsm8k_trainer(tmp_path: Path, *extra: str, questions=("use the tool: 6*12?", "say 6*12?")) -> PPOTrainer:
    tok_dir = tmp_path / "tool_tokenizer"
    tool_tokenizer().save_pretrained(tok_dir)
    (tmp_path / "tools.yaml").write_text(GSM8K_TOOL_CONFIG)
    (tmp_path / "reward.py").write_text(ANSWER_REWARD)
    rows = [{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": q}], "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": "72"},
             "extra_info": {"index": i, "tools_kwargs": gsm8k_row_info()["tools_kwargs"]}}
            for i, q in enumerate(questions * 2)]
    write_rows(tmp_path / "episodes.jsonl", rows)
    config = tiny_config(tmp_path, f"data.tokenizer={tok_dir}", f"actor_rollout_ref.model.config={MODEL}",
                         f"data.train_files={tmp_path / 'episodes.jsonl'}", f"data.val_files={tmp_path / 'episodes.jsonl'}",
                         "data.shuffle=false", "actor_rollout_ref.rollout.multi_turn.enable=true",
                         f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tmp_path / 'tools.yaml'}",
                         f"custom_reward_function.path={tmp_path / 'reward.py'}", "data.max_response_length=300",
                         "trainer.balance_batch=false", *extra)
    trainer = PPOTrainer(config)
    trainer.actor.rollout.inner = ScriptedEngine(trainer.actor.rollout.tokenizer, gsm8k_script)
    return trainer


COMPONENTS = ('reward_model.components={"openai/gsm8k": {answer: {kind: rule}, tool: {kind: tool_reward, tool: %s}, '
              'steps: {kind: tool_step_rewards}}}' % GSM8K)


def test_a_tools_reward_and_its_step_rewards_combine_with_the_scorer_as_weighted_components(tmp_path):
    trainer = gsm8k_trainer(tmp_path, COMPONENTS)
    try:
        batch, metrics = trainer.make_experience(next(trainer.prompt_batches))
    finally:
        trainer.close()
    # Weights 1, 1, 1: the reward is the sum. With the tool: 0.5 (answer) + 1.0 (the tool's reward of "72")
    # - 0.05 (the wrong first try's step reward); without: 0.5 + 0.0 (a fresh instance) + 0 (no steps).
    scores = batch["token_level_scores"].sum(-1)
    called = torch.tensor(["tool" in m[0]["content"] for m in batch.meta["raw_prompt"]])
    assert torch.allclose(scores[called], torch.tensor(1.45)) and torch.allclose(scores[~called], torch.tensor(0.5))
    assert metrics["reward/tool/mean"] == pytest.approx(0.5) and metrics["reward/steps/mean"] == pytest.approx(-0.025)
    assert metrics["reward/answer/mean"] == 0.5 and metrics["reward/unscored"] == 0


def test_a_component_kind_is_checked_by_key(tmp_path):
    with pytest.raises(ConfigError, match="tool.*is for tool_reward components; this component's kind is rule"):
        gsm8k_trainer(tmp_path, 'reward_model.components={"*": {answer: {kind: rule, tool: x}}}')
    with pytest.raises(ConfigError, match="turn_rewards_on_tokens.*needs multi_turn.enable=true"):
        tiny_config(tmp_path, "actor_rollout_ref.rollout.multi_turn.turn_rewards_on_tokens=true")


def test_turn_rewards_sit_where_their_turns_end_and_the_returns_see_them_there(tmp_path):
    trainer = gsm8k_trainer(tmp_path, "actor_rollout_ref.rollout.multi_turn.turn_rewards_on_tokens=true",
                            "algorithm.adv_estimator=gae", "algorithm.gamma=1.0", "algorithm.lam=1.0")
    try:
        batch, _ = trainer.make_experience(next(trainer.prompt_batches))
    finally:
        trainer.close()
    for i, episode in enumerate(batch.meta["multi_turn"]):
        scores, returns, mask = batch["token_level_scores"][i], batch["returns"][i], batch["response_mask"][i].bool()
        ends = episode["turn_ends"]
        expected = torch.zeros_like(scores)
        for end, reward in zip(ends, episode["turn_rewards"]):
            expected[end] += reward
        expected[ends[-1]] += 0.5  # the scorer's score on the last generated token
        assert torch.allclose(scores, expected), i
        if len(ends) == 3:  # the tool episode: -0.05 after turn 1, 0.0 after turn 2, 0.5 at the end
            assert torch.allclose(scores[ends], torch.tensor([-0.05, 0.0, 0.5]))
            # GAE with gamma = lam = 1 returns the reward-to-go over generated tokens: turn 1's tokens see -0.05 + 0.5, the later turns' only 0.5.
            first_turn, later = mask[: ends[0] + 1], mask.clone()
            later[: ends[0] + 1] = False
            assert torch.allclose(returns[: ends[0] + 1][first_turn], torch.tensor(0.45))
            assert torch.allclose(returns[later], torch.tensor(0.5))
    assert sum(len(e["turn_ends"]) == 3 for e in batch.meta["multi_turn"]) == 4


class HangingHandler(BaseHTTPRequestHandler):
    """A retrieval server that takes requests and never answers them (until the test releases it)."""

    release = threading.Event()

    def do_POST(self):  # noqa: N802 - http.server's name
        self.release.wait(30)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("server", ["unreachable", "hanging"])
def test_an_episode_whose_tool_server_fails_is_unscored_counted_and_the_step_goes_on(tmp_path, server):
    hanging = None
    if server == "hanging":
        HangingHandler.release.clear()
        hanging = ThreadingHTTPServer(("127.0.0.1", 0), HangingHandler)
        threading.Thread(target=hanging.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{hanging.server_address[1]}/retrieve"
    else:
        url = f"http://127.0.0.1:{free_port()}/retrieve"
    tools = Path(search_config(tmp_path, url))

    def script(conversation: str) -> str:  # a "search" question calls the search tool, others answer at once
        if "search" in conversation.split("<|end|>")[1] and TOOL not in conversation:
            return '<tool_call>{"name": "search", "arguments": {"query_list": ["six times twelve"]}}</tool_call>'
        return "#### 72"

    trainer = gsm8k_trainer(tmp_path, f"actor_rollout_ref.rollout.multi_turn.tool_config_path={tools}",
                            "actor_rollout_ref.rollout.multi_turn.tool_timeout_s=1", "algorithm.adv_estimator=grpo",
                            questions=("search 6*12?", "say 6*12?"))
    trainer.actor.rollout.inner = ScriptedEngine(trainer.actor.rollout.tokenizer, script)
    try:
        batch, metrics = trainer.make_experience(next(trainer.prompt_batches))
        metrics.update(episode_metrics(batch))
    finally:
        trainer.close()
        if hanging is not None:
            HangingHandler.release.set()
            hanging.shutdown()
    searched = torch.tensor(["search" in m[0]["content"] for m in batch.meta["raw_prompt"]])
    status = "unavailable" if server == "unreachable" else "timeout"
    assert all(c["status"] == status for i in searched.nonzero().flatten() for c in batch.meta["extra_info"][i]["tool_calls"])
    # Unscored, not 0: out of the advantages and every mean; the others scored as usual.
    assert torch.equal(batch["unscored"], searched)
    assert batch["advantages"][searched].abs().sum() == 0
    assert metrics["reward/tools_unavailable"] == 4 and metrics["reward/unavailable"] == 4
    assert metrics["reward/unscored"] == 4 and metrics["reward/mean"] == 0.5
    assert metrics[f"tool/search/{status}"] == 4 and metrics["tool/search/failures"] == 4


EPISODE_KEYS = ("num_turns/mean", "multi_turn/tool_calls_per_episode", "multi_turn/env_token_share",
                f"tool/{GSM8K}/calls", f"tool/{GSM8K}/failures", f"tool/{GSM8K}/latency_p50_ms", f"tool/{GSM8K}/latency_p99_ms",
                "val/num_turns/mean", f"val/tool/{GSM8K}/calls")


@pytest.mark.parametrize("package", ["wandb", "mlflow", "swanlab"])
def test_episode_metrics_reach_every_tracking_sink(tmp_path, monkeypatch, package):
    pytest.importorskip(package)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("SWANLAB_MODE", "offline")
    for var in ("WANDB_DIR", "MLFLOW_TRACKING_URI", "SWANLAB_LOG_DIR"):
        monkeypatch.delenv(var, raising=False)
    trainer = gsm8k_trainer(tmp_path, f"trainer.logger=[console,jsonl,{package}]", "trainer.total_training_steps=1",
                            "trainer.project_name=episodes")
    try:
        trainer.fit()
    finally:
        trainer.close()
    out = tmp_path / "run"
    (record,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # 2 of 4 prompts x 2 samples call the tool twice: 6 turns each (3 assistant, 2 tool rounds, + 1); the others 2.
    assert record["num_turns/mean"] == 4 and record["num_turns/max"] == 6 and record["num_turns/min"] == 2
    assert record[f"tool/{GSM8K}/calls"] == 8 and record[f"tool/{GSM8K}/failures"] == 0
    assert record["multi_turn/tool_calls_per_episode"] == 1 and record["multi_turn/tool_failure_rate"] == 0
    assert 0 < record["multi_turn/env_token_share"] < 1
    assert 0 <= record[f"tool/{GSM8K}/latency_p50_ms"] <= record[f"tool/{GSM8K}/latency_p99_ms"]
    assert record["val/num_turns/mean"] == 4 and record[f"val/tool/{GSM8K}/calls"] == 4
    if package == "mlflow":
        from mlflow.tracking import MlflowClient

        client = MlflowClient((out / "mlruns").resolve().as_uri())
        (run,) = client.search_runs([client.get_experiment_by_name("episodes").experiment_id])
        for key in EPISODE_KEYS:
            assert [m.value for m in client.get_metric_history(run.info.run_id, key)] == [pytest.approx(record[key])], key
        return
    files = {"wandb": lambda: next(next((out / "wandb").glob("offline-run-*")).glob("run-*.wandb")),
             "swanlab": lambda: next(next((out / "swanlog").glob("run-*")).glob("run-*.swanlab"))}
    logged = files[package]().read_bytes()
    for key in EPISODE_KEYS:
        assert key.encode() in logged, key


def test_the_interactions_score_is_a_component_and_an_unavailable_episode_overrides_every_failure_policy(
        tmp_path, make_config):
    from rewardsmith.plugins.batch import RewardBatch
    from rewardsmith.plugins.factory import build_reward_manager
    from rewardsmith.reward_fns.interactions.gsm8k import Gsm8kInteraction

    tok = tool_tokenizer()
    engine = MultiTurnRollout(ScriptedEngine(tok, lambda text: "#### 72" if "6*12" in text else "#### 3"), tok, {},
                              MultiTurnConfig(enable=True, max_user_turns=2), [tok.eos_token_id],
                              interactions={"gsm8k": Gsm8kInteraction({"name": "gsm8k"})})
    info = {"interaction_kwargs": {"name": "gsm8k", "ground_truth": "72"}}
    out = engine.generate(prompts("6*12?", "2+2?", extra_info=[info, info]), SamplingParams(n=1, max_new_tokens=300))
    right, wrong = out.meta["extra_info"]
    assert (right["interaction_score"], wrong["interaction_score"]) == (1.0, 0.0)
    assert right["rollout_reward_scores"] == {"user_turn_rewards": [1.0]}
    unavailable = {"tool_calls": [{"name": "search", "status": "unavailable"}]}
    (tmp_path / "reward.py").write_text(ANSWER_REWARD)
    cfg = make_config(f"custom_reward_function.path={tmp_path / 'reward.py'}",
                      'reward_model.components={"*": {answer: {kind: rule, weight: 1, on_failure: raise}, '
                      'user: {kind: interaction_score, weight: 3, on_failure: zero}}}')
    rows = RewardBatch(["openai/gsm8k"] * 4, ["#### 72", "#### 3", "#### 72", "#### 72"], ["72"] * 4,
                       extra_infos=[right, wrong, {"index": 3}, unavailable])
    with build_reward_manager(cfg.reward_settings()) as manager:
        scored = manager(rows)
    # W = 4: 4 * (1 * answer + 3 * score) / 4; a single-turn row has no interaction score, so the answer's weight
    # carries all of W (4 * 0.5); the episode whose tool was unavailable is unscored, never raised or zeroed.
    assert scored.scores[:3].tolist() == [3.5, 0.0, 2.0]
    assert scored.unscored.tolist() == [False, False, False, True]
    assert scored.extra_info["reward_status"][3] == "unavailable"
    assert "'search' was unavailable" in scored.extra_info["reward_error"][3]
    assert scored.metrics["reward/tools_unavailable"] == 1 and scored.metrics["reward/user/abstained"] == 1
