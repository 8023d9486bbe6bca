"""One rank of tests/test_fsdp_hybrid.py: a tiny random causal LM trained a few AdamW steps under FSDP2.

Run under torchrun (every rank takes its own slice of each fixed batch) or
alone (one process, the whole batch). Usage: ``hsdp_rank.py OUT_DIR FSDP_SIZE``.
Writes ``OUT_DIR/rank{r}.pt``: the full weights after the steps, this rank's
local shards, the mesh, the gradient norms, and the full weights one more step
on from there both in this process and after loading a checkpoint saved there.
"""
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, Qwen2Config

from rewardsmith.core.fsdp import FSDP2Strategy
from rewardsmith.core.schema import FSDPConfig

STEPS = 3
BATCH, LENGTH, VOCAB = 8, 12, 64
MAX_NORM = 0.05  # below the gradient norms, so clipping acts


def build(strategy: FSDP2Strategy, seed: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, object]:
    """The model (every dimension even, so a shard of two ranks is exactly half), sharded, with AdamW."""
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                         tie_word_embeddings=False)
    model = strategy.wrap(AutoModelForCausalLM.from_config(config))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    return model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)


def step(model, optimizer, strategy, batch: torch.Tensor) -> float:
    """One optimizer step; the loss is summed over this rank's rows and divided by the whole batch's tokens."""
    rows = batch.chunk(dist.get_world_size())[dist.get_rank()]
    logits = model(input_ids=rows).logits[:, :-1].float()
    loss = F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten(), reduction="sum") / batch[:, 1:].numel()
    loss.backward()
    norm = strategy.clip_grad_norm(model, MAX_NORM)
    optimizer.step()
    optimizer.zero_grad()
    return float(norm)


def full(strategy, model) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in strategy.full_weights(model)}


def main(out: Path, fsdp_size: int) -> None:
    strategy = FSDP2Strategy(torch.device("cpu"), FSDPConfig(fsdp_size=fsdp_size))
    model, optimizer, scheduler = build(strategy, seed=0)
    data = torch.randint(0, VOCAB, (STEPS + 1, BATCH, LENGTH), generator=torch.Generator().manual_seed(1))
    norms = [step(model, optimizer, strategy, batch) for batch in data[:STEPS]]
    weights = full(strategy, model)
    mesh = next(model.parameters()).device_mesh
    local = {name: p.to_local().detach().clone() for name, p in model.named_parameters()}
    strategy.save(out / "checkpoint", model, optimizer, scheduler)
    step(model, optimizer, strategy, data[STEPS])
    continued = full(strategy, model)
    model, optimizer, scheduler = build(strategy, seed=1)
    strategy.load(out / "checkpoint", model, optimizer, scheduler)
    loaded = full(strategy, model)
    step(model, optimizer, strategy, data[STEPS])
    torch.save({"weights": weights, "local": local, "norms": norms, "mesh_shape": tuple(mesh.shape),
                "mesh_dim_names": mesh.mesh_dim_names, "loaded": loaded, "continued": continued,
                "resumed": full(strategy, model)}, out / f"rank{dist.get_rank()}.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
