"""`rg.special`: PyTorch's `torch.special` names, differentiable to every order in both
modes (each op's derivative is another op of the table: `ops/special.py`).

    import retrograd as rg
    x = rg.tensor([0.5, 2.0], requires_grad=True)
    rg.special.gammaln(x).sum().backward()   # x.grad == digamma(x)

Most kernels are SciPy's (`scipy.special`), imported the first time one runs:
install the extra with `pip install 'retrograd[special]'`. `erf`, `erfc`, `erfinv`,
`ndtr`, `sinc`, `entr`, `expit`, `logit`, `xlogy`, `xlog1py`, `logsumexp`,
`softmax` and `log_softmax` need no SciPy.

Beyond PyTorch: `zeta(x, q)` is differentiable in `x` too (PyTorch raises there),
through `d^n/dx^n zeta(x, q) = sum_k (-log(k + q))^n (k + q)^-x`, summed by
Euler-Maclaurin. `gammainc`/`gammaincc` have no gradient in `a`, as in PyTorch
(NotImplementedError when one is asked for).
"""

from __future__ import annotations

import math

import numpy as np

from . import ops
from .api._args import _t
from .api._errors import DtypeError
from .api.elementwise import log1p, sigmoid, where
from .api.math import _operands, erf, erfc, erfinv, exp2, expm1, floor, remainder, round, xlogy
from .api.numeric import signbit
from .api.reductions import log_softmax as _log_softmax
from .api.reductions import logsumexp as _logsumexp
from .api.reductions import softmax as _softmax
from .dtypes import get_default_dtype
from .engine import apply, apply1
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = [
    "gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
    "erfinv", "expit", "logit", "xlogy", "xlog1py", "i0", "i0e", "i1", "i1e", "logsumexp",
    "softmax", "log_softmax", "entr", "sinc", "ndtr", "ndtri", "log_ndtr", "zeta",
    "gammainc", "gammaincc", "exp2", "expm1", "log1p", "round",
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
    "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
    "gammasgn", "gamma", "betaln", "beta", "erfcinv",
]


def _float_input(x, name: str, complex_ok: bool = False) -> Tensor:
    """A real floating tensor (integers and bool become the default float dtype); complex
    kept where `complex_ok`."""
    x = _t(x)
    kind = x.data.dtype.kind
    if kind == "c" and complex_ok:
        return x
    if kind == "c":
        raise DtypeError(f"special.{name}() is not supported for complex tensors (got "
                         f"{x.dtype})")
    return x if kind == "f" else x.to(get_default_dtype())


def _unary(opname: str, doc: str, complex_ok: bool = False):
    op = ops.OPS[opname]

    def fn(input) -> Tensor:
        return apply1(op, _float_input(input, opname, complex_ok))

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = doc
    return fn


gammaln = _unary("gammaln", "log|Gamma(x)|; its derivative is digamma.")
digamma = _unary("digamma", "d/dx log Gamma(x); its derivative is polygamma(1, x).")
psi = digamma
erfcx = _unary("erfcx", "The scaled complementary error function exp(x**2) erfc(x).")
i0 = _unary("i0", "The modified Bessel function of the first kind, order 0; i0' = i1.")
i0e = _unary("i0e", "exp(-|x|) i0(x), which does not overflow.")
i1 = _unary("i1", "The modified Bessel function of the first kind, order 1.")
i1e = _unary("i1e", "exp(-|x|) i1(x), which does not overflow.")
entr = _unary("entr", "-x log x for x > 0, 0 at 0, -inf below (the gradient -(1 + log x), "
                      "as PyTorch's).")
sinc = _unary("sinc", "sin(pi x) / (pi x), 1 at 0 (the normalised sinc, NumPy's and "
                      "PyTorch's; complex too).", complex_ok=True)
ndtr = _unary("ndtr", "The standard normal cdf; its derivative is the normal pdf.")
ndtri = _unary("ndtri", "The inverse of ndtr on (0, 1) (-inf at 0, inf at 1, nan outside).")
log_ndtr = _unary("log_ndtr", "log(ndtr(x)), accurate far into the left tail (its "
                              "gradient too).")
expit = sigmoid


def polygamma(n: int, input) -> Tensor:
    """The n-th derivative of digamma (n = 0: digamma itself)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"special.polygamma(): 'n' must be an int, got {n!r}")
    if n < 0:
        raise ArgumentError(f"special.polygamma(): 'n' must be >= 0, got {n}")
    x = _float_input(input, "polygamma")
    return apply1(ops.digamma, x) if n == 0 else apply(ops.polygamma, x, n=int(n))


def multigammaln(input, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum_{j<p} gammaln(x - j / 2). Like torch 2.13 it takes any x
    (x <= (p - 1) / 2 is no longer refused: lgamma's log|gamma| there, inf at the poles)."""
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        raise TypeError(f"special.multigammaln(): 'p' must be an int, got {p!r}")
    if p < 1:
        raise ArgumentError(f"special.multigammaln(): 'p' must be >= 1, got {p}")
    x = _float_input(input, "multigammaln")
    offsets = Tensor(-0.5 * np.arange(p, dtype=x.data.dtype))
    terms = gammaln(x.unsqueeze(-1) + offsets)
    return terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def logit(input, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)); with `eps`, x is first clamped to [eps, 1 - eps] (the gradient is
    then 0 outside that interval, as in PyTorch)."""
    x = _float_input(input, "logit")
    if eps is not None:
        if not isinstance(eps, (int, float, np.integer, np.floating)) or isinstance(eps, bool):
            raise TypeError(f"special.logit(): 'eps' must be a number or None, got {eps!r}")
        x = x.clamp(float(eps), 1.0 - float(eps))
        return x.log() - (-x).log1p()
    outside = (x < 0) | (x > 1)  # nan, with a nan gradient there, as torch's
    inner = where(outside, 0.5, x)
    return where(outside, where(outside, x, 0.5) * math.nan, inner.log() - (-inner).log1p())


def xlog1py(input, other) -> Tensor:
    """x * log1p(y), and 0 where x == 0 (unless y is NaN)."""
    return apply(ops.xlog1py, *_operands("xlog1py", input, other, floating=True))


def zeta(input, other) -> Tensor:
    """Hurwitz's zeta function sum_k (k + q)^-x of x = `input`, q = `other`; differentiable
    in both (in x beyond PyTorch, which has no such gradient)."""
    return apply(ops.zeta, *_operands("zeta", input, other, floating=True))


def gammainc(input, other) -> Tensor:
    """The regularised lower incomplete gamma function P(a, x), a = `input`, x = `other`;
    gradient in x only, as in PyTorch."""
    return apply(ops.gammainc, *_operands("gammainc", input, other, floating=True))


def gammaincc(input, other) -> Tensor:
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return apply(ops.gammaincc, *_operands("gammaincc", input, other, floating=True))


def softmax(input, dim: int, *, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (computed in `dtype` if given)."""
    x = _t(input)
    return _softmax(x if dtype is None else x.to(dtype), dim)


def log_softmax(input, dim: int, *, dtype=None) -> Tensor:
    """x - logsumexp(x) along `dim` (computed in `dtype` if given)."""
    x = _t(input)
    return _log_softmax(x if dtype is None else x.to(dtype), dim)


def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None, b=None) -> Tensor:
    """log(sum(exp(x))) over `dim` (all by default), without overflow. SciPy's `b=` weights
    the terms, log(sum(b * exp(x))), and is differentiable too; a negative weight gives NaN
    (SciPy's result without `return_sign`)."""
    if b is not None:
        input = _t(input) + _t(b).log()
    return _logsumexp(input, dim, keepdim, axis=axis, keepdims=keepdims)


# SciPy's names that HIPS autograd and JAX users reach for (`scipy.special.gamma`, `beta`,
# `betaln`, `gammasgn`, `erfcinv`), as compositions of the ops above: their derivatives,
# forward mode and higher orders come from those ops' rules.

def gammasgn(input) -> Tensor:
    """The sign of Gamma(x), as SciPy's `gammasgn`: 1 for x > 0 (and +0), -1 at -0,
    alternating on the negative half-line, NaN at the poles (negative integers) and -inf.
    Piecewise constant, so it carries no gradient."""
    x = _float_input(input, "gammasgn").detach()
    even = remainder(floor(-x), 2.0) == 0
    neg = where(even, -1.0, 1.0).to(x.dtype)
    nan = np.array(np.nan, dtype=x.data.dtype)
    out = where((x < 0) & (floor(x) != x), neg, nan)
    out = where(x > 0, np.array(1.0, dtype=x.data.dtype), out)
    return where(x == 0, where(signbit(x), -1.0, 1.0).to(x.dtype), out)


def gamma(input) -> Tensor:
    """Gamma(x) = gammasgn(x) exp(gammaln(x)); its derivative is Gamma(x) digamma(x)
    (inf at 0, NaN at the negative integers, as SciPy)."""
    x = _float_input(input, "gamma")
    return gammasgn(x) * gammaln(x).exp()


def betaln(a, b) -> Tensor:
    """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b), as SciPy's `betaln`."""
    a, b = _operands("betaln", a, b, floating=True)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def beta(a, b) -> Tensor:
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), as SciPy's `beta`."""
    a, b = _operands("beta", a, b, floating=True)
    return gammasgn(a) * gammasgn(b) * gammasgn(a + b) * betaln(a, b).exp()


def erfcinv(input) -> Tensor:
    """The inverse of erfc on [0, 2] (inf at 0, -inf at 2, NaN outside), as SciPy's
    `erfcinv`: -ndtri(x / 2) / sqrt(2), accurate for small x too."""
    x = _float_input(input, "erfcinv")
    return ndtri(x * 0.5) * (-1.0 / math.sqrt(2.0))


# PyTorch's top-level spellings of the same functions (`torch.lgamma`, `torch.igamma`, ...).
lgamma = gammaln
mvlgamma = multigammaln
igamma = gammainc
igammac = gammaincc


# ---------------------------------------------------------------- PyTorch's newer Bessel
# functions and orthogonal polynomials. PyTorch differentiates none of them; the Bessel
# functions here have their classical derivatives (to every order, see `ops/special.py`),
# `airy_ai` and the polynomials none (their results never require grad, as PyTorch's).

def _real_float(x, name: str) -> Tensor:
    """Like `_float_input`, but a complex tensor raises NotImplementedError, as PyTorch's
    kernels (which have no complex version) do."""
    x = _t(x)
    if x.data.dtype.kind == "c":
        raise NotImplementedError(f"special.{name}() is not implemented for complex tensors "
                                  f"(got {x.dtype})")
    return x if x.data.dtype.kind == "f" else x.to(get_default_dtype())


def _bessel(opname: str, doc: str, rowname: str | None = None):
    op = ops.OPS[rowname or opname]

    def fn(input) -> Tensor:
        return apply1(op, _real_float(input, opname))

    fn.__name__ = fn.__qualname__ = opname
    fn.__doc__ = doc
    return fn


bessel_j0 = _bessel("bessel_j0", "The Bessel function of the first kind, order 0 (j0' = -j1).")
bessel_j1 = _bessel("bessel_j1", "The Bessel function of the first kind, order 1 "
                                 "(j1' = j0 - j1 / x).")
bessel_y0 = _bessel("bessel_y0", "The Bessel function of the second kind, order 0 "
                                 "(y0' = -y1; -inf at 0, nan below).")
bessel_y1 = _bessel("bessel_y1", "The Bessel function of the second kind, order 1 "
                                 "(y1' = y0 - y1 / x).")
modified_bessel_i0 = _bessel("modified_bessel_i0", "The modified Bessel function of the first "
                                                   "kind, order 0 (the same as `i0`).", "i0")
modified_bessel_i1 = _bessel("modified_bessel_i1", "The modified Bessel function of the first "
                                                   "kind, order 1 (the same as `i1`).", "i1")
modified_bessel_k0 = _bessel("modified_bessel_k0", "The modified Bessel function of the "
                                                   "second kind, order 0 (k0' = -k1).")
modified_bessel_k1 = _bessel("modified_bessel_k1", "The modified Bessel function of the "
                                                   "second kind, order 1 (k1' = -k0 - k1 / x).")
scaled_modified_bessel_k0 = _bessel("scaled_modified_bessel_k0",
                                    "exp(x) k0(x), which does not underflow for large x.")
scaled_modified_bessel_k1 = _bessel("scaled_modified_bessel_k1",
                                    "exp(x) k1(x), which does not underflow for large x.")
spherical_bessel_j0 = _bessel("spherical_bessel_j0", "The spherical Bessel function of the "
                                                     "first kind, order 0: sin(x) / x.")


def airy_ai(input) -> Tensor:
    """The Airy function Ai(x). No gradient, as in PyTorch (the result never requires
    grad)."""
    return apply1(ops.OPS["airy_ai"], _real_float(input, "airy_ai").detach())


def _polynomial(kind: str, doc: str):
    name = (f"shifted_chebyshev_polynomial_{kind[8:]}" if kind.startswith("shifted_")
            else {"h": "hermite_polynomial_h", "he": "hermite_polynomial_he",
                  "l": "laguerre_polynomial_l", "p": "legendre_polynomial_p"}.get(
                      kind, f"chebyshev_polynomial_{kind}"))

    def fn(input, n) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special.{name}(): 'input' or 'n' must be a tensor, got "
                            f"{type(input).__name__} and {type(n).__name__}")
        for arg, v in (("input", input), ("n", n)):
            if isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.kind == "c"):
                raise NotImplementedError(f"special.{name}(): '{arg}' is complex; not "
                                          "implemented for complex values")
        x, deg = _operands(name, input, n, floating=True)
        x, deg = (v.detach() if isinstance(v, Tensor) else v for v in (x, deg))
        return apply(ops.OPS["orthopoly"], x, deg, kind=kind)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " `n` (a tensor or a number) is the degree, truncated to an integer; " \
        "0 for n < 0. No gradient, as in PyTorch (the result never requires grad)."
    return fn


chebyshev_polynomial_t = _polynomial("t", "The Chebyshev polynomial of the first kind T_n(x).")
chebyshev_polynomial_u = _polynomial("u", "The Chebyshev polynomial of the second kind U_n(x).")
chebyshev_polynomial_v = _polynomial("v", "The Chebyshev polynomial of the third kind V_n(x).")
chebyshev_polynomial_w = _polynomial("w", "The Chebyshev polynomial of the fourth kind W_n(x).")
shifted_chebyshev_polynomial_t = _polynomial("shifted_t", "T_n(2x - 1), the Chebyshev "
                                             "polynomial of the first kind on [0, 1].")
shifted_chebyshev_polynomial_u = _polynomial("shifted_u", "U_n(2x - 1), the Chebyshev "
                                             "polynomial of the second kind on [0, 1].")
shifted_chebyshev_polynomial_v = _polynomial("shifted_v", "V_n(2x - 1), the Chebyshev "
                                             "polynomial of the third kind on [0, 1].")
shifted_chebyshev_polynomial_w = _polynomial("shifted_w", "W_n(2x - 1), the Chebyshev "
                                             "polynomial of the fourth kind on [0, 1].")
hermite_polynomial_h = _polynomial("h", "The physicists' Hermite polynomial H_n(x).")
hermite_polynomial_he = _polynomial("he", "The probabilists' Hermite polynomial He_n(x).")
laguerre_polynomial_l = _polynomial("l", "The Laguerre polynomial L_n(x).")
legendre_polynomial_p = _polynomial("p", "The Legendre polynomial P_n(x).")
