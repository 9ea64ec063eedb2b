"""Library code that must compute with a tensor's values in Python asks here first.

Inside `rg.jit`, library code may read a traced tensor's `.data` (for shapes, dtypes and
devices), but a value read there (a branch, a Python result, a NumPy routine with no op, a
result whose shape depends on the values) would freeze the traced call's values into the
compiled program, and every replay would silently give that first answer. Such reads go
through `values_of`, which hands the array over in eager mode and raises `JitError` while
tracing, saying what to do instead.

Inside `rg.func.vmap` the same holds for a batched tensor: its `.data` is one batch
element's values (the others travel at the vmap level, see forward.py), so a value read
there would give every element the first one's answer. `values_of` and `refuse` raise for
a batched tensor too; code that has an ops route for the same result takes it when
`by_ops` says so, and `every_value` gives checks the values of every batch element.
"""

from __future__ import annotations

import numpy as np

from .devices import namespace_of
from .grad_mode import state
from .tensor import Tensor


def tracing() -> bool:
    """Whether `rg.jit` is tracing now (ops are being recorded into a program)."""
    return state.tracer is not None


def jit_error_type() -> type:
    """`rg.JitError` (imported at call time: jit sits above the modules that ask)."""
    from .jit import JitError

    return JitError


def jit_error(what: str, instead: str) -> Exception:
    """The `JitError` saying that `what` needs a traced tensor's values, and what to do."""
    return jit_error_type()(
        f"{what} inside rg.jit: it computes with the tensor's values in Python, which would "
        f"freeze this call's values into the compiled program; {instead}")


def batched(*tensors) -> bool:
    """Whether one of `tensors` is batched by an active `rg.func.vmap` (its `.data` then
    holds one batch element's values only)."""
    stack = state.forward
    if stack is None or not stack.vmapped:
        return False
    for t in tensors:
        fw = getattr(t, "_fw", None)
        if fw is not None and any(lv.vmap and lv in fw for lv in stack.levels):
            return True
    return False


def by_ops(*tensors) -> bool:
    """Must library code compute with ops rather than with these tensors' values in NumPy?
    Yes while `rg.jit` traces, or when one of them is batched by `rg.func.vmap`."""
    return state.tracer is not None or batched(*tensors)


def vmap_error(what: str, instead: str, t) -> RuntimeError:
    """The error saying that `what` needs the values of the batched tensor `t` in Python."""
    return RuntimeError(
        f"rg.func.vmap: {what} reads the values of a batched tensor (shape {tuple(t.shape)} "
        "per batch element) in Python, where each batch element has its own and only one "
        f"would be seen, so vmap cannot batch it; {instead}")


def refuse_batched(what: str, instead: str, *tensors) -> None:
    """Raise inside `rg.func.vmap` if one of `tensors` is batched: `what` needs its values."""
    for t in tensors:
        if batched(t):
            raise vmap_error(what, instead, t)


def refuse(what: str, instead: str, *tensors) -> None:
    """Raise `JitError` if tracing, or an error naming vmap if one of `tensors` is batched
    by `rg.func.vmap`: `what` needs their values in Python."""
    if state.tracer is not None:
        raise jit_error(what, instead)
    refuse_batched(what, instead, *tensors)


def values_of(t, what: str, instead: str):
    """`t`'s array, for library code that computes with its values in Python; while
    `rg.jit` traces, or if `t` is batched by `rg.func.vmap`, an error naming `what` and
    saying what to do `instead`."""
    refuse(what, instead, t)
    return t.data


def _full(t, levels: tuple):
    """(array, indices into `levels` of the vmap levels batching `t`, in the array's leading
    dimensions' order)."""
    fw = getattr(t, "_fw", None)
    if fw is not None:
        for k in range(len(levels) - 1, -1, -1):  # the innermost value holds the outer ones
            lv = levels[k]
            if lv.vmap and lv in fw:
                arr, present = _full(fw[lv], levels[:k])
                return arr, present + [k]
    return t.data, []


def every_values(*tensors) -> list:
    """The values of every batch element of each tensor, for checks that must hold for
    each (a batched tensor's `.data` holds one batch element's only): arrays with one
    leading dimension per active `rg.func.vmap` level (1 where that level does not batch
    the tensor), then each tensor's own shape padded on the left to the largest number of
    dimensions, so NumPy broadcasts them as the batch elements broadcast. Outside vmap,
    the tensors' arrays themselves."""
    stack = state.forward
    if stack is None or not stack.vmapped:
        return [t.data for t in tensors]
    levels = stack.levels
    vmaps = [k for k, lv in enumerate(levels) if lv.vmap]
    fulls = [_full(t, levels) for t in tensors]
    nd = max((t.ndim for t in tensors), default=0)
    out = []
    for t, (arr, present) in zip(tensors, fulls):
        sizes = dict(zip(present, arr.shape))
        prefix = tuple(sizes.get(k, 1) for k in vmaps)
        out.append(arr.reshape(prefix + (1,) * (nd - t.ndim) + tuple(t.shape)))
    return out


def every_value(t):
    """The values of every batch element of `t` (see `every_values`), for a check."""
    return every_values(t)[0]


def _attach(x, tangent, lv) -> None:
    """`tangent` as `x`'s batched value at vmap level `lv` (forward.set_tangent's effect,
    here so that the library's modules need not import the transforms)."""
    if x._fw is None:
        x._fw = {}
    x._fw[lv] = tangent
    lv._track(x)


def per_element(fn, *args):
    """`fn(*args)` inside `rg.func.vmap` for library code that computes with its tensor
    arguments' values in NumPy and gives no derivative (geqrf, ldl_factor, bincount, ...):
    `fn` once per batch element on plain tensors, each output's results stacked as its
    batched value, as torch.func.vmap's fallback loops over the batch. None (the caller
    then refuses as before) unless exactly one vmap level batches the arguments and none
    of them requires grad; results of different shapes raise as in torch."""
    st = state.forward
    if st is None or state.tracer is not None:
        return None
    tensors = [a for a in args if isinstance(a, Tensor)]
    live = [lv for lv in st.levels if any(t._fw is not None and lv in t._fw for t in tensors)]
    if len(live) != 1 or not live[0].vmap or (
            state.enabled and any(t.requires_grad for t in tensors)):
        return None
    lv = live[0]
    values = [a._fw[lv] if isinstance(a, Tensor) and a._fw is not None and lv in a._fw
              else None for a in args]
    if any(v is not None and (v._fw or v.requires_grad) for v in values):
        return None
    rows = []
    state.forward = None  # plain tensors, computed outside the transform
    try:
        for b in range(lv.batch[0]):
            rows.append(fn(*[a if v is None else Tensor._wrap(v.data[b])
                             for a, v in zip(args, values)]))
    finally:
        state.forward = st
    one = not isinstance(rows[0], tuple)
    cols = [[r] if one else list(r) for r in rows]
    outs = []
    for k, first in enumerate(cols[0]):
        parts = [c[k].data for c in cols]
        if any(p.shape != parts[0].shape for p in parts):
            raise RuntimeError(f"vmap: stack expects each tensor to be equal size, but got "
                               f"{list(parts[0].shape)} at entry 0 and "
                               f"{list(next(p.shape for p in parts if p.shape != parts[0].shape))}"
                               " at another (the batch elements' results differ in shape)")
        _attach(first, Tensor._wrap(np.stack(parts)), lv)
        outs.append(first)
    if one:
        return outs[0]
    return type(rows[0])(*outs) if hasattr(rows[0], "_fields") else type(rows[0])(outs)


def batch_like(out: Tensor, like) -> Tensor:
    """`out`, a fresh tensor made like `like` (zeros_like, ones_like, full_like,
    empty_like), batched wherever `like` is inside `rg.func.vmap`, as torch's `*_like`
    gives a batched tensor there: in-place writes of batched values into it then batch
    (`acc = zeros_like(x); acc += f(x)`) instead of refusing. One vmap level only (else
    unchanged, as before)."""
    st = state.forward
    fw = getattr(like, "_fw", None)
    if st is None or not st.vmapped or fw is None or out.requires_grad:
        return out
    levels = [lv for lv in st.levels if lv in fw]
    if len(levels) != 1 or not levels[0].vmap:
        return out
    lv = levels[0]
    xp = namespace_of(out.data)
    _attach(out, Tensor._wrap(xp.broadcast_to(out.data, lv.batch + out.shape).copy()), lv)
    return out
