"""Samples for the cumulative family; cumprod's include exact zeros (one, and two in a row),
where its gradient must not divide by x."""

from __future__ import annotations

import numpy as np


def _along(rng, **attrs):
    return [([rng.uniform(-2, 2, s)], dict(attrs, axis=a)) for s, a in
            [((4,), -1), ((3, 4), -1), ((3, 4), -2), ((3, 1, 4), -3)]]


def _cumsum(rng):
    return _along(rng) + _along(rng, reverse=True)


def _cumprod(rng):
    x = rng.uniform(0.5, 1.5, (3, 5)) * rng.choice([-1.0, 1.0], (3, 5))
    x[0, 2] = 0.0
    x[1, 1] = x[1, 2] = 0.0
    x[2, 0] = 0.0
    return _along(rng) + [([x], {"axis": -1}), ([x], {"axis": -2}),
                          ([np.array([0.0, 1.5, -2.0, 0.0, 0.7])], {"axis": -1})]


SAMPLES = {"cumsum": _cumsum, "cumprod": _cumprod, "logcumsumexp": _along}
