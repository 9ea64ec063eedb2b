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

from .grad_mode import state


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


def per_element(fn, *args):
    """`fn(*args)` run once per batch element inside `rg.func.vmap`, the results stacked
    (see `forward.per_element`); None where that does not apply (refuse then)."""
    from .forward import per_element as _per_element

    return _per_element(fn, *args)


def batch_like(out, like):
    """`out` (made by a `*_like` function) batched wherever `like` is inside vmap (see
    `forward.batch_like`)."""
    from .forward import batch_like as _batch_like

    return _batch_like(out, like)
