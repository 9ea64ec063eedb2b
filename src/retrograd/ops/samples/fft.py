"""Samples for the FFT family (`ops/fft.py`): every norm, both directions, one and two
axes, even and odd lengths. Inputs are real float64 (the generated tests' kind); complex
inputs are covered by tests/test_fft.py."""

from __future__ import annotations


def _c2c(rng):
    return [([rng.standard_normal(s)], {"axes": axes, "inverse": inv, "norm": norm})
            for s, axes in [((6,), (-1,)), ((3, 5), (-2, -1)), ((2, 3, 4), (-2,))]
            for inv in (False, True) for norm in ("backward", "ortho", "forward")][::2]


def _r2c(rng):
    return [([rng.standard_normal(s)], {"axis": axis, "norm": norm})
            for s, axis in [((6,), -1), ((5,), -1), ((4, 3), -2)]
            for norm in ("backward", "ortho", "forward")]


def _c2r(rng):
    return [([rng.standard_normal(s)], {"axis": axis, "n": n, "norm": norm})
            for s, axis, n in [((4,), -1, 6), ((4,), -1, 7), ((3, 2), -2, 4)]
            for norm in ("backward", "ortho", "forward")]


SAMPLES = {"fft_c2c": _c2c, "fft_r2c": _r2c, "fft_c2r": _c2r}
