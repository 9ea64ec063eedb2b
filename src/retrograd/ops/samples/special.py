"""Samples for the special functions (`ops/special.py`): inputs inside each function's
domain, away from poles (gammaln, digamma and polygamma at 0, -1, ...) and from 0
where a Bessel or sinc derivative is a limit."""

from __future__ import annotations

from ...tensor import Tensor
from . import SHAPES, _valid_pairs


def _between(lo, hi, **attrs):
    return lambda rng: [([rng.uniform(lo, hi, s)], dict(attrs)) for s in SHAPES]


def _signed(lo, hi):
    """Values with lo <= |x| <= hi, of either sign."""
    return lambda rng: [([rng.uniform(lo, hi, s) * rng.choice([-1.0, 1.0], s)], {})
                        for s in SHAPES]


def _polygamma(rng):
    return [([rng.uniform(0.3, 4.0, s)], {"n": n}) for s in SHAPES for n in (0, 1, 2)]


def _gammaln(rng):
    cases = _between(0.3, 6.0)(rng)
    # Between the poles of the negative axis: gammaln is log|gamma|, smooth there too.
    return cases + [([rng.uniform(-2.8, -2.2, (3, 4))], {})]


def _xlog1py(rng):
    return [([rng.uniform(-2, 2, a), rng.uniform(-0.5, 2.0, b)], {}) for a, b in _valid_pairs()]


def _constant(rng, shape, lo, hi):
    """An input the generated tests hold fixed (they differentiate float64 inputs only):
    whole numbers in [lo, hi] as int64, exact in any floating dtype a rule computes in."""
    return Tensor(rng.integers(lo, hi + 1, shape))


def _pairs_with_constant():
    """Shapes (constant, differentiable); a 0-d float64 input beside a float32 one with
    dimensions would compute in float32 (PyTorch's promotion), so none of those."""
    return [(a, b) for a, b in _valid_pairs() if b != () or a == ()]


def _zeta(rng):
    """x is held fixed (PyTorch has no gradient in x); tests/test_special.py checks ours."""
    return [([_constant(rng, a, 2, 5), rng.uniform(0.5, 3.0, b)], {})
            for a, b in _pairs_with_constant()]


def _gammainc(rng):
    """a is held fixed: neither PyTorch nor retrograd differentiates in a."""
    return [([_constant(rng, a, 1, 4), rng.uniform(0.3, 4.0, b)], {})
            for a, b in _pairs_with_constant()]


SAMPLES = {
    "gammaln": _gammaln, "digamma": _between(0.3, 5.0), "polygamma": _polygamma,
    "erfcx": _between(-2.0, 3.0), "ndtr": _between(-3.0, 3.0), "ndtri": _between(0.02, 0.98),
    "log_ndtr": _between(-6.0, 3.0),
    "i0": _between(-3.0, 3.0), "i0e": _signed(0.2, 3.0), "i1": _between(-3.0, 3.0),
    "i1e": _signed(0.2, 3.0), "entr": _between(0.1, 3.0), "sinc": _signed(0.2, 2.5),
    "xlog1py": _xlog1py, "zeta": _zeta, "gammainc": _gammainc, "gammaincc": _gammainc,
    # PyTorch's float64 j0, j1, y0, y1 drift from the true values beyond |x| = 3 (a
    # relative 5e-8 at 5); SciPy's, ours, do not: the twins are compared where both agree.
    "bessel_j0": _between(-3.0, 3.0), "bessel_j1": _between(-3.0, 3.0),
    "bessel_y0": _between(0.5, 3.0), "bessel_y1": _between(0.5, 3.0),
    "modified_bessel_k0": _between(0.3, 4.0), "modified_bessel_k1": _between(0.3, 4.0),
    "scaled_modified_bessel_k0": _between(0.3, 4.0),
    "scaled_modified_bessel_k1": _between(0.3, 4.0),
    "spherical_bessel_j0": _signed(0.5, 4.0), "spherical_bessel_j1": _signed(0.5, 4.0),
}
"""x = 0 exactly (the limits of i1', i1e' and sinc') is checked in tests/test_special.py."""

