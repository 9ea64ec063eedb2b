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


def _gru_scan(rng):
    cases = []
    for L, N, H in [(1, 1, 1), (3, 2, 2), (4, 1, 3)]:
        for bias in (True, False):
            cases.append(([rng.normal(0, 0.8, (L, N, 3 * H)), rng.normal(0, 0.5, (N, H)),
                           rng.normal(0, 0.6, (3 * H, H)),
                           rng.normal(0, 0.5, 3 * H) if bias else None], {}))
    return cases


def _rnn_scan(rng):
    return [([rng.normal(0, 0.8, (L, N, H)), rng.normal(0, 0.5, (N, H)),
              rng.normal(0, 0.6, (H, H))], {}) for L, N, H in [(1, 1, 1), (3, 2, 2), (4, 1, 3)]]


SAMPLES["gru_scan"] = _gru_scan
SAMPLES["rnn_tanh_scan"] = _rnn_scan
SAMPLES["rnn_relu_scan"] = _rnn_scan
