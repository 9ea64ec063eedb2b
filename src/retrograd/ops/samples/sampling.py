"""Samples for the reparameterised gamma draw (`ops/sampling.py`).

`standard_gamma_reparam(alpha, x, alpha0)` carries x, a draw for concentration alpha0,
to concentration alpha at a fixed distribution level. Every sample has alpha0 equal to
alpha (as in `rsample`, where alpha0 is alpha detached), so its value is x; the finite
differences then move alpha, x and alpha0 apart, through the transport. Draws x lie
in the bulk and in the upper tail (x > alpha + 2 sqrt(alpha) + 2, where the derivative
switches from the series to the tail integral), for small and large concentrations.
"""

from __future__ import annotations

from . import _valid_pairs


def _reparam(rng):
    cases = []
    for a, b in _valid_pairs():
        alpha = rng.uniform(0.3, 3.0, a)
        cases.append(([alpha, rng.uniform(0.2, 8.0, b), alpha.copy()], {}))
    for lo, hi, xlo, xhi in [(0.05, 0.2, 1e-3, 4.0), (20.0, 60.0, 10.0, 90.0)]:
        alpha = rng.uniform(lo, hi, (6,))
        cases.append(([alpha, rng.uniform(xlo, xhi, (2, 6)), alpha.copy()], {}))
    return cases


SAMPLES = {"standard_gamma_reparam": _reparam}
