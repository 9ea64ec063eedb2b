"""Generated from the op table: every op gives the same values and gradients whatever the
memory layout of its inputs.

Ops receive views from other ops (a transpose, a flip, a convolution's output laid out
channels-last), so each sample of `ops.samples` runs again with its arrays in other
layouts of the same values: every axis reversed in memory (negative strides), and the
first axis moved last in memory (as a channels-last image). The results must equal the
contiguous inputs' (a kernel that wrote through `reshape(-1)` of a non-contiguous array
would write into a copy and return uninitialised memory). Run in float64 with NumPy
only, and in float32 with the compiled kernels at every size.
"""

import numpy as np
import pytest

from retrograd import kernels, ops
from retrograd.engine import apply
from retrograd.ops.samples import SAMPLES
from retrograd.tensor import Tensor


def _flipped(a: np.ndarray) -> np.ndarray:
    """a's values with every axis reversed in memory (negative strides)."""
    back = (slice(None, None, -1),) * a.ndim
    return np.ascontiguousarray(a[back])[back]


def _first_last(a: np.ndarray) -> np.ndarray:
    """a's values with the first axis innermost in memory (channels-last for (N, C, ...));
    for one axis, every other element of a buffer twice as long."""
    if a.ndim == 1:
        buf = np.zeros(2 * a.size, a.dtype)
        buf[::2] = a
        return buf[::2]
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 0, -1)), -1, 0)


LAYOUTS = {"flipped": _flipped, "first-last": _first_last}


def _relaid(a, layout):
    if isinstance(a, np.ndarray) and a.ndim >= 1 and a.size > 1:
        b = LAYOUTS[layout](a)
        assert np.array_equal(b, a, equal_nan=True)
        return b
    return a


def _as_dtype(a, dtype):
    if isinstance(a, np.ndarray) and a.dtype == np.float64:
        return a.astype(dtype)
    return a


def _run(op, arrays, attrs, layout, cotangent_seed):
    """Outputs and input gradients of `op` on `arrays` relaid by `layout` (None: as they
    are), the backward seeded with a fixed random cotangent in the same layout."""
    inputs = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            t = Tensor._wrap(_relaid(a, layout) if layout else a)
            if a.dtype.kind == "f":
                t.requires_grad_(True)
            inputs.append(t)
        else:
            inputs.append(a)
    out = apply(op, *inputs, **attrs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    first = outs[0]
    grads = []
    if first.requires_grad and first.dtype.kind == "f":
        rng = np.random.default_rng(cotangent_seed)
        g = rng.uniform(-1, 1, first.shape).astype(first.dtype)
        first.backward(Tensor._wrap(_relaid(g, layout) if layout else g))
        grads = [None if not isinstance(t, Tensor) or t.grad is None else t.grad.numpy()
                 for t in inputs]
    return [o.numpy() for o in outs if isinstance(o, Tensor)], grads


def _compare(name, layout, want, got, rtol, atol):
    (wo, wg), (go, gg) = want, got
    assert len(wo) == len(go)
    for w, g in zip(wo, go):
        assert w.shape == g.shape and w.dtype == g.dtype, f"{name} ({layout}): output"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{name}: output with {layout} inputs")
    for i, (w, g) in enumerate(zip(wg, gg)):
        assert (w is None) == (g is None), f"{name} ({layout}): gradient {i}"
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{name}: gradient {i} with {layout} inputs")


def _check(name, dtype, rtol, atol):
    op = ops.OPS[name]
    rng = np.random.default_rng(0)
    checked = 0
    for k, (arrays, attrs) in enumerate(SAMPLES[name](rng)):
        arrays = [_as_dtype(a, dtype) for a in arrays]
        if not any(isinstance(a, np.ndarray) and a.ndim >= 1 and a.size > 1 for a in arrays):
            continue  # nothing to lay out otherwise
        try:
            want = _run(op, arrays, attrs, None, k)
        except Exception as e:  # the contiguous inputs refuse: so must the others
            for layout in LAYOUTS:
                with pytest.raises(type(e)):
                    _run(op, arrays, attrs, layout, k)
            continue
        for layout in LAYOUTS:
            _compare(name, layout, want, _run(op, arrays, attrs, layout, k), rtol, atol)
        checked += 1
    return checked


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_layouts_float64_numpy(name):
    with kernels.use("numpy"):
        assert _check(name, np.float64, 1e-12, 1e-12) > 0


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_layouts_float32_kernels(name):
    mode = kernels.mode() if kernels.mode() == "numba" else "numpy"
    with kernels.use(mode, min_size=0):
        assert _check(name, np.float32, 2e-6, 2e-6) > 0
