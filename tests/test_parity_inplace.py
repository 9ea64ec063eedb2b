"""In-place ops as ported PyTorch code writes them, against torch: what torch refuses
(bool '-=', bool '//=' '%=' '**=', fill_ with a tensor with dimensions, copy_ of a source
that does not broadcast) raises an error that `except <torch's class>` catches."""

import numpy as np
import pytest
import torch

import retrograd as rg

REFUSED = [
    "x = T.tensor([1, 2]); x -= T.tensor([True, False])",
    "x = T.tensor([1.0, 2.0]); x.sub_(True)",
    "x = T.tensor([True, False]); x -= T.tensor([True, True])",
    "x = T.tensor([True, False]); x //= True",
    "x = T.tensor([True, False]); x %= T.tensor([True, True])",
    "x = T.tensor([True, False]); x **= T.tensor([True, False])",
    "x = T.zeros(2); x.fill_(T.tensor([1.0, 2.0]))",
    "x = T.zeros(2, dtype=T.int64); x.fill_(T.tensor([1]))",
    "x = T.zeros(2, 3); x.copy_(T.ones(2))",
]


@pytest.mark.parametrize("code", REFUSED)
def test_refused_as_torch_refuses(code):
    with pytest.raises(Exception) as te:
        exec(code, {"T": torch})
    with pytest.raises(type(te.value)):
        exec(code, {"T": rg})


@pytest.mark.parametrize("code", [
    "x = T.tensor([True, False]); x **= True",
    "x = T.zeros(2); x.fill_(T.tensor(3.0))",
    "x = T.zeros(2, dtype=T.int64); x.fill_(T.tensor(2.7))",
    "x = T.zeros(2, 3); x.copy_(T.tensor([1.0, 2.0, 3.0]))",
    "x = T.tensor([3, 4]); x //= 2",
])
def test_allowed_as_torch(code):
    ns_t, ns_r = {"T": torch}, {"T": rg}
    exec(code, ns_t)
    exec(code, ns_r)
    t, r = ns_t["x"], ns_r["x"]
    assert str(r.dtype) == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(r.numpy(), t.numpy())
