"""Print this process's world, or the error init() raises."""

from retrograd import distributed as dist

try:
    print(dist.init(), flush=True)
except (RuntimeError, ImportError) as e:
    print(f"init failed: {e}", flush=True)
