"""Samples for the element-wise math family (`ops/math.py`): each op's inputs lie inside
its domain and away from its jumps (rounding at integers, `fmod` where x / y is whole)."""

from __future__ import annotations

import numpy as np

from . import SHAPES, _draw, _valid_pairs, binary, unary


def _between(rng, shape, lo, hi):
    return lambda: rng.uniform(lo, hi, shape)


def _off_grid(rng, shape, step=1.0, lo=-3, hi=3):
    """Values whose distance to the nearest multiple of `step` (and of step / 2) is at
    least step / 10: rounding is constant around them."""
    k = rng.integers(lo, hi, shape)
    u = rng.uniform(0.1, 0.4, shape) + rng.choice([0.0, 0.5], shape)
    return (k + u) * step


def _rounding(**attrs):
    def cases(rng):
        return [([_off_grid(rng, s)], dict(attrs)) for s in SHAPES]
    return cases


def _round(rng):
    return ([([_off_grid(rng, s)], {}) for s in SHAPES]
            + [([_off_grid(rng, (3, 4), 0.1)], {"decimals": 1}),
               ([_off_grid(rng, (3, 4), 10.0)], {"decimals": -1})])


def _nan_to_num(rng):
    return [([_draw(rng, s, "real")], {"nan": 0.0, "posinf": None, "neginf": None})
            for s in SHAPES] + [([_draw(rng, (3, 4), "real")],
                                 {"nan": 1.5, "posinf": 3.0, "neginf": -3.0})]


def _interval(lo, hi):
    return lambda rng: [([rng.uniform(lo, hi, s)], {}) for s in SHAPES]


def _quotients(rng):
    """(x, y) with y away from 0 and x / y away from whole numbers."""
    cases = []
    for a, b in _valid_pairs():
        shape = np.broadcast_shapes(a, b)
        for _ in range(500):
            x, y = rng.uniform(-4, 4, a), _draw(rng, b, "nonzero")
            q = np.broadcast_to(x, shape) / np.broadcast_to(y, shape)
            if np.min(np.abs(q - np.rint(q))) >= 0.05:
                cases.append(([x, y], {}))
                break
    return cases


def _lerp(rng):
    cases = [([_draw(rng, a, "real"), _draw(rng, b, "real"), rng.uniform(-0.5, 1.5, b)], {})
             for a, b in _valid_pairs()]
    cases.append(([_draw(rng, (3, 4), "real"), _draw(rng, (3, 4), "real"),
                   rng.uniform(-0.5, 1.5, ())], {}))
    return cases


SAMPLES = {
    "floor": _rounding(), "ceil": _rounding(), "trunc": _rounding(), "round": _round,
    "frac": _rounding(), "nan_to_num": _nan_to_num,
    "log2": unary("pos"), "log10": unary("pos"), "exp2": unary(), "expm1": unary(),
    "rsqrt": unary("pos"), "reciprocal": unary("nonzero"), "square": unary(),
    "asin": _interval(-0.9, 0.9), "acos": _interval(-0.9, 0.9), "atan": unary(),
    "sinh": unary(), "cosh": unary(), "asinh": unary(), "acosh": _interval(1.2, 3.0),
    "atanh": _interval(-0.9, 0.9),
    "erf": _interval(-3.0, 3.0), "erfc": _interval(-3.0, 3.0), "erfinv": _interval(-0.95, 0.95),
    "atan2": binary("nonzero", "nonzero"), "hypot": binary("nonzero", "nonzero"),
    "copysign": binary("nonzero", "nonzero"), "nextafter": binary("nonzero", "nonzero"),
    "logaddexp": binary(), "logaddexp2": binary(),
    "xlogy": binary("nonzero", "pos"), "lerp": _lerp,
    "binary_cross_entropy": lambda rng: [([rng.uniform(0.1, 0.9, a), rng.uniform(0, 1, b)], {})
                                         for a, b in _valid_pairs()],
    "bce_slope": lambda rng: [([rng.uniform(0.1, 0.9, a), rng.uniform(0, 1, b)], {})
                              for a, b in _valid_pairs()],
    "fmod": _quotients, "remainder": _quotients, "floor_divide": _quotients,
    "trunc_divide": _quotients,
}
