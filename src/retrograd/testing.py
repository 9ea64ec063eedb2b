"""`rg.testing`: PyTorch's `torch.testing` for tests written against retrograd:
`assert_close` (with PyTorch's default tolerances per dtype and its kind of failure
message) and `make_tensor` (random tensors of a shape and dtype)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from . import creation
from .dtypes import get_default_dtype
from .size import Size
from .tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

# PyTorch's defaults (rtol, atol) by dtype; other dtypes compare exactly.
_TOLERANCES = {
    np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7), np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}


def _tolerances(*dtypes) -> tuple[float, float]:
    pairs = [_TOLERANCES.get(np.dtype(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _scalar(x) -> np.ndarray:
    """A Python number as PyTorch's comparison sees it: a 0-d value of its dtype."""
    kind = bool if isinstance(x, bool) else int if isinstance(x, int) else \
        float if isinstance(x, float) else complex
    return np.asarray(x, {bool: np.bool_, int: np.int64, float: np.float64,
                          complex: np.complex128}[kind])


def _fail(text: str, msg, where: str):
    if callable(msg):
        text = msg(text)
    elif msg is not None:
        text = msg
    raise AssertionError(text + (f"\n\nThe failure occurred for item {where}" if where and
                                 msg is None else ""))


def _fmt_index(flat: int, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg,
             where: str):
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if check_device and actual.device != expected.device:
            _fail(f"The values for attribute 'device' do not match: {actual.device} != "
                  f"{expected.device}.", msg, where)
        a, e = np.asarray(actual.detach().cpu().numpy()), np.asarray(
            expected.detach().cpu().numpy())
        scalars = False
    elif isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        a, e, scalars = actual, expected, False
    elif isinstance(actual, (bool, int, float, complex)) and isinstance(
            expected, (bool, int, float, complex)):
        if check_dtype and type(actual) is not type(expected):
            _fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.", msg,
                  where)
        a, e, scalars = _scalar(actual), _scalar(expected), True
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type "
                        f"{type(actual)} and {type(expected)}.")
    if a.shape != e.shape:
        _fail(f"The values for attribute 'shape' do not match: {Size(a.shape)!r} != "
              f"{Size(e.shape)!r}.", msg, where)
    if check_dtype and a.dtype != e.dtype:
        _fail(f"The values for attribute 'dtype' do not match: {a.dtype} != {e.dtype}.",
              msg, where)
    if rtol is None:
        rtol, atol = _tolerances(a.dtype, e.dtype)
    common = np.promote_types(a.dtype, e.dtype)
    a, e = a.astype(common), e.astype(common)
    if common.kind == "b":
        a, e = a.astype(np.int64), e.astype(np.int64)
    ok = _close(a, e, rtol, atol, equal_nan)
    if ok.all():
        return
    exact = rtol == 0 and atol == 0
    diff = np.abs(a - e)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(e)
    if common.kind in "iub":
        rel = rel.astype(np.float32 if get_default_dtype() == np.float32 else np.float64)
    kind = "Scalars" if scalars or a.ndim == 0 else "Tensor-likes"
    verdict = "equal" if exact else "close"
    if kind == "Scalars":
        text = (f"Scalars are not {verdict}!\n\nExpected {e.item()} but got {a.item()}.\n"
                f"Absolute difference: {diff.item()}{_up_to(atol, exact)}\n"
                f"Relative difference: {rel.item()}{_up_to(rtol, exact)}")
    else:
        bad = int(ok.size - ok.sum())
        lines = [f"Tensor-likes are not {verdict}!", "",
                 f"Mismatched elements: {bad} / {ok.size} ({100 * bad / ok.size:.1f}%)"]
        for label, d, tol in (("absolute", diff, atol), ("relative", rel, rtol)):
            k = _argmax_nan(d)
            lines.append(f"Greatest {label} difference: {d.flat[k].item()} at index "
                         f"{_fmt_index(k, d.shape)}{_up_to(tol, exact)}")
        text = "\n".join(lines)
    _fail(text, msg, where)


def _up_to(tol: float, exact: bool) -> str:
    return "" if exact else f" (up to {tol} allowed)"


def _argmax_nan(d: np.ndarray) -> int:
    """Where the greatest difference is; a NaN counts as the greatest, as in PyTorch."""
    flat = d.reshape(-1)
    nans = np.flatnonzero(np.isnan(flat))
    return int(nans[0]) if nans.size else int(np.argmax(flat))


def _close(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool):
    if a.dtype.kind in "fc":
        return np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return np.abs(a - e) <= atol + rtol * np.abs(e)


def _walk(actual, expected, where: str, **kw) -> None:
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match: {sorted(actual)} != "
                                 f"{sorted(expected)}")
        for key in expected:
            _walk(actual[key], expected[key], f"{where}[{key!r}]", **kw)
        return
    seqs = (Sequence,)
    if (isinstance(actual, seqs) and isinstance(expected, seqs)
            and not isinstance(actual, str) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != "
                                 f"{len(expected)}" + (f"\n\nThe failure occurred for item "
                                                       f"{where}" if where else ""))
        for k, (x, y) in enumerate(zip(actual, expected)):
            _walk(x, y, f"{where}[{k}]", **kw)
        return
    _compare(actual, expected, where=where, **kw)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg=None) -> None:
    """Raise AssertionError unless `actual` and `expected` (tensors, NumPy arrays, numbers,
    or sequences and mappings of them) are close: |actual - expected| <= atol + rtol *
    |expected| elementwise, with equal shapes (and dtypes, by default). Without `rtol` and
    `atol`, PyTorch's defaults for the dtype (float32: 1.3e-6 and 1e-5; float64: 1e-7 and
    1e-7; integers and bools: exact). `msg` (a string, or a function of the generated
    message) replaces the message. Like `torch.testing.assert_close`."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {missing}.")
    _walk(actual, expected, "", rtol=rtol, atol=atol, equal_nan=equal_nan,
          check_dtype=check_dtype, check_device=check_device, msg=msg)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None) -> Tensor:
    """A random tensor of `shape` and `dtype`, with values in [low, high): by default
    [-9, 9) for floats, [-9, 10) for signed ints, [0, 10) for unsigned ones; bools are
    random. From the global generator (`rg.manual_seed`). Like `torch.testing.make_tensor`."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dt = np.dtype(dtype)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         "exclusive, but got noncontiguous=True and "
                         f"memory_format={memory_format}")
    if requires_grad and dt.kind not in "fc":
        raise ValueError("make_tensor: requires_grad must be False for integral dtype")
    g = creation.generator()
    if dt.kind == "b":
        values = g.random(shape) < 0.5
    else:
        if dt.kind in "iu":
            info = np.iinfo(dt)
            lo_default, hi_default = (0, 10) if dt.kind == "u" else (-9, 10)
            lowest, highest = info.min, info.max + 1
        else:
            info = np.finfo(dt)
            lo_default, hi_default, lowest, highest = -9, 9, float(info.min), float(info.max)
        for v in (low, high):
            if v is not None and isinstance(v, float) and math.isnan(v):
                raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and "
                                 f"high={high}")
        lo = max(lo_default if low is None else low, lowest)
        hi = min(hi_default if high is None else high, highest)
        if lo == hi and dt.kind in "fc":
            warnings.warn("make_tensor: low == high gives a tensor full of that value (as "
                          "PyTorch, which deprecates it); use rg.full", FutureWarning,
                          stacklevel=2)
            return Tensor(np.full(shape, lo, dt), requires_grad=requires_grad)
        if lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        if dt.kind in "iu":
            values = g.integers(math.ceil(lo), math.ceil(hi), shape)
        elif dt.kind == "c":
            values = g.uniform(lo, hi, shape) + 1j * g.uniform(lo, hi, shape)
        else:
            values = g.uniform(lo, hi, shape)
    values = np.asarray(values).astype(dt)
    if exclude_zero:
        if dt.kind in "fc":
            tiny = np.finfo(dt).tiny
            values[values == 0] = tiny + (1j * tiny if dt.kind == "c" else 0)
        else:
            values[values == 0] = 1
    return Tensor(values, requires_grad=requires_grad)
