"""Samples for CTC's forward-backward node (`ops/ctc.py`).

`ctc_loglik(emit, skip, il, tl)`: `emit` (T, N, 2S + 1) any log-scores (smooth in all of
them), `skip` built from targets with and without repeated labels, input lengths long
enough for every target (an impossible alignment has loglik -inf: no finite
differences there), some shorter than T, one of 0 frames with an empty target, and a
batch of empty targets (one extended label).
"""

from __future__ import annotations

import numpy as np


def _skip(y: np.ndarray, tl: np.ndarray, blank: int = 0) -> np.ndarray:
    """Where each extended label may be entered from two back."""
    n, s = y.shape
    y = np.where(np.arange(s) < tl[:, None], y, blank)
    ext = np.full((n, 2 * s + 1), blank)
    ext[:, 1::2] = y
    prev2 = np.full_like(ext, -1)
    prev2[:, 2:] = ext[:, :-2]
    odd = (np.arange(2 * s + 1) % 2 == 1) & (np.arange(2 * s + 1) >= 2)
    return (ext != prev2) & odd


def _ctc(rng):
    cases = []
    for y, il, tl, t_max in [
        (np.array([[1, 2, 2], [1, 1, 3], [3, 1, 1]]), np.array([6, 5, 4]),
         np.array([3, 2, 1]), 6),
        (np.array([[2, 2], [1, 2]]), np.array([0, 4]), np.array([0, 2]), 4),
        (np.zeros((2, 0), np.int64), np.array([3, 1]), np.array([0, 0]), 3),
    ]:
        emit = rng.uniform(-3.0, 0.0, (t_max, y.shape[0], 2 * y.shape[1] + 1))
        cases.append(([emit, _skip(y, tl), il, tl], {}))
    return cases


SAMPLES = {"ctc_loglik": _ctc}
