"""A stand-in GPU that follows CuPy's rules, for checking the device backend on a CPU.

`FakeArray` wraps a NumPy array and behaves as a `cupy.ndarray` does towards
NumPy: it refuses implicit conversion to a host array (`__array__` raises, so
`np.asarray(x)`, `np.array(x)` and anything built on them fail), refuses to mix
with host arrays in ufuncs, functions, indexing and assignment, and takes over
NumPy's ufuncs and functions (`__array_ufunc__`, `__array_function__`), computing
with NumPy underneath. `xp` is the matching `cupy`-like module (creation
functions, `asarray`, `asnumpy`, `random.RandomState`,
`lib.stride_tricks.as_strided`, the ufuncs with `.at`). Registered with
`retrograd.devices.register_backend` as device type "cuda", it stands in for a GPU
in `tests/test_device.py`: any NumPy call that would silently move data to the
host, or make a host array where the op should make a device one, raises here.
"""

from __future__ import annotations

import types

import numpy as np

from retrograd import devices

_nd = np.ndarray

# NumPy functions CuPy does not have (so `np.<name>(cupy_array)` raises there too).
NOT_IN_CUPY = {
    "apply_along_axis", "apply_over_axes", "piecewise", "lib.stride_tricks.sliding_window_view",
    "vectorize", "frompyfunc", "nanpercentile", "nanquantile",
}


class HostConversionError(TypeError):
    """Data would move from the stand-in device to the host (or mix with host arrays)."""


def _refuse_host(what) -> None:
    raise HostConversionError(
        f"fake device: {what} (a CuPy array refuses this; move data explicitly)")


def _unwrap(x, where: str):
    """A FakeArray's NumPy array; host arrays refused; lists, tuples and dicts recursed."""
    c = x.__class__
    if c is FakeArray:
        return x._a
    if c is _nd or isinstance(x, _nd):
        _refuse_host(f"a host numpy.ndarray of shape {x.shape} met a device array in {where}")
    if c is list or c is tuple:
        return c(_unwrap(v, where) for v in x)
    if c is dict:
        return {k: _unwrap(v, where) for k, v in x.items()}
    return x


def _wrap(x):
    """NumPy results back onto the device: arrays (and NumPy scalars, as CuPy returns 0-d
    arrays) wrapped; tuples and lists recursed."""
    c = x.__class__
    if c is _nd:
        return FakeArray(x)
    if isinstance(x, np.generic):
        return FakeArray(np.asarray(x))
    if c is tuple or c is list:
        return c(_wrap(v) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # named tuples (np.linalg results)
        return type(x)(*(_wrap(v) for v in x))
    return x


def _name(func) -> str:
    mod = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", str(func))
    if mod.startswith("numpy.lib") and "stride_tricks" in mod:
        return "lib.stride_tricks." + name
    return name


class _Device:
    def __init__(self, id: int):
        self.id = id

    def __repr__(self) -> str:
        return f"<fake device {self.id}>"


_DEVICE0 = _Device(0)


class FakeArray:
    """A device array of the stand-in GPU (see the module's docstring)."""

    __slots__ = ("_a", "__weakref__")

    def __init__(self, a: np.ndarray):
        if a.__class__ is not _nd:
            a = np.asarray(a)
        self._a = a

    # ---------------------------------------------------------------- host conversion
    def __array__(self, dtype=None, copy=None):
        _refuse_host("implicit conversion to a NumPy array is not allowed; use .get()")

    def get(self) -> np.ndarray:
        """The values on the host (the one explicit copy, as cupy.ndarray.get)."""
        return self._a.copy()

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __bool__(self) -> bool:
        return bool(self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __index__(self) -> int:
        return self._a.__index__()

    def __repr__(self) -> str:
        return "fake_array(" + repr(self._a)[6:]

    __str__ = __repr__

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __len__(self) -> int:
        return len(self._a)

    def __hash__(self):
        raise TypeError("unhashable type: 'FakeArray'")

    # ---------------------------------------------------------------- attributes
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: self._a.flags)
    device = property(lambda self: _DEVICE0)
    T = property(lambda self: FakeArray(self._a.T))
    mT = property(lambda self: FakeArray(np.swapaxes(self._a, -1, -2)))

    @property
    def base(self):
        return None if self._a.base is None else FakeArray(self._a.base)

    @property
    def real(self):
        return FakeArray(self._a.real)

    @real.setter
    def real(self, v):
        self._a.real = _unwrap(v, "real =")

    @property
    def imag(self):
        return FakeArray(self._a.imag)

    @imag.setter
    def imag(self, v):
        self._a.imag = _unwrap(v, "imag =")

    # ---------------------------------------------------------------- dispatch
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        where = f"np.{ufunc.__name__}" + ("" if method == "__call__" else "." + method)
        args = _unwrap(inputs, where)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = _unwrap(out, where)
        if "where" in kwargs:
            kwargs["where"] = _unwrap(kwargs["where"], where)
        res = getattr(ufunc, method)(*args, **kwargs)
        if method == "at":
            return None
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(res)

    def __array_function__(self, func, types_, args, kwargs):
        name = _name(func)
        if name in NOT_IN_CUPY:
            return NotImplemented
        for t in types_:
            if t is not FakeArray:
                _refuse_host(f"a host {t.__name__} met a device array in np.{name}")
        out = kwargs.get("out")
        res = func._implementation(*_unwrap(args, "np." + name),
                                   **_unwrap(kwargs, "np." + name)) \
            if hasattr(func, "_implementation") else func(*_unwrap(args, name),
                                                            **_unwrap(kwargs, name))
        if out is not None:
            return out
        return _wrap(res)

    # ---------------------------------------------------------------- indexing
    def __getitem__(self, idx):
        return _wrap(self._a[_unwrap(idx, "indexing")])

    def __setitem__(self, idx, value):
        self._a[_unwrap(idx, "indexing")] = _unwrap(value, "assignment")

    # ---------------------------------------------------------------- methods
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return FakeArray(self._a.astype(dtype, copy=copy))

    def copy(self, order="C"):
        return FakeArray(self._a.copy(order))

    def fill(self, value):
        self._a.fill(_unwrap(value, "fill"))

    def view(self, dtype=None):
        return FakeArray(self._a.view() if dtype is None else self._a.view(dtype))

    def reshape(self, *shape, order="C"):
        return FakeArray(self._a.reshape(*shape, order=order))

    def transpose(self, *axes):
        return FakeArray(self._a.transpose(*axes))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        _refuse_host("pickling a device array")


def _method(name):
    def m(self, *args, **kwargs):
        return _wrap(getattr(self._a, name)(*_unwrap(args, name), **_unwrap(kwargs, name)))
    m.__name__ = name
    return m


for _n in ("sum mean prod max min argmax argmin any all cumsum cumprod var std ravel flatten "
           "squeeze swapaxes conj conjugate nonzero clip round dot diagonal repeat take sort "
           "argsort trace ptp").split():
    setattr(FakeArray, _n, _method(_n))


def _binary(ufunc, reflected=False):
    if reflected:
        def op(self, other):
            return ufunc(other, self)
    else:
        def op(self, other):
            return ufunc(self, other)
    return op


def _inplace(ufunc):
    def op(self, other):
        ufunc(self, other, out=(self,))
        return self
    return op


for _n, _u in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
               ("truediv", np.true_divide), ("floordiv", np.floor_divide), ("mod", np.remainder),
               ("pow", np.power), ("matmul", np.matmul), ("and", np.bitwise_and),
               ("or", np.bitwise_or), ("xor", np.bitwise_xor), ("lshift", np.left_shift),
               ("rshift", np.right_shift)):
    setattr(FakeArray, f"__{_n}__", _binary(_u))
    setattr(FakeArray, f"__r{_n}__", _binary(_u, reflected=True))
    setattr(FakeArray, f"__i{_n}__", _inplace(_u))
for _n, _u in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
               ("gt", np.greater), ("ge", np.greater_equal)):
    setattr(FakeArray, f"__{_n}__", _binary(_u))
FakeArray.__neg__ = lambda self: np.negative(self)
FakeArray.__pos__ = lambda self: np.positive(self)
FakeArray.__abs__ = lambda self: np.absolute(self)
FakeArray.__invert__ = lambda self: np.invert(self)


# -------------------------------------------------------------------- the `cupy`-like module

def _host_input(x, dtype=None, copy=True):
    """A host value uploaded to the device (the explicit host-to-device copy)."""
    if isinstance(x, FakeArray):
        a = x._a
        return FakeArray(a.astype(dtype) if dtype is not None and a.dtype != dtype
                         else (a.copy() if copy else a))
    if isinstance(x, (list, tuple)) and any(isinstance(v, FakeArray) for v in x):
        return FakeArray(np.array([v._a if isinstance(v, FakeArray) else v for v in x],
                                  dtype=dtype))
    return FakeArray(np.array(x, dtype=dtype))


def _creator(fn):
    def make(*args, **kwargs):
        if "like" in kwargs:
            kwargs.pop("like")
        return _wrap(fn(*_unwrap(args, fn.__name__), **_unwrap(kwargs, fn.__name__)))
    make.__name__ = fn.__name__
    return make


def _as_strided(x, shape=None, strides=None, **_):
    if not isinstance(x, FakeArray):
        _refuse_host("as_strided of a host array on the device")
    return FakeArray(np.lib.stride_tricks.as_strided(x._a, shape, strides, writeable=True))


class _RandomState:
    """cupy.random.RandomState's methods the library uses, drawing on the host underneath."""

    def __init__(self, seed=None):
        self._rs = np.random.RandomState(seed)

    def random_sample(self, size=None, dtype=np.float64):
        return FakeArray(np.asarray(self._rs.random_sample(size)).astype(dtype))

    def standard_normal(self, size=None, dtype=np.float64):
        return FakeArray(np.asarray(self._rs.standard_normal(size)).astype(dtype))

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64):
        return FakeArray(np.asarray(self._rs.uniform(low, high, size)).astype(dtype))

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=np.float64):
        return FakeArray(np.asarray(self._rs.normal(loc, scale, size)).astype(dtype))

    def randint(self, low, high=None, size=None, dtype=np.int64):
        return FakeArray(np.asarray(self._rs.randint(low, high, size, dtype=dtype)))

    def permutation(self, n):
        if isinstance(n, FakeArray):
            return FakeArray(self._rs.permutation(n._a))
        return FakeArray(self._rs.permutation(n))


class _FakeCupy(types.ModuleType):
    """The `cupy`-like namespace: explicit creation and transfer functions; anything else
    is NumPy's function of that name, which dispatches on device arguments (and a call
    with no device argument would make a host array: the reason creation functions are
    listed here)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        f = getattr(np, name)
        if isinstance(f, types.ModuleType):
            raise AttributeError(f"fake cupy has no submodule {name}")
        return f


xp = _FakeCupy("fake_cupy")
xp.ndarray = FakeArray
for _n in ("zeros ones empty full arange eye identity linspace logspace tri indices "
           "zeros_like ones_like empty_like full_like").split():
    setattr(xp, _n, _creator(getattr(np, _n)))
xp.asarray = lambda x, dtype=None: _host_input(x, dtype, copy=False)
xp.array = lambda x, dtype=None, copy=True: _host_input(x, dtype, copy)
xp.ascontiguousarray = lambda x, dtype=None: _host_input(x, dtype, copy=False)
xp.asnumpy = lambda x: x.get() if isinstance(x, FakeArray) else np.asarray(x)
xp.random = types.SimpleNamespace(RandomState=_RandomState)
xp.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))
xp.linalg = np.linalg
xp.fft = np.fft


def _to_device(arr, index):
    if isinstance(arr, FakeArray):
        return arr.copy()
    return FakeArray(np.array(arr))


class _Kernels(types.ModuleType):
    """A device library's twin of a SciPy module (`cupyx.scipy.special`): SciPy's function
    of that name run on the arrays underneath, its results put back on the device."""

    def __init__(self, name, host):
        super().__init__(name)
        self._host = host

    def __getattr__(self, name):
        f = getattr(self._host, name)

        def kernel(*args, **kwargs):
            return _wrap(f(*_unwrap(args, name), **_unwrap(kwargs, name)))
        return kernel


def _special():
    import scipy.special
    return _Kernels("fake_cupyx.scipy.special", scipy.special)


BACKEND = devices.Backend("cuda", FakeArray, xp, index_of=lambda a: 0, to_device=_to_device,
                          to_host=lambda a: a.get())
BACKEND.special = _special


def install() -> None:
    """Make the stand-in the "cuda" device."""
    devices.register_backend(BACKEND)
    BACKEND.rngs.clear()


def uninstall() -> None:
    devices.unregister_backend("cuda")
