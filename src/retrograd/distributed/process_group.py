"""PyTorch's process-group names (`torch.distributed.init_process_group` and kin), so
scripts that import them unconditionally (nanoGPT's train.py) run in one process.

retrograd's multi-process training is MPI's (`rg.distributed.init()` under `mpiexec`),
not torchrun's process groups: no group is ever initialized here, and asking for one is
refused with a pointer to `init()` rather than silently training one replica.
"""

from __future__ import annotations

__all__ = ["is_initialized", "is_available", "init_process_group", "destroy_process_group"]


def is_available() -> bool:
    """Whether PyTorch-style process groups can be made: never in retrograd."""
    return False


def is_initialized() -> bool:
    """Whether a default process group exists: never (see `rg.distributed.init`)."""
    return False


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Refused: retrograd trains over MPI; use `rg.distributed.init()` under mpiexec."""
    raise NotImplementedError(
        "init_process_group is not supported: retrograd's distributed training runs over "
        "MPI; call rg.distributed.init() and launch with mpiexec (retrograd[dist])")


def destroy_process_group(group=None) -> None:
    """As PyTorch without an initialized group: AssertionError."""
    raise AssertionError("Process group cannot be None")
