"""`rg.distributions.transforms`: PyTorch's bijections for TransformedDistribution.

Each transform maps x to y = t(x), has an inverse `t.inv`, and (where PyTorch has one)
`log_abs_det_jacobian(x, y)`, the log of |dy/dx| summed over the transform's
`event_dim` rightmost dimensions. All are compositions of differentiable ops."""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..api._args import _t
from ..api.activations import softplus
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import distribution as C

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform",
           "TanhTransform", "SoftplusTransform", "PowerTransform", "AbsTransform",
           "ComposeTransform", "SoftmaxTransform", "StickBreakingTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "CorrCholeskyTransform",
           "ReshapeTransform", "IndependentTransform", "CatTransform", "StackTransform",
           "CumulativeDistributionTransform", "identity_transform"]


def _sum_rightmost(x: Tensor, dim: int) -> Tensor:
    """The sum over the rightmost `dim` dims, as torch's: a tensor with fewer dims is
    summed whole (the Wishart's scalar natural parameter in the exp-family KL)."""
    if dim == 0:
        return x
    if x.dim() >= dim:
        return x.sum(tuple(range(-dim, 0)))
    return x.reshape(-1).sum(-1)


def _clamp01(x: Tensor) -> Tensor:
    """x kept inside (0, 1) as torch's `_clipped_sigmoid`: at least the dtype's smallest
    normal number (tiny), at most 1 - eps."""
    fi = np.finfo(x.data.dtype)
    return x.clamp(float(fi.tiny), 1 - float(fi.eps))


class Transform:
    """A differentiable map with an inverse and a log |Jacobian determinant| (torch's
    `Transform`): `domain`/`codomain` constraints, `event_dim`, `cache_size` 0 or 1 (with
    1 the last x, y pair is remembered, so inverting a draw gives back its exact x),
    `inv` (the inverse, itself a Transform) and `forward_shape`/`inverse_shape`."""

    bijective = False
    domain = C.real
    codomain = C.real

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ArgumentError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = None, None
        self._inv_ref = None

    @property
    def _cache(self) -> int:
        return self.__dict__.get("_cache_size", 0)

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ArgumentError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def sign(self):
        raise NotImplementedError(f"{type(self).__name__} has no sign")

    @property
    def inv(self) -> Transform:
        """The inverse transform (y -> x); `t.inv.inv is t`."""
        ref = self.__dict__.get("_inv_ref")
        inv = ref() if ref is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv_ref = weakref.ref(inv)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with `cache_size` (a copy when it differs)."""
        if self._cache == cache_size:
            return self
        if type(self).__init__ is Transform.__init__ or type(self) in _PARAMETERLESS:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __call__(self, x) -> Tensor:
        return self._through_cache(x, self._call, forward=True)

    def _inv_call(self, y) -> Tensor:
        return self._through_cache(y, self._inverse, forward=False)

    def _through_cache(self, v, fn, forward: bool) -> Tensor:
        """fn(v), or with `cache_size=1` the other side of the last (x, y) pair when `v` is
        that pair's own tensor (the exact inverse of a draw, as torch's cache gives)."""
        v = v if isinstance(v, Tensor) else _t(v)
        if not self._cache:
            return fn(v)
        x_old, y_old = self._cached_x_y
        if v is (x_old if forward else y_old):
            return y_old if forward else x_old
        out = fn(v)
        self._cached_x_y = (v, out) if forward else (out, v)
        return out

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no forward map")

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def log_abs_det_jacobian(self, x, y) -> Tensor:
        """log |dy/dx| at x (y = self(x))."""
        raise NotImplementedError(f"{type(self).__name__} has no log_abs_det_jacobian")

    def __eq__(self, other) -> bool:
        """Parameterless transforms of one type are equal (as in PyTorch); others only
        to themselves unless they say otherwise."""
        if self is other:
            return True
        return type(self) is type(other) and type(self) in _PARAMETERLESS

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(type(self)) if type(self) in _PARAMETERLESS else id(self)

    def forward_shape(self, shape) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        return tuple(shape)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv_ref"] = None
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    def __init__(self, base: Transform):
        super().__init__(cache_size=base._cache)
        self._inv = base

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self) -> int:
        return hash(("inv", self._inv))

    def __call__(self, x) -> Tensor:
        return self._inv._inv_call(x)

    def _inv_call(self, y) -> Tensor:
        return self._inv(y)

    def log_abs_det_jacobian(self, x, y) -> Tensor:
        return -self._inv.log_abs_det_jacobian(_t(y), _t(x))

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._inv!r})"


class _Identity(Transform):
    bijective = True
    sign = 1

    def _call(self, x):
        return x

    def _inverse(self, y):
        return y

    def log_abs_det_jacobian(self, x, y):
        return _t(x) * 0




class ExpTransform(Transform):
    """y = exp(x)."""

    codomain = C.positive
    bijective = True
    sign = 1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return _t(x)


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and bool(np.all(a.data == b.data))
    return False


class AffineTransform(Transform):
    """y = loc + scale * x (scale nonzero), over `event_dim` rightmost dimensions."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = int(event_dim)

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self):
        return C.real if self._event_dim == 0 else C.independent(C.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other) -> bool:
        return isinstance(other, AffineTransform) and _same(self.loc, other.loc) and \
            _same(self.scale, other.scale)

    __hash__ = Transform.__hash__

    @property
    def sign(self):
        s = self.scale
        if isinstance(s, (int, float)):
            return 1 if s > 0 else -1 if s < 0 else 0
        return _t(s).sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        s = self.scale
        if isinstance(s, (int, float)):
            r = x * 0 + math.log(abs(s))
        else:
            r = _t(s).abs().log()
        shape = np.broadcast_shapes(x.shape, r.shape)
        r = r.expand(*shape) if r.shape != shape else r
        return _sum_rightmost(r, self._event_dim)

    def forward_shape(self, shape):
        return np.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                   tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape


class SigmoidTransform(Transform):
    """y = sigmoid(x), kept inside (0, 1) by the dtype's tiny and eps (as torch)."""

    codomain = C.unit_interval
    bijective = True
    sign = 1

    def _call(self, x):
        return _clamp01(x.sigmoid())

    def _inverse(self, y):
        y = _clamp01(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); with cache_size=1 (as SAC-style policies use it) the inverse of a
    draw is its exact pre-image rather than atanh of a rounded value."""

    codomain = C.interval(-1.0, 1.0)
    bijective = True
    sign = 1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * ((y).log1p() - (-y).log1p())

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""

    codomain = C.positive
    bijective = True
    sign = 1

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-_t(x))


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = C.positive
    codomain = C.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    def __eq__(self, other) -> bool:
        return isinstance(other, PowerTransform) and _same(self.exponent, other.exponent)

    __hash__ = Transform.__hash__

    @property
    def sign(self):
        e = self.exponent
        if isinstance(e, (int, float)):
            return 1 if e > 0 else -1 if e < 0 else 0
        return _t(e).sign()

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        e = self.exponent
        return y ** (1.0 / e if isinstance(e, (int, float)) else _t(e).reciprocal())

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * _t(y) / _t(x)).abs().log()

    def forward_shape(self, shape):
        return np.broadcast_shapes(tuple(shape), tuple(getattr(self.exponent, "shape", ())))

    inverse_shape = forward_shape


class AbsTransform(Transform):
    """y = |x| (not bijective: the inverse gives the nonnegative root)."""

    codomain = C.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class ComposeTransform(Transform):
    """parts[-1](...parts[0](x)): applied in order; the inverse in reverse."""

    def __init__(self, parts: list, cache_size: int = 0):
        parts = list(parts)
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    @property
    def domain(self):
        if not self.parts:
            return C.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = C.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return C.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = C.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self) -> Transform:
        ref = self.__dict__.get("_inv_ref")
        inv = ref() if ref is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv_ref = weakref.ref(inv)
            inv._inv_ref = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _call(self, x):
        return self(x)

    def log_abs_det_jacobian(self, x, y):
        x = _t(x)
        if not self.parts:
            return x * 0
        xs = [x]
        for p in self.parts[:-1]:
            xs.append(p(xs[-1]))
        xs.append(_t(y))
        event_dim = self.domain.event_dim
        total = 0
        for p, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + _sum_rightmost(p.log_abs_det_jacobian(a, b),
                                           event_dim - p.domain.event_dim)
            event_dim += p.codomain.event_dim - p.domain.event_dim
        return total

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self):
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


def _ones_cumsum(n: int, dtype) -> Tensor:
    return Tensor(np.arange(1, n + 1, dtype=dtype))


def _pad_last(x: Tensor, left: int, right: int, value: float) -> Tensor:
    from ..api.shape import cat

    parts = []
    if left:
        parts.append(x[..., :1] * 0 + value)
    parts.append(x)
    if right:
        parts.append(x[..., :1] * 0 + value)
    return cat(parts, -1)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last dimension (not bijective; the inverse is log y)."""

    domain = C.real_vector
    codomain = C.simplex

    def _call(self, x):
        p = (x - x.detach().amax(-1, keepdim=True)).exp()
        return p / p.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ArgumentError("Too few dimensions on input")
        return tuple(shape)

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """R^(K-1) -> the K-simplex by stick breaking (bijective; torch's offsets, so that
    x = 0 maps to the simplex's centre)."""

    domain = C.real_vector
    codomain = C.simplex
    bijective = True

    def _call(self, x):
        n = x.shape[-1]
        offset = n + 1 - _ones_cumsum(n, x.data.dtype)
        z = _clamp01((x - offset.log()).sigmoid())  # torch's _clipped_sigmoid
        z_cumprod = (1 - z).cumprod(-1)
        return _pad_last(z, 0, 1, 1.0) * _pad_last(z_cumprod, 1, 0, 1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        n = y_crop.shape[-1]
        offset = y.shape[-1] - _ones_cumsum(n, y.data.dtype)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(np.finfo(y.data.dtype).tiny))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        from ..api.activations import logsigmoid

        x, y = _t(x), _t(y)
        n = x.shape[-1]
        x = x - (n + 1 - _ones_cumsum(n, x.data.dtype)).log()
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ArgumentError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ArgumentError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _diag_embed(d: Tensor) -> Tensor:
    from ..api.indexing import diag_embed

    return diag_embed(d)


class LowerCholeskyTransform(Transform):
    """A square matrix -> lower triangular with a positive diagonal: its strict lower
    triangle and the exp of its diagonal (not bijective onto its domain)."""

    domain = C.independent(C.real, 2)
    codomain = C.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + _diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + _diag_embed(y.diagonal(dim1=-2, dim2=-1).log())


class PositiveDefiniteTransform(Transform):
    """A square matrix -> L L^T with L = LowerCholeskyTransform()(x)."""

    domain = C.independent(C.real, 2)
    codomain = C.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        from .. import linalg

        return LowerCholeskyTransform()._inverse(linalg.cholesky(y))


def _tril_index(n: int, diag: int) -> np.ndarray:
    rows, cols = np.nonzero(np.arange(n)[None, :] < np.arange(n)[:, None] + (diag + 1))
    return rows * n + cols


def vec_to_tril_matrix(vec, diag: int = 0) -> Tensor:
    """The vector filling, row by row, the lower triangle (below diagonal `diag`) of a
    square matrix (torch.distributions.utils.vec_to_tril_matrix)."""
    vec = _t(vec)
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
         ** 0.5) / 2
    eps = float(np.finfo(np.float32).eps)
    if round(n) - n > eps:
        raise ArgumentError(f"The size of last dimension is {m} which cannot be expressed as "
                            "the lower triangular part of a square D x D matrix.")
    n = int(round(n))
    idx = _tril_index(n, diag)
    scatter = np.zeros((m, n * n), dtype=vec.data.dtype)
    scatter[np.arange(m), idx] = 1
    return (vec @ Tensor(scatter)).reshape(tuple(vec.shape[:-1]) + (n, n))


def tril_matrix_to_vec(mat, diag: int = 0) -> Tensor:
    """The lower triangle (below diagonal `diag`) of a square matrix, row by row
    (torch.distributions.utils.tril_matrix_to_vec)."""
    mat = _t(mat)
    n = mat.shape[-1]
    idx = _tril_index(n, diag)
    gather = np.zeros((n * n, len(idx)), dtype=mat.data.dtype)
    gather[idx, np.arange(len(idx))] = 1
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,)) @ Tensor(gather)


class CorrCholeskyTransform(Transform):
    """R^(D(D-1)/2) -> Cholesky factors of D x D correlation matrices (tanh, then stick
    breaking along each row, as torch)."""

    domain = C.real_vector
    codomain = C.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = float(np.finfo(x.data.dtype).eps)
        x = x.tanh().clamp(-1 + eps, 1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        n = r.shape[-1]
        r = r + Tensor(np.eye(n, dtype=x.data.dtype))
        return r * _pad_last(z1m_cumprod_sqrt[..., :-1], 1, 0, 1.0)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = _pad_last(y_cumsum[..., :-1], 1, 0, 1.0)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x, y):
        x, y = _t(x), _t(y)
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking_logdet = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ArgumentError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ArgumentError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ArgumentError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ArgumentError("Input is not square")
        n = shape[-1]
        return tuple(shape[:-2]) + (n * (n - 1) // 2,)


class ReshapeTransform(Transform):
    """Reshapes the rightmost `in_shape` dimensions to `out_shape` (same size)."""

    bijective = True
    sign = 1

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = tuple(int(s) for s in in_shape)
        self.out_shape = tuple(int(s) for s in out_shape)
        if int(np.prod(self.in_shape)) != int(np.prod(self.out_shape)):
            raise ArgumentError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return C.independent(C.real, len(self.in_shape))

    @property
    def codomain(self):
        return C.independent(C.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        from ..creation import zeros

        x = _t(x)
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return zeros(batch, dtype=x.dtype)

    def forward_shape(self, shape):
        shape = tuple(shape)
        cut = len(shape) - len(self.in_shape)
        if cut < 0 or shape[cut:] != self.in_shape:
            raise ArgumentError(f"Shape mismatch: expected {shape[max(cut, 0):]} but got "
                                f"{self.in_shape}")
        return shape[:cut] + self.out_shape

    def inverse_shape(self, shape):
        shape = tuple(shape)
        cut = len(shape) - len(self.out_shape)
        if cut < 0 or shape[cut:] != self.out_shape:
            raise ArgumentError(f"Shape mismatch: expected {shape[max(cut, 0):]} but got "
                                f"{self.out_shape}")
        return shape[:cut] + self.in_shape


class IndependentTransform(Transform):
    """`base_transform` with `reinterpreted_batch_ndims` more event dimensions (its log
    |det J| summed over them)."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    def __eq__(self, other) -> bool:
        return isinstance(other, IndependentTransform) and \
            self.base_transform == other.base_transform and \
            self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims

    __hash__ = Transform.__hash__

    @property
    def domain(self):
        return C.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return C.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ArgumentError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ArgumentError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return (f"IndependentTransform({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


class CatTransform(Transform):
    """Each of `tseq` applied to its slice (of size `lengths[i]`, default 1) along
    `dim`, the results joined along `dim`."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = [1] * len(tseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ArgumentError(f"lengths ({len(self.lengths)}) must match transforms "
                                f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return C.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return C.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def _apply(self, x, inverse: bool):
        from ..api.shape import cat

        x = _t(x)
        if x.shape[self.dim] != self.length:
            raise ArgumentError(f"CatTransform: size {x.shape[self.dim]} along dim {self.dim} "
                                f"is not the total length {self.length}")
        out, start = [], 0
        for t, n in zip(self.transforms, self.lengths):
            piece = x.narrow(self.dim, start, n)
            out.append(t.inv(piece) if inverse else t(piece))
            start += n
        return cat(out, self.dim)

    def _call(self, x):
        return self._apply(x, False)

    def _inverse(self, y):
        return self._apply(y, True)

    def log_abs_det_jacobian(self, x, y):
        from ..api.shape import cat

        x, y = _t(x), _t(y)
        terms, start = [], 0
        for t, n in zip(self.transforms, self.lengths):
            term = t.log_abs_det_jacobian(x.narrow(self.dim, start, n),
                                          y.narrow(self.dim, start, n))
            if t.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
            start += n
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        if dim < 0:
            return cat(terms, dim)
        return sum(terms[1:], terms[0])


class StackTransform(Transform):
    """Each of `tseq` applied to its index along `dim`, the results stacked."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return C.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return C.stack([t.codomain for t in self.transforms], self.dim)

    def _slices(self, z):
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _apply(self, x, inverse: bool):
        from ..api.shape import stack

        x = _t(x)
        if x.shape[self.dim] != len(self.transforms):
            raise ArgumentError(f"StackTransform: size {x.shape[self.dim]} along dim "
                                f"{self.dim} is not the number of transforms")
        return stack([t.inv(v) if inverse else t(v)
                      for v, t in zip(self._slices(x), self.transforms)], self.dim)

    def _call(self, x):
        return self._apply(x, False)

    def _inverse(self, y):
        return self._apply(y, True)

    def log_abs_det_jacobian(self, x, y):
        from ..api.shape import stack

        x, y = _t(x), _t(y)
        return stack([t.log_abs_det_jacobian(a, b) for a, b, t in
                      zip(self._slices(x), self._slices(y), self.transforms)], self.dim)


class CumulativeDistributionTransform(Transform):
    """x -> distribution.cdf(x), onto the unit interval (a copula's building block)."""

    bijective = True
    codomain = C.unit_interval
    sign = 1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size: int = 1):
        if self._cache == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


_PARAMETERLESS = (ExpTransform, SigmoidTransform, TanhTransform, SoftplusTransform,
                  AbsTransform, _Identity, SoftmaxTransform, StickBreakingTransform,
                  LowerCholeskyTransform, PositiveDefiniteTransform, CorrCholeskyTransform)

# torch's identity is the empty composition (so biject_to(real) reads as it does there)
identity_transform = ComposeTransform([])
