"""Sampling grids: `grid_sample` reads an image at arbitrary points, `affine_grid` makes
the points of an affine transform (spatial transformer networks), PyTorch's names,
arguments and semantics (`rg.nn.functional` re-exports them; `rg.grid_sampler` and
`rg.affine_grid_generator` are the lower-level forms with integer modes and no
argument defaults).

`grid_sample` is the `grid_sample` op (ops/grid_sample.py), differentiable in the
image and in the grid to any order, forward and reverse; `affine_grid` is a fixed
base grid times theta transposed, a matmul.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import devices, ops
from ..engine import apply
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t
from .linalg import matmul
from .shape import reshape, transpose

__all__ = ["grid_sample", "affine_grid", "grid_sampler", "affine_grid_generator"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_DEFAULT = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.")


def _sample(x: Tensor, grid: Tensor, mode: str, padding_mode: str, align_corners: bool,
            name: str) -> Tensor:
    """Check the shapes and dtypes as PyTorch's grid sampler does, then sample."""
    if x.ndim not in (4, 5) or grid.ndim != x.ndim:
        raise RuntimeError(f"{name}: expected a 4-D input (N, C, H, W) or a 5-D input "
                           f"(N, C, D, H, W) and a grid with as many dimensions, got input of "
                           f"shape {x.shape} and grid of shape {grid.shape}")
    if x.shape[0] != grid.shape[0]:
        raise RuntimeError(f"{name}: expected grid and input to have the same batch size, got "
                           f"input of shape {x.shape} and grid of shape {grid.shape}")
    nd = x.ndim - 2
    if grid.shape[-1] != nd:
        raise RuntimeError(f"{name}: expected grid to have size {nd} in its last dimension "
                           f"for a {x.ndim}-D input, got grid of shape {grid.shape}")
    if any(s == 0 for s in x.shape[2:]):
        raise RuntimeError(f"{name}: expected input to have non-empty spatial dimensions, "
                           f"got input of shape {x.shape}")
    if mode == "bicubic" and nd == 3:
        raise RuntimeError(f"{name}: bicubic interpolation only supports 4-D input, got input "
                           f"of shape {x.shape}")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"{name}: input must be floating point, got {x.dtype}")
    if grid.dtype != x.dtype:
        raise RuntimeError(f"{name}: expected grid to have the input's dtype {x.dtype}, got "
                           f"{grid.dtype}")
    return apply(ops.grid_sample, x, grid, mode=mode, padding_mode=padding_mode,
                 align_corners=bool(align_corners))


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample input (N, C, H, W) at the points grid (N, Ho, Wo, 2), or (N, C, D, H, W) at
    (N, Do, Ho, Wo, 3), giving (N, C, Ho, Wo) or (N, C, Do, Ho, Wo).

    Grid coordinates are (x, y[, z]) normalised to [-1, 1]: with align_corners=False
    (the default, with PyTorch's warning when left None) -1 and 1 are the outer edges of
    the corner pixels, with True their centres. mode: 'bilinear' (trilinear in 3-D),
    'nearest' (halves round to even) or 'bicubic' (4-D only); padding_mode for points
    outside: 'zeros', 'border' (the nearest edge pixel) or 'reflection' (mirrored at the
    borders). Differentiable in input and grid; the grid gradient of 'nearest' is zero.
    A grid coordinate that is not finite gives NaN.
    """
    if mode not in _MODES:
        raise ArgumentError(f"grid_sample: expected mode to be 'bilinear', 'nearest' or "
                            f"'bicubic', got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise ArgumentError(f"grid_sample: expected padding_mode to be 'zeros', 'border' or "
                            f"'reflection', got {padding_mode!r}")
    if align_corners is None:
        warnings.warn(_DEFAULT, UserWarning, stacklevel=2)
        align_corners = False
    return _sample(_t(input), _t(grid), mode, padding_mode, align_corners, "grid_sample")


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """`grid_sample` with integer modes, as `torch.grid_sampler`: interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection."""
    if interpolation_mode not in (0, 1, 2) or isinstance(interpolation_mode, bool):
        raise RuntimeError(f"grid_sampler: interpolation_mode must be 0 (bilinear), 1 "
                           f"(nearest) or 2 (bicubic), got {interpolation_mode!r}")
    if padding_mode not in (0, 1, 2) or isinstance(padding_mode, bool):
        raise RuntimeError(f"grid_sampler: padding_mode must be 0 (zeros), 1 (border) or 2 "
                           f"(reflection), got {padding_mode!r}")
    return _sample(_t(input), _t(grid), _MODES[int(interpolation_mode)],
                   _PADDINGS[int(padding_mode)], bool(align_corners), "grid_sampler")


# ---------------------------------------------------------------- affine grids

def _steps(n: int, align_corners: bool, dtype) -> np.ndarray:
    """n points from -1 to 1 as PyTorch's affine grid computes them, in `dtype`: its
    linspace (start + step * i for the first half, end - step * (n - 1 - i) for the rest),
    scaled by (n - 1) / n without align_corners; one point: 0."""
    dt = np.dtype(dtype).type
    if n <= 1:
        return np.zeros(max(n, 0), dtype)
    step = (dt(1) - dt(-1)) / dt(n - 1)
    i = np.arange(n)
    r = np.where(i < n // 2, dt(-1) + step * i.astype(dtype),
                 dt(1) - step * (n - 1 - i).astype(dtype)).astype(dtype)
    if not align_corners:
        r = r * dt(n - 1) / dt(n)
    return r


def _base_grid(spatial, align_corners: bool, dtype) -> np.ndarray:
    """(prod spatial, k + 1) rows (x, y[, z], 1), x varying fastest."""
    axes = [_steps(n, align_corners, dtype) for n in spatial]  # z?, y, x
    mesh = np.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(int(np.prod(spatial)), dtype)]
    return np.stack(cols, -1).astype(dtype, copy=False)


def affine_grid_generator(theta, size, align_corners: bool) -> Tensor:
    """The sampling grid of affine maps theta (N, 2, 3) or (N, 3, 4) for an output of
    `size` (N, C, H, W) or (N, C, D, H, W), as `torch.affine_grid_generator`: base grid
    points (x, y[, z], 1) times theta transposed, giving (N, H, W, 2) or (N, D, H, W, 3)."""
    t = _t(theta)
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise RuntimeError(f"affine_grid_generator: size must have 4 (spatial) or 5 "
                           f"(volumetric) entries, got {size}")
    nd = len(size) - 2
    if t.ndim != 3 or t.shape[1:] != (nd, nd + 1) or t.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid_generator: expected theta of shape ({size[0]}, {nd}, "
                           f"{nd + 1}) for size {size}, got {t.shape}")
    if t.dtype.kind != "f":
        raise RuntimeError(f"affine_grid_generator: theta must be floating point, got "
                           f"{t.dtype}")
    spatial = size[2:]
    base = devices.like(_base_grid(spatial, bool(align_corners), t.dtype), t.data)
    grid = matmul(Tensor(base), transpose(t, 1, 2))  # (N, prod spatial, nd)
    return reshape(grid, (size[0],) + spatial + (nd,))


def affine_grid(theta, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of a batch of affine maps theta
    (N, 2, 3) or (N, 3, 4), for `grid_sample` into an output of `size` (N, C, H, W) or
    (N, C, D, H, W); align_corners as in `grid_sample` (None: False, with PyTorch's
    warning). Differentiable in theta."""
    t = _t(theta)
    if align_corners is None:
        warnings.warn(_DEFAULT, UserWarning, stacklevel=2)
        align_corners = False
    if t.dtype.kind != "f":
        raise ArgumentError(f"affine_grid: expected theta to have a floating point dtype, got "
                            f"{t.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if t.ndim != 3 or t.shape[-2:] != (2, 3):
            raise ArgumentError(f"affine_grid: expected a batch of 2-D affine matrices of shape "
                                f"(N, 2, 3) for size {size}, got theta of shape {t.shape}")
    elif len(size) == 5:
        if t.ndim != 3 or t.shape[-2:] != (3, 4):
            raise ArgumentError(f"affine_grid: expected a batch of 3-D affine matrices of shape "
                                f"(N, 3, 4) for size {size}, got theta of shape {t.shape}")
    else:
        raise NotImplementedError(f"affine_grid: only 4-D and 5-D sizes are supported, for 2-D "
                                  f"and 3-D affine maps, got size {size}")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ArgumentError(f"affine_grid: expected a positive output size, got {size}")
    return affine_grid_generator(t, size, align_corners)
