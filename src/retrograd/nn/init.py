"""`rg.nn.init`: fill parameters in place, with PyTorch's formulas and names.

Random numbers come from the global generator (`rg.manual_seed`). Each function
writes into the tensor's array without recording anything, bumps its version
counter (so a graph that saved the old values refuses to backward through
them), and returns the tensor.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .. import creation, devices, engine
from ..generator import Generator, numpy_generator
from ..primitive import ArgumentError
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "trunc_normal_", "orthogonal_", "eye_", "dirac_", "sparse_",
    "uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "sparse", "eye", "dirac",
]


def _write(tensor: Tensor, values) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
    tensor.data[...] = values
    _bump(tensor)
    return tensor


def _bump(t: Tensor) -> None:
    """Count an in-place change, as the Tensor's own in-place ops do."""
    t._cell()[0] += 1
    engine.mark_inplace()


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1  # an int, as PyTorch returns
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ArgumentError(f"negative_slope {param} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError(f"unsupported nonlinearity {nonlinearity!r}")


def _fans(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ArgumentError(f"fan in and fan out cannot be computed for a tensor with fewer than 2 "
                            f"dimensions (shape {tensor.shape})")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()  # as torch: "FAN_OUT" is accepted
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


# PyTorch's private names for the two, which model code calls to write its own init
# (`fan_in, _ = nn.init._calculate_fan_in_and_fan_out(self.weight)`).
_calculate_fan_in_and_fan_out = _fans
_calculate_correct_fan = _fan


def _rng(tensor: Tensor, generator=None):
    """The generator to draw from: `generator` (an `rg.Generator`, as torch's idiom
    `generator=torch.Generator().manual_seed(0)`, a NumPy Generator, or any object with
    its methods) when given, else the global one of the tensor's device."""
    if generator is None:
        return creation.generator(like=tensor.data)
    if isinstance(generator, Generator):
        return numpy_generator(generator, None)
    if not hasattr(generator, "normal"):
        raise TypeError(f"generator must be a random generator (e.g. numpy.random.Generator), "
                        f"got {type(generator).__name__}")
    return generator


def _check_range(a, b) -> None:
    """PyTorch's refusal of a [from, to) range that is reversed or not finite (a
    RuntimeError; NumPy would raise ValueError for the first and draw NaN for the second)."""
    for name, v in (("from", a), ("to", b)):
        if not math.isfinite(v):
            raise ArgumentError(f"uniform_(): {name} is out of bounds, got {v}")
    if a > b:
        raise ArgumentError(f"uniform_ expects to return a [from, to) range, but found "
                            f"from={a} > to={b}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from U(a, b); a reversed or infinite range is refused, as torch."""
    _check_range(a, b)
    return _write(tensor, _rng(tensor, generator).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from N(mean, std^2); a negative std is refused, as torch."""
    if std < 0:
        raise ArgumentError(f"normal expects std >= 0.0, but found std {std}")
    return _write(tensor, _rng(tensor, generator).normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with the value `val`."""
    return _write(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return _write(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return _write(tensor, 1)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b], by the inverse-CDF method (uniform in
    [cdf(a), cdf(b)], mapped back through erfinv, then clamped to [a, b]); the draws differ
    from torch's (rejection sampling since 2.10), the distribution and refusals do not."""
    from ..ops._special import erfinv

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    if tensor.is_complex():  # torch's truncation compares, which complex numbers refuse
        raise NotImplementedError(f"trunc_normal_: complex tensors are not supported, got "
                                  f"{tensor.dtype}")

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    # torch samples by rejection: from normal_(mean, std) when the mass in [a, b] is over
    # 0.3, else from uniform_(a, b), with those functions' refusals; the result depends on
    # std through its square only
    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        if std < 0:
            raise ArgumentError(f"normal expects std >= 0.0, but found std {std}")
    else:
        _check_range(a, b)
    std = abs(std)
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = devices.host(np.asarray(_rng(tensor, generator).uniform(2 * lo - 1, 2 * hi - 1,
                                                                 tensor.shape)))
    vals = erfinv(np.asarray(u, dtype=np.float64)) * (std * math.sqrt(2.0)) + mean
    vals = np.clip(vals, a, b)
    if tensor.data.__class__ is not np.ndarray:
        vals = devices.to(vals.astype(tensor.data.dtype), tensor.device)
    return _write(tensor, vals)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal, as `torch.eye`)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
    if tensor.ndim != 2:
        raise ArgumentError(f"eye_: only tensors with 2 dimensions are supported, got shape "
                            f"{tensor.shape}")
    tensor.data[...] = 0
    n = min(tensor.shape)
    idx = np.arange(n)
    tensor.data[idx, idx] = 1
    _bump(tensor)
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D convolution weight with the Dirac delta: the identity convolution
    (per group), keeping as many input channels as there are output channels."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
    if tensor.ndim not in (3, 4, 5):
        raise ArgumentError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, got "
                            f"shape {tensor.shape}")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ArgumentError(f"dirac_: dim 0 (size {sizes[0]}) must be divisible by groups "
                            f"({groups})")
    per = sizes[0] // groups
    tensor.data[...] = 0
    centre = tuple(k // 2 for k in sizes[2:])
    for g in range(groups):
        for d in range(min(per, sizes[1])):
            tensor.data[(g * per + d, d) + centre] = 1
    _bump(tensor)
    return tensor


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix from the QR decomposition of a Gaussian one;
    dimensions after the first are flattened, so rows (or columns, if fewer) are orthonormal
    times `gain`."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
    if tensor.ndim < 2:
        raise ArgumentError(f"orthogonal_: only tensors with 2 or more dimensions are supported, "
                            f"got shape {tensor.shape}")
    if tensor.data.size == 0:
        return tensor
    if tensor.is_complex():  # torch's sign correction of the QR factor refuses complex
        raise NotImplementedError(f"orthogonal_: complex tensors are not supported, got "
                                  f"{tensor.dtype}")
    rows = tensor.shape[0]
    cols = tensor.data.size // rows
    flat = np.asarray(devices.host(np.asarray(_rng(tensor, generator).normal(0.0, 1.0,
                                                                             (rows, cols)))),
                      dtype=np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    d = np.sign(np.diag(r))
    q = q * d
    if rows < cols:
        q = q.T
    vals = (gain * q).reshape(tensor.shape).astype(tensor.data.dtype)
    if tensor.data.__class__ is not np.ndarray:
        vals = devices.to(vals, tensor.device)
    return _write(tensor, vals)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill a 2-D tensor from N(0, std^2), then zero ceil(sparsity * rows) random entries in
    every column."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a Tensor, got {type(tensor).__name__}")
    if tensor.ndim != 2:
        raise ArgumentError(f"sparse_: only tensors with 2 dimensions are supported, got shape "
                            f"{tensor.shape}")
    if std < 0:
        raise ArgumentError(f"normal expects std >= 0.0, but found std {std}")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    rng = _rng(tensor, generator)
    vals = np.array(devices.host(np.asarray(rng.normal(0.0, std, (rows, cols)))),
                    dtype=tensor.data.dtype)
    for c in range(cols):
        perm = np.asarray(devices.host(np.asarray(rng.permutation(rows))))
        vals[perm[:num_zeros], c] = 0
    if tensor.data.__class__ is not np.ndarray:
        vals = devices.to(vals, tensor.device)
    return _write(tensor, vals)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan)."""
    if 0 in tensor.shape:
        return tensor
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He normal: N(0, std^2), std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def _default_layer_init(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's Linear/Conv2d init: kaiming_uniform_(a=sqrt(5)), bias U(+-1/sqrt(fan_in))."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _fans(weight)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound)



def _make_deprecate(meth):
    """The old spelling without the trailing underscore: warns (FutureWarning, as PyTorch)
    and does the same."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated spelling of `{new_name}` (warns, then calls it)."
    deprecated_init.__name__ = old_name
    deprecated_init.__qualname__ = old_name
    return deprecated_init


def _fills_arrays(fn):
    """`fn` that also fills a NumPy array in place: retrograd's `param.data` is the
    parameter's own array, and GNN code (pyGAT: `nn.init.xavier_uniform_(self.W.data,
    gain=1.414)`) initialises through it. Like a write through torch's `.data`, that is
    not counted as an in-place change of the parameter; the array is returned."""
    @functools.wraps(fn)
    def init(tensor, *args, **kwargs):
        if isinstance(tensor, np.ndarray):
            fn(Tensor._wrap(tensor), *args, **kwargs)
            return tensor
        return fn(tensor, *args, **kwargs)
    return init


uniform_, normal_, constant_, zeros_, ones_, trunc_normal_, eye_, dirac_, orthogonal_, \
    sparse_, xavier_uniform_, xavier_normal_, kaiming_uniform_, kaiming_normal_ = (
        _fills_arrays(f) for f in (
            uniform_, normal_, constant_, zeros_, ones_, trunc_normal_, eye_, dirac_,
            orthogonal_, sparse_, xavier_uniform_, xavier_normal_, kaiming_uniform_,
            kaiming_normal_))

uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
