"""Samples for the normalisation family (`ops/norms.py`): groups of at least two
values (a lone value has zero variance), axes counted from the end."""

from __future__ import annotations


def _standardize(rng):
    cases = []
    for shape, axes in [((5,), (-1,)), ((3, 4), (-1,)), ((2, 3, 4), (-2, -1)),
                        ((4, 3, 2), (-3, -1)), ((2, 3, 1, 4), (-4, -2, -1))]:
        for eps in (1e-5, 0.1):
            cases.append(([rng.uniform(-2, 2, shape)], {"axes": axes, "eps": eps}))
    return cases


SAMPLES = {"standardize": _standardize}


def _pnorm(rng):
    cases = []
    for shape, axis in [((4,), None), ((3, 4), 1), ((3, 4), (0, 1)), ((2, 3, 4), (0, 2))]:
        for p in (2.0, 1.5, 3.0):
            for keepdims in (False, True):
                x = rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
                cases.append(([x], {"p": p, "axis": axis, "keepdims": keepdims}))
    return cases


SAMPLES["pnorm"] = _pnorm
