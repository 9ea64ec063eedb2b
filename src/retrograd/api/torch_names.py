"""PyTorch's spellings of existing ops, and its small queries about tensors and dtypes:
`rg.add(x, y, alpha=2)`, `rg.sub`, `rg.pow`, `rg.eq`, `rg.equal`, `rg.t`,
`rg.is_floating_point`, `rg.from_numpy`, `rg.result_type`, `rg.finfo`,
`rg.broadcast_tensors`, `rg.clamp_min`, ...

Each function is a composition of the op table's primitives (no row of its own),
with PyTorch's signature, result dtype (`_args.promote`), broadcasting, gradients
and errors: a dtype, shape or value PyTorch refuses with RuntimeError raises one of
`_errors`' classes, which are RuntimeErrors and also TypeErrors or ValueErrors.
The arithmetic and comparison functions take PyTorch's `out=`: the result is written
into `out` (its dtype may be of a higher category, as in PyTorch; a non-empty `out`
of another shape is refused, where PyTorch resizes it with a deprecation warning).
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import creation, devices, ops
from .._values import values_of
from ..dtypes import can_cast as _can_cast
from ..dtypes import float_in_range, get_default_dtype, int_in_range, scalar_array
from ..dtypes import promote_types as _promote_types
from ..dtypes import result_type as _result_type
from ..engine import apply, apply1
from ..grad_mode import no_grad, state
from ..tensor import Tensor
from ._args import _t, promote
from ._errors import ArgumentError, ArgumentTypeError, DtypeError, ShapeError
from .elementwise import clamp, where
from .math import isnan, logical_or
from .shape import cat, expand, transpose

__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "pow", "neg", "negative", "positive", "rsub",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "equal", "clone", "detach", "numel", "t", "is_tensor", "is_floating_point",
    "is_nonzero", "is_same_size", "as_tensor", "asarray", "from_numpy", "scalar_tensor",
    "result_type", "promote_types", "can_cast", "finfo", "iinfo", "broadcast_shapes",
    "broadcast_tensors", "concat", "clamp_min", "clamp_max",
]

_NUMBER = (bool, int, float, complex, np.bool_, np.number)


# ---------------------------------------------------------------- shared checks

def _operands(fn: str, input, other) -> tuple:
    """Both operands in PyTorch's result dtype (a Tensor, or a 0-d constant for a number;
    two numbers make a 0-d tensor), their shapes checked to broadcast."""
    x, y = promote(input, other)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        x = Tensor(x)
    _broadcastable(fn, x, y)
    return x, y


def _broadcastable(fn: str, *xs) -> None:
    shapes = [x.shape for x in xs if isinstance(x, Tensor)]
    if len(shapes) > 1 and builtins.any(s != shapes[0] for s in shapes[1:]):
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise ShapeError(f"{fn}(): shapes {' and '.join(map(str, shapes))} do not "
                             "broadcast") from None


def _tensor(fn: str, name: str, x) -> Tensor:
    """PyTorch's check that an argument is a tensor (its predicates take nothing else)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, not {type(x).__name__}")
    return x


# Functions whose `out=` must have the result's dtype exactly, as torch's kernels for them
# check (`torch.abs(f32, out=f64_tensor)` raises "Found dtype Double but expected Float");
# the others cast the result to out's dtype when that is of the same or a higher category.
_OUT_SAME_DTYPE = frozenset("""
abs absolute addmm amax amin bitwise_not bmm bucketize ceil complex conj_physical cross
diag dot fix floor frac heaviside histc inner isneginf isposinf masked_select matmul mm
msort mv nan_to_num neg negative nonzero norm polar round searchsorted sgn sign signbit
trunc vdot where
gather index_add index_copy index_reduce index_select inverse
addbmm addmv aminmax baddbmm cummax cummin frexp histogram kthvalue logcumsumexp lu_solve
lu_unpack mode nanquantile ormqr qr quantile renorm sort svd take take_along_dim topk
float_power triangular_solve tril triu
""".split())


def _into(fn: str, result: Tensor, out, same_dtype: bool = False) -> Tensor:
    """`out=`: the result written into `out` (cast to its dtype, which must be of the same
    or a higher category, or be the result's own for the functions of _OUT_SAME_DTYPE),
    or the result itself when `out` is None. A non-empty `out` of another shape is resized
    with torch's warning (a view of another tensor is refused instead)."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{fn}(): argument 'out' must be a Tensor, not {type(out).__name__}")
    if state.enabled and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad")
    if fn in ("all", "any") and out.dtype not in (np.bool_, np.uint8):
        raise DtypeError(f"{fn}(): 'out' must have dtype bool or uint8, got {out.dtype} (as "
                         "in PyTorch)")
    if (same_dtype or fn in _OUT_SAME_DTYPE) and out.dtype != result.dtype:
        raise DtypeError(f"{fn}(): 'out' has dtype {out.dtype} but the result has dtype "
                         f"{result.dtype}; {fn} writes only into an out of its result's dtype "
                         "(as in PyTorch)")
    if not _can_cast(result.dtype, out.dtype):
        raise DtypeError(f"{fn}(): result type {result.dtype} can't be cast to the desired "
                         f"output type {out.dtype} of 'out'")
    if out.shape != result.shape:
        if out.data.size:
            if getattr(out, "_view", None) is not None:
                raise ShapeError(f"{fn}(): 'out' has shape {out.shape} but the result has "
                                 f"shape {result.shape}, and 'out' is a view of another "
                                 "tensor, which cannot be resized here; pass an out of the "
                                 "result's shape")
            warnings.warn(f"An output with one or more elements was resized since it had "
                          f"shape {list(out.shape)}, which does not match the required output "
                          f"shape {list(result.shape)}. This behavior is deprecated, and in a "
                          "future PyTorch release outputs will not be resized unless they "
                          "have zero elements. You can explicitly reuse an out tensor t by "
                          "resizing it, inplace, to zero elements with t.resize_(0).",
                          UserWarning, stacklevel=3)
        if state.tracer is not None:
            state.tracer.refuse(f"{fn}(out=...) resizing an empty 'out'")
        out.data = result.data.astype(out.dtype)  # an empty out is resized, as in PyTorch
        out._cell()[0] += 1
        return out
    with no_grad():
        out.copy_(result)
    return out


# ---------------------------------------------------------------- arithmetic

def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, (Tensor, np.ndarray))
                                               and x.dtype == np.bool_)


def _alpha_number(fn: str, alpha):
    """alpha as a Python number: PyTorch's Number argument also takes a 0-d tensor that
    needs no gradient (LAMB's `p.add_(step, alpha=-lr * trust_ratio)`), read as its item."""
    if isinstance(alpha, Tensor) and alpha.ndim == 0 and not alpha.requires_grad:
        return alpha.item()
    if isinstance(alpha, Tensor) or not isinstance(alpha, _NUMBER):
        raise TypeError(f"{fn}(): 'alpha' must be a number (or a 0-d tensor without grad), "
                        f"got {type(alpha).__name__}")
    return alpha


def _check_alpha(fn: str, alpha, dt: np.dtype):
    """alpha checked for a result of dtype dt, as add's; returned as a Python number."""
    alpha = _alpha_number(fn, alpha)
    if isinstance(alpha, (bool, np.bool_)):
        if dt != np.bool_:
            raise ArgumentTypeError(f"{fn}(): a bool alpha is only supported for bool results, "
                                    f"got a {dt} result")
    elif isinstance(alpha, (complex, np.complexfloating)) and dt.kind != "c":
        raise ArgumentTypeError(f"{fn}(): for non-complex input tensors ({dt}), 'alpha' must "
                                f"not be a complex number, got {alpha!r}")
    elif isinstance(alpha, (float, np.floating)) and dt.kind in "biu":
        raise ArgumentTypeError(f"{fn}(): for integral input tensors ({dt}), 'alpha' must not "
                                f"be a floating point number, got {alpha!r}")
    elif dt.kind in "iu":  # alpha must fit the result dtype, as torch (int8: |alpha| <= 127)
        int_in_range(int(alpha), dt, f"{fn}(): alpha")
    elif dt == np.float16 and not isinstance(alpha, (complex, np.complexfloating)):
        float_in_range(float(alpha), dt, f"{fn}(): alpha")
    return alpha


def _refuse_bool_sub(fn: str, x, y) -> None:
    if _is_bool(x) or _is_bool(y):
        raise DtypeError(f"{fn}(): subtraction with a bool operand is not supported; use '^' "
                         "(logical_xor) or '~' (to invert a mask), or convert with .long()")


def _add(fn: str, op, input, other, alpha) -> Tensor:
    """input (+ or -) alpha * other, in PyTorch's result dtype of input and other."""
    dt = _result_type(input, other)
    alpha = _check_alpha(fn, alpha, dt)
    x, y = _operands(fn, input, other)
    if dt == np.bool_:
        if not alpha:
            y = scalar_array(False, dt)
    elif alpha != 1:
        if isinstance(y, Tensor):
            y = y * alpha  # a Python number keeps y's dtype
        else:  # a constant: scaled as a number, then in the result dtype (ints wrap)
            y = scalar_array(y.item() * alpha, dt)
    return apply(op, x, y)


def _old_alpha_positional(fn: str, other, rest: tuple, alpha) -> tuple:
    """(other, alpha), reading PyTorch's deprecated `add(input, alpha, other)` (old
    optimizers' `d_p = d_p.add(weight_decay, p.data)`) with its warning."""
    if not rest:
        return other, alpha
    scalar = isinstance(other, _NUMBER) or (isinstance(other, Tensor) and other.ndim == 0
                                            and not other.requires_grad)
    if len(rest) != 1 or not scalar or not isinstance(alpha, int) or alpha != 1:
        raise TypeError(f"{fn}() takes input and other (alpha by keyword), or the deprecated "
                        f"input, alpha, other; got {2 + len(rest)} positional arguments")
    warnings.warn(f"This overload of {fn} is deprecated: {fn}(Number alpha, Tensor other); "
                  f"use {fn}(Tensor other, *, Number alpha)", UserWarning, stacklevel=3)
    return rest[0], other


def add(input, other, *rest, alpha=1, out=None) -> Tensor:
    """input + alpha * other, broadcast, in PyTorch's result dtype (of input and other;
    alpha must not be a float for an integer result, nor a bool for a non-bool one).
    Like `torch.add`: `rg.add(x, y, alpha=2)`; the gradient to `other` is alpha."""
    if rest:
        other, alpha = _old_alpha_positional("add", other, rest, alpha)
    if alpha.__class__ is int and alpha == 1 and out is None and input.__class__ is Tensor and (
            other.__class__ is float or other.__class__ is int
            or (other.__class__ is Tensor and other.shape == input.shape)):
        return input + other  # the operator's fast path: same result
    return _into("add", _add("add", ops.add, input, other, alpha), out)


def sub(input, other, *rest, alpha=1, out=None) -> Tensor:
    """input - alpha * other, broadcast, in PyTorch's result dtype; bool operands are
    refused (use `^` or `~`). Like `torch.sub` (`rg.subtract` is the same function)."""
    if rest:
        other, alpha = _old_alpha_positional("sub", other, rest, alpha)
    _refuse_bool_sub("sub", input, other)
    if alpha.__class__ is int and alpha == 1 and out is None and input.__class__ is Tensor and (
            other.__class__ is float or other.__class__ is int
            or (other.__class__ is Tensor and other.shape == input.shape)):
        return input - other
    return _into("sub", _add("sub", ops.sub, input, other, alpha), out)


subtract = sub


def rsub(input, other, *, alpha=1) -> Tensor:
    """other - alpha * input (subtraction with the operands reversed). Like `torch.rsub`."""
    _refuse_bool_sub("rsub", input, other)
    return _add("rsub", ops.sub, other, input, alpha)


def mul(input, other, *, out=None) -> Tensor:
    """input * other, broadcast, in PyTorch's result dtype (bool * bool is logical and).
    Like `torch.mul` (`rg.multiply` is the same function)."""
    return _into("mul", apply(ops.mul, *_operands("mul", input, other)), out)


multiply = mul


def pow(input, exponent, *, out=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """input ** exponent, either of them a number, broadcast, in PyTorch's result dtype.

    As in PyTorch: an integer tensor to a negative integer number is refused, while an
    integer tensor of exponents may hold negative values (then 1 ** e is 1, (-1) ** e
    is +-1 and any other base gives 0); bool tensors to bool tensors are refused.
    Like `torch.pow`: `rg.pow(2, rg.arange(3))` is `tensor([1, 2, 4])`."""
    if input.__class__ is Tensor and input.data.dtype.kind in "fc" and (
            exponent.__class__ is float or exponent.__class__ is int):
        # the operator's path: same result (x ** 3 as torch's kernel for a number)
        return input ** exponent if out is None else _into("pow", input ** exponent, out)
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        if isinstance(input, _NUMBER) and isinstance(exponent, _NUMBER):
            raise TypeError("pow(): one of 'input' and 'exponent' must be a tensor; for two "
                            "numbers use Python's **")
        input = _t(input)
    dt = _result_type(input, exponent)
    if dt == np.bool_:
        if isinstance(input, Tensor) and isinstance(exponent, (bool, np.bool_)):
            return _into("pow", input ** exponent, out)  # x ** True is x, x ** False ones
        raise DtypeError("pow(): not implemented for bool tensors to bool powers; convert "
                         "with .long() first")
    if dt.kind in "iu" and isinstance(exponent, (int, np.integer)) and exponent < 0:
        raise ArgumentError(f"pow(): integers to negative integer powers are not allowed "
                            f"(a {dt} tensor to the power {exponent})")
    if dt.kind in "iu" and isinstance(exponent, (int, np.integer)) \
            and not isinstance(exponent, (bool, np.bool_)) and isinstance(input, Tensor):
        int_in_range(int(exponent), dt, "pow")  # torch refuses an exponent the dtype can't hold
    b, e = _operands("pow", input, exponent)
    if dt.kind == "i" and isinstance(e, Tensor):
        return _into("pow", _integer_power(b, e, dt), out)
    return _into("pow", apply(ops.pow, b, e), out)


def _integer_power(b, e: Tensor, dt: np.dtype) -> Tensor:
    """Signed integers to integer exponents that may be negative, as PyTorch computes
    them: b ** e where e >= 0; else 1 for b == 1, +-1 for b == -1, and 0."""
    zero, one, minus = (scalar_array(v, dt) for v in (0, 1, -1))
    negative = apply(ops.OPS["lt"], e, zero)
    p = apply(ops.pow, b, apply(ops.where, negative, zero, e))
    odd = apply(ops.OPS["ne"], apply(ops.OPS["bitwise_and"], e, one), zero)
    bt = b if isinstance(b, Tensor) else Tensor(b)
    at_minus_one = apply(ops.where, odd, minus, one)
    small = apply(ops.where, apply(ops.OPS["eq"], bt, one), one,
                  apply(ops.where, apply(ops.OPS["eq"], bt, minus), at_minus_one, zero))
    return apply(ops.where, negative, small, p)


def neg(input, *, out=None) -> Tensor:
    """-input; bool tensors are refused (use `~` or `rg.logical_not`). Like `torch.neg`
    (`rg.negative` is the same function)."""
    x = _t(input)
    if x.data.dtype == np.bool_:
        raise DtypeError("neg(): negation, the '-' operator, on a bool tensor is not "
                         "supported; to invert a mask use '~' or rg.logical_not()")
    return _into("neg", apply1(ops.neg, x), out)


negative = neg


def positive(input) -> Tensor:
    """input itself (unary `+`); bool tensors are refused, as in PyTorch. Like
    `torch.positive`."""
    x = _t(input)
    if x.data.dtype == np.bool_:
        raise DtypeError("positive(): the unary '+' operator on a bool tensor is not supported")
    return x


# ---------------------------------------------------------------- comparisons

def _comparison(name: str, opname: str, doc: str):
    op = ops.OPS[opname]

    def fn(input, other, *, out=None) -> Tensor:
        return _into(name, apply(op, *_operands(name, input, other)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + (" A bool tensor (no gradient), operands broadcast and compared in "
                        f"PyTorch's result dtype. Like `torch.{name}`.")
    return fn


eq = _comparison("eq", "eq", "input == other, element-wise.")
ne = _comparison("ne", "ne", "input != other, element-wise.")
lt = _comparison("lt", "lt", "input < other, element-wise.")
le = _comparison("le", "le", "input <= other, element-wise.")
gt = _comparison("gt", "gt", "input > other, element-wise.")
ge = _comparison("ge", "ge", "input >= other, element-wise.")
not_equal = _comparison("not_equal", "ne", "input != other, element-wise (`rg.ne`).")
less = _comparison("less", "lt", "input < other, element-wise (`rg.lt`).")
less_equal = _comparison("less_equal", "le", "input <= other, element-wise (`rg.le`).")
greater = _comparison("greater", "gt", "input > other, element-wise (`rg.gt`).")
greater_equal = _comparison("greater_equal", "ge", "input >= other, element-wise (`rg.ge`).")


def equal(input, other) -> bool:
    """True if the two tensors have the same shape and equal elements (compared in
    PyTorch's result dtype; NaN equals nothing). A Python bool. Like `torch.equal`."""
    x, y = _tensor("equal", "input", input), _tensor("equal", "other", other)
    if x.shape != y.shape:
        return False
    same = apply(ops.OPS["eq"], *promote(x, y))
    return bool(values_of(same, "equal() (a Python bool)",
                          "use rg.eq(x, y).all(), a tensor, instead").all())


# ---------------------------------------------------------------- tensors: copies, facts

def clone(input, *, memory_format=None) -> Tensor:
    """A copy of `input` with its own memory, still in the graph (its gradient flows back
    to `input`). `memory_format` is accepted for PyTorch's code and ignored. Like
    `torch.clone`."""
    return _t(input).clone()


def detach(input) -> Tensor:
    """`input`'s data (shared) cut from the graph. Like `torch.detach`."""
    return _t(input).detach()


def numel(input) -> int:
    """The number of elements of `input`. Like `torch.numel`."""
    return _tensor("numel", "input", input).data.size


def t(input) -> Tensor:
    """The transpose of a matrix; a 0-d or 1-d tensor as it is (a view); more than two
    dimensions are refused, as in PyTorch (use `transpose` or `mT`). Like `torch.t`."""
    x = _t(input)
    if x.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dimensions, but input has {x.ndim} "
                         f"(shape {x.shape}); use transpose(dim0, dim1) or .mT")
    return transpose(x)


def is_tensor(obj) -> bool:
    """True if `obj` is a `rg.Tensor`. Like `torch.is_tensor`."""
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:
    """True for a real floating dtype (float16/32/64; complex is not). Like
    `torch.is_floating_point`."""
    return _tensor("is_floating_point", "input", input).data.dtype.kind == "f"


def is_nonzero(input) -> bool:
    """The truth of a one-element tensor; an empty one or one of several elements is
    ambiguous (RuntimeError). Like `torch.is_nonzero`."""
    x = _tensor("is_nonzero", "input", input)
    if x.data.size != 1:
        raise ArgumentError(f"is_nonzero(): the boolean value of a tensor with "
                            f"{'no values' if not x.data.size else 'more than one value'} "
                            f"(shape {x.shape}) is ambiguous")
    return bool(x)


def is_same_size(input, other) -> bool:
    """True if the two tensors have the same shape. Like `torch.is_same_size`."""
    return _tensor("is_same_size", "input", input).shape == \
        _tensor("is_same_size", "other", other).shape


# ---------------------------------------------------------------- making tensors

def _convert(x: Tensor, dtype, device) -> Tensor:
    """`x` on `device` in `dtype` (differentiable), or x itself when nothing changes."""
    if device is not None:
        x = x.to(device)
    return x if dtype is None else x.to(np.dtype(dtype))


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory where it can: a tensor of the right dtype and
    device is returned itself (else converted, differentiably), a NumPy array of the
    right dtype is wrapped without a copy. Like `torch.as_tensor`."""
    if isinstance(data, Tensor):
        return _convert(data, dtype, device)
    if isinstance(data, np.ndarray) and dtype is not None and np.dtype(dtype) == data.dtype:
        dtype = None
    return creation.share_tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """`obj` as a tensor: shares memory with a tensor or NumPy array when the dtype and
    device allow (`copy=None`), always copies with `copy=True`, and with `copy=False`
    raises ValueError where it would have to copy. `requires_grad` None follows `obj`
    (a tensor keeps its graph), False cuts the result from the graph, True asks for
    gradients. Like `torch.asarray`."""
    if isinstance(obj, Tensor):
        same = (dtype is None or np.dtype(dtype) == obj.dtype) and \
            (device is None or devices.device(device) == obj.device)
        if copy is False and not same:
            raise ArgumentError(f"asarray(): can't alias a {obj.dtype} tensor on {obj.device} "
                                f"into dtype {dtype} on device {device} (copy=False)")
        t = _convert(obj, dtype, device)
        if copy and t is obj:
            t = obj.clone()
    else:
        if copy is False:
            arr = obj if isinstance(obj, np.ndarray) else None
            if arr is None or (dtype is not None and np.dtype(dtype) != arr.dtype) or \
                    device is not None:
                raise ArgumentError(f"asarray(): can't alias a {type(obj).__name__} into a "
                                    f"tensor{'' if dtype is None else f' of dtype {dtype}'} "
                                    "without a copy (copy=False)")
        if copy and isinstance(obj, np.ndarray):
            obj = obj.copy()
        t = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad and t.data.dtype.kind not in "fc":
        raise DtypeError(f"asarray(): only floating and complex tensors can require gradients, "
                         f"got dtype {t.dtype}")
    if requires_grad is False and t.requires_grad:
        t = t.detach()
    elif requires_grad and not t.requires_grad:
        t.requires_grad_(True)
    return t


_NUMPY_KINDS = {"f": (2, 4, 8), "c": (8, 16), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "b": (1,)}


def from_numpy(ndarray) -> Tensor:
    """A tensor sharing `ndarray`'s memory (writes to one show in the other), of its
    dtype. Like `torch.from_numpy`."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(ndarray).__name__})")
    dt = ndarray.dtype
    if dt.itemsize not in _NUMPY_KINDS.get(dt.kind, ()):
        raise TypeError(f"from_numpy(): can't convert an np.ndarray of dtype {dt}; the "
                        "supported dtypes are bool, (u)int8/16/32/64, float16/32/64 and "
                        "complex64/128")
    if not dt.isnative:
        raise ArgumentError(f"from_numpy(): the array's byte order ({dt}) is not the machine's; "
                            "convert it with arr.astype(arr.dtype.newbyteorder('='))")
    return creation.share_tensor(ndarray)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number `s`, of the default float dtype unless `dtype` is
    given (ints and bools too, as in PyTorch). Like `torch.scalar_tensor`."""
    if isinstance(s, Tensor) or not isinstance(s, _NUMBER):
        raise TypeError(f"scalar_tensor(): argument 's' must be a number, not "
                        f"{type(s).__name__}")
    dt = get_default_dtype() if dtype is None else np.dtype(dtype)
    if isinstance(s, (complex, np.complexfloating)) and dt.kind != "c":
        raise ArgumentError(f"scalar_tensor(): the complex value {s!r} cannot be converted to "
                            f"{dt}; pass a complex dtype")
    return creation.full((), s, dtype=dt, requires_grad=requires_grad, device=device)


# ---------------------------------------------------------------- dtypes

def _dtype_arg(fn: str, name: str, x) -> np.dtype:
    try:
        return np.dtype(x)
    except TypeError:
        raise TypeError(f"{fn}(): argument '{name}' must be a dtype, not {x!r}") from None


def result_type(tensor1, tensor2) -> np.dtype:
    """The dtype PyTorch gives an arithmetic op on the two operands (tensors or numbers):
    categories bool < integer < floating < complex, and dimensioned tensors over 0-d
    ones over numbers. Like `torch.result_type`."""
    return _result_type(tensor1, tensor2)


def promote_types(type1, type2) -> np.dtype:
    """The smallest dtype both dtypes can be converted to, by PyTorch's rule (int64 with
    float32 is float32). Like `torch.promote_types`."""
    return _promote_types(_dtype_arg("promote_types", "type1", type1),
                          _dtype_arg("promote_types", "type2", type2))


def can_cast(from_, to) -> bool:
    """True if PyTorch lets a value of dtype `from_` be cast to `to` by an in-place or
    out= op: never to a lower category (float to int, int to bool, complex to real).
    Like `torch.can_cast`."""
    return _can_cast(_dtype_arg("can_cast", "from_", from_), _dtype_arg("can_cast", "to", to))


class finfo:
    """Facts about a floating dtype (default: the default dtype; a complex dtype gives
    those of its parts): `bits`, `eps`, `max`, `min`, `tiny` (= `smallest_normal`),
    `resolution` and `dtype` (its name). Like `torch.finfo`."""

    def __init__(self, type=None) -> None:  # noqa: A002 - PyTorch's name
        dt = get_default_dtype() if type is None else _dtype_arg("finfo", "type", type)
        if dt.kind == "c":
            dt = np.dtype(f"f{dt.itemsize // 2}")
        if dt.kind != "f":
            raise TypeError(f"finfo() requires a floating point dtype, got {dt}; use rg.iinfo "
                            "for integer dtypes")
        info = np.finfo(dt)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = dt.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Facts about an integer dtype: `bits`, `max`, `min` and `dtype` (its name). Like
    `torch.iinfo`."""

    def __init__(self, type) -> None:  # noqa: A002 - PyTorch's name
        dt = _dtype_arg("iinfo", "type", type)
        if dt.kind not in "iu":
            raise TypeError(f"iinfo() requires an integer dtype, got {dt}"
                            + ("" if dt.kind == "b" else "; use rg.finfo for floating dtypes"))
        info = np.iinfo(dt)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dt.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


# ---------------------------------------------------------------- broadcasting, joining

def broadcast_shapes(*shapes) -> tuple:
    """The shape that tensors of `shapes` (ints or sequences of ints) broadcast to.
    Like `torch.broadcast_shapes`: `rg.broadcast_shapes((2, 1), (3,))` is `(2, 3)`."""
    norm = []
    for s in shapes:
        s = (s,) if isinstance(s, (int, np.integer)) else s
        if not isinstance(s, (tuple, list)) or not builtins.all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in s):
            raise TypeError(f"broadcast_shapes(): a shape must be an int or a sequence of ints, "
                            f"got {s!r}")
        if builtins.any(d < 0 for d in s):
            raise ArgumentError(f"broadcast_shapes(): shape {tuple(s)} has a negative dimension")
        norm.append(tuple(int(d) for d in s))
    try:
        return np.broadcast_shapes(*norm)
    except ValueError:
        raise ShapeError(f"broadcast_shapes(): shapes {', '.join(map(str, norm))} do not "
                         "broadcast") from None


def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape (views; gradients are summed
    back). Like `torch.broadcast_tensors`."""
    ts = [_t(x) for x in tensors]
    try:
        shape = np.broadcast_shapes(*(x.shape for x in ts))
    except ValueError:
        raise ShapeError(f"broadcast_tensors(): shapes {', '.join(str(x.shape) for x in ts)} "
                         "do not broadcast") from None
    return tuple(expand(x, *shape) for x in ts)


concat = cat


# ---------------------------------------------------------------- one-sided clamps

def _clamp_side(fn: str, input, bound, lower: bool, out) -> Tensor:
    x = _t(input)
    if isinstance(bound, (Tensor, np.ndarray, list, tuple)):
        x, b = promote(x, bound)
        if x.dtype == np.bool_:  # torch: a logical max/min
            return _into(fn, apply(ops.maximum if lower else ops.minimum, x, b), out)
        _broadcastable(fn, x, b)
        keep = apply(ops.OPS["ge" if lower else "le"], x, b)
        if x.dtype.kind in "fc":
            keep = logical_or(keep, isnan(x))  # NaN in x propagates; NaN in the bound too
        return _into(fn, where(keep, x, b), out)
    if not isinstance(bound, _NUMBER):
        raise TypeError(f"{fn}(): the bound must be a number or a tensor, got "
                        f"{type(bound).__name__}")
    if _result_type(x, bound) == np.bool_:
        raise DtypeError(f"{fn}(): not implemented for bool tensors")
    return _into(fn, clamp(x, min=bound) if lower else clamp(x, max=bound), out)


def clamp_min(input, min, *, out=None) -> Tensor:  # noqa: A002 - PyTorch's name
    """max(input, min) element-wise, `min` a number or a tensor (broadcast); the gradient
    goes to input where input >= min, else to a tensor `min`. Like `torch.clamp_min`."""
    return _clamp_side("clamp_min", input, min, True, out)


def clamp_max(input, max, *, out=None) -> Tensor:  # noqa: A002 - PyTorch's name
    """min(input, max) element-wise, `max` a number or a tensor (broadcast); the gradient
    goes to input where input <= max, else to a tensor `max`. Like `torch.clamp_max`."""
    return _clamp_side("clamp_max", input, max, False, out)
