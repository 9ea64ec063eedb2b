"""Samples for `grid_sample` and its adjoint `grid_sample_t`: every mode and padding, 2-D
and 3-D, with points inside and outside the image placed away from the kinks (the weights
bend where a pixel coordinate is a whole number, nearest jumps half way between pixels,
and the padding folds on a border or half a pixel past it)."""

from __future__ import annotations

import numpy as np

_CASES = [  # (input shape, grid points per sample, mode, padding_mode, align_corners)
    ((2, 2, 3, 4), (2, 3), "bilinear", "zeros", False),
    ((1, 2, 3, 4), (3, 2), "bilinear", "border", True),
    ((2, 1, 4, 3), (2, 3), "bilinear", "reflection", False),
    ((1, 2, 3, 4), (2, 2), "nearest", "reflection", True),
    ((2, 2, 4, 4), (2, 3), "bicubic", "zeros", False),
    ((1, 1, 3, 4), (3, 3), "bicubic", "border", True),
    ((1, 2, 4, 3), (2, 2), "bicubic", "reflection", False),
    ((1, 2, 2, 3, 3), (2, 2, 2), "bilinear", "reflection", True),
    ((2, 1, 3, 2, 3), (1, 2, 2), "nearest", "zeros", False),
    ((2, 1, 2, 2, 3), (2, 1, 2), "bilinear", "zeros", False),
    ((2, 1, 2, 3, 4), (2, 3), "bilinear", "border", False),  # leading dimension 2
]


def _coordinates(rng, shape, size, align):
    """Normalised coordinates whose pixel positions lie 0.1 to 0.4 away from whole and
    half pixels, one to two pixels past the image on either side."""
    whole = rng.integers(-2, size + 1, shape)
    frac = rng.uniform(0.1, 0.4, shape) + 0.5 * rng.integers(0, 2, shape)
    c = whole + frac
    if align:
        return c * 2 / max(size - 1, 1) - 1
    return (2 * c + 1) / size - 1


def _cases(rng, adjoint):
    out = []
    for x_shape, points, mode, padding, align in _CASES:
        nd = len(points)
        n = x_shape[-nd - 2]
        sizes = x_shape[-nd:]
        grid = np.stack([_coordinates(rng, (n,) + points, sizes[nd - 1 - k], align)
                         for k in range(nd)], -1)
        attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
        if adjoint:
            g = rng.standard_normal(x_shape[:-nd] + points)
            out.append(([g, grid], dict(attrs, size=tuple(sizes))))
        else:
            out.append(([rng.standard_normal(x_shape), grid], attrs))
    return out


SAMPLES = {
    "grid_sample": lambda rng: _cases(rng, False),
    "grid_sample_t": lambda rng: _cases(rng, True),
}
