"""In-place forms of the element-wise methods, `x.exp_()`, `x.clamp_(0, 1)`, `x.eq_(y)`,
`x.pow_(2)`, ...: one rule makes them all.

`x.name_(*args)` computes `x.name(*args)` out of place and writes the result into x
with `copy_`, through the in-place machinery that every in-place op shares
(`Tensor._inplace`: the version counter, the error for a leaf that requires grad,
the refusal of views of tensors that require grad, rg.jit's record of the write).
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

from ..dtypes import can_cast
from ..grad_mode import state
from ..tensor import Tensor
from ._errors import DtypeError, ShapeError

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


def check_target(self: Tensor, fn: str) -> None:
    """Refuse, before computing anything, an in-place write that `_inplace` would refuse
    when recording: into a leaf that requires grad, or into a view of a tensor that
    requires grad."""
    if not (state.enabled and self.requires_grad):
        return
    node = self.grad_fn
    if node is None:
        raise RuntimeError(f"{fn}: a leaf tensor that requires grad (shape {self.shape}) is "
                           "being used in an in-place operation; wrap it in rg.no_grad() or "
                           "use the out-of-place op")
    if getattr(node.op, "view", False):
        raise RuntimeError(f"{fn}: a view (from '{node.name}', shape {self.shape}) of a tensor "
                           "that requires grad is being modified in place; clone() it first")


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
        out_of_place = getattr(type(self), name)
        if state.enabled and (self.requires_grad or _requires_grad(args, kwargs)):
            check_target(self, fn)
            result = out_of_place(self.clone(), *args, **kwargs)
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
