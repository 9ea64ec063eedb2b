"""PyTorch's `torch._foreach_*` functions: one op applied to each tensor of a list (the
multi-tensor forms that timm's `ModelEmaV3`, fused-update helpers and hand-written
optimizers call, e.g. `torch._foreach_lerp_(ema_params, params, 1 - decay)`).

Each is the per-tensor method applied in turn, so values, dtypes and gradients are those
of the ops themselves: the out-of-place forms return a tuple of new tensors (recorded as
usual); the in-place forms (`_foreach_mul_`, ...) change each tensor in place and return
the list they were given, as torch's do. A second operand may be a number, a list of
numbers, a list of tensors (paired with the first list) or one tensor (for every entry);
lists of unequal length, and an empty list, raise RuntimeError as in torch.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from numbers import Number

from ..tensor import Tensor

_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
          "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
          "trunc").split()

__all__ = ([f"_foreach_{n}" for n in _UNARY] + [f"_foreach_{n}_" for n in _UNARY]
           + [f"_foreach_{n}{s}" for n in ("add", "sub", "mul", "div", "maximum", "minimum",
                                          "clamp_max", "clamp_min", "pow", "lerp", "addcmul",
                                          "addcdiv") for s in ("", "_")]
           + ["_foreach_norm", "_foreach_max", "_foreach_copy_", "_foreach_zero_",
              "_foreach_clone", "_foreach_mm"])


def _tensors(xs, fn: str) -> list:
    """The first operand: a non-empty list (or tuple) of tensors."""
    if isinstance(xs, Tensor) or not isinstance(xs, Sequence):
        raise TypeError(f"{fn}(): expected a list of tensors, got {type(xs).__name__}")
    if len(xs) == 0:
        raise RuntimeError(f"{fn}(): Tensor list must have at least one tensor.")
    return list(xs)


def _paired(self: list, other, fn: str) -> list:
    """The second operand spread over `self`: one entry per tensor."""
    if isinstance(other, (Tensor, Number)):
        return [other] * len(self)
    if not isinstance(other, Sequence):
        raise TypeError(f"{fn}(): expected a number, a tensor or a list, got "
                        f"{type(other).__name__}")
    if len(other) != len(self):
        raise RuntimeError(f"{fn}(): Tensor lists must have the same number of tensors, got "
                           f"{len(self)} and {len(other)}")
    return list(other)


def _scalars(self: list, values, fn: str) -> list:
    """`value` of addcmul/addcdiv: a number, a list of numbers, or a 1-d tensor of them."""
    if isinstance(values, Tensor):
        values = values.tolist()
    return _paired(self, values, fn)


def _unary(name: str) -> tuple[Callable, Callable]:
    def out_of_place(self):
        fn = f"_foreach_{name}"
        return tuple(getattr(t, name)() for t in _tensors(self, fn))

    def in_place(self):
        fn = f"_foreach_{name}_"
        for t in _tensors(self, fn):
            getattr(t, name + "_")()
        return self
    out_of_place.__doc__ = f"`(t.{name}() for t in self)` as a tuple, like `torch._foreach_{name}`."
    in_place.__doc__ = f"`t.{name}_()` for each t in self; returns self. Like torch's."
    return out_of_place, in_place


# the binary ops: (out-of-place, in-place) applied to one pair
_BINARY: dict[str, tuple[Callable, Callable]] = {
    "add": (lambda t, o, alpha: t.add(o, alpha=alpha), lambda t, o, alpha: t.add_(o, alpha=alpha)),
    "sub": (lambda t, o, alpha: t.sub(o, alpha=alpha), lambda t, o, alpha: t.sub_(o, alpha=alpha)),
    "mul": (lambda t, o, _: t.mul(o), lambda t, o, _: t.mul_(o)),
    "div": (lambda t, o, _: t.div(o), lambda t, o, _: t.div_(o)),
    "maximum": (lambda t, o, _: t.maximum(o), lambda t, o, _: t.copy_(t.maximum(o))),
    "minimum": (lambda t, o, _: t.minimum(o), lambda t, o, _: t.copy_(t.minimum(o))),
    "clamp_max": (lambda t, o, _: t.clamp(max=o), lambda t, o, _: t.clamp_(max=o)),
    "clamp_min": (lambda t, o, _: t.clamp(min=o), lambda t, o, _: t.clamp_(min=o)),
    "pow": (lambda t, o, _: t.pow(o), lambda t, o, _: t.pow_(o)),
}


def _binary(name: str) -> tuple[Callable, Callable]:
    op, op_ = _BINARY[name]
    takes_alpha = name in ("add", "sub")

    def out_of_place(self, other, *, alpha=1):
        fn = f"_foreach_{name}"
        if name == "pow" and isinstance(self, Number):  # _foreach_pow(scalar, exponents)
            return tuple(self ** t for t in _tensors(other, fn))
        if alpha != 1 and not takes_alpha:
            raise TypeError(f"{fn}() got an unexpected keyword argument 'alpha'")
        xs = _tensors(self, fn)
        return tuple(op(t, o, alpha) for t, o in zip(xs, _paired(xs, other, fn)))

    def in_place(self, other, *, alpha=1):
        fn = f"_foreach_{name}_"
        if alpha != 1 and not takes_alpha:
            raise TypeError(f"{fn}() got an unexpected keyword argument 'alpha'")
        xs = _tensors(self, fn)
        for t, o in zip(xs, _paired(xs, other, fn)):
            op_(t, o, alpha)
        return self
    out_of_place.__doc__ = (f"`{name}` of each tensor of self with its partner in other (or "
                            f"other itself), as a tuple. Like `torch._foreach_{name}`.")
    in_place.__doc__ = f"In-place `_foreach_{name}`; returns self. Like torch's."
    return out_of_place, in_place


def _lerp_pair() -> tuple[Callable, Callable]:
    def _foreach_lerp(self, tensors1, weight):
        """`t.lerp(end, weight)` for each pair, as a tuple. Like `torch._foreach_lerp`."""
        xs = _tensors(self, "_foreach_lerp")
        ends = _paired(xs, tensors1, "_foreach_lerp")
        return tuple(t.lerp(e, w) for t, e, w in zip(xs, ends,
                                                     _paired(xs, weight, "_foreach_lerp")))

    def _foreach_lerp_(self, tensors1, weight):
        """In-place `_foreach_lerp` (an EMA update: `lerp_(ema, params, 1 - decay)`);
        returns self."""
        xs = _tensors(self, "_foreach_lerp_")
        ends = _paired(xs, tensors1, "_foreach_lerp_")
        for t, e, w in zip(xs, ends, _paired(xs, weight, "_foreach_lerp_")):
            t.lerp_(e, w)
        return self
    return _foreach_lerp, _foreach_lerp_


def _addc(name: str) -> tuple[Callable, Callable]:
    def out_of_place(self, tensor1, tensor2, value=1):
        fn = f"_foreach_{name}"
        xs = _tensors(self, fn)
        parts = zip(xs, _paired(xs, tensor1, fn), _paired(xs, tensor2, fn),
                    _scalars(xs, value, fn))
        return tuple(getattr(t, name)(a, b, value=v) for t, a, b, v in parts)

    def in_place(self, tensor1, tensor2, value=1):
        fn = f"_foreach_{name}_"
        xs = _tensors(self, fn)
        parts = zip(xs, _paired(xs, tensor1, fn), _paired(xs, tensor2, fn),
                    _scalars(xs, value, fn))
        for t, a, b, v in parts:
            getattr(t, name + "_")(a, b, value=v)
        return self
    out_of_place.__doc__ = f"`t.{name}(a, b, value=v)` for each entry, as a tuple. Like torch's."
    in_place.__doc__ = f"In-place `_foreach_{name}`; returns self. Like torch's."
    return out_of_place, in_place


def _foreach_norm(self, ord=2, dtype=None) -> tuple:  # noqa: A002 - torch's name
    """The vector norm of each tensor (0-d tensors), as a tuple. Like `torch._foreach_norm`."""
    from .norms import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _tensors(self, "_foreach_norm"))


def _foreach_max(self) -> tuple:
    """The largest entry of each tensor (0-d tensors), as a tuple. Like `torch._foreach_max`."""
    return tuple(t.max() for t in _tensors(self, "_foreach_max"))


def _foreach_copy_(self, src, non_blocking: bool = False) -> list:
    """`t.copy_(s)` for each pair; returns self. Like `torch._foreach_copy_`."""
    xs = _tensors(self, "_foreach_copy_")
    for t, s in zip(xs, _paired(xs, src, "_foreach_copy_")):
        t.copy_(s)
    return self


def _foreach_zero_(self) -> list:
    """`t.zero_()` for each tensor; returns self. Like `torch._foreach_zero_`."""
    for t in _tensors(self, "_foreach_zero_"):
        t.zero_()
    return self


def _foreach_clone(self) -> tuple:
    """A copy of each tensor (in the graph), as a tuple. Like `torch._foreach_clone`."""
    return tuple(t.clone() for t in _tensors(self, "_foreach_clone"))


def _foreach_mm(self, other) -> tuple:
    """`a @ b` for each pair, as a tuple. Like `torch._foreach_mm`."""
    xs = _tensors(self, "_foreach_mm")
    return tuple(builtins.map(lambda a, b: a.mm(b), xs, _paired(xs, other, "_foreach_mm")))


def _define() -> None:
    made = {}
    for n in _UNARY:
        made[f"_foreach_{n}"], made[f"_foreach_{n}_"] = _unary(n)
    for n in _BINARY:
        made[f"_foreach_{n}"], made[f"_foreach_{n}_"] = _binary(n)
    made["_foreach_lerp"], made["_foreach_lerp_"] = _lerp_pair()
    for n in ("addcmul", "addcdiv"):
        made[f"_foreach_{n}"], made[f"_foreach_{n}_"] = _addc(n)
    for name, f in made.items():
        f.__name__ = f.__qualname__ = name
        globals()[name] = f


_define()
