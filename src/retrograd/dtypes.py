"""Dtypes, the default float dtype, and turning user data into arrays.

This module and `creation.py` are the places that create arrays from user data;
the op table creates the rest.
"""

from __future__ import annotations

import itertools

import numpy as np

from . import devices


class ValueOverflowError(OverflowError, RuntimeError):
    """A number that the tensor's integer dtype cannot hold (PyTorch: RuntimeError)."""


def float_in_range(value: float, dtype, fn: str = "tensor") -> float:
    """A finite Python float for a float tensor (float16, float32, ...), refused
    (ValueOverflowError) beyond its dtype's largest value, as PyTorch refuses it (inf and
    nan pass): `torch.full(..., torch.finfo(torch.float64).min)` into float32 raises."""
    dt = np.dtype(dtype)
    if dt.kind == "f" and np.isfinite(value) and abs(value) > float(np.finfo(dt).max):
        raise ValueOverflowError(f"{fn}: value {value} cannot be converted to type {dt} "
                                 "without overflow")
    return value


def int_in_range(value: int, dtype, fn: str = "tensor") -> int:
    """A Python int for an integer `dtype`, by PyTorch's rule: in the dtype's range, or for
    an unsigned dtype down to -max (it wraps, as a C cast: -1 is 255 in uint8); beyond
    that ValueOverflowError."""
    info = np.iinfo(dtype)
    lo = -int(info.max) if info.min == 0 else int(info.min)
    if not lo <= value <= info.max:
        raise ValueOverflowError(f"{fn}: value {value} cannot be converted to type "
                                 f"{np.dtype(dtype)} without overflow")
    return value % (int(info.max) + 1) if value < 0 and info.min == 0 else value

def floats_in_int_range(values, dtype, fn: str = "tensor") -> np.ndarray:
    """Floats for an integer `dtype`, by PyTorch's rule: each finite and within the dtype's
    range (then truncated toward zero by the cast), else ValueOverflowError:
    `torch.full((2,), -1.5, dtype=torch.uint8)` raises where an int -1 would wrap."""
    a = np.asarray(values, dtype=np.float64)
    info = np.iinfo(dtype)
    ok = np.isfinite(a) & (a >= float(info.min)) & (a <= float(info.max))
    if not ok.all():
        bad = a[~ok].ravel()[0] if a.ndim else a
        raise ValueOverflowError(f"{fn}: value {float(bad)} cannot be converted to type "
                                 f"{np.dtype(dtype)} without overflow")
    return a


class _DtypeClass(type):
    """Instance and subclass checks answered by NumPy's dtype class."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, np.dtype)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, np.dtype)


class dtype(metaclass=_DtypeClass):  # noqa: N801  (torch.dtype's name)
    """The type of every dtype (`isinstance(x.dtype, rg.dtype)`, `dtype: rg.dtype` in a
    signature), as `torch.dtype`. retrograd's dtypes are NumPy's, so this answers as
    `numpy.dtype` does, and `rg.dtype("float32")` makes one."""

    def __new__(cls, *args, **kwargs) -> np.dtype:  # type: ignore[misc]
        return np.dtype(*args, **kwargs)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)
float16 = half = np.dtype(np.float16)
double = float64
int32 = np.dtype(np.int32)
int16 = short = np.dtype(np.int16)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
long = int64


class _UnsupportedDtype:
    """A PyTorch dtype that NumPy has no type for (`rg.bfloat16`): the name exists, so code
    such as nanoGPT's `{'float32': torch.float32, 'bfloat16': torch.bfloat16}[dtype]` runs,
    but using it as a dtype raises a TypeError saying so (NumPy reads `.dtype`)."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex")

    def __init__(self, name: str, itemsize: int) -> None:
        self.name, self.itemsize = name, itemsize
        self.is_floating_point, self.is_complex = True, False

    @property
    def dtype(self):
        raise TypeError(f"{self.name} is not supported by retrograd: NumPy has no {self.name} "
                        f"type (use float32, or float16)")

    def __repr__(self) -> str:
        return f"retrograd.{self.name}"


bfloat16 = _UnsupportedDtype("bfloat16", 2)

# PyTorch's spellings that are Python builtins or absent above (rg.float, rg.int, rg.cfloat, ...);
# the package binds them at import so that `dtype=torch.float` code runs unchanged.
TORCH_SPELLINGS = {
    "float": float32, "int": int32, "bool": bool_, "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64),
    "complex64": np.dtype(np.complex64), "cfloat": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128), "cdouble": np.dtype(np.complex128),
}

_default = [float32]


def get_default_dtype() -> np.dtype:
    """The dtype that Python floats and lists of floats become (float32 unless changed)."""
    return _default[0]


def set_default_dtype(dtype) -> None:
    """Change the default float dtype (float32 or float64)."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"default dtype must be a floating dtype, got {dt}")
    _default[0] = dt


def tensor_dtype(dtype, fn: str) -> np.dtype:
    """`dtype` as a NumPy dtype a tensor may have (bool, integer, floating or complex); a
    string, bytes, object or date dtype raises TypeError, as PyTorch has no such dtype."""
    dt = np.dtype(dtype)
    if dt.kind not in "biufc":
        raise TypeError(f"{fn}: dtype must be a tensor dtype (bool, integer, floating or "
                        f"complex), got {dt}")
    return dt


def is_float(dtype: np.dtype) -> bool:
    """True for dtypes that may carry gradients (real or complex floating)."""
    return dtype.kind in "fc"


_PYTHON_KINDS = {bool: np.dtype(np.bool_), int: np.dtype(np.int64)}
_PLAIN = {bool, int, float, complex}
_SEQS = {list, tuple}


def _is_tensor(e) -> bool:
    """A retrograd Tensor (told by its attributes, as this module is below tensor.py: its
    `data` is an array, where a torch tensor's is a torch tensor)."""
    if not hasattr(e, "grad_fn"):
        return False
    data = getattr(e, "data", None)
    return isinstance(data, np.ndarray) or devices.is_device_array(data)


def _tensor_items(data):
    """The nested list `data` with each tensor in it replaced by its one value (a 0-d
    array of its dtype), as `torch.tensor([t0, t1])` takes one-element tensors as
    scalars; a tensor of several elements raises PyTorch's ValueError (TypeError when
    it is integer or bool)."""
    if isinstance(data, (list, tuple)):
        return [_tensor_items(e) for e in data]
    if _is_tensor(data):
        arr = np.asarray(data.data)
        if arr.size != 1:
            # PyTorch reads an integer or bool element as an index (TypeError), a floating
            # one as a scalar (ValueError)
            exc = TypeError if arr.dtype.kind in "biu" else ValueError
            raise exc("only one element tensors can be converted to Python scalars "
                      f"(a list element has shape {tuple(arr.shape)}); use rg.stack "
                      "to join tensors")
        return arr.reshape(())
    return data


def _typed_elements(data):
    """PyTorch's dtype for a nested list holding NumPy scalars or arrays or tensors (each
    counts as its dtype, a Python float as the default float dtype, an int as int64),
    promoted by `promote_types`; None when the list holds Python numbers only (the usual
    rules). The nesting is walked a level at a time with C-level loops (`map`, `chain`).
    With it, whether the list holds tensors (see `_tensor_items`)."""
    dtypes, kinds, stack, tensors = set(), set(), [data], False
    while stack:
        level = stack.pop()
        while True:
            types = set(map(type, level))
            if types <= _PLAIN:  # Python numbers only: the common case
                kinds |= types
                break
            if types <= _SEQS:  # rows of rows: go one level down
                level = list(itertools.chain.from_iterable(level))
                continue
            for e in level:  # NumPy values (or a ragged mix) here: look at each
                if isinstance(e, (list, tuple)):
                    stack.append(e)
                elif isinstance(e, (np.generic, np.ndarray)):
                    dtypes.add(e.dtype)
                elif _is_tensor(e):
                    dtypes.add(np.dtype(e.dtype))
                    tensors = True
                else:
                    kinds.add(type(e))
            break
    if not dtypes:
        return None, tensors
    for k in kinds:
        if k in _PYTHON_KINDS:
            dtypes.add(_PYTHON_KINDS[k])
        elif k is float:
            dtypes.add(_default[0])
        elif k is complex:
            dtypes.add(default_complex_dtype())
    out = None
    for dt in dtypes:
        out = dt if out is None else promote_types(out, dt)
    return out, tensors


def _check_int_range(data) -> None:
    """Raise ValueError, as PyTorch does, where Python ints in `data` do not fit int64
    (NumPy would make them uint64, wrapped to negative by the int64 cast, or objects)."""
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif type(x) is int and not -2**63 <= x < 2**63:
            raise ValueError(f"Overflow when unpacking long long: the Python int {x} does "
                             "not fit int64")


def _is_seq(x) -> bool:
    return isinstance(x, (list, tuple)) or (hasattr(x, "__len__") and hasattr(x, "ndim")
                                            and x.ndim > 0)


def _ragged(data) -> None:
    """Raise PyTorch's error for ragged nested lists (NumPy's is a ValueError for all):
    the shape is read from the first elements; a number where a sequence belongs, or a
    sequence where a number belongs, is a TypeError, a length that differs a ValueError."""
    shape, x = [], data
    while _is_seq(x):
        shape.append(len(x))
        if not len(x):
            break
        x = x[0]
    stack = [(data, 0)]
    while stack:
        x, d = stack.pop()
        if d == len(shape):
            if _is_seq(x):
                raise TypeError(f"a {type(x).__name__} where a number was expected (ragged "
                                f"nested sequence; its shape from the first elements is "
                                f"{tuple(shape)})")
            continue
        if not _is_seq(x):
            raise TypeError(f"not a sequence: {type(x).__name__} at dim {d} of a nested "
                            f"sequence of shape {tuple(shape)} (from the first elements)")
        if len(x) != shape[d]:
            raise ValueError(f"expected sequence of length {shape[d]} at dim {d} (got {len(x)})")
        stack.extend((item, d + 1) for item in reversed(list(x)))


def as_array(data, dtype=None) -> np.ndarray:
    """Turn Python numbers, nested lists and NumPy arrays into an ndarray.

    Python floats become the default dtype, complex numbers the default complex
    dtype (complex64 beside float32), ints int64 and bools bool; NumPy arrays keep
    their dtype unless `dtype` is given.
    """
    try:
        return _as_array(data, dtype)
    except ValueError:
        if data.__class__ is list or data.__class__ is tuple:
            _ragged(data)  # raises PyTorch's error where the nesting is ragged
        raise


def _as_array(data, dtype=None) -> np.ndarray:
    if data.__class__ is not np.ndarray and devices.is_device_array(data):
        return data.astype(np.dtype(dtype)) if dtype is not None else data  # as CuPy holds it
    typed = None
    if data.__class__ is list or data.__class__ is tuple:
        typed, tensors = _typed_elements(data)
        if tensors:
            data = _tensor_items(data)
    if dtype is not None:
        if np.dtype(dtype).kind in "iu" and isinstance(data, (list, tuple, float)):
            src = np.asarray(data)
            if src.dtype.kind == "f":  # floats into an integer dtype: in range, as in torch
                return floats_in_int_range(src, dtype).astype(dtype)
        try:
            return np.array(data, dtype=np.dtype(dtype))
        except OverflowError:  # Python ints beyond the dtype (NumPy 2 refuses -1 as uint8)
            arr = np.array(data)
            if arr.dtype.kind not in "iu" or np.dtype(dtype).kind not in "iu":
                raise
            for v in (arr.min(), arr.max()):
                int_in_range(int(v), dtype)
            return arr.astype(dtype)
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, np.generic):
        return np.asarray(data)
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind in "fiuc" and typed is not None:
        # NumPy scalars and tensors in the list keep their dtypes, as in PyTorch
        return arr.astype(typed, copy=False)
    if kind == "f":
        if arr.size and isinstance(data, (list, tuple)) and not (abs(arr) < 2.0**63).all():
            _check_int_range(data)  # int64 and uint64 ints mixed: NumPy made floats
        return arr.astype(_default[0], copy=False)
    if kind == "i":
        return arr.astype(np.int64, copy=False)
    if kind == "u" or kind == "O":
        _check_int_range(data)  # Python ints past int64 (NumPy makes uint64 or objects)
        if kind == "u":
            return arr.astype(np.int64, copy=False)
    if kind == "c":  # Python complex numbers: the default complex dtype, as in PyTorch
        return arr.astype(default_complex_dtype(), copy=False)
    if kind == "b":
        return arr
    raise TypeError(
        f"cannot make a tensor from {type(data).__name__} (NumPy dtype {arr.dtype}); "
        "expected numbers, nested lists of numbers or a NumPy array"
    )


# ---------------------------------------------------------------- type promotion (PyTorch's)

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def category(dtype: np.dtype) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex (the order of PyTorch's promotion)."""
    return _CATEGORY.get(np.dtype(dtype).kind, 4)


def default_complex_dtype() -> np.dtype:
    """complex64 while the default float dtype is float32, complex128 for float64."""
    return np.dtype(np.complex64) if _default[0].itemsize <= 4 else np.dtype(np.complex128)


def promote_types(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's `promote_types` for two dtypes: the higher category wins outright
    (int64 with float32 is float32, not NumPy's float64); within a category the wider
    one; a complex with a wider float takes the float's precision."""
    if a == b:
        return a
    ca, cb = _CATEGORY.get(a.kind, 4), _CATEGORY.get(b.kind, 4)
    if ca == cb:
        return np.promote_types(a, b)
    hi, lo = (a, b) if ca > cb else (b, a)
    if hi.kind == "c" and lo.kind == "f":
        return np.promote_types(hi, lo)
    return hi


def _combine(higher, lower):
    """PyTorch's `combine_categories`: `higher` (a tier above) wins unless `lower` is of a
    higher category; a complex `lower` under a floating `higher` takes its precision."""
    if higher is None:
        return lower
    if lower is None or _CATEGORY[higher.kind] >= _CATEGORY[lower.kind]:
        return higher
    if higher.kind == "f" and lower.kind == "c":
        return np.dtype(np.complex128) if higher.itemsize > 4 else np.dtype(np.complex64)
    return lower


_BOOL = np.dtype(np.bool_)
_INT64 = np.dtype(np.int64)


def _scalar_dtype(x):
    """The dtype a Python or NumPy scalar counts as, or None if `x` is not one."""
    if isinstance(x, (bool, np.bool_)):
        return _BOOL
    if isinstance(x, (int, np.integer)):
        return _INT64
    if isinstance(x, (float, np.floating)):
        return _default[0]
    if isinstance(x, (complex, np.complexfloating)):
        return default_complex_dtype()
    return None


def result_type(*operands) -> np.dtype:
    """The dtype PyTorch gives an op on `operands` (tensors, arrays, Python or NumPy scalars).

    Categories bool < integer < floating < complex. Three tiers: tensors with
    dimensions, 0-d tensors (and 0-d arrays), and scalars (Python and NumPy numbers;
    a float scalar counts as the default float dtype). Within each tier dtypes
    promote; then a lower tier only matters if it is of a higher category than
    every tier above it: float32 tensor + float64 0-d tensor is float32, int32
    tensor + 2.5 is the default float dtype, int32 tensor + float64 0-d tensor is
    float64, and a NumPy float64 scalar does not upcast a float32 tensor.
    """
    dim = zero = scalar = None
    for x in operands:
        if x is None:
            continue
        data = x
        if not isinstance(x, (np.ndarray, int, float, complex, np.generic)):
            data = getattr(x, "data", x)  # a Tensor
        if isinstance(data, np.ndarray):
            dt = data.dtype
            if data.ndim:
                dim = dt if dim is None else promote_types(dim, dt)
            else:
                zero = dt if zero is None else promote_types(zero, dt)
            continue
        dt = _scalar_dtype(data)
        if dt is None:
            arr = as_array(data)
            dim = arr.dtype if dim is None else promote_types(dim, arr.dtype)
            continue
        scalar = dt if scalar is None else promote_types(scalar, dt)
    if dim is None and zero is None and scalar is None:
        raise TypeError("result_type() needs at least one operand")
    return _combine(dim, _combine(zero, scalar))


def float_result_type(*operands) -> np.dtype:
    """`result_type` for a floating op (`exp`, `sqrt`, `/`, ...): integer and bool results
    become the default float dtype."""
    dt = result_type(*operands)
    return dt if dt.kind in "fc" else _default[0]


def can_cast(src: np.dtype, dst: np.dtype) -> bool:
    """PyTorch's rule for writing a result of dtype `src` into a tensor of dtype `dst` in
    place: never to a lower category (complex to real, floating to integer, a
    non-bool to bool); a wider dtype of the same category is fine."""
    return _CATEGORY.get(src.kind, 4) <= _CATEGORY.get(dst.kind, 4)


def scalar_array(value, dtype: np.dtype) -> np.ndarray:
    """A Python or NumPy scalar as a read-only 0-d array of `dtype`; integers outside
    the range of an integer dtype wrap around (two's complement), as in PyTorch."""
    if dtype.kind in "iu" and isinstance(value, (int, np.integer)) \
            and not isinstance(value, (bool, np.bool_)):
        bits = dtype.itemsize * 8
        v = int(value) & ((1 << bits) - 1)
        if dtype.kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        value = v
    arr = np.array(value, dtype=dtype)
    arr.flags.writeable = False
    return arr
