"""The Tensor's operators and op methods, bound onto the class in one place.

`t + u`, `t.exp()`, `t[i] = v`, `t.backward()`: each is a thin call into the
engine or the functional API (`retrograd.api`). `Tensor` itself (tensor.py)
holds only data and metadata, so the engine can make tensors without importing
anything above it; this module, imported by the package, completes the class.
"""

from __future__ import annotations

import numpy as np

from . import api as F
from . import engine, ops
from .dtypes import get_default_dtype, is_float
from .engine import apply, apply2
from .grad_mode import state
from .tensor import Tensor, _initial_grad

_SCALARS = (int, float, complex)


def _binop(op, reflected=False, true_div=False):
    """A binary operator method: tensors and Python numbers go straight to `apply2`."""
    def method(self, other):
        if other.__class__ is not Tensor:
            consts = None
            if other.__class__ is float or other.__class__ is int:
                dt = self.data.dtype
                consts = _F32_CONSTS if dt is _F32 else _CONSTS.get(dt)
            if consts is not None:
                c = consts.get(other)
                other = _const(consts, other, dt) if c is None else c
            else:
                self, other = self._lhs(other), self._other(other)
        if true_div:
            self, other = _float_div(self, other)
        return apply2(op, other, self) if reflected else apply2(op, self, other)

    method.__name__ = f"__{'r' if reflected else ''}{op.name}__"
    return method


# Python numbers met by float tensors' operators, as read-only 0-d arrays of the tensor's
# dtype, one table per dtype (float32, the default, found without hashing its dtype).
# The result has the tensor's dtype, as with the number (NEP 50), and NumPy computes with
# a 0-d array about twice as fast as with a number or a NumPy scalar, in the forward and
# again in the backward rule that reads it.
_F32 = np.dtype(np.float32)
_CONSTS: dict = {np.dtype(t): {} for t in (np.float16, np.float32, np.float64)}
_F32_CONSTS = _CONSTS[_F32]


def _const(consts: dict, value, dtype: np.dtype) -> np.ndarray:
    c = np.array(value, dtype)
    c.flags.writeable = False
    if value:  # 0.0 and -0.0 are equal keys but different constants
        if len(consts) >= 1024:
            consts.clear()
        consts[value] = c
    return c


def _float_div(x, y):
    """True division of integer tensors gives the default float dtype."""
    if x.data.dtype.kind in "biu" and (not isinstance(y, Tensor) or y.data.dtype.kind in "biu"):
        x = x.to(get_default_dtype())
    return x, y


class _Methods:
    """Methods of `Tensor` that call the engine; copied onto the class below."""

    @property
    def T(self) -> Tensor:
        return F.transpose(self)

    @property
    def mT(self) -> Tensor:
        return F.transpose(self, -2, -1)

    def to(self, dtype) -> Tensor:
        """A copy converted to `dtype` (differentiable between float dtypes)."""
        dtype = np.dtype(dtype)
        if dtype == self.data.dtype:
            return self
        if self.requires_grad and not is_float(dtype):
            return Tensor._wrap(self.data.astype(dtype))
        return apply(ops.cast, self, dtype=dtype)

    astype = to

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def long(self) -> Tensor:
        return self.to(np.int64)

    def bool(self) -> Tensor:
        return self.to(np.bool_)

    def clone(self) -> Tensor:
        if self.requires_grad or self._fw is not None:  # keep the graph and any tangent
            return apply(ops.cast, self, dtype=self.data.dtype)
        return Tensor._wrap(self.data.copy())

    def contiguous(self) -> Tensor:
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad`."""
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn: backward() needs a tensor that requires grad")
        g = _initial_grad(self, gradient, create_graph, "backward()")
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            got = engine.backward([self], [g], create_graph, targets=inputs)
            for t, gi in zip(inputs, got):
                if gi is not None:
                    engine._accumulate_grad(t, gi)
            return
        engine.backward([self], [g], create_graph)


    def _other(self, other):
        if isinstance(other, Tensor):
            return other
        if isinstance(other, _SCALARS):
            if isinstance(other, bool):
                return other
            if isinstance(other, float) and self.data.dtype.kind in "biu":
                return Tensor._wrap(np.asarray(other, dtype=get_default_dtype()))
            return other
        if isinstance(other, np.generic):
            return self._other(other.item())
        return Tensor(other)

    def _lhs(self, other):
        """Integer tensors become the default float when meeting a Python float."""
        if isinstance(other, float) and self.data.dtype.kind in "biu":
            return self.to(get_default_dtype())
        return self

    __add__ = _binop(ops.add)
    __radd__ = _binop(ops.add, reflected=True)
    __sub__ = _binop(ops.sub)
    __rsub__ = _binop(ops.sub, reflected=True)
    __mul__ = _binop(ops.mul)
    __rmul__ = _binop(ops.mul, reflected=True)
    __truediv__ = _binop(ops.div, true_div=True)
    __rtruediv__ = _binop(ops.div, reflected=True, true_div=True)
    __pow__ = _binop(ops.pow)
    __rpow__ = _binop(ops.pow, reflected=True)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return apply(ops.neg, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return apply(ops.abs, self)

    def _compare(self, op, other):
        return apply(op, self, self._other(other))

    def __eq__(self, other):  # noqa: D105 - element-wise, as in NumPy and PyTorch
        return self._compare(ops.OPS["eq"], other)

    def __ne__(self, other):
        return self._compare(ops.OPS["ne"], other)

    def __lt__(self, other):
        return self._compare(ops.OPS["lt"], other)

    def __le__(self, other):
        return self._compare(ops.OPS["le"], other)

    def __gt__(self, other):
        return self._compare(ops.OPS["gt"], other)

    def __ge__(self, other):
        return self._compare(ops.OPS["ge"], other)

    def __invert__(self):
        if self.dtype != np.bool_:
            raise TypeError(f"~ needs a bool tensor, got {self.dtype}")
        return Tensor._wrap(~self.data)

    def __and__(self, other):
        return Tensor._wrap(self.data & _data(other))

    def __or__(self, other):
        return Tensor._wrap(self.data | _data(other))

    # ------------------------------------------------------------ indexing

    def __getitem__(self, idx):
        try:
            return apply(ops.getitem, self, idx=_index(idx, self.shape))
        except IndexError as e:
            raise IndexError(f"index {idx!r} is invalid for a tensor of shape {self.shape}: "
                             f"{e}") from None

    def __setitem__(self, idx, value) -> None:
        idx = _index(idx, self.shape)
        try:
            self._inplace(ops.setitem, value, idx=idx)
        except IndexError as e:
            raise IndexError(f"index {idx!r} is invalid for a tensor of shape {self.shape}: "
                             f"{e}") from None

    # ------------------------------------------------------------ in place

    def _inplace(self, op, other, **attrs) -> Tensor:
        """Run `op(self, other)` and write the result into self's array."""
        other = other if isinstance(other, Tensor) else self._other(other)
        recording = state.enabled and (self.requires_grad or
                                       (isinstance(other, Tensor) and other.requires_grad))
        if recording and self.grad_fn is None and self.requires_grad:
            raise RuntimeError(
                f"a leaf tensor that requires grad (shape {self.shape}) is being used in an "
                f"in-place operation ('{op.name}'); wrap it in rg.no_grad() or use an "
                "out-of-place op")
        if recording and self.grad_fn is not None and self.grad_fn.op.view:
            raise RuntimeError(
                f"a view (from '{self.grad_fn.name}', shape {self.shape}) of a tensor that "
                f"requires grad is being modified by an in-place operation ('{op.name}'); "
                "clone() it first")
        if state.tracer is not None:
            state.tracer.refuse_inplace(self)
        if state.forward is not None:
            state.forward.check_inplace(self, other, op)
        other_data = other.data if isinstance(other, Tensor) else other
        new = op.forward(self.data, other_data, **attrs)
        res = np.result_type(new)
        if res != self.data.dtype and not np.can_cast(res, self.data.dtype, casting="same_kind"):
            if isinstance(other, Tensor) and other.data.dtype.kind == res.kind:
                res = other.data.dtype  # PyTorch's result type: the wider operand's own dtype
            raise RuntimeError(f"in-place '{op.name}': result type {res} can't be cast to the "
                               f"desired output type {self.data.dtype}")
        if np.shape(new) != self.data.shape:
            raise RuntimeError(f"in-place '{op.name}': output with shape {self.shape} doesn't "
                               f"match the broadcast shape {np.shape(new)}")
        if recording:
            old = Tensor._wrap(self.data)
            old.grad_fn, old.requires_grad, old._vc = self.grad_fn, self.requires_grad, \
                self._cell()
            result = apply(op, old, other, **attrs)  # records the node before the write
            node = result.grad_fn
        if not self.data.flags.writeable:
            raise RuntimeError(f"in-place '{op.name}' on a tensor whose data is a read-only "
                               "view (e.g. from expand); clone() it first")
        self.data[...] = new
        self._cell()[0] += 1
        engine.mark_inplace()
        if recording:
            self.grad_fn = node
            self.requires_grad = True
        return self

    def add_(self, other, alpha=1) -> Tensor:
        return self._inplace(ops.add, other if alpha == 1 else other * alpha)

    def sub_(self, other, alpha=1) -> Tensor:
        return self._inplace(ops.sub, other if alpha == 1 else other * alpha)

    def mul_(self, other) -> Tensor:
        return self._inplace(ops.mul, other)

    def div_(self, other) -> Tensor:
        return self._inplace(ops.div, other)

    # `a += b` and kin change `a` in place, as in PyTorch (other names for `a` see the
    # change; version counters guard saved values). `@=` has no in-place form in PyTorch
    # either: Python falls back to `a = a @ b`.
    def __iadd__(self, other) -> Tensor:
        return self._inplace(ops.add, other)

    def __isub__(self, other) -> Tensor:
        return self._inplace(ops.sub, other)

    def __imul__(self, other) -> Tensor:
        return self._inplace(ops.mul, other)

    def __itruediv__(self, other) -> Tensor:
        return self._inplace(ops.div, other)

    def __ipow__(self, other) -> Tensor:
        return self._inplace(ops.pow, other)

    def zero_(self) -> Tensor:
        return self._inplace(ops.setitem, 0, idx=Ellipsis)

    def fill_(self, value) -> Tensor:
        return self._inplace(ops.setitem, value, idx=Ellipsis)

    def copy_(self, src) -> Tensor:
        src = src if isinstance(src, Tensor) else Tensor(src)
        try:
            np.broadcast_shapes(src.shape, self.shape)
        except ValueError:
            raise ValueError(f"copy_(): source of shape {src.shape} cannot be broadcast to "
                             f"{self.shape}") from None
        return self._inplace(ops.setitem, src, idx=Ellipsis)


def _data(x):
    return x.data if isinstance(x, Tensor) else x


def _index(idx, shape):
    """Turn tensors and lists inside an index into NumPy arrays, and check bounds."""
    items = idx if isinstance(idx, tuple) else (idx,)
    out = []
    for i in items:
        if isinstance(i, Tensor):
            if i.dtype.kind not in "iub":
                raise IndexError(f"tensors used as indices must be integer or bool, got "
                                 f"{i.dtype}")
            if state.tracer is not None:
                state.tracer.check_index(i)
            i = i.data
        elif isinstance(i, list):
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.dtype.kind not in "iub":
            raise IndexError(f"arrays used as indices must be integer or bool, got {i.dtype}")
        out.append(i)
    return tuple(out) if isinstance(idx, tuple) else out[0]



for _name, _value in vars(_Methods).items():
    if _name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                     "__hash__"):
        setattr(Tensor, _name, _value)

# A plain function stored on the class is a method: `t.exp()` is `F.exp(t)`, no wrapper.
for _name in ("exp log log1p sqrt abs sin cos tan tanh sigmoid relu sign clamp clip sum mean var "
              "std max min prod logsumexp softmax log_softmax matmul reshape flatten transpose "
              "permute expand squeeze unsqueeze split argmax argmin maximum minimum").split():
    setattr(Tensor, _name, getattr(F, _name))
Tensor.view = Tensor.reshape
Tensor.t = lambda self: F.transpose(self)
Tensor.expand_as = lambda self, other: F.expand(self, *other.shape)
Tensor.view_as = lambda self, other: F.reshape(self, *other.shape)
Tensor.pow = Tensor.__pow__
Tensor.add = Tensor.__add__
Tensor.sub = Tensor.__sub__
Tensor.mul = Tensor.__mul__
Tensor.div = Tensor.__truediv__
Tensor.neg = Tensor.__neg__
