"""`rg.distributed`: data-parallel training over MPI (mpi4py), Horovod's way.

    world = rg.distributed.init()                 # rank, size (1 without a launcher)
    rg.distributed.broadcast_parameters(model)    # rank 0's weights everywhere
    opt = rg.distributed.DistributedOptimizer(rg.optim.SGD(model.parameters(), lr=0.1))
    loader = rg.data.DataLoader((X, y), batch_size=512, shuffle=True, seed=0,
                                shard=(world.rank, world.size))   # 512 is the global batch
    for xb, yb in loader:
        opt.zero_grad(); loss_fn(model(xb), yb).backward(); opt.step()
    rg.distributed.allreduce(metric, op="mean")

Run under `mpiexec -n N python train.py` (the [dist] extra installs mpi4py and
MPICH's mpiexec) or `srun --mpi=pmix` on a cluster. Importing this package does
not import mpi4py; `init()` does, and only when a launcher started the process.
"""

from .optimizer import DistributedOptimizer
from .params import broadcast_parameters, check_replicas
from .process_group import (
    ReduceOp,
    all_gather,
    all_reduce,
    broadcast,
    destroy_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    reduce,
)
from .world import World, allreduce, barrier, init, launcher_size, rank, size

__all__ = ["World", "init", "rank", "size", "barrier", "allreduce", "broadcast_parameters",
           "check_replicas", "DistributedOptimizer", "launcher_size", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "ReduceOp", "get_rank",
           "get_world_size", "all_reduce", "all_gather", "broadcast", "reduce"]
