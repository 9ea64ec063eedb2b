"""Random draws PyTorch's way: `rg.normal`, `rg.bernoulli`, `rg.poisson`, the in-place
fills (`x.normal_()`, `x.uniform_(a, b)`, `x.bernoulli_(p)`, `exponential_`,
`geometric_`, `cauchy_`, `log_normal_`, `random_`, and `fill_diagonal_`), and the
state of the global generator (`rg.seed`, `rg.initial_seed`, `rg.get_rng_state`,
`rg.set_rng_state`).

Draws come from the host generator behind `rg.rand` (`creation.generator`, which
refuses inside rg.jit and vmap), so `rg.manual_seed` makes them reproducible; a
`generator=` argument may be an `rg.Generator` or a `numpy.random.Generator`. A device
tensor's values are drawn on the host and copied over. A fill writes through
`copy_`, so it is an in-place op like any other (version counter, the error for a
leaf that requires grad, recorded with a zero gradient for the old values). As in
PyTorch, a sample depends on its parameters with a zero gradient (these draws are
not reparameterised; `rg.distributions`' `rsample` is): the result of `rg.normal`
of a mean that requires grad requires grad too, and its gradient is zero.
`get_rng_state` and `set_rng_state` cover the host generator (as `torch`'s cover the
CPU's); `manual_seed` reseeds the devices' generators as well.
"""

from __future__ import annotations

import json
import operator

import numpy as np

from .. import creation, devices
from ..dtypes import get_default_dtype
from ..generator import numpy_generator
from ..grad_mode import state
from ..layouts import check_keywords
from ..tensor import Tensor
from ._errors import ArgumentError, DtypeError, ShapeError
from .elementwise import where
from .inplace import check_target

__all__ = ["normal", "bernoulli", "poisson", "seed", "initial_seed", "get_rng_state",
           "set_rng_state"]

_REAL = (int, float, np.integer, np.floating)


def _rng(generator) -> np.random.Generator:
    return numpy_generator(generator, creation.generator)


def _number(fn: str, name: str, v) -> float:
    if isinstance(v, Tensor) and v.ndim == 0:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, _REAL):
        raise TypeError(f"{fn}: '{name}' must be a number, got {v!r}")
    return float(v)


def _kind(self: Tensor, fn: str, kinds: str, what: str, empty_ok: bool = False) -> None:
    """Refuse a dtype `fn` does not sample (PyTorch lets some fill an empty tensor of any
    dtype: `empty_ok`)."""
    if self.data.dtype.kind not in kinds and not (empty_ok and self.data.size == 0):
        raise DtypeError(f"{fn}: not implemented for {self.dtype} tensors ({what})")


def _fill(self: Tensor, values) -> Tensor:
    """Write host `values` (of self's shape) into self, through the in-place machinery."""
    arr = np.asarray(values)
    return self.copy_(Tensor._wrap(arr.astype(self.data.dtype, copy=False)))


# ---------------------------------------------------------------- in-place fills

def normal_(self, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Fill with samples of the normal distribution N(mean, std**2) (for a complex
    tensor the real and imaginary parts each have variance std**2 / 2, as in PyTorch).
    Like `torch.Tensor.normal_`."""
    mean, std = _number("normal_()", "mean", mean), _number("normal_()", "std", std)
    _kind(self, "normal_()", "fc", "a floating or complex dtype is needed", empty_ok=True)
    if not std >= 0:
        raise ArgumentError(f"normal_(): std must be >= 0, got {std}")
    check_target(self, "normal_()")
    g = _rng(generator)
    if self.data.dtype.kind == "c":
        s = std / np.sqrt(2.0)
        return _fill(self, g.normal(mean, s, self.shape) + 1j * g.normal(mean, s, self.shape))
    return _fill(self, g.normal(mean, std, self.shape))


def _from(fn: str, from_, kwargs: dict, default):
    """PyTorch's argument `from` (a keyword Python cannot spell): `from_`, or
    `**{"from": v}`."""
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"{fn}() got unexpected keyword argument(s) {', '.join(kwargs)}")
    return default if from_ is None else from_


def uniform_(self, from_=None, to=1.0, *, generator=None, **kwargs) -> Tensor:
    """Fill with samples of the uniform distribution on [from, to) (for a complex tensor,
    its real and imaginary parts each). Like `torch.Tensor.uniform_(from=0, to=1)`."""
    lo = _number("uniform_()", "from", _from("uniform_", from_, kwargs, 0.0))
    hi = _number("uniform_()", "to", to)
    _kind(self, "uniform_()", "fc", "a floating or complex dtype is needed")
    if not lo <= hi:
        raise ArgumentError(f"uniform_(): expects a [from, to) range, but got from={lo} > "
                            f"to={hi}")
    check_target(self, "uniform_()")
    g = _rng(generator)
    dt = self.data.dtype
    part = np.dtype(f"f{dt.itemsize // 2}") if dt.kind == "c" else dt

    def draw():
        v = (lo + (hi - lo) * g.random(self.shape)).astype(part)
        if lo < hi:  # rounding to the tensor's precision may reach `to`: keep it out
            np.minimum(v, np.nextafter(part.type(hi), part.type(lo)), out=v)
        return v

    return _fill(self, draw() + 1j * draw() if dt.kind == "c" else draw())


def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 draws that are 1 with probability `p` (a number, or a floating tensor
    that broadcasts to self's shape), in self's dtype. Like `torch.Tensor.bernoulli_`."""
    _kind(self, "bernoulli_()", "biuf", "a real dtype is needed", empty_ok=True)
    probs = _probabilities("bernoulli_()", p, self.shape)
    check_target(self, "bernoulli_()")
    return _fill(self, _rng(generator).random(self.shape) < probs)


def _probabilities(fn: str, p, shape: tuple):
    """`p` checked to lie in [0, 1]: a float, or a host array broadcast to `shape`."""
    if isinstance(p, Tensor):
        if p.data.dtype.kind != "f":
            raise DtypeError(f"{fn}: p must be a floating tensor, got {p.dtype}")
        if not _broadcasts(p.shape, shape) or np.broadcast_shapes(p.shape, shape) != shape:
            raise ShapeError(f"{fn}: p of shape {p.shape} does not broadcast to the tensor's "
                             f"shape {shape}")
        vals = devices.host(p.data)
        if vals.size and not ((vals >= 0) & (vals <= 1)).all():
            raise ArgumentError(f"{fn}: every p must be in [0, 1], got values from "
                                f"{vals.min()} to {vals.max()}")
        return np.broadcast_to(vals, shape)
    q = _number(fn, "p", p)
    if not 0 <= q <= 1:
        raise ArgumentError(f"{fn}: p must be in [0, 1], got {q}")
    return q


def _broadcasts(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def exponential_(self, lambd=1.0, *, generator=None) -> Tensor:
    """Fill with samples of the exponential distribution of rate `lambd` (mean 1/lambd).
    Like `torch.Tensor.exponential_`."""
    lam = _number("exponential_()", "lambd", lambd)
    _kind(self, "exponential_()", "f", "the exponential distribution is continuous: a "
          "floating dtype is needed", empty_ok=True)
    if not lam > 0:
        raise ArgumentError(f"exponential_(): lambd must be > 0, got {lam}")
    check_target(self, "exponential_()")
    return _fill(self, _rng(generator).exponential(1.0 / lam, self.shape))


def geometric_(self, p, *, generator=None) -> Tensor:
    """Fill with samples of the geometric distribution: the number of Bernoulli(p) trials
    up to and including the first success (1, 2, ...). Like `torch.Tensor.geometric_`."""
    q = _number("geometric_()", "p", p)
    _kind(self, "geometric_()", "iuf", "an integer or floating dtype is needed", empty_ok=True)
    if not 0 < q < 1:
        raise ArgumentError(f"geometric_(): p must be in (0, 1), got {q}")
    check_target(self, "geometric_()")
    return _fill(self, _rng(generator).geometric(q, self.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fill with samples of the Cauchy distribution of location `median` and scale
    `sigma`. Like `torch.Tensor.cauchy_`."""
    m, s = _number("cauchy_()", "median", median), _number("cauchy_()", "sigma", sigma)
    _kind(self, "cauchy_()", "f", "the Cauchy distribution is continuous: a floating dtype "
          "is needed")
    if not s > 0:
        raise ArgumentError(f"cauchy_(): sigma must be > 0, got {s}")
    check_target(self, "cauchy_()")
    return _fill(self, m + s * _rng(generator).standard_cauchy(self.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fill with samples of the log-normal distribution: exp of N(mean, std**2). Like
    `torch.Tensor.log_normal_`."""
    m, s = _number("log_normal_()", "mean", mean), _number("log_normal_()", "std", std)
    _kind(self, "log_normal_()", "f", "a floating dtype is needed", empty_ok=True)
    if not s > 0:
        raise ArgumentError(f"log_normal_(): std must be > 0, got {s}")
    check_target(self, "log_normal_()")
    return _fill(self, _rng(generator).lognormal(m, s, self.shape))


def _top(dt: np.dtype) -> int:
    """The largest value `random_()` draws for dtype `dt` (inclusive): the dtype's maximum
    for integers, 2**mantissa bits for floats (every integer below it is exact)."""
    if dt.kind == "b":
        return 1
    if dt.kind == "f":
        return 2 ** (np.finfo(dt).nmant + 1)
    return int(np.iinfo(dt).max)


def random_(self, *args, generator=None, **kwargs) -> Tensor:
    """`random_(from=0, to=None)` or `random_(to)`: fill with integers drawn uniformly
    from [from, to - 1] (to=None: up to the dtype's maximum, 2**mantissa for floats).
    Like `torch.Tensor.random_`."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments, got {len(args)}")
    to_given = "to" in kwargs
    to = kwargs.pop("to", None)
    lo = _from("random_", None, kwargs, None)
    if len(args) == 2:
        lo, to = args
    elif len(args) == 1 and lo is None and not to_given:
        lo, to = 0, args[0]  # random_(to)
    elif len(args) == 1:
        lo = args[0]
    lo = 0 if lo is None else lo
    for name, v in (("from", lo), ("to", to)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"random_(): '{name}' must be an int, got {v!r}")
    dt = self.data.dtype
    _kind(self, "random_()", "biuf", "a real dtype is needed", empty_ok=True)
    if dt.kind == "c":  # an empty complex tensor: nothing to fill, as in PyTorch
        return _fill(self, np.zeros(self.shape, dt))
    top = int(to) - 1 if to is not None else _top(dt)
    if to is not None and not lo < to:
        raise ArgumentError(f"random_(): expects 'from' to be less than 'to', but got "
                            f"from={lo} >= to={to}")
    if dt.kind in "biu":
        info = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
        for name, v in (("from", lo), ("to - 1", top)):
            if not info[0] <= v <= info[1]:
                raise ArgumentError(f"random_(): {name} = {v} is out of bounds for {dt}")
    check_target(self, "random_()")
    g = _rng(generator)
    wide = np.uint64 if top > np.iinfo(np.int64).max else np.int64
    return _fill(self, g.integers(int(lo), top, size=self.shape, dtype=wide, endpoint=True))


def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
    """Write `fill_value` on the main diagonal: positions (i, i) of a matrix (with `wrap`,
    a tall matrix's diagonal starts again every columns + 1 rows), or (i, i, ..., i) of a
    tensor whose dimensions are all equal. Like `torch.Tensor.fill_diagonal_`."""
    if isinstance(fill_value, Tensor):
        if fill_value.ndim:
            raise ShapeError(f"fill_diagonal_(): fill_value must be a number or a 0-d tensor, "
                             f"got shape {fill_value.shape}")
        fill_value = fill_value.item()
    n = self.ndim
    if n < 2:
        raise ShapeError(f"fill_diagonal_(): the tensor must have at least 2 dimensions, got "
                         f"shape {self.shape}")
    if n > 2 and len(set(self.shape)) != 1:
        raise ShapeError(f"fill_diagonal_(): all dimensions of a tensor of more than 2 "
                         f"dimensions must be equal, got shape {self.shape}")
    if n == 2:
        rows, cols = self.shape
        last = rows * cols if wrap and rows > cols + 1 else min(rows, cols) * cols
        flat = np.arange(0, last, cols + 1)
        idx = (flat // cols, flat % cols) if cols else (flat, flat)
    else:
        idx = (np.arange(self.shape[0]),) * n
    self[idx] = fill_value
    return self


# ---------------------------------------------------------------- sampling functions

def _zero_gradient(sample: Tensor, *params) -> Tensor:
    """`sample`, recorded as depending on the params that require grad with a zero
    gradient (PyTorch's for draws that are not reparameterised)."""
    if not state.enabled:
        return sample
    keep = None
    for p in params:
        if isinstance(p, Tensor) and p.requires_grad:
            if keep is None:
                keep = creation.ones_like(sample, dtype=np.bool_)
            sample = where(keep, sample, p if p.dtype == sample.dtype else p.to(sample.dtype))
    return sample


def _on(arr: np.ndarray, ref) -> Tensor:
    """A host array as a tensor on the device of `ref`'s data."""
    if ref.__class__ is not np.ndarray:
        arr = devices.to(arr, devices.device_of(ref))
    return Tensor._wrap(arr)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None,
           device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std**2) with PyTorch's overloads: `mean` and/or `std` tensors
    (broadcast; the result has the dtype of the tensor mean, else of std), or two
    numbers and a `size`. A result from tensors that require grad requires grad, with a
    zero gradient. Like `torch.normal`: `rg.normal(0.0, 1.0, size=(2, 3))`."""
    check_keywords("normal", layout, None, pin_memory)  # rg.strided only, as torch's dense
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not m_t and not s_t:
        m, s = _number("normal()", "mean", mean), _number("normal()", "std", std)
        if size is None:
            raise TypeError("normal(): with a number mean and std, give the size: "
                            "rg.normal(0.0, 1.0, size=(2, 3))")
        if not s >= 0:
            raise ArgumentError(f"normal(): std must be >= 0, got {s}")
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        dt = get_default_dtype() if dtype is None else np.dtype(dtype)
        if dt.kind != "f":
            raise DtypeError(f"normal(): dtype must be floating, got {dt}")
        out = creation.zeros(*shape, dtype=dt, device=device)
        normal_(out, m, s, generator=generator)
        return out.requires_grad_(True) if requires_grad else out
    if size is not None:
        raise TypeError("normal(): 'size' is only taken with a number mean and std; a tensor "
                        "mean or std gives the shape")
    ref = mean if m_t else std
    if ref.data.dtype.kind != "f":
        raise DtypeError(f"normal(): not implemented for {ref.dtype} tensors (the result has "
                         f"the dtype of the tensor {'mean' if m_t else 'std'})")
    shapes = [x.shape for x in (mean, std) if isinstance(x, Tensor)]
    if len(shapes) == 2 and not _broadcasts(*shapes):
        raise ShapeError(f"normal(): mean of shape {shapes[0]} and std of shape {shapes[1]} "
                         "do not broadcast")
    g = _rng(generator)
    loc = devices.host(mean.data) if m_t else _number("normal()", "mean", mean)
    if s_t:
        scale = devices.host(std.data)
        if scale.size and not (scale >= 0).all():
            raise ArgumentError("normal(): every element of std must be >= 0")
    else:
        scale = _number("normal()", "std", std)
        if not scale >= 0:
            raise ArgumentError(f"normal(): std must be >= 0, got {scale}")
    shape = np.broadcast_shapes(*shapes)
    out = _on(g.normal(loc, scale, shape).astype(ref.data.dtype), ref.data)
    return _zero_gradient(out, mean, std)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """0/1 draws in `input`'s shape and dtype: each 1 with the probability that `input`
    holds there, or with probability `p` for all when `p` is given. Like
    `torch.bernoulli` (zero gradient to `input`)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): 'input' must be a Tensor, not {type(input).__name__}")
    if input.data.dtype.kind != "f":
        raise DtypeError(f"bernoulli(): not implemented for {input.dtype} tensors (a floating "
                         "tensor of probabilities is needed)")
    if isinstance(p, Tensor):
        raise TypeError("bernoulli(): p must be a number; for a tensor of probabilities "
                        "call rg.bernoulli(p)")
    probs = _probabilities("bernoulli()", input if p is None else p, input.shape)
    g = _rng(generator)
    out = _on((g.random(input.shape) < probs).astype(input.data.dtype), input.data)
    return _zero_gradient(out, input)


def poisson(input, generator=None) -> Tensor:
    """Draws of the Poisson distribution with the rates `input` holds (non-negative), in
    its shape and dtype. Like `torch.poisson` (zero gradient to `input`)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"poisson(): 'input' must be a Tensor, not {type(input).__name__}")
    if input.data.dtype.kind != "f":
        raise DtypeError(f"poisson(): not implemented for {input.dtype} tensors (a floating "
                         "tensor of rates is needed)")
    rates = devices.host(input.data)
    if rates.size and not (rates >= 0).all():
        raise ArgumentError("poisson(): invalid rate: every rate must be non-negative (and not "
                            "NaN)")
    g = _rng(generator)
    out = _on(g.poisson(rates).astype(input.data.dtype), input.data)
    return _zero_gradient(out, input)


def _gamma_input(fn: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): 'input' must be a Tensor, not {type(input).__name__}")
    if input.data.dtype.kind != "f":
        raise DtypeError(f"{fn}(): not implemented for {input.dtype} tensors (a floating "
                         "tensor of concentrations is needed)")
    return input


def _gamma_draws(input: Tensor, generator) -> np.ndarray:
    """Host Gamma(input, 1) draws in input's dtype, underflow raised to the smallest normal
    number (as PyTorch's sampler does, so logarithms of them stay finite)."""
    dt = input.data.dtype
    raw = _rng(generator).standard_gamma(devices.host(input.data))
    return np.maximum(np.asarray(raw, dtype=dt), np.finfo(dt).tiny)


def _standard_gamma(input, generator=None) -> Tensor:
    """Gamma(input, 1) draws in input's shape and dtype, differentiable in `input` (the
    implicit-reparameterisation gradient). Like PyTorch's private `torch._standard_gamma`,
    which ports of Gamma/Beta/Dirichlet samplers call directly."""
    from ..engine import apply
    from ..ops.sampling import standard_gamma_reparam
    x = _gamma_input("_standard_gamma", input)
    raw = _on(_gamma_draws(x, generator), x.data)
    return apply(standard_gamma_reparam, x, raw, x.detach())


def _sample_dirichlet(input, generator=None) -> Tensor:
    """Dirichlet(input) draws along the last dimension, in input's shape and dtype. Like
    PyTorch's private `torch._sample_dirichlet`: no derivative (a backward raises, as
    there; `Dirichlet.rsample` is the differentiable draw)."""
    from ._no_derivative import no_derivative
    x = _gamma_input("_sample_dirichlet", input)
    g = _gamma_draws(x, generator)
    if g.ndim:
        g = g / g.sum(-1, keepdims=True)
    else:
        g = np.ones_like(g)
    return no_derivative(_on(np.asarray(g, dtype=x.data.dtype), x.data), "_sample_dirichlet",
                         (x,))


def _bernoulli_method(self, p=None, *, generator=None) -> Tensor:
    """`x.bernoulli()`: draws with the probabilities x holds; `x.bernoulli(p)`: with
    probability p, in x's shape. Like `torch.Tensor.bernoulli`."""
    return bernoulli(self, p, generator=generator)


# ---------------------------------------------------------------- generator state

def seed() -> int:
    """Seed the global generators (host and devices) with a fresh non-deterministic seed,
    and return it. Like `torch.seed`."""
    s = int(np.random.SeedSequence().entropy) & ((1 << 63) - 1)
    creation.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the host generator was made from: the last `rg.manual_seed` or
    `rg.seed`, else the random one it started with (an int of up to 128 bits). Like
    `torch.initial_seed`."""
    return int(creation._rng[0].bit_generator.seed_seq.entropy)


_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def get_rng_state() -> Tensor:
    """The host generator's state as a uint8 tensor, for `set_rng_state`: the draws after
    restoring it are the draws after taking it. Like `torch.get_rng_state`."""
    g = creation.generator()  # (refused inside rg.jit, as drawing is)
    state_ = {"seed": int(g.bit_generator.seed_seq.entropy), "state": g.bit_generator.state}
    return Tensor(np.frombuffer(json.dumps(state_).encode(), dtype=np.uint8).copy())


def set_rng_state(new_state) -> None:
    """Restore the host generator to a state from `get_rng_state` (a uint8 tensor). Like
    `torch.set_rng_state`."""
    if not isinstance(new_state, Tensor) or new_state.dtype != np.uint8:
        raise TypeError(f"set_rng_state(): new_state must be a uint8 tensor from "
                        f"rg.get_rng_state(), got "
                        f"{getattr(new_state, 'dtype', type(new_state).__name__)}")
    creation.generator()
    try:
        saved = json.loads(devices.host(new_state.data).tobytes().decode())
        name = saved["state"]["bit_generator"]
        if name not in _BIT_GENERATORS:
            raise ArgumentError(name)
        g = np.random.Generator(getattr(np.random, name)(operator.index(saved["seed"])))
        g.bit_generator.state = saved["state"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ArgumentError(f"set_rng_state(): new_state (shape {new_state.shape}) is not a "
                            f"state from rg.get_rng_state() ({type(e).__name__}: {e})") from None
    creation._rng[0] = g


_FILLS = (normal_, uniform_, bernoulli_, exponential_, geometric_, cauchy_, log_normal_,
          random_, fill_diagonal_)


def bind(cls) -> None:
    """Put the fills and `bernoulli` on `cls` (the Tensor class) as methods."""
    for f in _FILLS:
        setattr(cls, f.__name__, f)
    cls.bernoulli = _bernoulli_method
