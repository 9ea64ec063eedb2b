"""DistributedOptimizer's gradient average against the sum of every rank's gradients,
gathered and added here: buckets of several sizes and dtypes, large ones split into many
blocks, a parameter without gradient on one rank and one without on every rank.
Writes "<shared>" to OUT.rank{r} when every check passes.

usage: mpiexec -n N python average.py OUT
"""

import sys
from pathlib import Path

import numpy as np

import retrograd as rg
from retrograd import distributed as dist
from retrograd import nn


def main(out: str) -> None:
    world = dist.init()
    shapes = [((37,), np.float64), ((5, 3), np.float32), ((300_001,), np.float32),
              ((70_001,), np.float64), ((4,), np.float32), ((2, 2), np.float64)]
    params = [nn.Parameter(rg.tensor(np.zeros(s, dt))) for s, dt in shapes]
    rng = np.random.default_rng(world.rank)
    grads = [rng.standard_normal(p.shape).astype(p.data.dtype) for p in params]
    for p, g in zip(params, grads):
        p.grad = rg.tensor(g.copy())
    if world.rank == world.size - 1:
        params[1].grad = None
        grads[1] = np.zeros_like(grads[1])
    params[4].grad = None  # no rank has one
    opt = dist.DistributedOptimizer(rg.optim.SGD(params, lr=0.0), bucket_mb=0.5)
    for _step in range(2):  # the second step reuses the buckets
        opt.synchronize()
        gathered = world.comm.allgather(grads)
        for k, p in enumerate(params):
            if k == 4:
                assert p.grad is None
                continue
            want = sum(g[k].astype(np.float64) for g in gathered) / world.size
            np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-5 if k in (1, 2) else 1e-12,
                                       atol=1e-6 if k in (1, 2) else 1e-13, err_msg=f"{k}")
            assert p.grad.dtype == p.dtype
        got = world.comm.allgather([p.grad.numpy() if p.grad is not None else None
                                    for p in params])
        for other in got:  # every rank holds the same bytes
            for a, b in zip(got[0], other):
                assert (a is None and b is None) or np.array_equal(a, b)
        grads = [g * 2 for g in grads]
        for p, g in zip(params, grads):
            if p.grad is not None:
                p.grad = rg.tensor(g.copy())
    shared = getattr(opt, "_groups", None) is not None
    Path(f"{out}.rank{world.rank}").write_text(str(shared))


if __name__ == "__main__":
    main(sys.argv[1])
