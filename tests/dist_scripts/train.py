"""Data-parallel training of a small float64 MLP: alone it is one rank, under
`mpiexec -n N` it is N. Writes OUT.rank{r}.npz with the final parameters, the
global mean loss of every step and a few metric reductions.

usage: python train.py OUT [STEPS]
"""

import sys

import numpy as np

import retrograd as rg
from retrograd import distributed as dist
from retrograd import nn


def main(out: str, steps: int) -> None:
    world = dist.init()
    rg.manual_seed(100 + world.rank)  # different weights per rank until the broadcast
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).double()
    versions = [p._version for p in model.parameters()]
    dist.broadcast_parameters(model)
    moved = [p._version > v for p, v in zip(model.parameters(), versions)]
    assert all(moved) or world.size == 1, "broadcast_parameters must count as an in-place write"
    opt = dist.DistributedOptimizer(rg.optim.Adam(model.parameters(), lr=0.05),
                                    bucket_mb=0.0005)  # ~500 bytes: several buckets
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((70, 6)), rng.integers(0, 3, 70)
    batch = 16 if 16 % world.size == 0 else 6 * world.size  # the global batch
    loader = rg.data.DataLoader((X, y), batch_size=batch, shuffle=True, seed=1,
                                shard=(world.rank, world.size))
    losses = []
    while len(losses) < steps:
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(dist.allreduce(loss.item(), op="mean"))
            if len(losses) == steps:
                break
    dist.check_replicas(model)
    r = world.rank + 1
    np.savez(f"{out}.rank{world.rank}.npz", losses=np.array(losses), size=world.size,
             shared=getattr(opt, "_groups", None) is not None,
             metric_sum=dist.allreduce(r, op="sum"), metric_max=dist.allreduce(r, op="max"),
             metric_mean=dist.allreduce(np.array([r, 10 * r]), op="mean"),
             metric_tensor=dist.allreduce(rg.tensor([float(r)]), op="sum").numpy(),
             **{name: p.numpy() for name, p in model.named_parameters()})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12)
