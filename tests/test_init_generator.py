"""`nn.init` fills take `generator=` as PyTorch's do (torch.Generator's idiom, here an
`rg.Generator`), the Glorot and He fills included: the same seed gives the same fill."""

import inspect

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")

FILLS = ["uniform_", "normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
         "kaiming_normal_", "trunc_normal_", "orthogonal_", "sparse_"]


@pytest.mark.parametrize("name", FILLS)
def test_generator_keyword_as_torch(name):
    assert "generator" in inspect.signature(getattr(torch.nn.init, name)).parameters
    kw = {"sparsity": 0.5} if name == "sparse_" else {}

    def fill(seed):
        t = rg.empty(3, 4)
        getattr(rg.nn.init, name)(t, generator=rg.Generator().manual_seed(seed), **kw)
        return t.numpy().copy()

    np.testing.assert_array_equal(fill(5), fill(5))
    assert not np.array_equal(fill(5), fill(6))
