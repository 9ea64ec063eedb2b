"""rg.tensor of lists holding NumPy scalars: their dtypes count, as in torch.tensor."""

import numpy as np
import pytest
import torch

import retrograd as rg

LISTS = [
    [np.float64(0.5), np.float64(1.0)], [np.float32(0.5)], [0.5, np.float64(1.0)],
    [np.float64(1.0), 0.5], [np.int32(3)], [np.int64(3), 2], [[np.float64(1.0)]],
    [np.float16(1.0)], [True, np.bool_(False)], [np.float64(1.0), np.float32(1.0)],
    [np.int32(3), 2], [np.float16(1.0), 0.5], [np.uint8(1), 1], [np.int32(1), 1.5],
    [np.float32(1.0), 1j], [np.int8(1), np.uint8(2)], [[1.0, 2.0], [3.0, np.float64(4.0)]],
    [[np.int16(1), 2], [3, 4]], ([np.float64(2.0)], [3.0]),
    [[1.0, 2.0], [3.0, 4.0]], [1, 2], [0.5, 1j], [],
]


@pytest.mark.parametrize("data", LISTS, ids=[repr(v)[:40] for v in LISTS])
@pytest.mark.parametrize("default", [np.float32, np.float64])
def test_dtype_and_values_like_torch(data, default):
    torch_default, rg_default = torch.get_default_dtype(), rg.get_default_dtype()
    try:
        torch.set_default_dtype(getattr(torch, np.dtype(default).name))
        rg.set_default_dtype(default)
        want = torch.tensor(data)
        got = rg.tensor(data)
    finally:
        torch.set_default_dtype(torch_default)
        rg.set_default_dtype(rg_default)
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.data, want.numpy())
