"""Samples for the complex family (`ops/complex.py`). The generated tests feed real float64
inputs, so ops of complex data see their real special case here; `tests/test_complex.py`
checks them on complex data (through `view_as_complex` of real inputs, against finite
differences and PyTorch)."""

from __future__ import annotations

from . import SHAPES, _draw, binary, unary


def _pairs(rng):
    return [([_draw(rng, s + (2,), "real")], {}) for s in SHAPES]


SAMPLES = {
    "real": unary(), "imag": unary(), "conj": unary(), "angle": unary("nonzero"),
    "cabs": unary("nonzero"), "view_as_real": unary(), "view_as_complex": _pairs,
    "complex": binary(),
}
