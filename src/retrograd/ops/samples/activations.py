"""Samples for the activations (`ops/activations.py`), away from each one's kinks
(0 for elu and leaky_relu, the bounds of hardtanh, +-3 for the hard ones, the
threshold of softplus and threshold)."""

from __future__ import annotations

import numpy as np

from . import SHAPES, _valid_pairs


def _away(rng, shape, lo, hi, kinks, gap=0.1):
    """Uniform values in [lo, hi] at least `gap` from every point of `kinks`."""
    x = rng.uniform(lo, hi, shape)
    for _ in range(100):
        near = np.zeros(np.shape(x), bool)
        for k in kinks:
            near |= np.abs(x - k) < gap
        if not near.any():
            return x
        x = np.where(near, rng.uniform(lo, hi, shape), x)
    raise RuntimeError("could not draw samples away from the kinks")


def _unary(lo, hi, kinks=(), variants=({},)):
    def cases(rng):
        return [([_away(rng, s, lo, hi, kinks)], dict(v)) for v in variants for s in SHAPES]
    return cases


_SELU = {"alpha": 1.6732632423543772, "scale": 1.0507009873554805, "input_scale": 1.0}


def _softplus(rng):
    out = []
    for beta, threshold in ((1.0, 20.0), (2.0, 1.5), (0.5, 0.4)):
        kink = threshold / beta
        out += [([_away(rng, s, -3, 3, (kink,))], {"beta": beta, "threshold": threshold})
                for s in SHAPES]
    return out


def _hardtanh(rng):
    out = []
    for lo, hi in ((-1.0, 1.0), (0.0, 6.0), (-0.5, 2.0)):
        out += [([_away(rng, s, lo - 2, hi + 2, (lo, hi))], {"min_val": lo, "max_val": hi})
                for s in SHAPES]
    return out


def _prelu(n_grad: int):
    """(x away from 0, w) over broadcasting pairs, after `n_grad` cotangents of their shape."""
    def cases(rng):
        out = []
        for a, b in _valid_pairs():
            x, w = _away(rng, a, -2, 2, (0.0,)), rng.uniform(-1, 1, b)
            g = rng.uniform(-1, 1, np.broadcast_shapes(a, b))
            out.append(([g] * n_grad + [x, w], {}))
        return out
    return cases


SAMPLES = {
    "gelu": _unary(-3, 3, variants=({"approximate": "none"}, {"approximate": "tanh"})),
    "silu": _unary(-4, 4), "mish": _unary(-4, 4), "logsigmoid": _unary(-4, 4),
    "softplus": _softplus,
    "elu": _unary(-3, 3, (0.0,), ({"alpha": 1.0, "scale": 1.0, "input_scale": 1.0},
                                  {"alpha": 0.7, "scale": 1.0, "input_scale": 1 / 0.7},
                                  _SELU)),
    "leaky_relu": _unary(-3, 3, (0.0,), ({"negative_slope": 0.01},
                                          {"negative_slope": 0.2})),
    "hardtanh": _hardtanh,
    "hardsigmoid": _unary(-5, 5, (-3.0, 3.0)), "hardswish": _unary(-5, 5, (-3.0, 3.0)),
    "softsign": _unary(-3, 3, (0.0,)),
    "threshold": _unary(-2, 2, (0.5,), ({"threshold": 0.5, "value": -1.0},)),
    "prelu": _prelu(0), "_prelu_gx": _prelu(1), "_prelu_gw": _prelu(1),
}
