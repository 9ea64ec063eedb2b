"""Ported PyTorch code on bool/integer tensors, against torch: what torch refuses raises an
exception that `except <torch's type>` catches, and what it computes has its dtype and
values (integer powers, logsumexp and softmax dtypes, uint8 sums)."""

import numpy as np
import pytest
import torch

import retrograd as rg

# Each snippet runs with T bound to torch and to retrograd.
REFUSED = [
    "T.tensor([1, 2]) - T.tensor([True, False])",
    "T.tensor([True]) - T.tensor([True])",
    "1.5 - T.tensor([True])",
    "-T.tensor([True, False])",
    "T.tensor([True]) ** T.tensor([True])",
    "T.tensor([True]) // T.tensor([True])",
    "T.tensor([True]) % T.tensor([True])",
    "T.tensor([3, 4]) // T.tensor([1, 0])",
    "T.tensor([3, 4]) % 0",
    "T.tensor([2, 3]) ** -1",
    "T.tensor([1, 2]).mean()",
    "T.tensor([True]).mean()",
    "T.tensor([1, 2]).var()",
    "T.tensor([1, 2], dtype=T.uint8).std()",
    "T.tensor([1, 2]).norm()",
    "T.softmax(T.tensor([1, 2]), 0)",
    "T.log_softmax(T.tensor([1, 2], dtype=T.uint8), 0)",
    "T.tensor([True, False]).argmax()",
    "T.tensor([True, False]).argmin()",
    "T.tensor([1.0, 2.0]).clamp()",
    "T.tensor([1.0, 2.0]).masked_fill(T.tensor([True, False]), T.tensor([5.0]))",
    "T.tensor([1.0, 2.0]).masked_fill(T.tensor([1, 0]), 0.0)",
    "T.diff(T.tensor(1.0))",
]


@pytest.mark.parametrize("code", REFUSED)
def test_refused_as_torch_refuses(code):
    with pytest.raises(Exception) as te:
        eval(code, {"T": torch})
    # The error is one that ported code's `except <torch's class>` catches.
    with pytest.raises(type(te.value)):
        eval(code, {"T": rg})


COMPUTED = [
    "2 ** T.tensor([-1, 1, 3])",
    "T.tensor([2, 3]) ** T.tensor([-1, 2])",
    "T.tensor([-1, 1, 2]) ** T.tensor([-1])",
    "T.tensor([2, 3], dtype=T.int32) ** T.tensor(2)",
    "T.tensor([2, 3]) ** 2",
    "T.tensor([2, 3]) ** 0.5",
    "T.tensor([2, 3], dtype=T.uint8) ** 2",
    "T.logsumexp(T.tensor([1, 2]), 0)",
    "T.logsumexp(T.tensor([True, False]), 0)",
    "T.tensor([200, 100], dtype=T.uint8).sum()",
    "T.tensor([200, 100], dtype=T.uint8).prod()",
    "T.softmax(T.tensor([1.0, 2.0]), 0, T.float64)",
    "T.tensor([1.0, 2.0]).softmax(0, dtype=T.float64)",
    "T.tensor([1, 2]).log_softmax(0, dtype=T.float32)",
    "T.log_softmax(T.tensor([1, 2]), -1, dtype=T.float64)",
]


@pytest.mark.parametrize("code", COMPUTED)
def test_computed_as_torch_computes(code):
    t = eval(code, {"T": torch})
    r = eval(code, {"T": rg})
    assert str(r.dtype) == str(t.dtype).replace("torch.", "")
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6)
