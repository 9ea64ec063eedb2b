"""Indexing as ported PyTorch code writes it, against torch: a uint8 tensor index is a
mask (PyTorch's deprecated form; refused in a write), a value that does not fit an
indexed write raises a RuntimeError, `t.flip(0, 1)` takes the dims as arguments."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg


def _run(code, T):
    ns = {"T": T}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(code, ns)
    return ns["r"]


@pytest.mark.parametrize("code", [
    "x = T.arange(6.0).reshape(3, 2); r = x[T.tensor([1, 0, 1], dtype=T.uint8)]",
    "x = T.arange(3.0); r = x[T.tensor([0, 0, 1], dtype=T.uint8)]",
    "x = T.arange(6.0).reshape(2, 3); r = x.flip(0, 1)",
    "x = T.arange(6.0).reshape(2, 3); r = x.flip(1)",
    "x = T.arange(6.0).reshape(2, 3); r = T.flip(x, [0, 1])",
])
def test_values_as_torch(code):
    t, r = _run(code, torch), _run(code, rg)
    assert str(r.dtype) == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(r.numpy(), t.numpy())


def test_uint8_index_warns_as_torch_does():
    with pytest.warns(UserWarning):
        rg.arange(2.0)[rg.tensor([1, 0], dtype=rg.uint8)]


@pytest.mark.parametrize("code", [
    "x = T.zeros(2, 3); x[0] = T.ones(2)",
    "x = T.zeros(4); x[[0, 1]] = T.ones(3)",
    "x = T.zeros(2, 3); x[:, 1] = T.ones(2, 2)",
    "x = T.zeros(3); x[T.tensor([1, 0, 1], dtype=T.uint8)] = 5.0",
])
def test_refused_writes_raise_runtime_error(code):
    with pytest.raises(RuntimeError):
        _run(code, torch)
    with pytest.raises(RuntimeError):
        _run(code, rg)
