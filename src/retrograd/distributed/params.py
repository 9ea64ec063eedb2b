"""Same weights on every rank: `broadcast_parameters` and `check_replicas`.

Both first gather every rank's list of (name, shape, dtype) and compare it
with the root's, so that ranks which built different models get, on every
rank, an error naming the first difference, instead of a hang or a broadcast
that silently fills the wrong tensors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from .. import engine
from ..tensor import Tensor
from .world import World, agree, init

__all__ = ["broadcast_parameters", "check_replicas"]


def named_tensors(obj, what: str) -> list[tuple[str, Tensor | np.ndarray]]:
    """(name, tensor) pairs of a Module (parameters, then buffers), a mapping such as a
    state_dict, or a sequence of tensors (named by position)."""
    if hasattr(obj, "named_parameters") and hasattr(obj, "named_buffers"):
        items = list(obj.named_parameters()) + list(obj.named_buffers())
    elif isinstance(obj, Mapping):
        items = [(str(k), v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple)):
        items = [(str(k), v) for k, v in enumerate(obj)]
    else:
        raise TypeError(f"{what}: expected a Module, a state_dict (mapping of name to Tensor) "
                        f"or a list of Tensors, got {type(obj).__name__}")
    for name, v in items:
        if not isinstance(v, (Tensor, np.ndarray)):
            raise TypeError(f"{what}: entry '{name}' is a {type(v).__name__}, not a Tensor or "
                            "NumPy array")
    return items


def _data(t) -> np.ndarray:
    return t.data if isinstance(t, Tensor) else t


def _describe(entry) -> str:
    name, shape, dtype = entry
    return f"'{name}' of shape {tuple(shape)} {np.dtype(dtype)}"


def first_difference(sigs: list[list], root: int) -> str | None:
    """A sentence naming the first entry where some rank's signature list differs from the
    root's, or None when all agree."""
    ref = sigs[root]
    for r, sig in enumerate(sigs):
        if sig == ref:
            continue
        k = next(i for i in range(max(len(ref), len(sig)))
                 if i >= len(ref) or i >= len(sig) or ref[i] != sig[i])
        if k >= len(sig):
            return (f"rank {root} has {len(ref)} tensors but rank {r} has only {len(sig)}; the "
                    f"first missing on rank {r} is {_describe(ref[k])}")
        if k >= len(ref):
            return (f"rank {r} has {len(sig)} tensors but rank {root} has only {len(ref)}; the "
                    f"first extra on rank {r} is {_describe(sig[k])}")
        return (f"tensor {k} differs: rank {root} has {_describe(ref[k])}, rank {r} has "
                f"{_describe(sig[k])}")
    return None


def _check_root(world: World, root, what: str) -> int:
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) \
            or not 0 <= root < world.size:
        raise ValueError(f"{what}: root must be a rank in 0..{world.size - 1}, got {root!r}")
    return int(root)


def _agree_on_layout(world: World, items, root: int, what: str, local_problem) -> None:
    sig = [(name, tuple(_data(t).shape), _data(t).dtype.str) for name, t in items]
    gathered = agree(world, (sig, local_problem))
    for r, (_, problem) in enumerate(gathered):
        if problem is not None:
            raise ValueError(f"{what}: on rank {r}, {problem}")
    diff = first_difference([s for s, _ in gathered], root)
    if diff is not None:
        raise ValueError(f"{what}: the ranks' models differ: {diff}. Every rank must build the "
                         "same model (same layers, shapes and dtypes) in the same order")


def broadcast_parameters(model_or_state, root: int = 0) -> None:
    """Overwrite every parameter and buffer, in place, with the root rank's values.

    Takes a Module, a state_dict (its tensors share the module's arrays) or a
    list of Tensors. The ranks' names, shapes and dtypes are compared first;
    any difference raises on every rank, naming the first one. The writes
    count as in-place changes (version counters move), like `copy_`.
    """
    what = "broadcast_parameters"
    items = named_tensors(model_or_state, what)
    world = init()
    root = _check_root(world, root, what)
    problem = None
    for name, t in items:
        if not _data(t).flags.writeable:
            problem = f"'{name}' is read-only (a view from expand?); clone it first"
            break
    if world.size == 1:
        if problem is not None:
            raise ValueError(f"{what}: {problem}")
        return
    _agree_on_layout(world, items, root, what, problem)
    comm = world.comm
    for _, t in items:
        arr = _data(t)
        if arr.size == 0:
            continue
        if arr.flags.c_contiguous:
            comm.Bcast(arr, root=root)
        else:
            tmp = np.ascontiguousarray(arr)
            comm.Bcast(tmp, root=root)
            arr[...] = tmp
        if isinstance(t, Tensor):
            t._cell()[0] += 1
    engine.mark_inplace()


def check_replicas(model_or_state, root: int = 0) -> None:
    """Raise on every rank if any rank's parameters or buffers differ from the root's
    (bit for bit), naming the first tensor that differs and the ranks. A debugging aid:
    replicas trained with DistributedOptimizer should always pass."""
    what = "check_replicas"
    items = named_tensors(model_or_state, what)
    world = init()
    root = _check_root(world, root, what)
    if world.size == 1:
        return
    _agree_on_layout(world, items, root, what, None)
    digests = [hashlib.sha1(np.ascontiguousarray(_data(t)).tobytes()).hexdigest()
               for _, t in items]
    gathered = agree(world, digests)
    for k, (name, _) in enumerate(items):
        differ = [r for r in range(world.size) if gathered[r][k] != gathered[root][k]]
        if differ:
            raise ValueError(f"{what}: '{name}' on rank(s) {differ} differs from rank {root}'s "
                             "(the replicas have drifted apart)")
