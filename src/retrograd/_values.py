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


def every_value(t):
    """The values of every batch element of `t`, for checks that must hold for each: an
    array with one leading dimension per `rg.func.vmap` level that batches `t` (outermost
    first), or `t.data` itself when nothing batches it."""
    stack = state.forward
    if stack is None or not stack.vmapped or getattr(t, "_fw", None) is None:
        return t.data
    for lv in reversed(stack.levels):  # the innermost level's value holds the outer ones
        if lv.vmap and lv in t._fw:
            return every_value(t._fw[lv])
    return t.data
