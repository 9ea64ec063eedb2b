"""`DistributedOptimizer`: average the gradients over the ranks, then step.

Horovod's design. The parameters, in the wrapped optimizer's order, are laid
out once into fixed buckets per dtype (about `bucket_mb` each, one buffer
each, reused at every step); at every `step()` each bucket is filled with the
gradients (zeros for a parameter whose `.grad` is None, so every rank sends
the same sizes), summed over the ranks, divided by the number of ranks and
written back into the gradients (in place, as PyTorch's DDP does); then the
wrapped optimizer steps. The ranks of one node sum in a shared-memory window
(`shared_memory.py`), nodes hierarchically; elsewhere one in-place MPI
`Allreduce` per bucket does it. Each bucket
carries, after the gradients, one slot per parameter counting the ranks that
had a gradient, so a parameter that no rank touched keeps `.grad = None`
everywhere (as the optimizers expect) and one touched anywhere gets the
average on every rank.

Every rank receives the same reduced bytes, so replicas that start equal
(`broadcast_parameters`) stay bit-identical; and with a fixed process count
the reduction order is fixed, so reruns are bit-identical too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..grad_mode import enable_grad
from ..tensor import Tensor
from .params import first_difference
from .shared_memory import SharedBucket, node_groups
from .world import agree, init

__all__ = ["DistributedOptimizer"]


class _Bucket:
    """One dtype's run of parameters: `entries` are (param, offset, numel)."""

    __slots__ = ("dtype", "entries", "numel", "buffer", "shared")

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = dtype
        self.entries: list[tuple[Tensor, int, int]] = []
        self.numel = 0
        self.buffer: np.ndarray | None = None
        self.shared: SharedBucket | None = None

    def add(self, p: Tensor) -> None:
        self.entries.append((p, self.numel, p.data.size))
        self.numel += p.data.size


def _set_grad(p: Tensor, total: np.ndarray, n: int) -> None:
    """Write the average `total / n` into `p.grad`'s own array (as PyTorch's allreduce
    does), or into a new one where there is none to write into (never a view of `total`,
    which the next step overwrites). The engine never lets a `.grad` alias another array,
    so an owned one can be overwritten."""
    g = p.grad
    if g is not None and not g.requires_grad and g.data.base is None \
            and g.data.dtype == total.dtype and g.data.flags.writeable:
        if n == 1:
            np.copyto(g.data, total)
        else:
            np.divide(total, n, out=g.data)
        if g._vc is not None:
            g._vc[0] += 1
    else:
        p.grad = Tensor._wrap(total.copy() if n == 1 else total / n)


class DistributedOptimizer:
    """Wrap any `rg.optim` optimizer so that `step()` first averages gradients over ranks.

    `bucket_mb` is the size in MiB of one allreduce message (a larger
    parameter gets a bucket of its own). `zero_grad`, `state_dict`,
    `load_state_dict`, `param_groups` and `state` are the wrapped optimizer's.
    With one rank, `step()` is the wrapped optimizer's step.
    """

    def __init__(self, optimizer, bucket_mb: float = 25) -> None:
        if isinstance(optimizer, DistributedOptimizer):
            raise TypeError("DistributedOptimizer: the optimizer is already distributed "
                            "(wrapping it twice would average twice)")
        if not hasattr(optimizer, "param_groups") or not callable(getattr(optimizer, "step",
                                                                          None)):
            raise TypeError(f"DistributedOptimizer: expected an rg.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        if isinstance(bucket_mb, bool) or not isinstance(bucket_mb, (int, float)) \
                or not math.isfinite(bucket_mb) or bucket_mb <= 0:
            raise ValueError(f"DistributedOptimizer: bucket_mb must be a positive number of "
                             f"MiB, got {bucket_mb!r}")
        self.optimizer = optimizer
        self.bucket_mb = bucket_mb
        self.world = init()
        self._layout_key: tuple | None = None
        self._buckets: list[_Bucket] = []
        self._groups = node_groups(self.world) if self.world.size > 1 else None
        if self.world.size > 1:
            self._layout()

    # ------------------------------------------------------------ layout

    def _params(self) -> list[Tensor]:
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def _layout(self) -> list[_Bucket]:
        """The buckets for the current parameters; rebuilt (and re-checked across ranks)
        only when the parameters, their shapes or dtypes change."""
        params = self._params()
        key = tuple((id(p), p.data.shape, p.data.dtype.str) for p in params)
        if key == self._layout_key:
            return self._buckets
        sig = [(f"parameter {k}", p.data.shape, p.data.dtype.str) for k, p in enumerate(params)]
        diff = first_difference(agree(self.world, sig), 0)
        if diff is not None:
            raise ValueError(f"DistributedOptimizer: the ranks' optimizers hold different "
                             f"parameters (in param_groups order): {diff}")
        limit = self.bucket_mb * 2 ** 20
        open_buckets: dict[str, _Bucket] = {}
        buckets: list[_Bucket] = []
        for p in params:
            dt = p.data.dtype
            b = open_buckets.get(dt.str)
            if b is None or (b.numel + p.data.size) * dt.itemsize > limit and b.entries:
                b = open_buckets[dt.str] = _Bucket(dt)
                buckets.append(b)
            b.add(p)
        for old in self._buckets:
            if old.shared is not None:
                old.shared.free()
        for b in buckets:  # gradients, then one "has a gradient" count per parameter
            if self._groups is None:
                b.buffer = np.empty(b.numel + len(b.entries), dtype=b.dtype)
            else:
                b.shared = SharedBucket(self._groups, b.numel + len(b.entries), b.dtype,
                                        self.world.size)
                b.buffer = b.shared.buffer
        self._layout_key, self._buckets = key, buckets
        return buckets

    # ------------------------------------------------------------ the step

    def synchronize(self) -> None:
        """Replace every parameter's gradient by its average over the ranks (what `step()`
        does before stepping)."""
        world = self.world
        if world.size == 1:
            return
        comm, mpi, n = world.comm, world.mpi, world.size
        for b in self._layout():
            buf = b.buffer
            for k, (p, off, size) in enumerate(b.entries):
                g = p.grad
                if g is None:
                    buf[off:off + size] = 0
                    buf[b.numel + k] = 0
                else:
                    if g.data.shape != p.data.shape:
                        raise ValueError(f"DistributedOptimizer: a gradient of shape "
                                         f"{g.data.shape} on a parameter of shape "
                                         f"{p.data.shape}")
                    buf[off:off + size] = g.data.reshape(-1)
                    buf[b.numel + k] = 1
            if b.shared is not None:  # averaged in shared memory: copied out as it is
                b.shared.average()
                scale = 1
            else:
                comm.Allreduce(mpi.IN_PLACE, buf, op=mpi.SUM)
                scale = n
            for k, (p, off, size) in enumerate(b.entries):
                if buf[b.numel + k] != 0:
                    _set_grad(p, buf[off:off + size].reshape(p.data.shape), scale)

    def step(self, closure: Callable | None = None) -> Any:
        """Average the gradients over the ranks, then take the wrapped optimizer's step.

        A `closure` is called first (with grad enabled) to compute the loss and
        gradients; its result is returned.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self.synchronize()
        self.optimizer.step()
        return loss

    # ------------------------------------------------------------ pass-through

    @property
    def param_groups(self) -> list[dict]:
        return self.optimizer.param_groups

    @property
    def state(self) -> dict:
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)

    def state_dict(self) -> dict:
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        self.optimizer.load_state_dict(state_dict)

    def add_param_group(self, param_group: dict) -> None:
        self.optimizer.add_param_group(param_group)

    def __getattr__(self, name: str):
        if name == "optimizer":  # not set yet (during __init__)
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def __repr__(self) -> str:
        return (f"DistributedOptimizer(rank={self.world.rank}, size={self.world.size}, "
                f"bucket_mb={self.bucket_mb}, {self.optimizer!r})")
