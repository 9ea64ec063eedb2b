"""In-place forms of the element-wise methods, `x.exp_()`, `x.clamp_(0, 1)`, `x.eq_(y)`,
`x.pow_(2)`, ...: one rule makes them all.

`x.name_(*args)` computes `x.name(*args)` out of place and writes the result into x
with `copy_`, through the in-place machinery that every in-place op shares
(`Tensor._inplace`: the version counter, the error for a leaf that requires grad,
a view's write put into its root's history as PyTorch does (`view_rebase`), rg.jit's
record of the write).
Before writing, PyTorch's two refusals: a result of a lower category than x's dtype
(`int_tensor.sqrt_()`: a float can't be written into an integer tensor) and a result
of another shape (`x.add_(y)` where y would broadcast x up).

When the write is recorded for backward, the out-of-place op reads a copy of x
(`clone()`, itself recorded, so the gradient flows through it to the old x): the
values the op saves for its gradient (sin saves its input) are then not the ones the
write overwrites, and the gradient is PyTorch's, not a version-counter error.

`INPLACE` lists PyTorch's element-wise (and cumulative) in-place methods; `bind` gives
the class the in-place form of each whose out-of-place method it has.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..dtypes import can_cast
from ..engine import apply
from ..grad_mode import state
from ..tensor import Tensor
from ._errors import DtypeError, ShapeError
from .pieces import aliased_input, refuse_piece_write

INPLACE = tuple("""
    abs absolute acos acosh add addcdiv addcmul arccos arccosh arcsin arcsinh arctan arctan2
    arctanh asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_not bitwise_or
    bitwise_right_shift bitwise_xor ceil clamp clamp_max clamp_min clip conj_physical copysign
    cos cosh cumprod cumsum deg2rad digamma div divide eq erf erfc erfinv exp exp2 expm1 fix
    float_power floor floor_divide fmod frac gcd ge greater greater_equal gt heaviside hypot i0
    igamma igammac lcm ldexp le lerp less less_equal lgamma log log10 log1p log2 logical_and
    logical_not logical_or logical_xor logit lt mul multiply mvlgamma nan_to_num ne neg negative
    nextafter not_equal polygamma pow rad2deg reciprocal relu remainder round rsqrt sgn sigmoid
    sign sin sinc sinh sqrt square sub subtract tan tanh true_divide trunc xlogy
""".split())


_REBASED = frozenset({"reshape", "permute", "getitem", "diagonal", "expand", "unfold_view",
                      "as_strided_view"})
"""View ops whose output is a set of the root's elements, so a write into it can be put
back into the root's history as a scatter (a bitcast reinterprets bytes: refused)."""


def _refuse_view(self: Tensor, fn: str, why: str = "") -> None:
    node = self.grad_fn
    raise RuntimeError(f"{fn}: a view (from '{node.name if node else 'a view op'}', shape "
                       f"{self.shape}) of a tensor that requires grad is being modified in "
                       f"place{why}; clone() it first")


def view_rebase(self: Tensor, fn: str):
    """For a recorded in-place write into `self`: None where self is not a view sharing its
    root's memory (the write is recorded on self alone), else (root, view ops, flat
    indices of the root's elements that self shows, in self's order), for `_inplace` to
    put the write into the root's history as PyTorch does (the root becomes a scatter of
    the written values into its old value, and self a view of that). Refuses a view of a
    leaf that requires grad, and views it cannot rebase (a bitcast, device arrays, while
    rg.jit traces or forward-mode tangents are live)."""
    refuse_piece_write(self, fn)
    v = getattr(self, "_view", None)
    if v is None:  # not made by a view op; refused where its node says it shares an input's
        node = self.grad_fn  # memory (a custom Function returning its input, as torch);
        src = aliased_input(node, self) if node is not None and node.op.view else None
        if isinstance(src, Tensor) and not (  # a root rebased earlier ends in a reshape of
                self.data.__class__ is np.ndarray and src.data.__class__ is np.ndarray  # a
                and not np.may_share_memory(self.data, src.data)):  # copy: still a root
            _refuse_view(self, fn)
        return None
    root, chain = v
    if getattr(root, "_view", None) is not None:  # the root became a view since (t_(),
        _refuse_view(self, fn, " (its base changed shape in place since)")  # squeeze_()...)
    host = self.data.__class__ is np.ndarray and root.data.__class__ is np.ndarray
    if host and not np.may_share_memory(self.data, root.data):
        return None  # a view op that copied (a reshape of a strided tensor): not a view
    if root.requires_grad and root.grad_fn is None:
        raise RuntimeError(f"{fn}: a view (shape {self.shape}) of a leaf tensor that requires "
                           f"grad (shape {root.shape}) is being used in an in-place "
                           "operation; wrap it in rg.no_grad() or clone() the view")
    if not host or state.tracer is not None or state.forward is not None:
        _refuse_view(self, fn, " (inside rg.jit, forward mode or on a device)")
    if self.dtype != root.dtype or any(op.name not in _REBASED for op, _ in chain):
        _refuse_view(self, fn, " (through a view op that reinterprets the values)")
    idx = np.arange(root.data.size).reshape(root.data.shape)
    for op, attrs in chain:
        idx = op.forward(idx, **attrs)
    if idx.shape != self.shape:
        _refuse_view(self, fn)
    return root, chain, np.ascontiguousarray(idx).reshape(-1)


def snapshot(root: Tensor) -> Tensor:
    """`root`'s values and history with a version counter of its own, so that a write into
    root's memory does not make the views taken from it stale (set here: through
    `_cell()` it would take over the node's output check)."""
    t = Tensor._wrap(root.data)
    t.grad_fn, t.requires_grad = root.grad_fn, root.requires_grad
    t._vc = [0]
    return t


def through(t: Tensor, chain) -> Tensor:
    """The view ops of `chain` ((op, attrs), ...) applied to t, recorded."""
    for op, attrs in chain:
        t = apply(op, t, **attrs)
    return t


def own_history(self: Tensor) -> Tensor:
    """self's value and history, where self is a view reached through a snapshot of its
    root: what an in-place write into self reads as its old value, which the write must
    not make stale."""
    v = getattr(self, "_view", None)
    if v is None or not (self.data.__class__ is np.ndarray
                         and np.may_share_memory(self.data, v[0].data)):
        return self
    if state.forward is not None and self._fw:  # its tangents or batched values are its
        return self                              # own (a snapshot would drop them)
    return through(snapshot(v[0]), v[1])


def remake_views(self: Tensor) -> None:
    """After a recorded in-place write into self (a root or a view of one): each other
    recorded view of the root that shares its memory gets a history through the root's
    new one, as PyTorch regenerates a view's grad_fn once its base has changed."""
    v = getattr(self, "_view", None)
    root = self if v is None else v[0]
    views = getattr(root, "_views", None)
    if not views or root.data.__class__ is not np.ndarray:
        return
    for ref in list(views):
        w = ref()
        wv = getattr(w, "_view", None)
        if w is None or w is self or wv is None or wv[0] is not root \
                or not np.may_share_memory(w.data, root.data):
            continue
        if w.grad_fn is None:  # a view of root taken while it had no history: now one, as
            if not root.requires_grad or w._fw is not None:  # torch regenerates a view's
                continue                                     # grad_fn from its base's
            w.requires_grad = True
        w.grad_fn = through(root, wv[1]).grad_fn


def register_view(root: Tensor, view: Tensor) -> None:
    """Keep `view` among `root`'s recorded views, which `remake_views` gives a history through
    the root's new one after a write into it: a view taken while the root had no history (a
    tensor that did not require grad) is not registered when made, only once a write into
    it gives the root a history."""
    views = getattr(root, "_views", None)
    if views is None:
        root._views = [weakref.ref(view)]
    elif not any(r() is view for r in views):
        views.append(weakref.ref(view))


def check_target(self: Tensor, fn: str) -> None:
    """Refuse, before computing anything, an in-place write that `_inplace` would refuse
    when recording: into a leaf that requires grad, or into a view it cannot rebase."""
    if not (state.enabled and self.requires_grad):
        return
    if self.grad_fn is None:
        raise RuntimeError(f"{fn}: a leaf tensor that requires grad (shape {self.shape}) is "
                           "being used in an in-place operation; wrap it in rg.no_grad() or "
                           "use the out-of-place op")
    if state.forward is None:  # else `_inplace` decides: a view carrying tangents or batched
        view_rebase(self, fn)  # values is written through its root's new value there


def write_into(self: Tensor, result: Tensor, fn: str) -> Tensor:
    """Write an out-of-place `result` into self (`copy_`), after PyTorch's checks of its
    shape and dtype; returns self."""
    if result.shape != self.shape:
        raise ShapeError(f"{fn}: the result has shape {result.shape}, which doesn't match "
                         f"the shape {self.shape} of the tensor written in place")
    if not can_cast(result.dtype, self.dtype):
        raise DtypeError(f"{fn}: result type {result.dtype} can't be cast to the desired "
                         f"output type {self.dtype}")
    return self.copy_(result)


def _requires_grad(args, kwargs) -> bool:
    return any(isinstance(a, Tensor) and a.requires_grad
               for a in (*args, *kwargs.values()))


def inplace_form(name: str):
    """The in-place method `name_` of the out-of-place method `name` (looked up on the
    tensor's class at each call)."""
    fn = name + "_"

    def method(self, *args, **kwargs):
        if fn == "abs_" and self.data.dtype.kind == "c":  # a real result: torch refuses it
            raise DtypeError("In-place abs is not supported for complex tensors.")
        out_of_place = getattr(type(self), name)
        if state.enabled and (self.requires_grad or _requires_grad(args, kwargs)):
            check_target(self, fn)
            result = out_of_place(own_history(self).clone(), *args, **kwargs)
        else:
            result = out_of_place(self, *args, **kwargs)
        return write_into(self, result, fn)

    method.__name__ = method.__qualname__ = fn
    method.__doc__ = (f"In-place `{name}`: writes `self.{name}(...)` into self and returns "
                      f"self (PyTorch's `Tensor.{fn}`).")
    return method


def bind(cls) -> None:
    """Give `cls` the in-place form of each method of `INPLACE` that it has out of place
    and not yet in place (run again after more methods are bound: it adds the rest)."""
    for name in INPLACE:
        if hasattr(cls, name) and not hasattr(cls, name + "_"):
            setattr(cls, name + "_", inplace_form(name))
