"""`Tensor`: a NumPy array that remembers the op that made it.

The class holds data and autograd metadata; arithmetic and methods delegate to
the op table through `engine.apply`. Nothing here knows a derivative.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import engine, ops
from .dtypes import as_array, get_default_dtype, is_float
from .engine import apply, apply2
from .grad_mode import state

_SCALARS = (int, float, complex)
_new = object.__new__


class _Size(int):
    """`t.size` is an int (NumPy); calling it, `t.size()`, gives the shape (PyTorch)."""

    def __new__(cls, value, shape):
        obj = super().__new__(cls, value)
        obj._shape = shape
        return obj

    def __call__(self, dim=None):
        return self._shape if dim is None else self._shape[dim]


class _HookHandle:
    def __init__(self, hooks, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


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


class Tensor:
    """An n-dimensional array with reverse-mode autograd.

    `Tensor(data, requires_grad=False, dtype=None)`: Python floats become the
    default dtype (float32), ints int64, bools bool; NumPy arrays keep theirs.
    """

    __slots__ = ("data", "grad", "grad_fn", "requires_grad", "_vc", "_hooks", "_fw",
                 "__weakref__")
    __array_priority__ = 1000
    __array_ufunc__ = None  # NumPy defers `array * tensor` to Tensor.__rmul__

    def __init__(self, data, requires_grad: bool = False, dtype=None):
        if data.__class__ is np.ndarray and dtype is None and not requires_grad \
                and data.dtype.kind != "O":  # the fast path every op result takes
            self.data = data
            self.grad = None
            self.grad_fn = None
            self.requires_grad = False
            self._vc = None
            self._hooks = None
            self._fw = None  # forward-mode tangents: {level: tangent Tensor} (forward.py)
            return
        if isinstance(data, Tensor):
            data = data.data.copy() if dtype is None else data.data
        arr = as_array(data, dtype)
        if arr.dtype == object:
            raise TypeError("cannot make a tensor from Python objects; "
                            "expected numbers or arrays of numbers")
        self.data = arr
        self.grad = None
        self.grad_fn = None
        self.requires_grad = False
        self._vc = None
        self._hooks = None
        self._fw = None
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _wrap(arr: np.ndarray) -> Tensor:
        """A constant tensor around an existing array, without checks."""
        t = _new(Tensor)  # not a classmethod calling __new__: this is every op's hot path
        t.data = arr
        t.grad = None
        t.grad_fn = None
        t.requires_grad = False
        t._vc = None
        t._hooks = None
        t._fw = None
        return t

    def _cell(self) -> list:
        """This tensor's version counter (shared with its views), made on first use.

        A node that saved this tensor's value as its output is given the counter
        then, so that its backward sees later in-place changes.
        """
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
            node = self.grad_fn
            if node is not None and node.out is self.data:
                node.out_vc = vc
        return vc

    # ------------------------------------------------------------ attributes

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return _Size(self.data.size, self.data.shape)

    @property
    def T(self) -> Tensor:
        return F.transpose(self)

    @property
    def mT(self) -> Tensor:
        return F.transpose(self, -2, -1)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def _version(self) -> int:
        return 0 if self._vc is None else self._vc[0]

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return self.data.size

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        if self.data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.data.shape[0]))

    # ------------------------------------------------------------ conversion

    def _scalar_check(self, what: str) -> None:
        if state.tracer is not None:
            state.tracer.refuse(what)
        if self.data.size != 1:
            raise RuntimeError(f"{what} needs a tensor with one element, got shape {self.shape}")

    def item(self):
        """The single value as a Python number."""
        self._scalar_check("item()")
        return self.data.item()

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (shared, not copied)."""
        if state.tracer is not None:
            state.tracer.refuse("numpy()")
        return self.data

    def tolist(self):
        if state.tracer is not None:
            state.tracer.refuse("tolist()")
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        if state.tracer is not None:
            state.tracer.refuse("conversion to a NumPy array")
        return self.data if dtype is None else self.data.astype(dtype)

    def __bool__(self) -> bool:
        self._scalar_check("bool()")
        return bool(self.data)

    def __float__(self) -> float:
        self._scalar_check("float()")
        return float(self.data)

    def __int__(self) -> int:
        self._scalar_check("int()")
        return int(self.data)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        self._scalar_check("index")
        return int(self.data)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", precision=4, threshold=100,
                               prefix="tensor(")
        extra = f", dtype={self.data.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

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

    # ------------------------------------------------------------ autograd

    def detach(self) -> Tensor:
        """The same data (shared), cut from the graph."""
        t = Tensor._wrap(self.data)
        t._vc = self._cell()
        return t

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and not is_float(self.data.dtype):
            raise TypeError(f"only floating-point tensors can require gradients, got dtype "
                            f"{self.data.dtype}; convert with .float() or .double() first")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("requires_grad_(False) is only allowed on leaf tensors; use "
                               "detach() for a non-leaf")
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> None:
        """Keep `.grad` on a non-leaf tensor after backward."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad() on a tensor that does not require grad")
        if self.grad_fn is not None:
            self.grad_fn.retain = weakref.ref(self)

    def register_hook(self, fn) -> _HookHandle:
        """Call `fn(grad)` when the gradient arrives; a tensor it returns replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        if self.grad_fn is not None:
            self.grad_fn.register_hook(fn)
            return _HookHandle(self.grad_fn.hooks, fn)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _HookHandle(self._hooks, fn)

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

    # ------------------------------------------------------------ arithmetic

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
    __pow__ = _binop(ops.pow_)
    __rpow__ = _binop(ops.pow_, reflected=True)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return apply(ops.neg, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return apply(ops.abs_, self)

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
        if np.result_type(new) != self.data.dtype and not np.can_cast(
                np.result_type(new), self.data.dtype, casting="same_kind"):
            raise TypeError(f"in-place '{op.name}' would change dtype {self.data.dtype} to "
                            f"{np.result_type(new)}")
        if np.shape(new) != self.data.shape:
            raise ValueError(f"in-place '{op.name}': result of shape {np.shape(new)} does not fit "
                             f"the tensor's shape {self.shape}")
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


def clear_grads(params, set_to_none: bool = True) -> None:
    """Reset each tensor's `.grad` to None, or to zeros (Module and Optimizer.zero_grad)."""
    for p in params:
        if p.grad is not None:
            p.grad = None if set_to_none else Tensor._wrap(np.zeros_like(p.data))


def _initial_grad(t: Tensor, gradient, create_graph: bool, what: str):
    if gradient is None:
        if t.data.size != 1:
            raise RuntimeError(f"{what}: grad can be implicitly created only for scalar "
                               f"outputs; the output is not a scalar (shape {t.shape}), so pass "
                               "a gradient of that shape")
        g = np.empty(t.data.shape, dtype=t.data.dtype)  # np.ones is a slower Python wrapper
        g.fill(1)
        return Tensor._wrap(g) if create_graph else g
    g = gradient if isinstance(gradient, Tensor) else Tensor(np.asarray(gradient,
                                                                         dtype=t.dtype))
    if g.shape != t.shape:
        raise RuntimeError(f"{what}: gradient has shape {g.shape} but the output has shape "
                           f"{t.shape}")
    return g if create_graph else g.data


def as_tensor(x, dtype=None) -> Tensor:
    return x if isinstance(x, Tensor) and dtype is None else Tensor(x, dtype=dtype)


engine.Tensor = Tensor
engine._wrap = Tensor._wrap

from . import functions as F  # noqa: E402  (methods below delegate to the functional API)

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
