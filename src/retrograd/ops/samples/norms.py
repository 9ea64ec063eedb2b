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
        for p in (2.0, 1.5, 3.0, 0.5):
            for keepdims in (False, True):
                x = rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
                cases.append(([x], {"p": p, "axis": axis, "keepdims": keepdims}))
    return cases


SAMPLES["pnorm"] = _pnorm


def _layer_norm(rng):
    """Weight and bias optional; rows whose mean is small and large against their spread
    (the fast forward takes two routes)."""
    cases = []
    for shape, k in [((5,), 1), ((3, 4), 1), ((2, 3, 4), 2), ((2, 2, 3), 1)]:
        pshape = shape[len(shape) - k:]
        for eps in (1e-5, 0.1):
            for affine in ((True, True), (True, False), (False, False)):
                x = rng.uniform(-2, 2, shape)
                w = rng.uniform(0.5, 1.5, pshape) if affine[0] else None
                b = rng.uniform(-1, 1, pshape) if affine[1] else None
                cases.append(([x, w, b], {"axes": tuple(range(-k, 0)), "eps": eps}))
        cases.append(([rng.uniform(-1, 1, shape) + 10.0, rng.uniform(0.5, 1.5, pshape),
                       rng.uniform(-1, 1, pshape)], {"axes": tuple(range(-k, 0)), "eps": 1e-5}))
    return cases


SAMPLES["layer_norm"] = _layer_norm
