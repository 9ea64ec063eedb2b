"""Samples for fused attention (`ops/fused_attention.py`): queries, keys and values of one
batch shape, causal or not, square and not (L != S), a value size apart from the key's."""

from __future__ import annotations


def _attention(rng):
    cases = []
    for batch, L, S, E, Ev in [((2, 3), 4, 4, 3, 3), ((2,), 3, 5, 2, 4), ((), 5, 3, 3, 2),
                               ((1, 2), 1, 1, 2, 2)]:
        for causal in (True, False):
            q = rng.standard_normal(batch + (L, E))
            k = rng.standard_normal(batch + (S, E))
            v = rng.standard_normal(batch + (S, Ev))
            cases.append(([q, k, v], {"scale": 0.7, "causal": causal}))
    return cases


SAMPLES = {"attention": _attention}
