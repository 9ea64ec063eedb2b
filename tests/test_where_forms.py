"""torch.where's one-argument form (nonzero as a tuple) and its argument errors."""

import numpy as np
import pytest
import torch

import retrograd as rg


@pytest.mark.parametrize("cond", [[[0, 1], [1, 0]], [0, 3, 0, 5], [[[True]]], [0.0, 2.5]])
def test_condition_alone_is_nonzero_as_tuple_like_torch(cond):
    got = rg.where(rg.tensor(cond))
    want = torch.where(torch.tensor(cond))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == np.int64 and a.tolist() == b.tolist()


def test_condition_with_one_operand_is_refused_like_torch():
    with pytest.raises(TypeError):
        torch.where(torch.tensor([True]), torch.tensor([1.0]))
    with pytest.raises(TypeError, match="where"):
        rg.where(rg.tensor([True]), rg.tensor([1.0]))
