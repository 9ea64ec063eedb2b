"""Layout and memory-format constants and keywords, as PyTorch code passes them."""

import pickle

import numpy as np
import pytest
import torch

import retrograd as rg

X = np.arange(24.0).reshape(1, 2, 3, 4)


@pytest.mark.parametrize("name", ["strided", "sparse_coo", "sparse_csr", "contiguous_format",
                                  "preserve_format", "channels_last", "channels_last_3d"])
def test_constants_exist_and_pickle_as_themselves(name):
    c = getattr(rg, name)
    assert isinstance(c, (rg.layout, rg.memory_format))
    assert isinstance(getattr(torch, name), (torch.layout, torch.memory_format))
    assert pickle.loads(pickle.dumps(c)) is c and repr(c).endswith(name)


CREATE = [
    ("zeros", (2, 3)), ("ones", (2,)), ("empty", (2,)), ("full", ((2,), 1.5)),
    ("arange", (4,)), ("linspace", (0, 1, 5)), ("eye", (3,)), ("rand", (2,)), ("randn", (2,)),
    ("randint", (0, 5, (3,))), ("randperm", (4,)),
]


@pytest.mark.parametrize("fn, args", CREATE, ids=[c[0] for c in CREATE])
def test_creation_takes_layout_and_pin_memory_like_torch(fn, args):
    want = getattr(torch, fn)(*args, layout=torch.strided, pin_memory=False)
    got = getattr(rg, fn)(*args, layout=rg.strided, pin_memory=False)
    assert tuple(got.shape) == tuple(want.shape) and got.layout is rg.strided
    with pytest.raises(NotImplementedError, match="layout"):
        getattr(rg, fn)(*args, layout=rg.sparse_coo)
    with pytest.raises(TypeError, match="layout"):
        getattr(rg, fn)(*args, layout="strided")


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "rand_like",
                                "randn_like"])
@pytest.mark.parametrize("fmt", ["preserve_format", "contiguous_format", "channels_last"])
def test_like_functions_take_memory_format(fn, fmt):
    want = getattr(torch, fn)(torch.tensor(X), memory_format=getattr(torch, fmt))
    got = getattr(rg, fn)(rg.tensor(X), memory_format=getattr(rg, fmt))
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == np.float64
    if fn in ("zeros_like", "ones_like"):
        np.testing.assert_array_equal(got.data, want.numpy())


def test_clone_and_to_take_memory_format_and_keep_values_and_gradients():
    x = rg.tensor(X, requires_grad=True)
    y = x.clone(memory_format=rg.channels_last).to(memory_format=rg.channels_last) * 2
    y.sum().backward()
    np.testing.assert_array_equal(y.data, X * 2)
    np.testing.assert_array_equal(x.grad.data, np.full(X.shape, 2.0))
    assert x.contiguous(memory_format=rg.contiguous_format) is x
    m = rg.nn.Conv2d(2, 2, 1).to(memory_format=rg.channels_last)
    assert m.weight.shape == (2, 2, 1, 1)
    with pytest.raises(TypeError, match="memory_format"):
        x.clone(memory_format="channels_last")
