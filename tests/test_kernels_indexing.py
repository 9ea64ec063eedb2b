"""The compiled row scatter-add behind index_add (an embedding's backward): the same
values as the NumPy path and as torch.index_add, with repeated rows, NaN/inf rows, a
non-contiguous source, float32/float64, and out-of-range indices still refused."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels
from retrograd.kernels import indexing as K
from retrograd.ops import indexing as IX


def _case(dtype, n=37, rows=9, k=5, seed=0):
    rng = np.random.default_rng(seed)
    index = rng.integers(0, rows, n)
    src = rng.standard_normal((n, k)).astype(dtype)
    src[1, 1], src[2, 2] = np.inf, np.nan
    x = rng.standard_normal((rows, k)).astype(dtype)
    return x, index, src


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("strided", [False, True])
def test_rows_added_in_order_as_numpy_and_torch(dtype, strided):
    x, index, src = _case(dtype)
    if strided:
        src = np.asfortranarray(src)
    with kernels.use("numba", min_size=0):
        got = IX._index_add(x, index, src, axis=-2)
    with kernels.use("numpy"):
        want = IX._index_add(x, index, src, axis=-2)
    ref = np.array(x)
    np.add.at(ref, index, src)  # sequential, in index order
    np.testing.assert_array_equal(got, ref)
    # the NumPy path sums each run of rows, then adds it to x: the same up to rounding
    np.testing.assert_allclose(want, ref, rtol=2e-6 if dtype == np.float32 else 1e-13,
                               equal_nan=True)
    t = torch.from_numpy(x.copy()).index_add(0, torch.from_numpy(index), torch.from_numpy(
        np.ascontiguousarray(src)))
    torch.testing.assert_close(torch.from_numpy(got), t, equal_nan=True)


def test_embedding_backward_uses_the_loop():
    calls = []
    orig = K.index_add_rows

    def spy(*a):
        calls.append(1)
        return orig(*a)

    K.index_add_rows = spy
    try:
        w = rg.tensor(np.random.default_rng(1).standard_normal((6, 4)), requires_grad=True)
        idx = rg.tensor(np.array([[0, 5, 5], [2, 0, 1]]))
        with kernels.use("numba", min_size=0):
            rg.nn.functional.embedding(idx, w).sum().backward()
    finally:
        K.index_add_rows = orig
    assert calls
    want = np.zeros((6, 4))
    np.add.at(want, np.array([0, 5, 5, 2, 0, 1]), np.ones(4))
    np.testing.assert_array_equal(w.grad.numpy(), want)


def test_out_of_range_index_is_refused_not_written():
    x, index, src = _case(np.float32, n=4, rows=3)
    index[2] = 3
    with kernels.use("numba", min_size=0), pytest.raises(IndexError):
        IX._index_add(x, index, src, axis=-2)


def test_float16_stays_on_the_numpy_path_once_the_kernel_is_compiled():
    """The loop is compiled for float32/float64 only: a float16 index_add after it has
    been compiled in the process raised NotImplementedError (an EmbeddingBag's
    backward in float16)."""
    x, index, src = _case(np.float32)
    with kernels.use("numba", min_size=0):
        IX._index_add(x, index, src, axis=-2)  # compiled now
        x16, src16 = x.astype(np.float16), np.nan_to_num(src).astype(np.float16)
        got = rg.tensor(x16).index_add(0, rg.tensor(index), rg.tensor(src16))
    want = torch.from_numpy(x16).index_add(0, torch.from_numpy(index), torch.from_numpy(src16))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.double().numpy(),
                               rtol=2e-3, atol=2e-3)
