"""Shape errors as ported PyTorch code catches them: torch raises RuntimeError (IndexError
for an index or input of the wrong rank, ValueError for an empty cat) for a reshape,
permute, cat, stack, split, repeat, gather, ... that does not fit; so does retrograd (its
errors stay ValueErrors too)."""

import pytest
import torch

import retrograd as rg

CASES = [
    "T.arange(24.0).reshape(2, 3, 4).view(5, 5)",
    "T.arange(24.0).reshape(7, -1)",
    "T.arange(24.0).reshape(-1, -1)",
    "T.zeros(2, 3, 4).permute(0, 1)",
    "T.zeros(2, 3).flatten(1, 0)",
    "T.zeros(2, 3).repeat(2)",
    "T.cat([T.zeros(2, 3), T.ones(2, 2)])",
    "T.cat([])",
    "T.stack([T.zeros(2), T.ones(3)])",
    "T.arange(5).split([1, 3])",
    "T.gather(T.zeros(2, 3), 1, T.zeros(2, dtype=T.int64))",
    "T.zeros(2, 3).index_select(1, T.zeros(1, 1, dtype=T.int64))",
    "T.zeros(2, 3).unflatten(1, (2, 2))",
    "T.zeros(2, 3).narrow(1, 2, 2)",
    "T.zeros(3).diagonal()",
    "T.zeros(2, 3).roll((1, 1), (0,))",
    "T.zeros(2, 3).masked_select(T.ones(3, 2, dtype=T.bool))",
    "T.zeros(2, 3).movedim((0, 1), (0,))",
]


@pytest.mark.parametrize("code", CASES)
def test_shape_errors_are_torchs_types(code):
    with pytest.raises(Exception) as te:
        eval(code, {"T": torch})
    with pytest.raises(type(te.value)):
        eval(code, {"T": rg})
    with pytest.raises(ValueError):  # as before, for NumPy-minded callers
        eval(code, {"T": rg})
