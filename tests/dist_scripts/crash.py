"""Rank 1 raises; rank 0 waits at a barrier that rank 1 never reaches. The job
must end (non-zero) within seconds, naming rank 1."""

from retrograd import distributed as dist

world = dist.init()
if world.rank == 1:
    raise RuntimeError("deliberate failure on one rank")
dist.barrier()
print(f"rank {world.rank} passed the barrier", flush=True)
