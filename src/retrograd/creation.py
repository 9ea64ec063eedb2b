"""Creation functions (`zeros`, `randn`, ...) and the global random generator."""

from __future__ import annotations

import functools
import math

import numpy as np

from . import devices
from ._values import batch_like as _batch_like
from ._values import batched as _batched
from ._values import per_element as _per_element
from .dtypes import (
    default_complex_dtype,
    float_in_range,
    floats_in_int_range,
    get_default_dtype,
    int_in_range,
    tensor_dtype,
)
from .generator import Generator, numpy_generator
from .grad_mode import no_grad, state
from .layouts import check_keywords
from .primitive import ArgumentError, DtypeError
from .size import Size
from .tensor import Tensor

_rng = [np.random.default_rng()]


def manual_seed(seed: int) -> Generator:
    """Make `rand`, `randn` (and layer initialisation, dropout) reproducible, on the host
    and on every device. Returns `rg.default_generator`, as `torch.manual_seed` does."""
    _rng[0] = np.random.default_rng(seed)
    devices.seed_all(seed)
    return default_generator


class _DefaultGenerator(Generator):
    """`rg.default_generator`: the global stream itself, as `torch.default_generator`
    (seeding it is `rg.manual_seed`)."""

    def __init__(self) -> None:
        pass

    def manual_seed(self, seed) -> Generator:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        manual_seed(int(seed) % 2 ** 64)
        return self

    @property
    def _seed(self) -> int:  # what rg.initial_seed() says
        return int(_rng[0].bit_generator.seed_seq.entropy)

    @_seed.setter
    def _seed(self, value) -> None:
        pass  # the stream's own seed_seq keeps it

    @property
    def _rng(self):
        return _rng[0]

    @_rng.setter
    def _rng(self, value) -> None:
        _rng[0] = value


default_generator = _DefaultGenerator()


def generator(like=None, device=None):
    """The generator behind `rand`/`randn`, for code that needs raw random numbers: the
    host's (a `numpy.random.Generator`), or with `like` (an array) or `device` the one of
    that device, which draws there with the same method names (`random`,
    `standard_normal`, `uniform`, `normal`, `integers`, `permutation`)."""
    if state.tracer is not None:
        state.tracer.refuse_random()
    if state.forward is not None:  # rg.func.vmap: one draw would serve every batch element
        state.forward.check_random()
    if like is not None and like.__class__ is not np.ndarray and devices.is_device_array(like):
        return devices.rng_for(like)
    if device is not None and devices.parse(device)[0] != "cpu":
        return devices.rng_on(device)
    return _rng[0]


def _drawer(gen, device):
    """What draws for a creation function's `generator=` (see `generator.py`): the global
    stream of `device` when None, else the caller's own, which draws on the host."""
    if gen is None:
        return generator(device=device)
    if device is not None and devices.parse(device)[0] != "cpu":
        raise RuntimeError(f"generator=: only CPU generators are supported, and device "
                           f"{device!r} draws from its own stream (omit generator=)")
    if state.tracer is not None:
        state.tracer.refuse_random()
    if state.forward is not None:
        state.forward.check_random()
    return numpy_generator(gen, generator)


def _create(device, make):
    """`make(xp)` with the array module of `device` (NumPy for None or "cpu"), run on it."""
    if device is None:
        return make(np)
    kind, index = devices.parse(device)
    if kind == "cpu":
        return make(np)
    b = devices.backend(kind)
    index = index or 0
    if not 0 <= index < b.device_count():
        raise RuntimeError(f"device '{kind}:{index}' does not exist: {b.device_count()} {kind} "
                           "device(s) found")
    with b.context(index):
        return make(b.xp)


def _moved(arr, device):
    """A host array moved to `device` (None: left on the host)."""
    return arr if device is None else devices.to(arr, device)


class ShapeTypeError(TypeError, ValueError):
    """A size that is not an int (PyTorch: TypeError; a ValueError here before)."""


def _index_size(s, zero_d: bool = False):
    """An integer tensor of one element as the int it holds (PyTorch takes one as a size:
    `torch.zeros(mask.sum())`; a 0-d one alone with `zero_d`, for an int argument such as
    linspace's `steps`); anything else as it is."""
    if isinstance(s, Tensor) and s.dtype.kind in "iu" and s.data.size == 1 and (
            s.ndim == 0 or not zero_d):
        return int(s.item())
    return s


def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(_index_size(s) for s in shape)
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise ShapeTypeError(f"shape must be a tuple of ints, got {shape}")
        if s < 0:  # PyTorch: RuntimeError; ArgumentError is a ValueError too
            raise ArgumentError(f"shape must be non-negative ints, got {shape}")
    return tuple(int(s) for s in shape)


def _number(fn: str, v):
    """`v` as a Python number where it is a 0-d Tensor (PyTorch's `arange(t.size(0))`
    idiom with a tensor bound keeps the tensor's integer or float kind); NumPy
    integers stay integers. A tensor with dimensions is refused, as in PyTorch."""
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise TypeError(f"{fn}(): expected a number, got a tensor of shape {tuple(v.shape)}")
        return v.item()
    if isinstance(v, np.floating):
        return float(v)
    return v


def _sized(shape: tuple, size, fn: str) -> tuple:
    """`shape`, or `(size,)` for PyTorch's keyword form `torch.empty(size=(2, 3))`."""
    if size is None:
        return shape
    if shape:
        raise TypeError(f"{fn}() got the shape both as arguments {shape} and as size={size!r}")
    return (size,)


def _torch_keywords(fn):
    """Accept PyTorch's `layout=`, `memory_format=` and `pin_memory=` (see `layouts`)."""
    @functools.wraps(fn)
    def creating(*args, layout=None, memory_format=None, pin_memory=False, **kwargs):
        if layout is not None or memory_format is not None or pin_memory is not False:
            check_keywords(fn.__name__, layout, memory_format, pin_memory)
        return fn(*args, **kwargs)

    return creating


def _takes_out(fn):
    """PyTorch's `out=` on a creation function (`torch.rand(2, 2, out=c)`): the values
    are written into `out` (made in its dtype unless `dtype` is given), which is
    returned; an `out` of another shape is resized, as PyTorch does."""
    @functools.wraps(fn)
    def creating(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError(f"{fn.__name__}(): argument 'out' must be a Tensor, not "
                            f"{type(out).__name__}")
        if state.enabled and (out.requires_grad or kwargs.get("requires_grad")):
            raise RuntimeError(f"{fn.__name__}(): functions with out=... arguments don't "
                               "support automatic differentiation, but one of the arguments "
                               "requires grad")
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = out.dtype
        return _into(out, fn(*args, **kwargs))

    return creating


def _into(out: Tensor, res: Tensor) -> Tensor:
    """`res` written into `out` (resized when the shapes differ, as PyTorch does)."""
    if res.shape == out.shape:
        with no_grad():
            out.copy_(res)
    else:
        out.data = devices.to(res.data, out.device)
        out._cell()[0] += 1
    return out


def _make(arr, requires_grad) -> Tensor:
    t = Tensor._wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    if state.tracer is not None:  # made inside rg.jit: a true constant of the program
        state.tracer.constant(t)
    return t


def _dt(dtype):
    return get_default_dtype() if dtype is None else tensor_dtype(dtype, "creation")


@_torch_keywords
def tensor(data, requires_grad: bool = False, dtype=None, device=None) -> Tensor:
    """Same as `Tensor(data, requires_grad, dtype)`, on `device` (default: where `data` is),
    always a copy, as `torch.tensor` is: writing to the tensor never changes the caller's
    array (`rg.as_tensor` and `rg.from_numpy` share memory instead)."""
    return share_tensor(data, requires_grad, dtype, device, _copy=True)


def share_tensor(data, requires_grad: bool = False, dtype=None, device=None, *,
                 _copy: bool = False) -> Tensor:
    """`tensor` without the copy: a NumPy array of the right dtype is wrapped as is."""
    if isinstance(data, Size):  # rg.tensor(x.shape): the sizes as data (rg.Tensor: a shape)
        data = tuple(data)
    if isinstance(data, np.ndarray) and data.size and any(s < 0 for s in data.strides):
        raise ValueError(  # PyTorch refuses them in tensor, as_tensor, asarray and from_numpy
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array with array.copy().)")
    if _copy and (isinstance(data, np.ndarray) or devices.is_device_array(data)) and (
            dtype is None or np.dtype(dtype) == data.dtype):
        data = data.copy()  # a conversion to another dtype copies anyway
    t = Tensor(data, requires_grad=requires_grad, dtype=dtype)
    if device is not None:
        moved = devices.to(t.data, device)
        if moved is not t.data:  # (already there: nothing to assign, so rg.jit traces it)
            t.data = moved
    if state.tracer is not None:
        state.tracer.constant(t)
    return t


@_torch_keywords
@_takes_out
def zeros(*shape, dtype=None, requires_grad: bool = False, device=None, size=None) -> Tensor:
    """A tensor of zeros of the given shape (`dtype` default float32, `device`,
    `requires_grad`). Like `torch.zeros`: `rg.zeros(2, 3)`."""
    shape, dt = _shape(_sized(shape, size, "zeros")), _dt(dtype)
    return _make(_create(device, lambda xp: xp.zeros(shape, dtype=dt)), requires_grad)


@_torch_keywords
@_takes_out
def ones(*shape, dtype=None, requires_grad: bool = False, device=None, size=None) -> Tensor:
    """A tensor of ones of the given shape. Like `torch.ones`: `rg.ones(2, 3)`."""
    shape, dt = _shape(_sized(shape, size, "ones")), _dt(dtype)
    return _make(_create(device, lambda xp: xp.ones(shape, dtype=dt)), requires_grad)


@_torch_keywords
@_takes_out
def full(shape=None, fill_value=None, dtype=None, requires_grad: bool = False, device=None, *,
         size=None) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (dtype from the value, as in PyTorch).
    Like `torch.full`: `rg.full((2,), 7.0)` is `tensor([7., 7.])`; PyTorch's keyword
    spelling `rg.full(size=(2,), fill_value=7.0)` works too."""
    if size is not None:
        if shape is not None:
            raise TypeError(f"full() got the shape both as {shape!r} and as size={size!r}")
        shape = size
    if shape is None or fill_value is None:
        raise TypeError("full() missing required argument: "
                        + ("'size'" if shape is None else "'fill_value'"))
    if isinstance(fill_value, Tensor):  # a Number argument: a 0-d tensor reads as its item
        if fill_value.ndim != 0 or fill_value.requires_grad:
            raise TypeError("full(): 'fill_value' must be a number (or a 0-d tensor without "
                            f"grad), got a tensor of shape {tuple(fill_value.shape)}"
                            + (" that requires grad" if fill_value.requires_grad else ""))
        fill_value = fill_value.item()  # its dtype from the Python number, as in PyTorch
    if dtype is None:
        dtype = np.asarray(fill_value).dtype if not isinstance(fill_value, float) else None
        dtype = np.int64 if dtype is not None and dtype.kind in "iu" else dtype
        if isinstance(fill_value, complex):  # a Python complex: the default complex dtype
            dtype = default_complex_dtype()
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape, dt = _shape(shape), _dt(dtype)
    if dt.kind in "iu" and isinstance(fill_value, (int, np.integer)) \
            and not isinstance(fill_value, bool):
        fill_value = int_in_range(int(fill_value), dt, "full")
    elif dt.kind in "iu" and isinstance(fill_value, (float, np.floating)):
        floats_in_int_range(fill_value, dt, "full")
    elif dt.kind == "f" and isinstance(fill_value, (float, np.floating)):
        float_in_range(float(fill_value), dt, "full")
    return _make(_create(device, lambda xp: xp.full(shape, fill_value, dtype=dt)),
                 requires_grad)


def _like_device(data, device):
    """`device=` of a `*_like` function: the given one, else where `data` lives."""
    return device if device is not None else (None if data.__class__ is np.ndarray
                                              else devices.device_of(data))


@_torch_keywords
def zeros_like(input, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Zeros with the shape (and by default dtype and device) of `t`. Like `torch.zeros_like`."""
    data = _like(input)
    dt = dtype or data.dtype
    return _batch_like(_make(_create(_like_device(data, device),
                                     lambda xp: xp.zeros(data.shape, dtype=dt)), requires_grad),
                       input)


@_torch_keywords
def ones_like(input, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Ones with the shape (and by default dtype and device) of `t`. Like `torch.ones_like`."""
    data = _like(input)
    dt = dtype or data.dtype
    return _batch_like(_make(_create(_like_device(data, device),
                                     lambda xp: xp.ones(data.shape, dtype=dt)), requires_grad),
                       input)


@_torch_keywords
@_takes_out
def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False,
           device=None) -> Tensor:
    """Evenly spaced values in `[start, end)` by `step`; integers give int64, floats the
    default float. Like `torch.arange`: `rg.arange(3)` is `tensor([0, 1, 2])`."""
    start, end, step = (_number("arange", v) for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if dtype is not None and _dt(dtype) == np.int64:
        # PyTorch reads the bounds and the step as int64 first (truncated toward zero):
        # arange(0, 5.5, 1, dtype=int64) stops at 4, arange(0, 2, 0.5, dtype=int64) raises
        if not all(math.isfinite(v) for v in (start, end, step)):
            raise ArgumentError(f"arange(): value cannot be converted to type int64_t without "
                                f"overflow ({start}, {end}, {step})")
        start, end, step = int(start), int(end), int(step)
    if step == 0 or step != step:
        raise ArgumentError(f"arange(): step must be nonzero, got {step}")
    if not all(math.isfinite(v) for v in (start, end)):  # NumPy: ValueError/OverflowError
        raise ArgumentError(f"arange(): unsupported range: {start} -> {end}")
    if (end - start) * step < 0:  # PyTorch refuses rather than give an empty tensor
        raise ArgumentError(f"arange(): upper bound and lower bound inconsistent with step "
                            f"sign (start {start}, end {end}, step {step})")
    if math.isinf(step):  # torch's length ceil((end - start) / step) is 0 (NumPy's 1)
        end = start
    if abs((end - start) / step) >= 2 ** 63:
        raise ArgumentError(f"arange(): invalid size, possible overflow? ({start} -> {end} by "
                            f"{step})")
    if dtype is None and all(isinstance(v, (int, np.integer)) for v in (start, end, step)):
        dtype = np.int64
    dt = _dt(dtype)
    if dt.kind in "iu" and dt != np.int64:
        # PyTorch: the length from the float bounds, the values start + i * step with both
        # truncated to integers, wrapping to the dtype (arange(2.5, 7.5, 0.5, dtype=int32)
        # is ten 2s)
        n = math.ceil((end - start) / step)
        vals = int(start) + np.arange(n, dtype=np.int64) * int(step)
        return _make(_moved(vals.astype(dt), device), requires_grad)
    if dt.kind == "f" and dt.itemsize < 8:
        # PyTorch computes start + i * step in double and rounds once; NumPy's float32
        # arange steps in float32 and drifts (arange(-7, 7, 0.01)[-1] off by 3e-4)
        return _make(_create(device, lambda xp: xp.arange(start, end, step,
                                                          dtype=np.float64).astype(dt)),
                     requires_grad)
    return _make(_create(device, lambda xp: xp.arange(start, end, step, dtype=dt)),
                 requires_grad)


def _two_sum(a, b):
    """s + e == a + b exactly, s = fl(a + b) (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    """p + e == a * b exactly, p = fl(a * b) (Dekker, with Veltkamp's split)."""
    p = a * b
    c = 134217729.0 * a
    ah = c - (c - a)
    c = 134217729.0 * b
    bh = c - (c - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _sum_round_odd(a, b):
    """a + b rounded to odd (an inexact sum gets the odd neighbour), so that one more
    rounding to nearest, here or to fewer bits, rounds the exact sum correctly."""
    s, e = _two_sum(a, b)
    even = (s.view(np.int64) & 1) == 0
    return np.where((e != 0) & even, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def _fma(a, b, c, dt):
    """a * b + c rounded once to `dt` (float64 arrays in; Boldo and Melquiond's emulation
    of a fused multiply-add through rounding to odd)."""
    uh, ul = _two_prod(a, b)
    th, tl = _two_sum(c, uh)
    if dt == np.float32:  # a float32 product is exact in float64: one rounding to odd
        return _sum_round_odd(c, a * b).astype(np.float32)
    return th + _sum_round_odd(tl, ul)


def _torch_linspace(start, end, steps: int, dt) -> np.ndarray:
    """PyTorch's CPU linspace, bit for bit: step = (end - start) / (steps - 1) in `dt`,
    start + step * i for the first half and end - step * (steps - 1 - i) for the rest, each
    a fused multiply-add (as its kernel is compiled); NumPy's start + i * step rounds
    twice and drifts from it in the last bit."""
    with np.errstate(all="ignore"):
        lo, hi = dt.type(start), dt.type(end)
        for v, cast in ((start, lo), (end, hi)):
            if np.isinf(cast) and np.isfinite(v):
                raise RuntimeError(f"linspace(): value {v!r} cannot be converted to type {dt} "
                                   "without overflow")
        step = np.float64(dt.type((hi - lo) / dt.type(steps - 1)))
        i = np.arange(steps, dtype=np.float64)
        first = i < steps // 2
        a = np.where(first, step, -step)
        b = np.where(first, i, steps - 1 - i)
        c = np.where(first, np.float64(lo), np.float64(hi))
        out = _fma(a, b, c, dt)
        naive = (a * b + c).astype(dt)  # infinities and overflow: the plain formula's values
        return np.where(np.isfinite(out), out, naive)


def _check_space_args(fn: str, start, end, steps) -> None:
    """PyTorch's refusals for linspace/logspace: `steps` not an int (a float, a bool) is a
    TypeError, a negative one a RuntimeError; start and end tensors must be 0-d."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"{fn}(): steps must be an int, got {steps!r}")
    if steps < 0:
        raise ArgumentError(f"{fn}(): number of steps must be non-negative, got {steps}")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v.ndim:
            raise RuntimeError(f"{fn} only supports 0-dimensional start and end tensors, but "
                               f"got {name} with {v.ndim} dimension(s)")


@_torch_keywords
@_takes_out
def linspace(start, end, steps: int, dtype=None, requires_grad: bool = False,
             device=None) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` (both included).

    With an integer dtype, as in PyTorch: `start` and `end` are first truncated to
    integers, the values are computed in float64 (the first half from `start`, the
    second from `end`) and truncated toward zero. A bool dtype is refused.
    """
    dt = _dt(dtype)
    steps = _index_size(steps, zero_d=True)  # linspace(0.5, H_ - 0.5, H_), H_ a 0-d tensor
    _check_space_args("linspace", start, end, steps)
    if dt == np.bool_:
        raise TypeError("linspace() does not support dtype bool")
    if _batched(start, end):  # tensor ends batched by vmap: each element's, as torch's
        r = _per_element(lambda s, e: linspace(s, e, steps, dtype=dt, device=device,
                                               requires_grad=requires_grad), start, end)
        if r is not None:
            return r
    start, end = (v.item() if isinstance(v, Tensor) and v.ndim == 0 else v for v in (start, end))
    if dt in (np.float32, np.float64) and steps > 1 and all(
            isinstance(v, (int, float, np.integer, np.floating)) for v in (start, end)):
        return _make(_moved(_torch_linspace(start, end, steps, dt), device), requires_grad)
    if dt.kind not in "iu":
        return _make(_create(device, lambda xp: xp.linspace(start, end, steps, dtype=dt)),
                     requires_grad)
    info = np.iinfo(dt)
    ends = []
    for name, v in (("start", start), ("end", end)):
        low = info.min
        if dt.kind == "u" and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            low = -int(info.max)  # torch's check lets a negative int wrap (-1 is 255)
        if not low <= v <= info.max:
            raise RuntimeError(f"linspace(): {name}={v!r} cannot be converted to {dt} without "
                               "overflow")
        ends.append(float(int(v) % (int(info.max) + 1) if int(v) < 0 <= info.min else int(v)))
    lo, hi = ends
    step = (hi - lo) / (steps - 1) if steps > 1 else 0.0
    i = np.arange(steps, dtype=np.float64)
    vals = np.where(i < steps // 2, lo + step * i, hi - step * (steps - 1 - i))
    if steps == 1:
        vals = np.array([lo])
    return _make(_moved(np.trunc(vals).astype(dt), device), requires_grad)


@_torch_keywords
@_takes_out
def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False,
        device=None) -> Tensor:
    """The `n x m` identity matrix. Like `torch.eye`: `rg.eye(2)`."""
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:  # torch's RuntimeError, not NumPy's ValueError
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    dt = _dt(dtype)
    return _make(_create(device, lambda xp: xp.eye(n, m, dtype=dt)), requires_grad)


@_torch_keywords
@_takes_out
def rand(*shape, dtype=None, requires_grad: bool = False, device=None, size=None,
         generator=None) -> Tensor:
    """Uniform samples in [0, 1)."""
    shape = _sized(shape, size, "rand")
    return _make(_draws(_drawer(generator, device), _shape(shape), _dt(dtype), False, "rand"),
                 requires_grad)


@_torch_keywords
@_takes_out
def randn(*shape, dtype=None, requires_grad: bool = False, device=None, size=None,
          generator=None) -> Tensor:
    """Standard normal samples."""
    shape = _sized(shape, size, "randn")
    return _make(_draws(_drawer(generator, device), _shape(shape), _dt(dtype), True, "randn"),
                 requires_grad)


@_torch_keywords
def randint(low: int | None = None, high=None, size=None, dtype=None,
            requires_grad: bool = False, device=None, generator=None) -> Tensor:
    """Integers in [low, high) of shape `size`; `randint(high, size)` and
    `randint(high, size=...)` as in PyTorch."""
    if size is None:
        if high is None or low is None:
            raise TypeError("randint() needs a size: randint(low, high, size) or "
                            "randint(high, size)")
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...)
        if low is None:
            raise TypeError("randint() needs high: randint(low, high, size) or "
                            "randint(high, size)")
        low, high = 0, low
    elif low is None:
        low = 0
    if high <= low:
        raise ArgumentError(f"randint(): expected low < high, got low={low}, high={high}")
    size = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return _make(_drawer(generator, device).integers(low, high, size=_shape(size)).astype(
        dtype or np.int64), requires_grad)


# ---------------------------------------------------------------- more creation, PyTorch's

def _like(t) -> np.ndarray:
    return t.data if isinstance(t, Tensor) else np.asarray(t)


@_torch_keywords
def full_like(input, fill_value, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """`fill_value` in `t`'s shape and (unless given) dtype."""
    data = _like(input)
    dt = np.dtype(dtype or data.dtype)
    if dt.kind in "iu" and isinstance(fill_value, (int, np.integer)) \
            and not isinstance(fill_value, bool):
        fill_value = int_in_range(int(fill_value), dt, "full_like")  # -1 wraps in uint8
    elif dt.kind in "iu" and isinstance(fill_value, (float, np.floating)):
        floats_in_int_range(fill_value, dt, "full_like")
    return _batch_like(_make(_create(_like_device(data, device),
                                     lambda xp: xp.full(data.shape, fill_value, dtype=dt)),
                             requires_grad), input)


DETERMINISTIC = [False, False, True]
"""`rg.use_deterministic_algorithms`'s (mode, warn_only) (api/torch_misc.py sets them) and
`rg.utils.deterministic.fill_uninitialized_memory`: with the mode and the fill both on,
`empty` and its kin hold what PyTorch puts in uninitialised memory then (`uninitialized`)."""


def uninitialized(t: Tensor) -> Tensor:
    """`t`, just made for an `empty`-like call: zeros, or, in deterministic mode with
    fill_uninitialized_memory, as PyTorch fills such memory: NaN for floating and complex
    dtypes (NaN+0j), the largest value for integer ones, True for bool."""
    if DETERMINISTIC[0] and DETERMINISTIC[2] and t._fw is None:
        fill_uninitialized(t.data)
    return t


def fill_uninitialized(arr) -> None:
    """Fill `arr` in place with PyTorch's deterministic-mode value for its dtype."""
    kind = arr.dtype.kind
    if kind in "fc":
        arr.fill(complex(math.nan, 0.0) if kind == "c" else math.nan)
    elif kind in "iu":
        arr.fill(np.iinfo(arr.dtype).max)
    elif kind == "b":
        arr.fill(True)


@_torch_keywords
@_takes_out
def empty(*shape, dtype=None, requires_grad: bool = False, device=None, size=None) -> Tensor:
    """Uninitialised memory (zeros here: NumPy's empty would leak old values into results;
    PyTorch's fill in deterministic mode, see `uninitialized`)."""
    return uninitialized(zeros(*shape, dtype=dtype, requires_grad=requires_grad,
                               device=device, size=size))


@_torch_keywords
def empty_like(input, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """An uninitialised tensor shaped like `t` (here: zeros, or PyTorch's fill in
    deterministic mode). Like `torch.empty_like`."""
    return uninitialized(zeros_like(input, dtype=dtype, requires_grad=requires_grad,
                                    device=device))


def _float_like(t, dtype, fn: str) -> tuple:
    data = _like(t)
    dt = np.dtype(dtype) if dtype is not None else data.dtype
    return data.shape, dt


def _draws(gen, shape: tuple, dt: np.dtype, normal: bool, fn: str):
    """Standard normal (`normal`) or uniform [0, 1) samples of dtype `dt`, as torch draws
    them: a complex dtype gets independent real and imaginary parts (each of variance 1/2
    for the normal, so E|z|^2 = 1), and an integer or bool dtype is refused, as torch's
    kernels refuse it (NotImplementedError), rather than rounded to zeros."""
    if dt.kind not in "fc":
        raise DtypeError(f"{fn}: {'normal' if normal else 'uniform'} samples are not "
                         f"implemented for {dt} (as in PyTorch); pass a floating dtype")
    draw = gen.standard_normal if normal else gen.random
    if dt.kind == "f":
        return draw(shape).astype(dt)
    re, im = draw(shape), draw(shape)
    if normal:
        re, im = re * np.sqrt(0.5), im * np.sqrt(0.5)
    return (re + 1j * im).astype(dt)


@_torch_keywords
def rand_like(input, dtype=None, requires_grad: bool = False, device=None,
              generator=None) -> Tensor:
    """Uniform [0, 1) samples in `t`'s shape and dtype."""
    shape, dt = _float_like(input, dtype, "rand_like")
    dev = _like_device(_like(input), device)
    return _make(_draws(_drawer(generator, dev), shape, dt, False, "rand_like"), requires_grad)


@_torch_keywords
def randn_like(input, dtype=None, requires_grad: bool = False, device=None,
               generator=None) -> Tensor:
    """Standard normal samples in `t`'s shape and dtype."""
    shape, dt = _float_like(input, dtype, "randn_like")
    dev = _like_device(_like(input), device)
    return _make(_draws(_drawer(generator, dev), shape, dt, True, "randn_like"), requires_grad)


@_torch_keywords
def randint_like(input, low: int = 0, high: int | None = None, dtype=None, device=None,
                 generator=None) -> Tensor:
    """Integers in [low, high) in `t`'s shape (and dtype); `randint_like(t, high)` too."""
    if high is None:
        low, high = 0, low
    data = _like(input)
    return randint(low, high, data.shape, dtype=dtype or data.dtype,
                   device=_like_device(data, device), generator=generator)


@_torch_keywords
def randperm(n: int, dtype=None, requires_grad: bool = False, device=None,
             generator=None) -> Tensor:
    """A random permutation of 0 .. n-1 (int64)."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ArgumentError(f"randperm: n must be a non-negative int, got {n!r}")
    return _make(_drawer(generator, device).permutation(int(n)).astype(dtype or np.int64),
                 requires_grad)


def multinomial(input, num_samples: int, replacement: bool = False, *,
                generator=None, out=None) -> Tensor:
    """Draw `num_samples` category indices per row from the (unnormalised, non-negative)
    weights `input`, (C,) or (N, C); without replacement each index appears at most once.
    On a device the draw is made on the host (one row at a time, as here) and the indices
    moved back. `out`, an int64 tensor, receives the indices (resized), as PyTorch's."""
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"multinomial(): argument 'out' must be a Tensor, not "
                            f"{type(out).__name__}")
        if out.dtype != np.int64:
            raise RuntimeError(f"multinomial expects Long tensor out, got: {out.dtype}")
        return _into(out, multinomial(input, num_samples, replacement, generator=generator))
    data = _like(input)
    if data.dtype.kind != "f":
        raise ArgumentError(f"multinomial only supports floating-point dtypes for input, "
                            f"got: {data.dtype}")
    dev = None if data.__class__ is np.ndarray else devices.device_of(data)
    w = np.asarray(devices.host(data), dtype=np.float64)
    if w.ndim not in (1, 2):
        raise ArgumentError(f"multinomial: input must be 1-D or 2-D, got shape {w.shape}")
    if not isinstance(num_samples, (int, np.integer)) or num_samples <= 0:
        raise ArgumentError(f"multinomial: num_samples must be a positive int, got {num_samples!r}")
    rows = w.reshape(-1, w.shape[-1])
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise ArgumentError("multinomial: probabilities must be finite and non-negative")
    sums = rows.sum(1)
    if (sums <= 0).any():
        raise ArgumentError("multinomial: each row of probabilities must have a positive sum")
    if not replacement and num_samples > w.shape[-1]:
        raise ArgumentError(f"multinomial: cannot draw {num_samples} samples without "
                            f"replacement from {w.shape[-1]} categories")
    rng = _drawer(generator, None)
    out = np.empty((len(rows), num_samples), dtype=np.int64)
    for i, (r, s) in enumerate(zip(rows, sums)):
        nonzero = int((r > 0).sum())
        if replacement or num_samples <= nonzero:
            out[i] = rng.choice(len(r), size=num_samples, replace=replacement, p=r / s)
        else:  # as PyTorch: every weighted category first, then zero-weight ones at random
            out[i, :nonzero] = rng.choice(len(r), size=nonzero, replace=False, p=r / s)
            out[i, nonzero:] = rng.permutation(np.flatnonzero(r == 0))[:num_samples - nonzero]
    return _make(_moved(out.reshape(w.shape[:-1] + (num_samples,)), dev), False)
