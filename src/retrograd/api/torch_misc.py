"""Top-level torch utilities with nowhere else to live: `vmap`, `compile`, print
options, the default device, the determinism and matmul-precision switches (recorded:
retrograd is deterministic and computes float32 products in float32 always),
`unravel_index`, `gradient` (differentiable), the signal windows, `empty_strided`,
`frombuffer`, `fill`, the deprecated end-inclusive `range`, the anomaly switch, and
the predicates `is_conj`, `is_signed`, `typename`, `is_storage`, `get_device`.

`compile(fn)` returns `fn` unchanged: torch.compile only changes speed, and `rg.jit`
refuses (JitError) programs it cannot trace soundly, which would break code that runs
under torch.compile; call `rg.jit` yourself where it applies.
"""

from __future__ import annotations

import builtins
import ctypes
import math
import warnings
from collections.abc import Callable

import numpy as np

from .. import creation, devices, dtypes
from .._values import values_of
from ..creation import tensor as _tensor
from ..func import vmap
from ..grad_mode import state
from ..layouts import check_keywords
from ..tensor import PRINT_OPTIONS, Tensor
from ._args import dim_alias
from ._errors import ArgumentError, ArgumentTypeError
from .tensor_extras import nonzero_static  # noqa: F401  (rg.nonzero_static)
from .tensor_methods import TypedStorage, UntypedStorage

__all__ = ["vmap", "compile", "set_printoptions", "get_default_device", "set_default_device",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "unravel_index", "gradient", "hann_window",
           "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
           "empty_strided", "frombuffer", "fill", "range", "is_anomaly_enabled",
           "set_anomaly_enabled", "is_conj", "is_signed", "typename", "is_storage",
           "get_device", "set_deterministic_debug_mode", "get_deterministic_debug_mode",
           "set_warn_always", "is_warn_always_enabled", "set_num_interop_threads",
           "get_num_interop_threads", "set_flush_denormal", "set_default_tensor_type",
           "from_dlpack", "to_dlpack", "cond", "is_anomaly_check_nan_enabled",
           "init_num_threads", "is_distributed", "is_inference", "is_neg", "resolve_neg",
           "nonzero_static"]

_builtin_range = builtins.range


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic=None,  # noqa: A001
            backend="inductor", mode=None, options=None, disable: bool = False):
    """Accepted for `torch.compile`; returns `model` unchanged (or, without it, a decorator
    that does). See the module docstring for why it is not `rg.jit`."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise TypeError(f"compile(): 'model' must be callable, got {type(model).__name__}")
    return model


_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print (`repr`): digits, the size above which they are summarised, the
    items kept at each edge, the line width, and scientific notation (True, False, or None
    for automatic). Like `torch.set_printoptions`."""
    o = PRINT_OPTIONS
    if profile is not None:
        if profile not in _PROFILES:
            raise ArgumentError(f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, "
                                f"got {profile!r}")
        o["precision"], o["threshold"], o["edgeitems"], o["linewidth"] = _PROFILES[profile]
    for name, v in (("precision", precision), ("edgeitems", edgeitems),
                    ("linewidth", linewidth)):
        if v is not None:
            o[name] = int(v)
    if threshold is not None:
        o["threshold"] = threshold
    o["threshold"] = min(o["threshold"], float(np.iinfo(np.int64).max))
    o["sci_mode"] = sci_mode


_default_device = ["cpu"]


def get_default_device() -> devices.device:
    """The device new tensors are made on: always the CPU here. Like
    `torch.get_default_device`."""
    return devices.device(_default_device[0])


def set_default_device(device) -> None:
    """Only the CPU (or None, meaning it) is accepted: the creation functions do not read a
    default device, so another one would be silently ignored. Like
    `torch.set_default_device`."""
    if device is None:
        return
    d = devices.device(device) if not isinstance(device, devices.device) else device
    if d.type != "cpu":
        raise RuntimeError(f"set_default_device(): only 'cpu' is supported as the default "
                           f"device, got {device!r}; pass device= to the creation functions")
    _default_device[0] = "cpu"


_deterministic = creation.DETERMINISTIC  # (mode, warn_only, fill_uninitialized_memory)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded only: every retrograd op is deterministic already. Like
    `torch.use_deterministic_algorithms`."""
    if not isinstance(mode, (bool, np.bool_)):
        raise TypeError(f"use_deterministic_algorithms(): 'mode' must be a bool, got "
                        f"{type(mode).__name__}")
    _deterministic[:2] = [bool(mode), bool(warn_only)]


def are_deterministic_algorithms_enabled() -> bool:
    """What `use_deterministic_algorithms` last set. Like
    `torch.are_deterministic_algorithms_enabled`."""
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The `warn_only` flag `use_deterministic_algorithms` last set."""
    return _deterministic[1]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0 / "default", 1 / "warn" or 2 / "error": `use_deterministic_algorithms` off, on
    with warn_only, or on. Like `torch.set_deterministic_debug_mode`."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise ArgumentError(f"set_deterministic_debug_mode(): invalid value of debug_mode, "
                                f"expected one of `default`, `warn`, `error`, but got "
                                f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, bool) or not isinstance(debug_mode, (int, np.integer)):
        raise TypeError(f"set_deterministic_debug_mode(): debug_mode must be str or int, got "
                        f"{type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise ArgumentError(f"set_deterministic_debug_mode(): invalid value of debug_mode, "
                            f"expected 0, 1, or 2, but got {debug_mode}")
    _deterministic[:2] = [debug_mode > 0, debug_mode == 1]


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2 (see `set_deterministic_debug_mode`), from the current switches."""
    on, warn_only = _deterministic[:2]
    return 0 if not on else 1 if warn_only else 2


_warn_always = [False]


def set_warn_always(b: bool) -> None:
    """Recorded (retrograd's warnings follow Python's filters). Like `torch.set_warn_always`."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """What `set_warn_always` last set (False at first)."""
    return _warn_always[0]


_interop_threads = [None]


def set_num_interop_threads(num: int) -> None:
    """Recorded: retrograd runs no inter-op pool (its intra-op threads are
    `set_num_threads`). Like `torch.set_num_interop_threads`, a positive int."""
    if isinstance(num, bool) or not isinstance(num, (int, np.integer)):
        raise ArgumentTypeError(f"set_num_interop_threads(): expected an int, got "
                                f"{type(num).__name__}")
    if num <= 0:
        raise ArgumentError(f"set_num_interop_threads(): number of threads must be positive, "
                            f"got {num}")
    _interop_threads[0] = int(num)


def get_num_interop_threads() -> int:
    """What `set_num_interop_threads` set, else the machine's usable cores (torch's default)."""
    import os
    if _interop_threads[0] is not None:
        return _interop_threads[0]
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_flush_denormal(mode: bool) -> bool:
    """False: NumPy offers no switch for flushing subnormal floats to zero, so the mode is
    not supported (torch returns False where the CPU lacks it, and changes nothing)."""
    return False


def set_default_tensor_type(t) -> None:
    """The deprecated way to set the default dtype: `rg.DoubleTensor`, `rg.FloatTensor`,
    `rg.HalfTensor` (LLaMA 2's example scripts) or their names ("torch.DoubleTensor").
    Prefer `set_default_dtype`."""
    name = t if isinstance(t, str) else getattr(t, "__name__", repr(t))
    name = name.rsplit(".", 1)[-1]
    table = {"FloatTensor": np.float32, "DoubleTensor": np.float64, "HalfTensor": np.float16}
    if name not in table:
        raise TypeError(f"set_default_tensor_type(): only floating-point types are supported "
                        f"as the default type (FloatTensor, DoubleTensor, HalfTensor), got "
                        f"{t!r}")
    warnings.warn("set_default_tensor_type() is deprecated; use set_default_dtype()",
                  UserWarning, stacklevel=2)
    dtypes.set_default_dtype(table[name])


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing the memory of `ext_tensor`: an object with `__dlpack__` (a NumPy
    array, a PyTorch CPU tensor, an rg tensor that does not require grad, ...) or a DLPack
    capsule (`to_dlpack`'s, PyTorch's), which can be read once. Like `torch.from_dlpack`:
    a new tensor (of the same memory), outside any graph."""
    if isinstance(ext_tensor, Tensor):  # as through __dlpack__, but traceable by rg.jit
        if ext_tensor.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use "
                              "tensor.detach()")
        out = ext_tensor.detach()
        out._vc = None  # a version counter of its own, as PyTorch's
        return out
    source = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _Capsule(ext_tensor)
    try:
        arr = np.from_dlpack(source)
    except ValueError as e:  # not a capsule, or one read before
        if source is ext_tensor:
            raise
        raise RuntimeError(f"from_dlpack received an invalid capsule: expected an object "
                           f"with __dlpack__ or a DLPack capsule not read before (a capsule "
                           f"can be read only once), got {type(ext_tensor).__name__}") from e
    return Tensor._wrap(_writable(arr) if source is not ext_tensor else arr)


class _Capsule:
    """A bare DLPack capsule dressed as an exporter, for `np.from_dlpack`."""

    def __init__(self, capsule) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return (1, 0)  # kDLCPU: a device capsule is refused by NumPy itself


def _writable(arr: np.ndarray) -> np.ndarray:
    """NumPy marks an array from an unversioned capsule (PyTorch's `to_dlpack`) read-only;
    such a capsule grants writes (PyTorch's tensor from it is writable), so the same memory
    is viewed again, writable, through a buffer that keeps `arr` (the owner) alive."""
    if arr.flags.writeable or arr.size == 0:
        return arr
    lo, hi = np.lib.array_utils.byte_bounds(arr)
    buf = (ctypes.c_char * (hi - lo)).from_address(lo)
    buf.owner = arr
    return np.ndarray(arr.shape, arr.dtype, buf, arr.__array_interface__["data"][0] - lo,
                      arr.strides)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule of the tensor's memory (shared), for `from_dlpack` elsewhere (a
    versioned capsule where the array can give one, so NumPy's reading is writable). Like
    `torch.to_dlpack` (which also exports a tensor that requires grad)."""
    _need_tensor(tensor, "to_dlpack")
    arr = values_of(tensor, "to_dlpack", "pass the tensor itself")
    try:
        return arr.__dlpack__(max_version=(1, 0))
    except TypeError:  # an array type without versioned capsules
        return arr.__dlpack__()


def cond(pred, true_fn: Callable, false_fn: Callable, operands=()):
    """`true_fn(*operands)` if `pred` else `false_fn(*operands)`; `pred` a bool or a
    one-element tensor. Like `torch.cond` run eagerly (under `rg.jit`, reading a traced
    `pred` is refused as any data-dependent branch is)."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise ArgumentError(f"cond(): Expected pred to be bool or single-element tensor, "
                                f"but got a tensor of shape {tuple(pred.shape)}")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, np.bool_)):
        raise TypeError(f"cond(): Expected pred to be bool or a tensor, got "
                        f"{type(pred).__name__}")
    if not isinstance(operands, (tuple, list)):
        raise TypeError(f"cond(): operands must be a tuple or list of tensors, got "
                        f"{type(operands).__name__}")
    return (true_fn if pred else false_fn)(*operands)


_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded only ('highest', 'high' or 'medium'): float32 products are always computed in
    float32. Like `torch.set_float32_matmul_precision`."""
    if precision not in ("highest", "high", "medium"):
        raise ArgumentError(f"set_float32_matmul_precision(): 'precision' must be 'highest', "
                            f"'high' or 'medium', got {precision!r}")
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    """What `set_float32_matmul_precision` last set ('highest' at first)."""
    return _matmul_precision[0]


def unravel_index(indices, shape) -> tuple[Tensor, ...]:
    """Flat indices into `shape` as a tuple of int64 coordinate tensors, one per dimension
    (negative indices count from the end). Like `torch.unravel_index`."""
    idx = indices if isinstance(indices, Tensor) else _tensor(indices)
    if idx.dtype.kind not in "iu" or idx.dtype == np.bool_:
        raise TypeError(f"unravel_index(): expected 'indices' to be integer dtype, but got "
                        f"{idx.dtype}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ArgumentError(f"unravel_index(): 'shape' cannot have negative values, got {shape}")
    if 0 in shape and idx.numel():
        raise RuntimeError(f"unravel_index(): 'shape' {shape} has no elements, so every index "
                           "is out of bounds")
    flat = idx if idx.dtype == np.int64 else idx.to(np.int64)
    out = []
    for s in reversed(shape):  # tensor ops (floor semantics, as torch), so rg.jit traces them
        out.append(flat.remainder(s) if s else flat * 0)
        flat = flat.floor_divide(s) if s else flat
    return tuple(reversed(out))


def _dims(dim, ndim: int) -> list[int]:
    if dim is None:
        return list(_builtin_range(ndim))
    ds = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    out = []
    for d in ds:
        if not -ndim <= d < ndim:
            raise IndexError(f"gradient(): dim {d} is out of range for a tensor of {ndim} "
                             "dimensions")
        if int(d) % ndim in out:
            raise RuntimeError(f"dim {int(d) % ndim} appears multiple times in the list of dims")
        out.append(int(d) % ndim)
    return out


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1,  # noqa: A002
             axis=None) -> tuple[Tensor, ...]:
    """Estimates of d(input)/d(coordinate) along each of `dim` by central differences inside
    and one-sided ones (`edge_order` 1 or 2) at the ends; `spacing` is one number, one per
    dim, or one coordinate tensor per dim. Differentiable. Like `torch.gradient`."""
    dim = dim_alias(dim, axis, "gradient")
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): 'input' must be a Tensor, got {type(input).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError(f"gradient(): only edge_order 1 and 2 are supported, got "
                           f"{edge_order}")
    dims = _dims(dim, input.ndim)
    if spacing is None:  # torch's default spelled out, in its overloads with one dim or none
        if isinstance(dim, (list, tuple)):
            raise TypeError("gradient(): spacing=None is accepted only with dim None or an "
                            "int (as torch's overloads); omit spacing to pass a list of dims")
        spacing = 1
    if isinstance(spacing, (int, float, np.number)) or (isinstance(spacing, Tensor)
                                                        and spacing.ndim == 0):
        spacing = [spacing] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError(f"gradient(): expected spacing to be unspecified, a scalar or a list "
                           f"of length {len(dims)} (one per dim), got {len(spacing)}")
    x = input if input.dtype.kind in "fc" else input.to(dtypes.get_default_dtype())
    return tuple(_grad1(x, d, s, edge_order) for d, s in zip(dims, spacing))


def _grad1(x: Tensor, d: int, h, edge_order: int) -> Tensor:
    from . import cat, narrow

    n = x.shape[d]
    if n < edge_order + 1:
        raise RuntimeError(f"gradient(): each dimension differentiated needs at least "
                           f"edge_order + 1 = {edge_order + 1} points; dim {d} has {n}")

    def sl(a, b):
        return narrow(x, d, a, b - a)

    if isinstance(h, Tensor) and h.ndim == 1:  # coordinates: uneven spacing
        if h.shape[0] != n:
            raise RuntimeError(f"gradient(): coordinates for dim {d} have {h.shape[0]} "
                               f"entries, the input has {n}")
        c = h.to(x.dtype) if h.dtype != x.dtype else h
        shp = [1] * x.ndim
        shp[d] = -1
        dx = (c[1:] - c[:-1])
        h1, h2 = dx[:-1].reshape(shp), dx[1:].reshape(shp)
        inner = (sl(2, n) * (h1 / (h2 * (h1 + h2))) + sl(1, n - 1) * ((h2 - h1) / (h1 * h2))
                 - sl(0, n - 2) * (h2 / (h1 * (h1 + h2)))) if n > 2 else None
        d0, d1, dl, dk = (dx[k].reshape([1] * x.ndim) for k in (0, 1, -1, -2)) \
            if n > 2 else (dx[0].reshape([1] * x.ndim),) * 4
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / d0
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dl
        else:
            a = -(2.0 * d0 + d1) / (d0 * (d0 + d1))
            b = (d0 + d1) / (d0 * d1)
            cc = -d0 / (d1 * (d0 + d1))
            first = a * sl(0, 1) + b * sl(1, 2) + cc * sl(2, 3)
            a = dl / (dk * (dk + dl))
            b = -(dl + dk) / (dk * dl)
            cc = (2.0 * dl + dk) / (dl * (dk + dl))
            last = a * sl(n - 3, n - 2) + b * sl(n - 2, n - 1) + cc * sl(n - 1, n)
    else:
        step = float(h)
        inner = (sl(2, n) - sl(0, n - 2)) / (2.0 * step) if n > 2 else None
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / step
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / step
        else:
            first = (sl(0, 1) * -1.5 + sl(1, 2) * 2.0 - sl(2, 3) * 0.5) / step
            last = (sl(n - 3, n - 2) * 0.5 - sl(n - 2, n - 1) * 2.0 + sl(n - 1, n) * 1.5) / step
    parts = [first] + ([inner] if inner is not None else []) + [last]
    return cat(parts, d)


def _window_dtype(dtype, what: str):
    dt = np.dtype(dtypes.get_default_dtype() if dtype is None else dtype)
    if dt.kind != "f":
        raise RuntimeError(f"{what} expects floating point dtypes, got {dt}")
    return dt


def _window(values: Callable[[int], np.ndarray], n: int, periodic: bool, dtype,
            requires_grad: bool, what: str, layout=None, device=None,
            pin_memory: bool = False) -> Tensor:
    check_keywords(what, layout_=layout, pin_memory=pin_memory)
    dt = _window_dtype(dtype, what)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{what}(): 'window_length' must be an int, got {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{what}(): 'window_length' must be non-negative, got {n}")
    if n == 0:
        arr = np.zeros(0)
    elif n == 1:
        arr = np.ones(1)
    else:
        m = n + 1 if periodic else n
        arr = values(m)[:n]
    t = Tensor(arr.astype(dt))
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


def _cosine(coefs):
    def values(m):
        k = np.arange(m) * (2.0 * np.pi / (m - 1))
        return sum(c * np.cos(j * k) for j, c in enumerate(coefs))
    return values


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False,
                pin_memory: bool = False) -> Tensor:
    """The Hann window (periodic by default). Like `torch.hann_window`."""
    return _window(_cosine([0.5, -0.5]), window_length, periodic, dtype, requires_grad,
                   "hann_window", layout, device, pin_memory)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """The Hamming window `alpha - beta cos(2 pi k / (N - 1))`. Like `torch.hamming_window`."""
    return _window(_cosine([alpha, -beta]), window_length, periodic, dtype, requires_grad,
                   "hamming_window", layout, device, pin_memory)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:
    """The Blackman window. Like `torch.blackman_window`."""
    return _window(_cosine([0.42, -0.5, 0.08]), window_length, periodic, dtype, requires_grad,
                   "blackman_window", layout, device, pin_memory)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:
    """The Bartlett (triangular) window. Like `torch.bartlett_window`."""
    def values(m):
        return 1.0 - np.abs(np.arange(m) * (2.0 / (m - 1)) - 1.0)
    return _window(values, window_length, periodic, dtype, requires_grad, "bartlett_window",
                   layout, device, pin_memory)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """The Kaiser window `I0(beta sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)`. Like
    `torch.kaiser_window`."""
    def values(m):
        r = np.arange(m) * (2.0 / (m - 1)) - 1.0
        return np.i0(beta * np.sqrt(np.clip(1.0 - r * r, 0.0, None))) / np.i0(beta)
    return _window(values, window_length, periodic, dtype, requires_grad, "kaiser_window",
                   layout, device, pin_memory)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of `size` (its values unspecified; zeros here). The strides are checked for
    length but not kept: retrograd's tensors are contiguous. Like `torch.empty_strided`."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided(): mismatch in length of strides and shape: size "
                           f"{size} has {len(size)} dims, stride {stride} has {len(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"empty_strided(): negative dimension in size {size}")
    dt = np.dtype(dtypes.get_default_dtype() if dtype is None else dtype)
    t = creation.uninitialized(Tensor._wrap(np.zeros(size, dtype=dt)))
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of `size` (values unspecified; zeros here) laid out in memory in the order
    `physical_layout` gives, outermost first: `empty_permuted((2, 3, 5, 7), (0, 2, 3, 1))`
    has channels-last strides (105, 1, 21, 3). Like `torch.empty_permuted`."""
    size, order = tuple(int(s) for s in size), tuple(int(p) for p in physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted(): physical_layout {order} is not a permutation of "
                           f"the {len(size)} dimensions of size {size}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"empty_permuted(): negative dimension in size {size}")
    dt = np.dtype(dtypes.get_default_dtype() if dtype is None else dtype)
    stored = np.zeros(tuple(size[p] for p in order), dtype=dt)
    t = creation.uninitialized(Tensor._wrap(stored.transpose(np.argsort(order))))
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the bytes of `buffer` (shared, as in torch, when it is writable):
    `count` items of `dtype` from byte `offset` (-1: all). Like `torch.frombuffer`."""
    dt = np.dtype(dtype)
    view = memoryview(buffer)
    nbytes = view.nbytes
    if offset < 0 or offset > nbytes or (offset == nbytes and nbytes):
        raise ArgumentError(f"frombuffer(): 'offset' ({offset} bytes) must be non-negative and "
                            f"less than the buffer length ({nbytes} bytes)")
    if count == 0 or count < -1:
        raise ArgumentError(f"frombuffer(): 'count' must be positive or -1, got {count}")
    avail = (nbytes - offset) // dt.itemsize
    if count == -1:
        if (nbytes - offset) % dt.itemsize:
            raise ArgumentError(f"frombuffer(): the buffer length ({nbytes} bytes) minus 'offset' "
                                f"({offset}) must be a multiple of the element size "
                                f"({dt.itemsize} bytes)")
        count = avail
    elif count > avail:
        raise ArgumentError(f"frombuffer(): requested {count} items of {dt} from byte {offset}, "
                            f"but the buffer ({nbytes} bytes) holds only {avail}")
    arr = np.frombuffer(buffer, dtype=dt, count=count, offset=offset)
    if not arr.flags.writeable:
        warnings.warn("frombuffer(): the buffer is not writable; the tensor is read-only "
                      "(writing to it raises)", UserWarning, stacklevel=2)
    t = Tensor._wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


def fill(input: Tensor, value) -> Tensor:  # noqa: A002
    """A new tensor like `input` with every element `value` (a number or a 0-d tensor, through
    which the gradient flows). Like `torch.fill`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fill(): 'input' must be a Tensor, got {type(input).__name__}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill(): only a 0-dimension value tensor is supported, got "
                               f"shape {value.shape}")
        v = value if value.dtype == input.dtype else value.to(input.dtype)
        out = v.expand(input.shape).clone()
    else:
        out = input.new_full(input.shape, value)
    if state.enabled and input.requires_grad:  # as torch's FillBackward: a zero gradient
        from . import where
        out = where(Tensor(np.zeros((), np.bool_)), input, out)
    return out


def range(start: float = 0, end: float | None = None, step: float = 1, *, dtype=None,  # noqa: A001
          layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """Deprecated in torch (use `arange`): the values `start, start + step, ...` up to and
    including `end`, in the default float dtype. Like `torch.range`."""
    warnings.warn("rg.range is deprecated (as torch.range): its end is inclusive, unlike "
                  "Python's range; use rg.arange instead", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range(): 'step' must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"range(): upper bound and lower bound inconsistent with step sign "
                           f"(start {start}, end {end}, step {step})")
    n = int(math.floor((end - start) / step)) + 1
    dt = np.dtype(dtypes.get_default_dtype() if dtype is None else dtype)
    arr = (start + np.arange(n) * step).astype(dt)
    t = Tensor._wrap(arr)
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


def is_anomaly_enabled() -> bool:
    """Whether backward checks every gradient for NaN/inf. Like `torch.is_anomaly_enabled`."""
    return state.anomaly


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off. Like `torch.set_anomaly_enabled`."""
    state.anomaly = bool(enabled) and bool(check_nan)


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks for NaN: on exactly when anomaly detection is (its
    check_nan=False turns both off here)."""
    return bool(state.anomaly)


def init_num_threads() -> None:
    """Nothing to do: retrograd's thread pool starts on first use (torch's name)."""


def is_distributed(input: Tensor) -> bool:  # noqa: A002
    """False: a tensor lives in one process (`rg.distributed` moves copies)."""
    _need_tensor(input, "is_distributed")
    return False


def is_inference(input: Tensor) -> bool:  # noqa: A002
    """`input.is_inference()`: whether it was made under `inference_mode`."""
    _need_tensor(input, "is_inference")
    return input.is_inference()


def is_neg(input: Tensor) -> bool:  # noqa: A002
    """Always False: retrograd negates eagerly, it has no lazy negative bit."""
    _need_tensor(input, "is_neg")
    return False


def resolve_neg(input: Tensor) -> Tensor:  # noqa: A002
    """`input` itself (no lazy negative bit to resolve; see `is_neg`)."""
    _need_tensor(input, "resolve_neg")
    return input


def is_conj(input: Tensor) -> bool:  # noqa: A002
    """Always False: retrograd conjugates eagerly, it has no lazy conjugate bit. Like
    `torch.is_conj`."""
    _need_tensor(input, "is_conj")
    return False


def is_signed(input: Tensor) -> bool:  # noqa: A002
    """Whether the dtype holds negative numbers (False for bool and unsigned). Like
    `torch.is_signed`."""
    _need_tensor(input, "is_signed")
    return input.dtype.kind in "ifc"


def typename(obj) -> str:
    """PyTorch's type name of a tensor ('torch.FloatTensor'), else the object's qualified
    type name. Like `torch.typename`."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qual = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qual is None:
        t = type(obj)
        module, qual = t.__module__, t.__qualname__
    return qual if module in ("", "builtins") else f"{module}.{qual}"


def _assert(condition, message: str) -> None:
    """`torch._assert(cond, msg)`: `assert cond, msg` as a function (torchvision's model
    code calls it, as it stays in a traced graph); a tensor condition must hold one
    element, as `bool(tensor)` asks."""
    assert condition, message


def is_storage(obj) -> bool:
    """Whether `obj` is a storage (`t.untyped_storage()`, `t.storage()`, an
    `UntypedStorage` or `TypedStorage`). Like `torch.is_storage`."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def get_device(input: Tensor) -> int:  # noqa: A002
    """-1 for a CPU tensor, else the device index. Like `torch.get_device`."""
    _need_tensor(input, "get_device")
    d = input.device
    return -1 if d.type == "cpu" else (d.index or 0)


def _need_tensor(x, what: str) -> None:
    if not isinstance(x, Tensor):
        raise ArgumentTypeError(f"{what}(): expected a Tensor, got {type(x).__name__}")


