"""Devices: which array library holds a tensor's data, and moving data between them.

A tensor's data is a NumPy array (device "cpu") or an array of a registered
backend: CuPy's (device "cuda:N", registered on first use by `retrograd.cuda`),
or any class following CuPy's rules, registered with `register_backend` (the
test suite's stand-in GPU). The op table is written once: its forwards call NumPy
functions, which CuPy-like arrays take over through NumPy's dispatch protocols
(`__array_ufunc__`, `__array_function__`); where a forward or rule must *create*
an array it asks `namespace_of(x)` for the right module, one dict lookup by the
array's class.

This module imports nothing of retrograd and, until a device is asked for, no
array library but NumPy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np

_ndarray = np.ndarray


_NO_INDEX = ("cpu", "meta")  # device types named without an index ("meta", not "meta:0")


class device(str):
    """A device name, `"cpu"` or `"cuda:N"`: a str (compares equal to its text) with
    PyTorch's `.type` and `.index`."""

    __slots__ = ()

    def __new__(cls, spec="cpu", index: int | None = None):
        kind, idx = parse(spec)
        if index is not None:
            idx = int(index)
        if kind not in _NO_INDEX and idx is None:
            idx = 0
        return super().__new__(cls, kind if kind in _NO_INDEX else f"{kind}:{idx}")

    @property
    def type(self) -> str:
        return self.split(":")[0]

    @property
    def index(self) -> int | None:
        return int(self.split(":")[1]) if ":" in self else None

    def __enter__(self) -> device:
        """`with rg.device("cpu"):` as PyTorch's default-device context: new tensors are made
        on the CPU already; another device is refused (creation does not read a default)."""
        if self.type != "cpu":
            raise RuntimeError(f"with device({str(self)!r}): only the CPU can be the default "
                               "device in retrograd; pass device= to the creation functions "
                               "and layers instead")
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (
            f", index={self.index})" if self.index is not None else ")")


class Backend:
    """An array library standing for one kind of device.

    `name`: the device type ("cuda"); `array_type`: its array class; `xp`: its
    NumPy-like module (`zeros`, `asarray`, `random.RandomState`,
    `lib.stride_tricks.as_strided`, ufuncs with `.at`, ...); `index_of(arr)`: the
    device number an array lives on; `to_device(host_or_device_array, index)` and
    `to_host(arr)`: the two copies.
    """

    def __init__(self, name: str, array_type: type, xp, *, index_of: Callable,
                 to_device: Callable, to_host: Callable, device_count: Callable | None = None,
                 context: Callable | None = None):
        self.name = name
        self.array_type = array_type
        self.xp = xp
        self.index_of = index_of
        self.to_device = to_device
        self.to_host = to_host
        self.device_count = device_count or (lambda: 1)
        self.context = context or (lambda index: contextlib.nullcontext())
        self.seed = None
        self.special = None      # () -> the device's scipy.special twin, if any
        self.scipy_linalg = None  # () -> the device's scipy.linalg twin, if any
        self.consts: dict = {}   # (index, dtype) -> {Python number: read-only 0-d array}
        self.rngs: dict = {}     # index -> DeviceRandom

    def device_of(self, arr) -> device:
        return device(f"{self.name}:{self.index_of(arr)}")


_BY_TYPE: dict[type, Backend] = {}
_BY_NAME: dict[str, Backend] = {}
_LOADERS: dict[str, Callable[[], Backend | None]] = {}


def register_backend(backend: Backend) -> Backend:
    """Make `backend` the one for its device type (replacing any other) and its array class."""
    old = _BY_NAME.get(backend.name)
    if old is not None:
        _BY_TYPE.pop(old.array_type, None)
    _BY_NAME[backend.name] = backend
    _BY_TYPE[backend.array_type] = backend
    return backend


def unregister_backend(name: str) -> None:
    """Forget the backend of device type `name` (a later use loads the default one again)."""
    old = _BY_NAME.pop(name, None)
    if old is not None:
        _BY_TYPE.pop(old.array_type, None)


def register_loader(name: str, loader: Callable[[], Backend | None]) -> None:
    """How to make the backend of device type `name` on first use (CuPy for "cuda")."""
    _LOADERS[name] = loader


def backend(name: str) -> Backend:
    """The registered backend of device type `name`, loaded on first use."""
    b = _BY_NAME.get(name)
    if b is None:
        loader = _LOADERS.get(name)
        b = loader() if loader is not None else None
        if b is None:
            raise RuntimeError(f"device '{name}' is not available: "
                               + _UNAVAILABLE.get(name, f"no backend registered for '{name}'"))
        if name in _pending_seeds:
            b.seed = _pending_seeds.pop(name)
        register_backend(b)
    return b


_UNAVAILABLE = {"cuda": "it needs CuPy (pip install 'retrograd[gpu]') and an NVIDIA GPU "
                        "(rg.cuda.is_available() says whether both are there)"}


def available(name: str) -> bool:
    """Whether device type `name` can be used (loads its backend; never raises)."""
    if name == "cpu":
        return True
    try:
        backend(name)
    except Exception:  # noqa: BLE001 - a missing library or driver means "not available"
        return False
    return True


def backend_of(arr) -> Backend | None:
    """The backend of a device array, or None for NumPy arrays, scalars and anything else."""
    if arr.__class__ is _ndarray:
        return None
    b = _BY_TYPE.get(arr.__class__)
    if b is None and type(arr).__module__.startswith("cupy") and hasattr(arr, "device"):
        b = backend("cuda")  # a CuPy array made by the user before retrograd loaded CuPy
        if b.array_type is not arr.__class__:
            return _BY_TYPE.get(arr.__class__)
    return b


def namespace_of(x):
    """The array module computing on `x`: NumPy, or the device's (`cupy`). For creation
    calls inside forwards and rules: `namespace_of(x).zeros(shape, dtype)`."""
    if x.__class__ is _ndarray:
        return np
    b = _BY_TYPE.get(x.__class__)
    return np if b is None else b.xp


def namespace_for(*xs):
    """`namespace_of` of the first device array among `xs` (NumPy when there is none)."""
    for x in xs:
        if x.__class__ is not _ndarray:
            b = _BY_TYPE.get(x.__class__)
            if b is not None:
                return b.xp
    return np


def is_device_array(x) -> bool:
    return x.__class__ is not _ndarray and backend_of(x) is not None


def device_of(arr) -> device:
    """The device an array (or scalar) lives on."""
    b = backend_of(arr)
    return CPU if b is None else b.device_of(arr)


def parse(spec) -> tuple[str, int | None]:
    """`"cuda:1"` -> ("cuda", 1); `"cpu"` -> ("cpu", None); also a `device`, a Tensor or
    anything with `.type`/`.index` (a torch.device)."""
    if isinstance(spec, device):
        t, _, i = spec.partition(":")
        return t, int(i) if i else None
    if hasattr(spec, "type") and hasattr(spec, "index") and not isinstance(spec, str):
        return str(spec.type), spec.index
    if isinstance(spec, int) and not isinstance(spec, bool):
        return "cuda", spec
    if not isinstance(spec, str):
        raise TypeError(f"expected a device such as 'cpu' or 'cuda:0', got {spec!r}")
    kind, sep, idx = spec.strip().partition(":")
    if not kind or (sep and not idx.isdigit()):
        raise ValueError(f"invalid device {spec!r}: expected 'cpu', 'cuda' or 'cuda:N'")
    if kind == "cpu":
        if idx not in ("", "0"):
            raise ValueError(f"invalid device {spec!r}: the CPU has no index but 0")
        return "cpu", None
    return kind, int(idx) if sep else None


CPU = device("cpu")


def to(arr, target, dtype=None):
    """`arr` on device `target` (a copy unless it is there already), cast to `dtype`."""
    kind, index = parse(target)
    src = backend_of(arr)
    if kind == "cpu":
        out = arr if src is None else src.to_host(arr)
        if not isinstance(out, _ndarray):
            out = np.asarray(out)
    else:
        b = backend(kind)
        if index is None:
            index = b.index_of(arr) if src is b else 0
        count = b.device_count()
        if not 0 <= index < count:
            raise RuntimeError(f"device '{kind}:{index}' does not exist: {count} "
                               f"{kind} device(s) found")
        if src is b and b.index_of(arr) == index:
            out = arr
        else:
            if src is not None and src is not b:
                arr = src.to_host(arr)
            out = b.to_device(arr, index)
    if dtype is not None and out.dtype != dtype:
        out = out.astype(dtype)
    return out


def host(arr) -> np.ndarray:
    """A NumPy array of `arr`'s values (a copy for device arrays; NumPy arrays as they are)."""
    if arr.__class__ is _ndarray:
        return arr
    b = backend_of(arr)
    return np.asarray(arr) if b is None else b.to_host(arr)


def as_result(out):
    """An op's result as an array: device arrays as they are, anything else through
    `np.asarray` (NumPy scalars from reductions become 0-d arrays)."""
    if out.__class__ is _ndarray or _BY_TYPE.get(out.__class__) is not None:
        return out
    if hasattr(out, "grad_fn"):  # a Tensor where an array belongs: `t.data = tensor`
        raise TypeError("an op met a tensor whose .data holds a Tensor (after `t.data = "
                        "other`): retrograd's .data is a NumPy array, so assign "
                        "`t.data = other.data` (or copy values with `t.copy_(other)`)")
    return np.asarray(out)


def like(value, ref):
    """`value` (a number or NumPy array) as an array on `ref`'s device: for constants that
    meet a device array."""
    b = backend_of(ref)
    if b is None:
        return value
    index = b.index_of(ref)
    return b.to_device(np.asarray(value), index)


def const(ref, value, dtype):
    """A cached read-only 0-d array of `value` in `dtype` on `ref`'s device (the device
    twin of the operators' table of Python-number constants)."""
    b = backend_of(ref)
    key = (b.index_of(ref), dtype)
    table = b.consts.get(key)
    if table is None:
        table = b.consts[key] = {}
    c = table.get(value)
    if c is None:
        c = b.to_device(np.array(value, dtype), key[0])
        if value:  # 0.0 and -0.0 are equal keys but different constants
            if len(table) >= 1024:
                table.clear()
            table[value] = c
    return c


def mixed_error(op_name: str, datas):
    """After an op failed: the device its host 0-d operands should move to (PyTorch lets a
    CPU scalar tensor meet a device tensor), or a clear error if arrays of more than a
    scalar live on different devices, or None (not a matter of devices). Called only on
    failure, so that the common case pays nothing for the check."""
    seen = []
    big_host = False
    for d in _arrays(datas, True):
        dev = device_of(d)
        if dev not in seen:
            seen.append(dev)
        if dev == "cpu" and d.ndim:
            big_host = True
    if len(seen) == 2 and CPU in seen and not big_host:
        return seen[1] if seen[0] == CPU else seen[0]
    seen = []
    for d in _arrays(datas):
        dev = device_of(d)
        if dev not in seen:
            seen.append(dev)
    if len(seen) > 1:
        raise RuntimeError(f"expected all tensors to be on the same device, but found at least "
                           f"two devices, {seen[0]} and {seen[1]}, in op '{op_name}'; move "
                           f"them with .to(device) first") from None


def _arrays(items, consts: bool = False):
    for d in items:
        if isinstance(d, (list, tuple)):
            yield from _arrays(d, consts)
        elif d.__class__ is _ndarray or _BY_TYPE.get(d.__class__) is not None:
            if not consts and d.__class__ is _ndarray and d.ndim == 0 \
                    and not d.flags.writeable:
                continue  # a cached constant of the operators: not the user's tensor
            yield d


# ---------------------------------------------------------------- random numbers

class DeviceRandom:
    """A device-side generator with the subset of `numpy.random.Generator`'s methods the
    library draws with (`random`, `standard_normal`, `uniform`, `normal`, `integers`,
    `permutation`), over the backend's `random.RandomState` (CuPy's legacy API, which has
    all of them)."""

    def __init__(self, b: Backend, index: int, seed):
        self._ctx = lambda: b.context(index)
        with self._ctx():
            self._rs = b.xp.random.RandomState(seed)

    def random(self, size=None, dtype=np.float64):
        with self._ctx():
            return self._rs.random_sample(size, dtype=dtype)

    def standard_normal(self, size=None, dtype=np.float64):
        with self._ctx():
            return self._rs.standard_normal(size, dtype=dtype)

    def uniform(self, low=0.0, high=1.0, size=None):
        with self._ctx():
            return self._rs.uniform(low, high, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        with self._ctx():
            return self._rs.normal(loc, scale, size)

    def integers(self, low, high=None, size=None):
        if high is None:
            low, high = 0, low
        with self._ctx():
            return self._rs.randint(low, high, size, dtype=np.int64)

    def permutation(self, n):
        with self._ctx():
            return self._rs.permutation(n)


_seed = [None]
_pending_seeds: dict = {}  # seeds given before a backend was loaded


def seed_all(seed) -> None:
    """Reseed every device's generator (made again, lazily, from `seed`)."""
    _seed[0] = seed
    _pending_seeds.clear()
    for b in _BY_NAME.values():
        b.rngs.clear()
        b.seed = None


def seed_backend(name: str, seed) -> None:
    """Reseed the generators of device type `name` only."""
    b = _BY_NAME.get(name)
    if b is not None:
        b.rngs.clear()
        b.seed = seed
    elif name in _LOADERS:
        _pending_seeds[name] = seed


def rng_for(ref) -> DeviceRandom:
    """The generator of the device `ref` (an array) lives on."""
    b = backend_of(ref)
    return _rng(b, b.index_of(ref))


def _rng(b: Backend, index: int) -> DeviceRandom:
    r = b.rngs.get(index)
    if r is None:
        seed = getattr(b, "seed", None)
        seed = _seed[0] if seed is None else seed
        if seed is not None:
            seed = (int(seed) + 1000003 * index) % 2**32
        r = b.rngs[index] = DeviceRandom(b, index, seed)
    return r


def rng_on(target) -> DeviceRandom:
    """The generator of device `target` ("cuda:0")."""
    kind, index = parse(target)
    return _rng(backend(kind), index or 0)


# ---------------------------------------------------------------- helpers for the op table

def as_strided(x, shape, strides, writeable: bool = True):
    """A strided view of `x` on its own device (CuPy's `as_strided` has no `writeable`)."""
    if x.__class__ is _ndarray:
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=writeable)
    return namespace_of(x).lib.stride_tricks.as_strided(x, shape, strides)


def const_like(value, ref):
    """A host constant (a small table a rule multiplies by) on the device of `ref`, an array
    or a Tensor; host constants stay as they are (no copy on the CPU)."""
    arr = ref.data if hasattr(ref, "grad_fn") else ref  # a Tensor's array, or the array
    if arr.__class__ is _ndarray:
        return value
    b = _BY_TYPE.get(arr.__class__)
    return value if b is None else b.to_device(np.asarray(value), b.index_of(arr))


def special_of(x):
    """`scipy.special`, or the device's twin (`cupyx.scipy.special`) for a device array."""
    b = None if x.__class__ is _ndarray else _BY_TYPE.get(x.__class__)
    if b is None or getattr(b, "special", None) is None:
        import scipy.special
        return scipy.special
    return b.special()


def linalg_of(x):
    """`scipy.linalg`, or the device's twin (`cupyx.scipy.linalg`) for a device array."""
    b = None if x.__class__ is _ndarray else _BY_TYPE.get(x.__class__)
    if b is None:
        import scipy.linalg
        return scipy.linalg
    if getattr(b, "scipy_linalg", None) is None:
        raise NotImplementedError(f"this op needs SciPy's linalg, which has no {b.name} twin")
    return b.scipy_linalg()
