"""Tensor creation as ported PyTorch code writes it, against torch: bounds given as 0-d
tensors, shapes that are negative or not ints, Python ints past int64."""

import numpy as np
import pytest
import torch

import retrograd as rg


def _same(r, t):
    assert str(r.dtype) == str(t.dtype).replace("torch.", "")
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_array_equal(r.numpy(), t.numpy())


@pytest.mark.parametrize("args", [
    lambda T: (T.tensor(3),),
    lambda T: (T.tensor(3.5),),
    lambda T: (0, T.tensor(4), 2),
    lambda T: (T.tensor(1), 5, T.tensor(2)),
    lambda T: (T.tensor(0.5), 3),
    lambda T: (T.zeros(2, 3).shape[0],),
    lambda T: (np.int32(3),),
])
def test_arange_takes_0d_tensor_bounds_keeping_their_kind(args):
    _same(rg.arange(*args(rg)), torch.arange(*args(torch)))


def test_arange_refuses_a_tensor_with_dimensions_as_torch_does():
    with pytest.raises(TypeError):
        torch.arange(torch.tensor([3]))
    with pytest.raises(TypeError):
        rg.arange(rg.tensor([3]))


@pytest.mark.parametrize("make", ["zeros", "ones", "empty", "rand", "randn"])
def test_bad_shapes_raise_torchs_error_types(make):
    for shape, in ((-1,), ((2, -1),)):
        with pytest.raises(RuntimeError):
            getattr(torch, make)(shape)
        with pytest.raises(RuntimeError):
            getattr(rg, make)(shape)
    with pytest.raises(TypeError):
        getattr(torch, make)(2.0)
    with pytest.raises(TypeError):
        getattr(rg, make)(2.0)


@pytest.mark.parametrize("data", [[2**63], 2**63, [2**64], [-2**63 - 1], [[1, 2], [3, 2**63]]])
def test_python_ints_past_int64_raise_value_error(data):
    with pytest.raises(ValueError):
        torch.tensor(data)
    with pytest.raises(ValueError):
        rg.tensor(data)


@pytest.mark.parametrize("data", [[2**63 - 1], [-2**63], [[0, 1], [2, 3]], 7])
def test_python_ints_in_int64_range_are_kept_exactly(data):
    _same(rg.tensor(data), torch.tensor(data))
