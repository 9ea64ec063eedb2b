"""Matrix products do not promote, as in PyTorch: mixed dtypes are refused."""

import numpy as np
import pytest
import torch

import retrograd as rg

PAIRS = [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.int64)]


@pytest.mark.parametrize("a, b", PAIRS)
def test_matmul_and_einsum_refuse_mixed_dtypes_like_torch(a, b):
    x, y = np.ones((2, 2), a), np.ones((2, 2), b)
    with pytest.raises(RuntimeError):
        torch.from_numpy(x) @ torch.from_numpy(y)
    with pytest.raises(RuntimeError, match="same dtype"):
        rg.tensor(x) @ rg.tensor(y)
    with pytest.raises(RuntimeError, match="same dtype"):
        rg.einsum("ij,jk->ik", rg.tensor(x), rg.tensor(y))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_dtype_products_keep_it(dtype):
    x = rg.tensor(np.ones((2, 3), dtype))
    assert (x @ x.T).dtype == dtype
    assert rg.einsum("ij,kj->ik", x, x).dtype == dtype
