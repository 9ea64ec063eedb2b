"""Reductions as ported PyTorch code calls them, against torch: an empty `dim` (`()` or
`[]`) reduces over every dimension (NumPy's empty `axis` still reduces none), a repeated
dim raises RuntimeError, argmax/argmin of an empty tensor without a dim raise IndexError."""

import numpy as np
import pytest
import torch

import retrograd as rg


@pytest.mark.parametrize("code", [
    "x.sum(())", "x.sum(dim=[])", "x.mean(())", "x.mean(dim=(), keepdim=True)",
    "x.var(())", "x.std(dim=[])", "x.sum((), keepdim=True)",
    "T.sum(x, ())",
])
def test_empty_dim_reduces_everything(code):
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3) + 1
    t = eval(code, {"T": torch, "x": torch.tensor(x)})
    r = eval(code, {"T": rg, "x": rg.tensor(x)})
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6)


def test_empty_numpy_axis_still_reduces_nothing():
    x = rg.ones(2, 3)
    assert rg.sum(x, axis=()).shape == (2, 3)
    assert np.sum(np.ones((2, 3)), axis=()).shape == (2, 3)


@pytest.mark.parametrize("code", ["x.sum((1, 1))", "x.mean((0, -2))", "x.argmax()",
                                  "x.argmin()"])
def test_errors_are_torchs_types(code):
    xs = {"x.argmax()": (0,), "x.argmin()": (0,)}.get(code, (2, 3))
    with pytest.raises(Exception) as te:
        eval(code, {"x": torch.zeros(xs)})
    with pytest.raises(type(te.value)):
        eval(code, {"x": rg.zeros(xs)})


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "uint8", "bool"])
def test_max_min_along_a_dim_without_a_graph_match_torch_and_the_recorded_path(name, dtype):
    # without a graph, max(dim)/min(dim) skip the recorded ops; the pair must not change:
    # torch's values and indices (NaN wins, first index on ties), dtypes and shapes
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, (3, 4, 5)).astype(dtype)
    if dtype.startswith("float"):
        a[1, 2, 3] = np.nan
        a[0, 0, 0] = -np.inf
    for dim in (0, 1, -1):
        for keep in (False, True):
            want = getattr(torch.from_numpy(a.copy()), name)(dim, keepdim=keep)
            got = getattr(rg.tensor(a), name)(dim, keepdim=keep)
            assert got.values.dtype == a.dtype and got.indices.dtype == np.int64
            np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
            if dtype.startswith("float"):
                x = rg.tensor(a, requires_grad=True)
                rec = getattr(x, name)(dim, keepdim=keep)
                assert rec.values.grad_fn is not None
                np.testing.assert_array_equal(rec.values.detach().numpy(), got.values.numpy())
                np.testing.assert_array_equal(rec.indices.numpy(), got.indices.numpy())
