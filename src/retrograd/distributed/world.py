"""The world of ranks: MPI when a launcher started us, one rank of size 1 when not.

mpi4py is imported only here, and only when a launcher's variables say this
process is one of several. A launcher that starts N processes which do not
see each other (a plain `srun` on a site without PMI by default) would make N
copies of the same training; `init` compares the launcher's count with MPI's
and refuses. Once there are several ranks, an uncaught exception on any of
them prints its rank and aborts the whole job, so no rank waits forever in a
collective for a partner that has died.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tensor import Tensor

__all__ = ["World", "init", "rank", "size", "barrier", "allreduce"]

# The first one set names the launcher: MPICH/Intel MPI (Hydra, PMI-1/2), Open MPI,
# MVAPICH, then Slurm's own count for the step (srun) or the allocation.
LAUNCHER_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE",
                 "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS")


@dataclass(frozen=True)
class World:
    """This process's place among the ranks: `rank` in `0..size-1`.

    `comm` is mpi4py's `COMM_WORLD` (None with one rank and no MPI) and
    `mpi` the `mpi4py.MPI` module, for callers that want MPI itself.
    """

    rank: int
    size: int
    comm: Any = None
    mpi: Any = None

    def __repr__(self) -> str:
        return f"World(rank={self.rank}, size={self.size})"


_world: World | None = None


def launcher_size(environ=None) -> tuple[str | None, int]:
    """`(variable, count)` from the first launcher variable that is set, or `(None, 1)`."""
    env = os.environ if environ is None else environ
    for var in LAUNCHER_VARS:
        value = env.get(var)
        if value:
            try:
                return var, int(value)
            except ValueError:
                raise RuntimeError(f"rg.distributed: the launcher variable {var}={value!r} is not "
                                   "a whole number") from None
    return None, 1


def init() -> World:
    """Join the job's ranks and return the `World` (the same object on every later call).

    Without a launcher everything is one rank of size 1 and MPI is not touched.
    Raises if the launcher's rank count differs from MPI's, or if the launcher
    started several ranks but mpi4py is missing.
    """
    global _world
    if _world is not None:
        return _world
    var, expected = launcher_size()
    if var is None:
        _world = World(0, 1)
        return _world
    try:
        from mpi4py import MPI
    except ImportError as e:
        if expected > 1:
            raise ImportError(
                f"rg.distributed: the launcher says this job has {expected} ranks ({var}="
                f"{expected}), but mpi4py is not installed, so each rank would train alone. "
                "Install the [dist] extra (pip install 'retrograd[dist]'), or on a cluster "
                "`pip install mpi4py` built against the site's MPI") from e
        _world = World(0, 1)
        return _world
    comm = MPI.COMM_WORLD
    n, r = comm.Get_size(), comm.Get_rank()
    if n != expected:
        raise RuntimeError(
            f"rg.distributed: the launcher started {expected} ranks ({var}={expected}) but MPI "
            f"sees {n} in COMM_WORLD (this is rank {r}): the processes cannot reach each other "
            "and would train as independent copies. Under Slurm, launch with the site's PMI, "
            "e.g. `srun --mpi=pmix` or `srun --mpi=pmi2`, and make sure mpi4py was built "
            "against the MPI that srun speaks to; locally, use the mpiexec that belongs to the "
            "MPI mpi4py was built with")
    if n > 1:
        _abort_on_uncaught_exception(comm, r, n)
    _world = World(r, n, comm, MPI)
    return _world


def _abort_on_uncaught_exception(comm, r: int, n: int) -> None:
    """Make an uncaught exception on this rank print its rank and abort every rank."""
    previous = sys.excepthook

    def hook(etype, value, tb):
        try:
            sys.stdout.flush()
            if previous is sys.__excepthook__:  # one write: the launcher forwards it whole
                text = "".join(traceback.format_exception(etype, value, tb))
                sys.stderr.write(f"rg.distributed: rank {r} of {n} raised an uncaught "
                                 f"{etype.__name__}; aborting all ranks\n{text}")
            else:
                sys.stderr.write(f"rg.distributed: rank {r} of {n} raised an uncaught "
                                 f"{etype.__name__}; aborting all ranks\n")
                previous(etype, value, tb)
            sys.stderr.flush()
            time.sleep(0.2)  # let the launcher's output forwarding drain before the kill
        finally:
            comm.Abort(1)

    sys.excepthook = hook


def rank() -> int:
    """This process's rank (0 without a launcher)."""
    return init().rank


def size() -> int:
    """The number of ranks (1 without a launcher)."""
    return init().size


def barrier() -> None:
    """Wait until every rank has reached this call."""
    world = init()
    if world.size > 1:
        world.comm.Barrier()


def agree(world: World, value) -> list:
    """Every rank's `value` (a small picklable description), gathered on every rank.

    Used before a collective whose buffers must have the same size everywhere,
    so that a mismatch is an error instead of a hang or garbage.
    """
    return world.comm.allgather(value)


_REDUCE_OPS = ("mean", "sum", "max", "min")


def allreduce(value, op: str = "mean"):
    """Reduce a metric over all ranks: `op` is "mean", "sum", "max" or "min".

    Takes a Python number, a NumPy array or scalar, or a Tensor, and returns the
    same kind (a new object; a Tensor result records no graph). A mean is a
    float (float64 unless the input is a floating array). Every rank must pass
    the same shape and dtype; a difference raises on every rank.
    """
    if op not in _REDUCE_OPS:
        raise ValueError(f"allreduce: op must be one of {', '.join(map(repr, _REDUCE_OPS))}, "
                         f"got {op!r}")
    kind = "tensor" if isinstance(value, Tensor) else "array" \
        if isinstance(value, (np.ndarray, np.generic)) else "number"
    if kind == "number" and (not isinstance(value, (int, float)) or isinstance(value, complex)):
        raise TypeError(f"allreduce: expected a number, NumPy array or Tensor, got "
                        f"{type(value).__name__}")
    arr = np.array(value.data if kind == "tensor" else value, order="C")
    if arr.dtype.kind not in "biuf" or arr.dtype == np.float16:
        raise TypeError(f"allreduce: dtype {arr.dtype} is not supported (bool, integer, "
                        "float32 or float64)")
    is_bool = arr.dtype.kind == "b"
    if is_bool:
        arr = arr.astype(np.int64)
    world = init()
    if world.size > 1:
        sigs = agree(world, (arr.shape, arr.dtype.str))
        for r, sig in enumerate(sigs):
            if sig != sigs[0]:
                raise ValueError(f"allreduce: rank 0 passed shape {sigs[0][0]} "
                                 f"{np.dtype(sigs[0][1])} but rank {r} passed shape {sig[0]} "
                                 f"{np.dtype(sig[1])}")
        mpi = world.mpi
        mpi_op = {"mean": mpi.SUM, "sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}[op]
        world.comm.Allreduce(mpi.IN_PLACE, arr, op=mpi_op)
    if op == "mean":
        arr = arr / world.size if arr.dtype.kind == "f" else arr.astype(np.float64) / world.size
    elif is_bool and op in ("max", "min"):
        arr = arr.astype(bool)
    if kind == "tensor":
        return Tensor._wrap(arr)
    if kind == "number":
        return arr.item()
    return arr[()] if isinstance(value, np.generic) else arr
