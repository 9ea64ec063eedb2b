"""`rg.quasirandom.SobolEngine`: Sobol' low-discrepancy points, as `torch.quasirandom`.

The sequence is SciPy's (`scipy.stats.qmc.Sobol`, imported when an engine is made: the
`special` extra, or scikit-learn's), which uses the same Joe-Kuo direction numbers as
PyTorch, so unscrambled points equal PyTorch's exactly. Scrambled points are a valid
Owen-type scrambling seeded by `seed`, but not PyTorch's numbers (its scrambling draws
from its own generator).
"""

from __future__ import annotations

import warnings

import numpy as np

from .dtypes import get_default_dtype
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = ["SobolEngine"]


class SobolEngine:
    """Draws Sobol' points in [0, 1)^dimension: `draw(n)` the next n, `draw_base2(m)` the
    next 2**m (keeping the balance properties), `fast_forward(n)` skips n, `reset()`
    starts over. Points come as (n, dimension) tensors of the default float dtype."""

    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if not isinstance(dimension, (int, np.integer)) or not 1 <= dimension <= self.MAXDIM:
            raise ArgumentError(
                f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        try:
            from scipy.stats import qmc
        except ImportError as e:  # pragma: no cover
            raise ImportError("rg.quasirandom.SobolEngine needs SciPy "
                              "(pip install retrograd[special])") \
                from e
        self.dimension = int(dimension)
        self.scramble = bool(scramble)
        self.seed = seed
        self._engine = qmc.Sobol(self.dimension, scramble=self.scramble, seed=seed)
        self.num_generated = 0

    def _points(self, n: int) -> np.ndarray:
        with warnings.catch_warnings():  # (SciPy's note on non-power-of-2 counts)
            warnings.simplefilter("ignore")
            return self._engine.random(n)

    def _result(self, pts: np.ndarray, out: Tensor | None, dtype) -> Tensor:
        dt = np.dtype(get_default_dtype() if dtype is None else dtype)
        if out is not None:  # as torch: resized to the points, then filled
            if tuple(out.shape) != pts.shape:
                out.resize_(*pts.shape)
            out.data[...] = pts.astype(out.dtype)
            return out
        return Tensor._wrap(pts.astype(dt))

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next `n` points, an (n, dimension) tensor."""
        pts = self._points(int(n))
        self.num_generated += int(n)
        return self._result(pts, out, dtype)

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next 2**m points; the count drawn so far plus 2**m must be a power of 2."""
        n = 2 ** int(m)
        total = self.num_generated + n
        if total & (total - 1):
            raise ArgumentError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total}. If you still want to do this, please "
                "use 'SobolEngine.draw()' instead.")
        return self.draw(n, out, dtype)

    def reset(self) -> SobolEngine:
        """Start the sequence over (the same scrambling)."""
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip the next `n` points."""
        self._engine.fast_forward(int(n))
        self.num_generated += int(n)
        return self

    def __repr__(self) -> str:
        extra = [f"dimension={self.dimension}"]
        if self.scramble:
            extra.append("scramble=True")
        if self.seed is not None:
            extra.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(extra)})"
