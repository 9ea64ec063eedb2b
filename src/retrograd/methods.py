"""The Tensor's operators and op methods, bound onto the class in one place.

`t + u`, `t.exp()`, `t[i] = v`, `t.backward()`: each is a thin call into the
engine or the functional API (`retrograd.api`). `Tensor` itself (tensor.py)
holds only data and metadata, so the engine can make tensors without importing
anything above it; this module, imported by the package, completes the class.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import api as F
from . import creation as _creation
from . import devices, engine, ops
from .api import indexing as _indexing
from .api import norms as _norms
from .api._args import broadcasts_into, promote
from .api._errors import DtypeError, check_broadcast
from .api._errors import scalar_as as _scalar_as
from .api.inplace import register_view as _register_view
from .api.inplace import remake_views as _remake_views
from .api.inplace import snapshot as _snapshot
from .api.inplace import through as _through
from .api.inplace import view_rebase as _view_rebase
from .api.torch_names import _check_alpha
from .dtypes import (
    ValueOverflowError,
    _UnsupportedDtype,
    bfloat16,
    can_cast,
    float_in_range,
    float_result_type,
    int_in_range,
    is_float,
    result_type,
    scalar_array,
    tensor_dtype,
)
from .engine import apply, apply2
from .grad_mode import state
from .layouts import check_keywords, strided
from .ops.elementwise import NUMBER_POWERS_FLAGGED
from .primitive import ArgumentError, ShapeError
from .tensor import Tensor, _initial_grad

_SCALARS = (int, float, complex)


def _binop(op, reflected=False, true_div=False):
    """A binary operator method. Two tensors of one dtype, and a float tensor with a
    Python number, go straight to `apply2`; anything else is first promoted to
    PyTorch's result dtype (`api._args.promote`)."""
    slow = "biu" if true_div else "b" if op in (ops.sub, ops.pow) else ""  # checked or cast
    is_pow = op is ops.pow
    # torch multiplies and divides float16 by a number in float32 (its add, sub and pow
    # round the number to float16 first, as the constants below do)
    half_math = op in (ops.mul, ops.div)

    def method(self, other):
        a, b = self, other
        if other.__class__ is Tensor:
            dt = self.data.dtype
            if other.data.dtype is not dt or dt.kind in slow:
                self, other = _promote_pair(op, self, other, true_div)
        else:
            consts = None
            if other.__class__ is float or other.__class__ is int:
                d = self.data
                dt = d.dtype
                if d.__class__ is _ND or not devices.is_device_array(d):
                    consts = _F32_CONSTS if dt is _F32 else _CONSTS.get(dt)
                elif dt in _CONSTS:  # a device array: the constant lives on its device
                    other = devices.const(d, other, dt)
                    return apply2(op, other, self) if reflected else apply2(op, self, other)
            if consts is not None:
                if dt is _F16 and half_math:  # not the float32 path: consts was found first
                    return _half_with_number(op, self, other, reflected)
                c = consts.get(other)
                other = _const(consts, other, dt) if c is None else c
                if is_pow and not reflected and b in NUMBER_POWERS_FLAGGED and dt.kind == "f" \
                        and dt.itemsize >= 4:  # x ** 3, ** -2, ** 0.5: torch's kernels
                    return apply(op, self, other, number=True)
            else:
                if op is ops.pow and _is_bool_power(self, other, reflected):
                    return self.clone() if other else apply(ops.ones_like, self)  # as torch
                self, other = _promote_pair(op, self, other, true_div)
                if is_pow and not reflected and isinstance(b, (np.floating, np.integer)) and \
                        float(b) in NUMBER_POWERS_FLAGGED and self.data.dtype in (_F32, np.float64):
                    return apply(op, self, other, number=True)  # a NumPy number: as a Python one
        if is_pow and self.data.dtype.kind in "iu":
            # integers: negative exponents as PyTorch treats them (api.torch_names.pow)
            return _int_pow(b, a) if reflected else _int_pow(a, b)
        try:
            return apply2(op, other, self) if reflected else apply2(op, self, other)
        except ValueError:
            check_broadcast(op.name, *((other, self) if reflected else (self, other)))
            raise

    method.__name__ = f"__{'r' if reflected else ''}{op.name}__"
    return method


# Python numbers met by float tensors' operators, as read-only 0-d arrays of the tensor's
# dtype, one table per dtype (float32, the default, found without hashing its dtype).
# The result has the tensor's dtype, as with the number (NEP 50), and NumPy computes with
# a 0-d array about twice as fast as with a number or a NumPy scalar, in the forward and
# again in the backward rule that reads it.
_F32 = np.dtype(np.float32)
_ND = np.ndarray
_CONSTS: dict = {np.dtype(t): {} for t in (np.float16, np.float32, np.float64)}
_F32_CONSTS = _CONSTS[_F32]


_F16 = np.dtype(np.float16)


def _half_with_number(op, x: Tensor, number, reflected: bool) -> Tensor:
    """A float16 tensor and a Python number: computed in float32 and rounded once to
    float16, as PyTorch's CPU kernels do; the number is not rounded to float16 first (x *
    1e5 would be inf where 0.001 * 1e5 is 100)."""
    if reflected and op is ops.div:  # torch's n / x: reciprocal(x) in float16, times n
        return _half_with_number(ops.mul, apply(ops.reciprocal, x), number, False)
    xf = apply(ops.cast, x, dtype=_F32)
    c = _F32_CONSTS.get(number)
    c = _const(_F32_CONSTS, number, _F32) if c is None else c
    r = apply2(op, c, xf) if reflected else apply2(op, xf, c)
    return apply(ops.cast, r, dtype=_F16)


def _const(consts: dict, value, dtype: np.dtype) -> np.ndarray:
    c = np.array(value, dtype)
    c.flags.writeable = False
    if value:  # 0.0 and -0.0 are equal keys but different constants
        if len(consts) >= 1024:
            consts.clear()
        consts[value] = c
    return c


class InplaceDtypeError(TypeError, RuntimeError):
    """An in-place result of a lower category than its target (a float into an int tensor);
    a RuntimeError as in PyTorch, and a TypeError."""


class InplaceShapeError(ValueError, RuntimeError):
    """An in-place result whose broadcast shape is not its target's (RuntimeError in PyTorch)."""


def _promote_pair(op, x, y, floating=False):
    """`promote` for an operator, refusing what PyTorch refuses, before any NumPy call."""
    if isinstance(y, (list, tuple)):
        y = Tensor(y)
    if op is ops.sub and (_is_bool(x) or _is_bool(y)):
        raise DtypeError("subtraction ('-') with a bool operand is not supported; use '^' "
                        "(logical xor) or '~' (to invert a mask), or convert with .long()")
    x, y = promote(x, y, floating=floating)
    if op is ops.pow and x.dtype == np.bool_:
        raise DtypeError("'**' of bool tensors is not supported; convert with .long() first")
    return x, y


def _int_pow(x, y) -> Tensor:
    from .api.torch_names import pow as _pow  # imports methods: not at module level
    return _pow(x, y)


def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, (Tensor, np.ndarray))
                                               and x.dtype == np.bool_)


def _old_alpha_form(other, alpha, name: str) -> tuple:
    """(other, alpha), reading PyTorch's deprecated `x.add_(alpha_number, other_tensor)`
    (old tutorials' `p.data.add_(-lr, p.grad)`) with its warning."""
    if isinstance(alpha, Tensor) and ((isinstance(other, (int, float))
                                       and not isinstance(other, bool))
                                      or (isinstance(other, Tensor) and other.ndim == 0
                                          and not other.requires_grad)):
        # a 0-d tensor alpha too: LAMB's `p.data.add_(-lr * trust_ratio, adam_step)`
        warnings.warn(f"This overload of {name} is deprecated: {name}(Number alpha, Tensor "
                      f"other); use {name}(Tensor other, *, Number alpha)", UserWarning,
                      stacklevel=3)
        return alpha, other
    return other, alpha


def _scaled(x, other, alpha, fn):
    """alpha * other in the dtype of the in-place result (PyTorch's add_(other, alpha=):
    the product is not rounded to other's narrower dtype first), alpha checked as add's."""
    if isinstance(other, Tensor):
        rt = result_type(x, other)
        alpha = _check_alpha(fn, alpha, rt)
        if rt == np.bool_:  # bool arithmetic, as PyTorch's: alpha is its truth value
            return other if alpha else other & False
        if other.dtype != rt:
            other = other.to(rt)
    return other * alpha


def _is_bool_power(x, y, reflected) -> bool:
    """A tensor to the power of a Python bool (PyTorch: `x ** True` a copy of x, `x ** False`
    ones of x's dtype, bool tensors included)."""
    return not reflected and isinstance(y, (bool, np.bool_))


class _Methods:
    """Methods of `Tensor` that call the engine; copied onto the class below."""

    @property
    def T(self) -> Tensor:
        return F.transpose(self)

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped (torch: a 0-d tensor is itself, with a deprecation
        warning; a 1-d one is refused)."""
        if self.ndim < 2:
            if self.ndim == 0:
                warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the "
                              "identity in these cases.", UserWarning, stacklevel=2)
                return self
            raise ShapeError("tensor.mT is only supported on matrices or batches of matrices. "
                             f"Got {self.ndim}-D tensor.")
        return F.transpose(self, -2, -1)

    def to(self, *args, **kwargs) -> Tensor:
        """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)` (other's device and
        dtype), or by keyword: a copy on that device in that dtype (differentiable between
        devices and between float dtypes), or self when nothing changes."""
        if len(args) == 1 and not kwargs and _is_dtype(args[0]):
            return _to_dtype(self, args[0])
        flags = _to_flags(args)
        copy = bool(kwargs.get("copy", False)) or (len(flags) == 2 and flags[1])
        target, dtype = _to_args(args, kwargs)
        t = self
        if target is not None and target != self.device:
            t = apply(ops.to_device, t, device=target, src=self.device)
        t = t if dtype is None else _to_dtype(t, dtype)
        return t.clone() if copy and t is self else t  # copy=True: a new tensor, as PyTorch

    def cpu(self) -> Tensor:
        """This tensor on the host (self if it is there)."""
        return self if self.data.__class__ is np.ndarray else self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        """This tensor on CUDA device `device` (default: the current one, 0)."""
        return self.to(devices.device("cuda", device))

    def astype(self, dtype) -> Tensor:
        return _to_dtype(self, dtype)

    def _to_dtype(self, dtype) -> Tensor:
        dtype = tensor_dtype(dtype, "to")
        if dtype == self.data.dtype:
            return self
        if self.requires_grad and not is_float(dtype) and state.tracer is None \
                and self._fw is None:  # (a batched tensor's batch comes from the op)
            return Tensor._wrap(self.data.astype(dtype))
        return apply(ops.cast, self, dtype=dtype)

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def long(self) -> Tensor:
        return self.to(np.int64)

    def bool(self) -> Tensor:
        return self.to(np.bool_)

    def clone(self, *, memory_format=None) -> Tensor:
        """A copy of the values that stays in the graph (`memory_format`: see `layouts`)."""
        if memory_format is not None:
            check_keywords("clone", memory_format_=memory_format)
        if self.requires_grad or self._fw is not None or state.tracer is not None:
            # keep the graph and any tangent (and a jit trace)
            return apply(ops.cast, self, dtype=self.data.dtype)
        return Tensor._wrap(self.data.copy())

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad`."""
        if state.forward is not None and state.forward.vmapped:
            raise RuntimeError("backward() inside rg.func.vmap: .grad cannot hold a batch of "
                               "gradients; use rg.func.grad (or vjp) inside vmap instead")
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


    __add__ = _binop(ops.add)
    __radd__ = _binop(ops.add, reflected=True)
    __sub__ = _binop(ops.sub)
    __rsub__ = _binop(ops.sub, reflected=True)
    __mul__ = _binop(ops.mul)
    __rmul__ = _binop(ops.mul, reflected=True)
    __truediv__ = _binop(ops.div, true_div=True)
    __rtruediv__ = _binop(ops.div, reflected=True, true_div=True)
    __div__ = __truediv__  # Python 2's names, still on torch.Tensor (old code calls them)
    __rdiv__ = __rtruediv__
    __pow__ = _binop(ops.pow)
    __rpow__ = _binop(ops.pow, reflected=True)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        if self.data.dtype == np.bool_:  # PyTorch's RuntimeError; NumPy's TypeError
            raise DtypeError("negation, the '-' operator, on a bool tensor is not supported; "
                             "to invert a mask use '~' or rg.logical_not()")
        return apply(ops.neg, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return F.abs(self)

    def _compare(self, op, other):
        x, y = _promote_pair(op, self, other)
        try:
            return apply(op, x, y)
        except ValueError:
            check_broadcast(op.name, x, y)
            raise

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
        if self.dtype.kind not in "biu":
            raise TypeError(f"~ needs a bool or integer tensor, got {self.dtype}")
        return apply(ops.OPS["bitwise_not"], self)

    def __and__(self, other):
        return _bitwise("bitwise_and", self, other)

    def __or__(self, other):
        return _bitwise("bitwise_or", self, other)

    def __xor__(self, other):
        return _bitwise("bitwise_xor", self, other)

    __rand__ = __and__
    __ror__ = __or__
    __rxor__ = __xor__

    # ------------------------------------------------------------ indexing

    def __getitem__(self, idx):
        if state.forward is not None and state.forward.vmapped and _batched_index(
                idx, getattr(self, "_fw", None) is None):
            return _vmap_getitem(self, idx)
        try:
            idx = _index(idx, self.shape, self.data)
            out = apply(ops.getitem, self, idx=idx)
        except IndexError as e:
            raise IndexError(f"index {idx!r} is invalid for a tensor of shape {self.shape}: "
                             f"{e}") from None
        if idx.__class__ is tuple:
            perm = _torch_order(idx, self.ndim)
            if perm is not None:
                out = apply(ops.permute, out, axes=perm)
        return out

    def __setitem__(self, idx, value) -> None:
        idx = _index(idx, self.shape, self.data, write=True)
        if isinstance(value, (Tensor, np.ndarray)) and value.ndim and value.shape[0] == 1:
            # PyTorch drops a value's leading size-1 dims before broadcasting it to the
            # indexed part (`seq[T] = next_token` with a (1, 1) token): equal wherever
            # broadcasting alone also fits, and it fits where a value has more dims
            lead = next((i for i, n in enumerate(value.shape) if n != 1), value.ndim)
            value = value.reshape(value.shape[lead:])
        if isinstance(value, Tensor) and value.dtype != self.dtype and _put_refuses(idx, value):
            raise DtypeError(f"Index put requires the source and destination dtypes match, got "
                             f"{self.dtype} for the destination and {value.dtype} for the "
                             f"source (as in PyTorch: convert the value with .to(x.dtype))")
        if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "fc" \
                and self.data.dtype.kind in "iu" and _has_mask(idx):
            # a 0-d value under a mask is PyTorch's masked_fill: its value is checked
            _scalar_as(value.item(), self.data.dtype, "setitem")
        if value.__class__ in (bool, int, float, complex) and (
                self.data.dtype.itemsize >= 4 or self.data.dtype.kind != "f"):
            # PyTorch's checked fill value: -1 wraps into uint8, 300 or 1+2j into a real
            # dtype raise its RuntimeError (NumPy would raise OverflowError or TypeError);
            # float16 takes 70000.0 as inf, as torch does
            value = _scalar_as(value, self.data.dtype, "setitem").item()
        perm = _torch_order(idx, self.ndim) if idx.__class__ is tuple else None
        if perm is not None and not isinstance(value, (bool, int, float, complex, np.generic)):
            # the value is laid out in PyTorch's order: move it to NumPy's for the write
            value = value if isinstance(value, Tensor) else Tensor(value)
            host_idx = tuple(devices.host(i) if devices.is_device_array(i) else i for i in idx)
            shape = np.broadcast_to(np.empty((), np.bool_), self.shape)[host_idx].shape
            torch_shape = tuple(shape[a] for a in perm)
            value = apply(ops.permute, F.expand(value, *torch_shape), axes=_inverse(perm))
        try:
            self._inplace(ops.setitem, value, idx=idx)
        except IndexError as e:
            raise IndexError(f"index {idx!r} is invalid for a tensor of shape {self.shape}: "
                             f"{e}") from None
        except ValueError as e:  # NumPy's broadcast refusal: PyTorch's RuntimeError
            if isinstance(e, RuntimeError):
                raise
            raise InplaceShapeError(f"setitem: the value does not fit the indexed part of a "
                                    f"tensor of shape {self.shape}: {e}") from None

    # ------------------------------------------------------------ in place

    def _inplace(self, op, other, **attrs) -> Tensor:
        """Run `op(self, other)` and write the result into self's array.

        The result dtype is PyTorch's (`result_type`); one of a lower category than
        self's (a float result into an integer tensor) is refused, a wider one of the
        same category is cast back (float32 += float64 tensor stays float32).
        """
        if isinstance(other, (list, tuple, np.ndarray)):
            other = Tensor(other)
            if self.data.__class__ is not _ND:  # host values written into a device tensor
                other = Tensor._wrap(devices.to(other.data, self.device))
        elif isinstance(other, Tensor) and other.data.__class__ is not self.data.__class__ \
                and (op is ops.setitem or other.ndim == 0) and other.device != self.device:
            other = other.to(self.device)  # an assignment copies across devices (copy_), and
            # a host scalar tensor meets a device tensor, as in PyTorch
        if op is not ops.setitem:
            if other.__class__ is Tensor and other.shape != self.shape:
                check_broadcast(op.name, self, other)
            if op is ops.sub and (_is_bool(self) or _is_bool(other)):
                raise DtypeError(f"in-place '-' with a bool operand ({self.dtype} tensor, "
                                 f"{type(other).__name__}) is not supported")
            res = (float_result_type if op is ops.div else result_type)(self, other)
            if res == np.bool_ and op.name in ("pow", "floor_divide", "remainder") and not (
                    op is ops.pow and isinstance(other, (bool, np.bool_))):  # x **= True is x
                raise DtypeError(f"in-place '{op.name}' is not implemented for bool tensors "
                                 "(as in PyTorch)")
            if not can_cast(res, self.data.dtype):
                raise InplaceDtypeError(f"in-place '{op.name}': result type {res} can't be cast "
                                        f"to the desired output type {self.data.dtype}")
        # an integer or bool tensor holds no gradient: a float source's is dropped (as copy_)
        recording = state.enabled and (self.requires_grad or (
            isinstance(other, Tensor) and other.requires_grad
            and self.data.dtype.kind in "fc"))
        if recording and self.grad_fn is None and self.requires_grad:
            raise RuntimeError(
                f"a leaf tensor that requires grad (shape {self.shape}) is being used in an "
                f"in-place operation ('{op.name}'); wrap it in rg.no_grad() or use an "
                "out-of-place op")
        carried = state.forward is not None and state.forward.check_inplace(self, other, op)
        if carried == "view":  # a write into a view (or a viewed tensor) carrying tangents
            engine.mark_inplace()
            return state.forward.write_view_inplace(self, other, op, attrs)
        rebase = _view_rebase(self, f"in-place '{op.name}'") if recording else None
        if state.tracer is not None:  # rg.jit: the write becomes part of the program
            state.tracer.node_of(self)
        if carried:
            engine.mark_inplace()
            return state.forward.write_inplace(self, other, op, attrs)
        if recording:
            if rebase is not None:  # self's old value, as a view of its root's old history
                root = _snapshot(rebase[0])
                old = _through(root, rebase[1])
                if _reads_old(op, other):
                    held = Tensor._wrap(self.data.copy())
                    held.grad_fn, held.requires_grad = old.grad_fn, old.requires_grad
                    old = held
            elif state.tracer is None and _reads_old(op, other):
                # the rules read the value before the write (x.mul_(w) needs x for w's
                # gradient): keep a copy, as PyTorch saves the original, so later in-place
                # changes of self do not invalidate this step
                old = Tensor._wrap(self.data.copy())
                old.grad_fn, old.requires_grad = self.grad_fn, self.requires_grad
            else:
                old = Tensor._wrap(self.data)
                old.grad_fn, old.requires_grad, old._vc = self.grad_fn, self.requires_grad, \
                    self._cell()
            if op is not ops.setitem:
                old, other = promote(old, other, floating=op is ops.div)
            result = apply(op, old, other, **attrs)  # records the node before the write
            if result.data.dtype != self.data.dtype:
                result = result.to(self.data.dtype)
            node = result.grad_fn
            new = result.data
        else:
            x, other_data = self.data, other.data if isinstance(other, Tensor) else other
            if op is not ops.setitem:
                x, other_data = (_array_as(a, res, x) for a in (x, other_data))
            new = op.forward(x, other_data, **attrs)
        if np.shape(new) != self.data.shape:
            raise InplaceShapeError(f"in-place '{op.name}': output with shape {self.shape} "
                                    f"doesn't match the broadcast shape {np.shape(new)}")
        if not getattr(self.data.flags, "writeable", True):
            raise RuntimeError(f"in-place '{op.name}' on a tensor whose data is a read-only "
                               "view (e.g. from expand); clone() it first")
        if state.tracer is not None:
            state.tracer.inplace(self, op, other, attrs, new)
        self.data[...] = new
        self._cell()[0] += 1
        engine.mark_inplace()
        if recording:
            if rebase is not None:
                node = _rebase_root(rebase, root, result)
            self.grad_fn = node
            self.requires_grad = True
            _remake_views(self)
            if rebase is not None:  # a view taken while its root had no history: now one
                _register_view(rebase[0], self)  # of the root's, remade by later writes
        return self

    def _half_number_(self, op, number, name: str) -> Tensor:
        """float16 times or divided by a number, in place: in float32, rounded once, as the
        operators (`_half_with_number`) and torch's mul_/div_."""
        from .api.inplace import check_target, own_history, write_into

        src = self
        if state.enabled and self.requires_grad:
            check_target(self, name)
            src = own_history(self).clone()
        return write_into(self, _half_with_number(op, src, number, False), name)

    def add_(self, other, alpha=1) -> Tensor:
        other, alpha = _old_alpha_form(other, alpha, "add_")
        return self._inplace(ops.add, other if alpha == 1 else _scaled(self, other, alpha,
                                                                           "add_"))

    def sub_(self, other, alpha=1) -> Tensor:
        other, alpha = _old_alpha_form(other, alpha, "sub_")
        if alpha != 1 and (_is_bool(self) or _is_bool(other)):  # before the scaling hides it
            raise DtypeError(f"in-place '-' with a bool operand ({self.dtype} tensor, "
                             f"{type(other).__name__}) is not supported")
        return self._inplace(ops.sub, other if alpha == 1 else _scaled(self, other, alpha,
                                                                           "sub_"))

    def mul_(self, other) -> Tensor:
        if self.data.dtype is _F16 and (other.__class__ is float or other.__class__ is int):
            return self._half_number_(ops.mul, other, "mul_")
        return self._inplace(ops.mul, other)

    def div_(self, other, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            if self.data.dtype is _F16 and (other.__class__ is float or other.__class__ is int):
                return self._half_number_(ops.div, other, "div_")
            return self._inplace(ops.div, other)
        if rounding_mode not in ("trunc", "floor"):
            raise ArgumentError(f"div_ expected rounding_mode to be one of None, 'trunc', or "
                                f"'floor' but found '{rounding_mode}'")
        return self._inplace(ops.floor_divide if rounding_mode == "floor" else
                             ops.trunc_divide, other)

    # `a += b` and kin change `a` in place, as in PyTorch (other names for `a` see the
    # change; version counters guard saved values). `@=` has no in-place form in PyTorch
    # either: Python falls back to `a = a @ b`.
    def __iadd__(self, other) -> Tensor:
        return self._inplace(ops.add, other)

    def __isub__(self, other) -> Tensor:
        return self._inplace(ops.sub, other)

    def __imul__(self, other) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other) -> Tensor:
        return self.div_(other)

    __idiv__ = __itruediv__

    def __ipow__(self, other) -> Tensor:
        if self.data.dtype.kind in "iu" and isinstance(other, (int, np.integer)) \
                and not isinstance(other, bool) and other < 0:
            raise ArgumentError(f"pow_(): integers to negative integer powers are not allowed "
                                f"(a {self.dtype} tensor, in place)")
        if self.data.dtype.kind in "iu" and isinstance(other, Tensor) \
                and other.data.dtype.kind in "iu":
            return self.pow_(other)  # exponents that may be negative: torch's integer rule
        if (other.__class__ is float or other.__class__ is int) \
                and other in NUMBER_POWERS_FLAGGED and self.data.dtype in (_F32, np.float64):
            return self._inplace(ops.pow, other, number=True)  # x **= 3 as x ** 3
        return self._inplace(ops.pow, other)

    def zero_(self) -> Tensor:
        return self._inplace(ops.setitem, 0, idx=Ellipsis)

    def fill_(self, value) -> Tensor:
        if isinstance(value, Tensor) and value.ndim:
            raise InplaceShapeError(f"fill_() takes a number or a 0-d tensor, got a tensor of "
                                    f"shape {value.shape} (use copy_ to write a tensor)")
        kind = self.data.dtype.kind
        if isinstance(value, (complex, np.complexfloating)) and kind in "iuf":
            if value.imag != 0:  # as torch: no real value to write
                raise ValueOverflowError(f"fill_: value {value} cannot be converted to type "
                                         f"{self.data.dtype} without overflow")
            value = value.real
        if kind in "iu" and isinstance(value, (float, np.floating)):
            info = np.iinfo(self.data.dtype)  # (nan fails the test too)
            if not info.min <= value <= info.max:
                raise ValueOverflowError(f"fill_: value {value} cannot be converted to type "
                                         f"{self.data.dtype} without overflow")
        if kind in "iu" and isinstance(value, (int, np.integer)) \
                and not isinstance(value, bool):
            value = int_in_range(int(value), self.data.dtype, "fill_")
        elif kind == "f" and isinstance(value, (float, np.floating)):
            float_in_range(float(value), self.data.dtype, "fill_")
        return self._inplace(ops.setitem, value, idx=Ellipsis)

    def copy_(self, src, non_blocking: bool = False) -> Tensor:
        """Copy `src`'s values into self (broadcast, cast, across devices); `non_blocking`
        is accepted for ported code and changes nothing (copies are synchronous here)."""
        src = src if isinstance(src, Tensor) else Tensor(src)
        if src.data.__class__ is not self.data.__class__ and src.device != self.device:
            src = src.to(self.device)  # copy_ copies between devices, as in PyTorch
        try:
            if np.broadcast_shapes(src.shape, self.shape) != self.shape:
                raise ValueError  # a source with more (or longer) dims than self, as torch
        except ValueError:
            raise InplaceShapeError(f"copy_(): source of shape {src.shape} cannot be broadcast "
                                    f"to {self.shape}") from None
        return self._inplace(ops.setitem, src, idx=Ellipsis)


def _rebase_root(rebase, root, result):
    """After a write into a view: the view's root becomes its old value (`root`) with the
    written values (`result`) scattered in at the view's elements, and the view's node a
    view of that, as PyTorch's CopySlices; returns the view's new node."""
    base, chain, flat = rebase
    scattered = apply(ops.setitem, apply(ops.reshape, root, shape=(-1,)),
                      apply(ops.reshape, result, shape=(-1,)), idx=flat)
    new_root = apply(ops.reshape, scattered, shape=base.shape)
    base.grad_fn, base.requires_grad = new_root.grad_fn, True
    return _through(base, chain).grad_fn


def _reads_old(op, other) -> bool:
    """Whether `op`'s rules read input 0 (the value an in-place op overwrites)."""
    reads = op.reads
    if reads is None:
        return True
    if reads == "others":
        return isinstance(other, Tensor) and other.requires_grad
    if reads.__class__ is dict:
        return any(0 in r for r in reads.values())
    return 0 in reads


def _data(x):
    return x.data if isinstance(x, Tensor) else x


def _array_as(x, dtype, ref):
    """An in-place op's operand (array or scalar) in the result dtype, on `ref`'s device."""
    if isinstance(x, np.ndarray) or devices.is_device_array(x):
        return x if x.dtype == dtype else x.astype(dtype)
    c = scalar_array(x, dtype)
    return c if ref.__class__ is _ND else devices.like(c, ref)


def _bitwise(name, x, other):
    """`& | ^` on bool and integer tensors, with PyTorch's promotion (and wrapping of
    Python ints to the tensor's dtype)."""
    x, other = _promote_pair(ops.OPS[name], x, other)
    if x.dtype.kind not in "biu":
        raise DtypeError(f"'{name}' needs bool or integer tensors, got {x.dtype}")
    try:
        return apply(ops.OPS[name], x, other)
    except ValueError:
        check_broadcast(name, x, other)
        raise


def _inverse(perm):
    inv = [0] * len(perm)
    for i, a in enumerate(perm):
        inv[a] = i
    return tuple(inv)


def _batched_index(idx, plain: bool) -> bool:
    """Whether `idx` holds an integer index tensor that rg.func.vmap batches: one of 1 or
    more dimensions per element, or also 0-d when the indexed tensor is `plain` (not
    batched), where torch.func.vmap batches them too."""
    items = idx if idx.__class__ in (tuple, list) else (idx,)
    return any(isinstance(i, Tensor) and (i.ndim or plain) and i.dtype.kind in "iu"
               and i.dtype != np.uint8 and getattr(i, "_fw", None) for i in items)


def _int_list_index(i):
    """A list (or NumPy array) of integers among the indices: the int64 index tensor
    PyTorch makes of it; anything else unchanged."""
    if isinstance(i, (list, np.ndarray)):
        try:
            a = np.asarray(i)
        except ValueError:
            return i
        if a.dtype.kind in "iu" and a.size:
            return Tensor(a.astype(np.int64))
    return i


def _vmap_index_range(t: Tensor, n: int, d: int) -> None:
    """Every batch element's entries of the index tensor `t` in [-n, n), else PyTorch's
    IndexError (take_along_dim, which does the gathering, would wrap them silently)."""
    from ._values import every_value

    if t.numel() == 0:
        return
    values = every_value(t)
    lo, hi = int(values.min()), int(values.max())
    if lo < -n or hi >= n:
        bad = lo if lo < -n else hi
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")


def _vmap_getitem(x: Tensor, idx) -> Tensor:
    """`x[idx]` inside rg.func.vmap with batched integer index tensors (a CRF's gold score
    `emissions[arange(T), tags]`), as torch.func.vmap's batching rule computes it: ints and
    slices first (PyTorch applies an int as basic indexing), then the advanced dimensions
    gathered with `take_along_dim` from their flattened block, the index tensors' broadcast
    dimensions put where the first advanced index was if the advanced indices are adjacent,
    else in front. A bool mask, None or a list among them, or a batched 0-d index (an int,
    whose value PyTorch reads) into a batched tensor, is refused as before."""
    items = list(idx) if idx.__class__ in (tuple, list) else [idx]
    items = [_int_list_index(i) for i in items]  # [0, 2] among them: an index tensor
    if any(i is None or isinstance(i, (list, bool, np.ndarray)) or (
            isinstance(i, Tensor) and (i.dtype.kind not in "iu" or i.dtype == np.uint8 or (
                i.ndim == 0 and getattr(i, "_fw", None) and x._fw is not None)))
           for i in items):
        _index(idx, x.shape, x.data)  # refuses a batched index it cannot batch
    k = next((k for k, i in enumerate(items) if i is Ellipsis), None)
    if k is not None:
        items[k:k + 1] = [slice(None)] * (x.ndim - len(items) + 1)
    if len(items) > x.ndim:
        raise IndexError(f"too many indices for a tensor of shape {x.shape}")
    items += [slice(None)] * (x.ndim - len(items))
    basic, adv, tensors, dim = [], [], [], 0
    for i in items:
        if isinstance(i, Tensor):
            basic.append(slice(None))
            adv.append(dim)
            tensors.append(i)
            dim += 1
        else:
            basic.append(i)
            dim += 0 if isinstance(i, (int, np.integer)) else 1
    y = x[tuple(basic)]
    sizes = [y.shape[d] for d in adv]
    rest = [d for d in range(y.ndim) if d not in adv]
    y = y.permute(*rest, *adv).reshape(*[y.shape[d] for d in rest], -1)
    lin, stride = None, 1
    for t, n, d in reversed(list(zip(tensors, sizes, adv))):
        _vmap_index_range(t, n, d)
        t = t.long()
        t = t + (t < 0).long() * n
        part = t * stride
        lin = part if lin is None else lin + part
        stride *= n
    bshape = tuple(lin.shape)
    flat = lin.reshape(*([1] * len(rest)), -1).expand(*y.shape[:-1], -1)
    out = F.take_along_dim(y, flat, dim=-1).reshape(*y.shape[:-1], *bshape)
    if adv == list(range(adv[0], adv[0] + len(adv))) and adv[0] <= len(rest):
        nb, at = len(bshape), adv[0]
        order = list(range(at)) + list(range(len(rest), len(rest) + nb)) + \
            list(range(at, len(rest)))
        return out.permute(*order)
    return out.permute(*range(len(rest), len(rest) + len(bshape)), *range(len(rest)))


def _torch_order(idx: tuple, ndim: int):
    """The permutation taking NumPy's result of `x[idx]` to PyTorch's, or None if equal.

    The two differ only where ints and index arrays mix: PyTorch applies an int as
    basic indexing (its dimension is gone before advanced indices are placed), NumPy
    counts it among the advanced indices. So `x[1, :, idx]` puts idx's dimensions
    after the slice in PyTorch, first in NumPy. Both put the block of advanced
    dimensions where the first advanced index was if those indices are adjacent,
    else in front.
    """
    ints = [k for k, i in enumerate(idx) if isinstance(i, (int, np.integer))
            and not isinstance(i, (bool, np.bool_))]
    arrays = [k for k, i in enumerate(idx) if _is_array(i)]
    if not ints or not arrays:
        return None
    consumed = sum(0 if i is None or i is Ellipsis else
                   i.ndim if _is_array(i) and i.dtype == np.bool_ else 1
                   for i in idx)
    made = [1 if i is None or isinstance(i, slice) else
            ndim - consumed if i is Ellipsis else 0 for i in idx]  # basic dims per item
    nb = max(1 if a.dtype == np.bool_ else a.ndim for a in (idx[k] for k in arrays))

    def place(adv):  # where the block of advanced dimensions goes
        between = range(adv[0], adv[-1] + 1)
        if all(k in adv or k in ints for k in between) and (
                adv is arrays or len(adv) == adv[-1] - adv[0] + 1):
            return sum(made[:adv[0]])
        return 0

    numpy_pos = place(sorted(ints + arrays))
    torch_pos = place(arrays)
    if numpy_pos == torch_pos:
        return None
    rank = sum(made) + nb + (0 if any(i is Ellipsis for i in idx) else ndim - consumed)
    block = list(range(numpy_pos, numpy_pos + nb))
    rest = [d for d in range(rank) if d not in block]
    return tuple(rest[:torch_pos] + block + rest[torch_pos:])


def _is_array(i) -> bool:
    return isinstance(i, np.ndarray) or devices.is_device_array(i)


def _has_mask(idx) -> bool:
    """Whether an index (from `_index`) holds a bool mask array."""
    return any(getattr(i, "dtype", None) == np.bool_ and getattr(i, "ndim", 0)
               for i in (idx if idx.__class__ is tuple else (idx,)))


def _put_refuses(idx, value) -> bool:
    """Whether PyTorch's index_put refuses a value of another dtype for `idx` (its arrays
    from `_index`): any integer index array, or a bool mask with a value of 1 or more
    dimensions (a 0-d value under a mask is a masked fill, which casts)."""
    arrays = [i for i in (idx if idx.__class__ is tuple else (idx,))
              if hasattr(i, "dtype") and getattr(i, "ndim", 0)]
    if any(a.dtype.kind in "iu" for a in arrays):
        return True
    return bool(arrays) and value.data.ndim > 0


_INDEX_INTS = (np.dtype(np.int64), np.dtype(np.int32))
"""The integer dtypes PyTorch takes as index tensors (with uint8 masks, and bool)."""


def _index(idx, shape, ref=None, write=False):
    """Turn tensors and lists inside an index into arrays (on `ref`'s device), and check
    bounds. A uint8 tensor is read as a mask, and refused in a write, as PyTorch does. A
    list holding a list, slice, None, ... or tensor is read as a tuple, as PyTorch still does
    (NumPy reads it as one index array): x[[[0, 1], [1, 0]]] is x[[0, 1], [1, 0]]."""
    if idx.__class__ is list and len(idx) < 32 and any(
            i is None or i is Ellipsis or isinstance(i, (slice, list, tuple, Tensor))
            for i in idx):
        idx = tuple(idx)
    items = idx if isinstance(idx, tuple) else (idx,)
    out = []
    for i in items:
        if isinstance(i, Tensor):
            if i.dtype.kind not in "iub":
                raise IndexError(f"tensors used as indices must be integer or bool, got "
                                 f"{i.dtype}")
            if state.tracer is not None:
                state.tracer.check_index(i)
            if state.forward is not None and state.forward.vmapped:  # rg.func.vmap
                state.forward.check_read(i, "indexing with a tensor")
            i = i.data
            if i.dtype == np.uint8:  # PyTorch's deprecated form: a uint8 tensor is a mask
                if write:
                    raise DtypeError("an indexed write with a uint8 tensor as a mask is not "
                                     "supported (as in PyTorch): use a bool tensor")
                warnings.warn("indexing with a uint8 tensor is deprecated (as in PyTorch); "
                              "it is read as a mask: use a bool tensor", UserWarning,
                              stacklevel=3)
                i = i.astype(np.bool_)
            if i.ndim == 0 and i.dtype.kind in "iu":  # a 0-d integer tensor is an int
                i = int(i)
            elif i.dtype.kind in "iu" and i.dtype not in _INDEX_INTS:
                raise IndexError(f"tensors used as indices must be long, int, byte or bool "
                                 f"tensors, got {i.dtype} (convert with .long())")
        elif isinstance(i, list):
            i = np.asarray(i)
            if i.size == 0 and i.dtype.kind == "f":  # [] (NumPy: float64): no positions,
                i = i.astype(np.int64)  # as PyTorch reads it (scores[b, banned] = -inf)
        if isinstance(i, np.ndarray) and i.dtype.kind not in "iub":
            raise IndexError(f"arrays used as indices must be integer or bool, got {i.dtype}")
        out.append(i)
    if ref is not None and ref.__class__ is not _ND:  # a device tensor: indices go there too
        out = [devices.like(i, ref) if isinstance(i, np.ndarray) else i for i in out]
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
# Indexing, rearranging, cumulative and sorting methods (PyTorch's names).
for _name in ("gather scatter scatter_add scatter_reduce index_select index_add masked_fill "
              "masked_select nonzero take_along_dim diagonal diag_embed diag tril triu flip "
              "fliplr flipud roll tile repeat_interleave unflatten movedim moveaxis narrow "
              "chunk unbind cumsum cumprod cummax cummin logcumsumexp sort argsort msort topk "
              "kthvalue median mode").split():
    setattr(Tensor, _name, getattr(F, _name))
Tensor.repeat = _indexing.repeat


def _split(self, split_size, dim=0) -> tuple:
    """`t.split(split_size, dim=0)`: torch's method calls its first argument `split_size`
    (the function `torch.split`, `split_size_or_sections`), and ported code passes it by
    name (`x.split(split_size=[d, d], dim=-1)`, as in mamba-minimal)."""
    return F.split(self, split_size, dim)


Tensor.split = _split
Tensor.unfold = _indexing.unfold  # sliding windows along one dim (F.unfold is im2col)


def _inplace_as(fn):
    """An in-place method `x.name_(...)`: the out-of-place result copied into x. While
    gradients are recorded, the result is computed from a clone of x, so the values its
    backward saves (scatter_reduce's amax/prod/mean read x) are not the ones the write
    overwrites: x.scatter_reduce_(..., src) with src requiring grad, as in PyTorch."""
    def method(self, *args, **kwargs):
        if state.enabled and (self.requires_grad or any(
                isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values()))):
            return self.copy_(fn(self.clone(), *args, **kwargs))
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _name in ("masked_fill scatter scatter_add scatter_reduce index_add tril triu").split():
    setattr(Tensor, _name + "_", _inplace_as(getattr(F, _name)))


def _masked_fill_(self, mask, value):
    """x.masked_fill_(mask, value): the mask must broadcast to x's shape without enlarging
    it (out of place, a larger mask gives a larger result)."""
    shape = getattr(mask, "shape", np.shape(mask))
    if not broadcasts_into(shape, self.shape):
        raise ShapeError(f"masked_fill_(): mask of shape {tuple(shape)} does not broadcast to "
                         f"the input's shape {self.shape}")
    return self.copy_(F.masked_fill(self, mask, value))


Tensor.masked_fill_ = _masked_fill_
Tensor.view = Tensor.reshape
Tensor.expand_as = lambda self, other: F.expand(self, *other.shape)
Tensor.view_as = lambda self, other: self.view(*other.shape)
Tensor.mul = Tensor.__mul__
Tensor.div = Tensor.__truediv__

# Element-wise math, logic and the integer operators (`api/math.py`).
for _name in ("floor ceil trunc fix round frac log2 log10 exp2 expm1 rsqrt reciprocal square "
              "asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan arcsinh arccosh "
              "arctanh erf erfc erfinv atan2 arctan2 hypot copysign logaddexp logaddexp2 xlogy "
              "lerp fmod remainder floor_divide div divide true_divide isnan isinf isfinite "
              "isclose allclose logical_and logical_or logical_xor logical_not all any "
              "nan_to_num bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift "
              "bitwise_right_shift").split():
    setattr(Tensor, _name, getattr(F, _name))


def _reflected(f):
    def method(self, other):
        return f(other, self)
    method.__name__ = f"__r{f.__name__}__"
    return method


def _inplace_method(opname: str, integer: bool = False):
    """`a //= b` and kin: PyTorch's in-place forms (result dtype checked by `_inplace`)."""
    def method(self, other):
        if integer and (self.data.dtype.kind not in "biu" or (isinstance(other, Tensor) and
                                                              other.data.dtype.kind not in "biu")
                        or isinstance(other, float)):
            raise DtypeError(f"in-place '{opname}' needs bool or integer tensors, got "
                             f"{self.dtype}")
        return self._inplace(ops.OPS[opname], other)
    method.__name__ = f"__i{opname}__"
    return method


Tensor.__floordiv__ = F.floor_divide
Tensor.__rfloordiv__ = _reflected(F.floor_divide)
Tensor.__mod__ = F.remainder
Tensor.__rmod__ = _reflected(F.remainder)
Tensor.__lshift__ = F.bitwise_left_shift
Tensor.__rlshift__ = _reflected(F.bitwise_left_shift)
Tensor.__rshift__ = F.bitwise_right_shift
Tensor.__rrshift__ = _reflected(F.bitwise_right_shift)
Tensor.__ifloordiv__ = _inplace_method("floor_divide")
Tensor.__imod__ = _inplace_method("remainder")
Tensor.__iand__ = _inplace_method("bitwise_and", integer=True)
Tensor.__ior__ = _inplace_method("bitwise_or", integer=True)
Tensor.__ixor__ = _inplace_method("bitwise_xor", integer=True)
Tensor.__ilshift__ = _inplace_method("left_shift", integer=True)
Tensor.__irshift__ = _inplace_method("right_shift", integer=True)


# Conversions, bitcasts, norms and sampling (PyTorch's names).
def _is_dtype(v) -> bool:
    if isinstance(v, str):
        return not _is_device(v)
    if isinstance(v, (np.dtype, _UnsupportedDtype)):  # (bfloat16: refused by _to_dtype)
        return True
    return isinstance(v, type) and (issubclass(v, np.generic) or v in (float, int, bool, complex))


def _view(self, *shape, size=None, dtype=None) -> Tensor:
    """`view(*shape)` reshapes; `view(dtype)` reads the same bytes as `dtype` (the last
    dimension scales by the ratio of the item sizes), sharing memory, as in PyTorch;
    `size=` and `dtype=` are torch's keywords for them."""
    if size is not None or dtype is not None:
        if shape or (size is not None and dtype is not None):
            raise TypeError("view() takes a shape or a dtype, once")
        shape = (size,) if size is not None else (dtype,)
    if len(shape) == 1 and _is_dtype(shape[0]):
        dt = np.dtype(shape[0])
        x = self.data
        if dt.itemsize != x.dtype.itemsize:
            if x.ndim == 0:
                raise RuntimeError(f"view({dt}): a 0-d tensor can only be viewed as a dtype of "
                                   f"the same size ({x.dtype.itemsize} bytes)")
            if x.ndim and x.strides[-1] != x.dtype.itemsize and x.shape[-1] != 1:
                raise RuntimeError(f"view({dt}): the last dimension of a {x.dtype} tensor of "
                                   f"shape {x.shape} must be contiguous to change the item size")
            if dt.itemsize > x.dtype.itemsize and (x.shape[-1] * x.dtype.itemsize) % dt.itemsize:
                raise RuntimeError(f"view({dt}): the last dimension of shape {x.shape} "
                                   f"({x.dtype}) must hold a whole number of {dt} items")
        return apply(ops.bitcast, self, dtype=dt)
    out = F.reshape(self, *shape)
    if not self.data.flags.c_contiguous:  # (any shape of as many elements views those)
        _check_viewable(self.data, out.shape)
    return out


def _view_strides(shape, strides, new):
    """The strides of `new` viewing memory laid out as (shape, strides) (in elements), or
    None where no view exists (PyTorch's rule: each run of dimensions the new shape
    spans must be contiguous within itself)."""
    if math.prod(shape) == 0 or not shape:
        return ()
    out = [0] * len(new)
    k = len(new) - 1
    base = strides[-1]
    numel = seen = 1
    for d in range(len(shape) - 1, -1, -1):
        numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != numel * base):
            while k >= 0 and (seen < numel or new[k] == 1):
                out[k] = seen * base
                seen *= new[k]
                k -= 1
            if seen != numel:
                return None
            if d > 0:
                base = strides[d - 1]
                numel = seen = 1
    return None if k != -1 else tuple(out)


def _check_viewable(data, new) -> None:
    """Refuse, as PyTorch does, a view() whose shape cannot share the tensor's memory (a
    reshape would copy it, and writes through the result would not reach the tensor)."""
    item = data.dtype.itemsize
    if _view_strides(data.shape, tuple(s // item for s in data.strides), tuple(new)) is None:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride "
                           f"(shape {tuple(data.shape)}, strides "
                           f"{tuple(s // item for s in data.strides)}; at least one dimension "
                           f"spans across two contiguous subspaces): use .reshape(...) "
                           f"instead, to view {tuple(new)}")


def _to_flags(args) -> tuple:
    """The trailing positional bools of `to(device, dtype, non_blocking, copy)` (or
    `to(dtype, non_blocking, copy)`, `to(other, ...)`): (non_blocking, copy), at most two."""
    k = len(args)
    while k and isinstance(args[k - 1], (bool, np.bool_)):
        k -= 1
    flags = tuple(bool(a) for a in args[k:])
    if len(flags) > 2 or (flags and k == 0):
        raise TypeError(f"to() received an invalid combination of arguments: {args!r}; "
                        "expected (device, dtype, non_blocking, copy) or (dtype, non_blocking, "
                        "copy)")
    return flags


def _to_args(args, kwargs):
    """(device or None, dtype or None) from `to`'s arguments, PyTorch's forms."""
    args = args[:len(args) - len(_to_flags(args))]
    target = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if "memory_format" in kwargs:  # one memory format here: accepted, changes no value
        check_keywords("to", memory_format_=kwargs.pop("memory_format"))
    if kwargs:
        raise TypeError(f"to() got unexpected keyword argument(s) {', '.join(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            target, dtype = a.device, a.dtype if dtype is None else dtype
        elif _is_dtype(a):
            dtype = a
        elif a is not None:
            target = a
    if target is not None:
        target = devices.device(target)
    return target, dtype


def _is_device(a) -> bool:
    if isinstance(a, devices.device):
        return True
    if isinstance(a, str):
        return a.split(":")[0] in ("cpu", "cuda", "meta") or a.split(":")[0] in devices._BY_NAME
    return hasattr(a, "type") and hasattr(a, "index")


Tensor._to_dtype = _Methods._to_dtype
_to_dtype = _Methods._to_dtype
Tensor.view = _view


def _cast(name: str, dtype):
    """The method `t.<name>(memory_format=None)`: `t.to(dtype)`, taking torch's
    `memory_format=` keyword (one layout here: checked, then ignored)."""
    def method(self, memory_format=None) -> Tensor:
        if memory_format is not None:
            check_keywords(name, memory_format_=memory_format)
        return self.to(dtype)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`t.{name}()`: self cast to that dtype (torch's `memory_format=` taken)."
    return method


for _name, _dt in (("float", np.float32), ("double", np.float64), ("long", np.int64),
                   ("bool", np.bool_), ("int", np.int32), ("half", np.float16),
                   ("short", np.int16), ("char", np.int8), ("byte", np.uint8),
                   ("cfloat", np.complex64), ("cdouble", np.complex128)):
    setattr(Tensor, _name, _cast(_name, _dt))
Tensor.bfloat16 = _cast("bfloat16", bfloat16)  # refused with a TypeError saying why
Tensor.norm = _norms.norm
Tensor.multinomial = _creation.multinomial

# Complex tensors (`api/complex.py`): `.real` and `.imag` are attributes, as in PyTorch.
from .api import complex as _complex  # noqa: E402


def _set_real(self, value) -> None:
    """`z.real = v` (and `z.real += v`): writes into z's real part, as in PyTorch."""
    _complex.real(self).copy_(value)


def _set_imag(self, value) -> None:
    """`z.imag = v`: writes into z's imaginary part."""
    _complex.imag(self).copy_(value)


Tensor.real = property(_complex.real, _set_real)
Tensor.imag = property(_complex.imag, _set_imag)
Tensor.conj = _complex.conj
Tensor.conj_physical = _complex.conj_physical
Tensor.resolve_conj = _complex.resolve_conj
Tensor.angle = _complex.angle
Tensor.is_complex = _complex.is_complex

# NumPy-style spellings (`api/numpy_style.py`).
from .api import numpy_style as _numpy_style  # noqa: E402

Tensor.ravel = _numpy_style.ravel
Tensor.swapaxes = _numpy_style.swapaxes
Tensor.swapdims = _numpy_style.swapdims
Tensor.diff = _numpy_style.diff
Tensor.rot90 = _numpy_style.rot90
Tensor.fmax = _numpy_style.fmax
Tensor.fmin = _numpy_style.fmin
Tensor.nansum = _numpy_style.nansum
Tensor.nanmean = _numpy_style.nanmean
Tensor.deg2rad = _numpy_style.deg2rad
Tensor.rad2deg = _numpy_style.rad2deg
Tensor.tensor_split = _numpy_style.tensor_split

# Special functions as methods, as PyTorch has them (`special.py`).
from . import special as _special  # noqa: E402

for _name in ("lgamma digamma i0 sinc logit mvlgamma igamma igammac").split():
    setattr(Tensor, _name, getattr(_special, _name))
Tensor.polygamma = lambda self, n: _special.polygamma(n, self)

# Reductions, sets, statistics, number functions and index writes (PyTorch's names;
# api/reductions.py, quantiles.py, sets.py, numeric.py, indexing.py, index_writes.py,
# splits.py), and the in-place forms of the index writes.
from .api import index_writes as _index_writes  # noqa: E402
from .api import numeric as _numeric  # noqa: E402
from .api import quantiles as _quantiles  # noqa: E402
from .api import reductions as _reductions  # noqa: E402
from .api import sets as _sets  # noqa: E402
from .api import splits as _splits  # noqa: E402

for _mod, _names in (
        (_reductions, "amax amin aminmax count_nonzero sum_to_size"),
        (_quantiles, "nanmedian quantile nanquantile"),
        (_sets, "unique unique_consecutive bincount histc histogram"),
        (_numeric, "isneginf isposinf isreal sgn signbit heaviside float_power float_power_ "
                   "ldexp frexp gcd lcm nextafter"),
        (_indexing, "take select argwhere"),
        (_index_writes, "index_fill index_copy index_put index_reduce put masked_scatter "
                        "select_scatter slice_scatter diagonal_scatter index_put_"),
        (_splits, "split_with_sizes hsplit vsplit dsplit")):
    for _name in _names.split():
        setattr(Tensor, _name, getattr(_mod, _name))
for _name in "index_fill_ index_copy_ index_reduce_ put_ masked_scatter_".split():
    setattr(Tensor, _name, getattr(_index_writes, _name))

# PyTorch's other names (`api/tensor_methods.py`): spellings such as x.eq(y), x.add(y,
# alpha=2), x.pow(e), x.t(); memory facts (stride, storage_offset, is_contiguous); new_*;
# the random fills (normal_, uniform_, ...); the in-place form of every element-wise method.
from .api import tensor_methods as _tensor_methods  # noqa: E402

_tensor_methods.bind(Tensor)
from .api import tensor_interop as _tensor_interop  # noqa: E402

_tensor_interop.bind(Tensor)  # __dlpack__, as_subclass, output_nr, set_

# Matrix products and linear algebra, PyTorch's method spellings (`api/linalg.py`,
# `api/matrices.py`, `linalg.py`, `linalg_aliases.py`), and the in-place products.
from . import linalg as _linalg  # noqa: E402
from . import linalg_aliases as _linalg_aliases  # noqa: E402
from .api import linalg as _products  # noqa: E402
from .api import matrices as _matrices  # noqa: E402

for _mod, _names in (
        (_products, "mm bmm mv vdot addmm addmv addr baddbmm addbmm addcmul addcdiv"),
        (_linalg, "dot inner outer kron trace cholesky_solve"),
        (_linalg_aliases, "ger cross det logdet slogdet inverse pinverse matrix_power matrix_exp "
                          "cholesky cholesky_inverse qr svd lu lu_solve triangular_solve geqrf "
                          "orgqr ormqr"),
        (_matrices, "cov corrcoef dist renorm diagflat")):
    for _name in _names.split():
        setattr(Tensor, _name, getattr(_mod, _name))


def _inplace_product(fn):
    """`x.name_(...)`: `fn(x, ...)` written into x, which must keep its shape and dtype (as
    PyTorch refuses otherwise); computed from a copy of x when gradients are recorded, so
    the values the product saved are not the ones the write overwrites."""
    name = fn.__name__ + "_"

    def method(self, *args, **kwargs):
        recorded = state.enabled and (self.requires_grad or any(
            isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values())))
        if recorded:  # self as an operand too (x.addcmul_(y, x)) reads the copy
            me = self.clone()
            args = tuple(me if a is self else a for a in args)
            kwargs = {k: me if v is self else v for k, v in kwargs.items()}
        result = fn(me if recorded else self, *args, **kwargs)
        if result.shape != self.shape:
            raise RuntimeError(f"{name}(): the result has shape {result.shape}, which differs "
                               f"from the shape {self.shape} of the tensor written in place")
        if not can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"{name}(): result type {result.dtype} can't be cast to the "
                               f"tensor's dtype {self.dtype}")
        return self.copy_(result)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place `{fn.__name__}`: the result written into self (PyTorch's)."
    return method


for _fn in (_products.addmm, _products.addmv, _products.addr, _products.baddbmm,
            _products.addbmm, _products.addcmul, _products.addcdiv, _matrices.renorm):
    setattr(Tensor, _fn.__name__ + "_", _inplace_product(_fn))


def _H(self) -> Tensor:
    """The conjugate transpose of a matrix (2-D; 0-d: itself conjugated), as `Tensor.H`."""
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got shape "
                           f"{self.shape}; for batches of matrices use tensor.mH")
    return _linalg_aliases.adjoint(self)


Tensor.adjoint = _linalg_aliases.adjoint
Tensor.mH = property(_linalg_aliases.adjoint)
Tensor.H = property(_H)

from .api import tensor_extras as _tensor_extras  # noqa: E402

# PyTorch's remaining Tensor methods (api/tensor_extras.py): in-place shape changes,
# resize_, as_strided, the unsafe_* splits, post-accumulate-grad hooks, apply_/map_, flags.
for _name in "squeeze unsqueeze t transpose swapaxes swapdims".split():
    setattr(Tensor, _name + "_", _tensor_extras._inplace_view(_name + "_", getattr(Tensor, _name)))
Tensor.as_strided_ = _tensor_extras.as_strided_
for _name in ("resize_ resize_as_ as_strided new_empty_strided register_post_accumulate_grad_hook "
              "apply_ map_ is_inference is_conj is_neg resolve_neg share_memory_ pin_memory "
              "is_shared is_pinned").split():
    setattr(Tensor, _name, getattr(_tensor_extras, _name))
Tensor.new = _tensor_extras.new
Tensor.dim_order = _tensor_extras.dim_order
from .api import view_copies as _view_copies  # noqa: E402

Tensor.narrow_copy = _view_copies.narrow_copy
from .api import scatter_views as _scatter_views  # noqa: E402

Tensor.as_strided_scatter = _scatter_views.as_strided_scatter
from .api import hashing as _hashing  # noqa: E402

Tensor.hash_tensor = _hashing.hash_tensor
from .api import torch_additions as _additions  # noqa: E402

for _name in ("is_set_to const_data_ptr is_distributed map2_ solve lstsq eig symeig resize "
              "resize_as").split():
    setattr(Tensor, _name, getattr(_additions, _name))
Tensor.name = property(_additions.name)
Tensor.volatile = property(_additions.volatile)
Tensor.nonzero_static = _tensor_extras.nonzero_static
Tensor.unsafe_chunk = Tensor.chunk
Tensor.unsafe_split = Tensor.split
Tensor.unsafe_split_with_sizes = Tensor.split_with_sizes
Tensor.absolute = Tensor.abs
Tensor.absolute_ = Tensor.abs_

# The short-time Fourier transform (api/spectral.py).
from .api import spectral as _spectral  # noqa: E402

Tensor.stft = _spectral.stft
Tensor.istft = _spectral.istft

# torch.Tensor.layout: every tensor here is dense (layouts.py).
Tensor.layout = property(lambda self: strided, doc="The layout: always rg.strided (dense).")
