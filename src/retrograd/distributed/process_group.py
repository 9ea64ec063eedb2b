"""PyTorch's process-group names (`torch.distributed.init_process_group` and kin), so
scripts that import them unconditionally (nanoGPT's train.py) run in one process.

retrograd's multi-process training is MPI's (`rg.distributed.init()` under `mpiexec`),
not torchrun's process groups: no group is ever initialized here, and asking for one is
refused with a pointer to `init()` rather than silently training one replica.
"""

from __future__ import annotations

import enum

__all__ = ["is_initialized", "is_available", "init_process_group", "destroy_process_group",
           "ReduceOp", "get_rank", "get_world_size", "all_reduce", "all_gather", "broadcast",
           "reduce"]

_NO_GROUP = ("Default process group has not been initialized, please make sure to call "
             "init_process_group. (retrograd has no PyTorch process groups: under mpiexec, "
             "use rg.distributed.init(), rank(), size() and allreduce())")


class ReduceOp(enum.Enum):
    """PyTorch's reduction names, for code that names them before checking for a group."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    AVG = "avg"


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


def get_rank(group=None) -> int:
    """As PyTorch without an initialized group: ValueError (see `rg.distributed.rank`)."""
    raise ValueError(_NO_GROUP)


def get_world_size(group=None) -> int:
    """As PyTorch without an initialized group: ValueError (see `rg.distributed.size`)."""
    raise ValueError(_NO_GROUP)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """As PyTorch without an initialized group: ValueError (see `rg.distributed.allreduce`)."""
    raise ValueError(_NO_GROUP)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """As PyTorch without an initialized group: ValueError."""
    raise ValueError(_NO_GROUP)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """As PyTorch without an initialized group: ValueError (see `broadcast_parameters`)."""
    raise ValueError(_NO_GROUP)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst=None):
    """As PyTorch without an initialized group: ValueError."""
    raise ValueError(_NO_GROUP)
