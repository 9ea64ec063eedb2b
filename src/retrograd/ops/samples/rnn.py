"""Samples for the fused recurrences (`ops/fused_rnn.py`): short sequences, small batches,
weights of a size that keeps the gates away from saturation."""

from __future__ import annotations


def _lstm_scan(rng):
    cases = []
    for L, N, H in [(1, 1, 1), (3, 2, 2), (4, 1, 3)]:
        cases.append(([rng.normal(0, 0.8, (L, N, 4 * H)), rng.normal(0, 0.5, (N, H)),
                       rng.normal(0, 0.5, (N, H)), rng.normal(0, 0.6, (4 * H, H))], {}))
    return cases


SAMPLES = {"lstm_scan": _lstm_scan}
