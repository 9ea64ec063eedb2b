"""rg.multinomial's errors and its draws without replacement, against torch.multinomial."""

import numpy as np
import pytest
import torch

import retrograd as rg

BAD = [  # (weights, num_samples, replacement): torch raises RuntimeError on each
    ([0.0, 0.0], 1, False),
    ([1.0, -1.0], 1, True),
    ([1.0, float("nan")], 1, True),
    ([[[1.0, 1.0]]], 1, True),
    ([1.0, 1.0], 0, True),
    ([1.0, 0.0], 3, False),
]


@pytest.mark.parametrize("w, n, replacement", BAD)
def test_bad_arguments_raise_runtime_error_like_torch(w, n, replacement):
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(w), n, replacement)
    with pytest.raises(RuntimeError, match="multinomial"):
        rg.multinomial(rg.tensor(w), n, replacement)


@pytest.mark.parametrize("w", [[1.0, 0.0], [1.0, 0.0, 0.0, 2.0], [[0.0, 1.0, 0.0, 0.0, 2.0, 0.0]]])
def test_without_replacement_past_the_weighted_categories_like_torch(w):
    """torch draws every weighted category first, then zero-weight ones, and does not raise."""
    n = np.shape(w)[-1]
    ref = torch.multinomial(torch.tensor(w), n).numpy()
    rg.manual_seed(0)
    got = rg.multinomial(rg.tensor(w), n)
    assert got.dtype == np.int64 and got.shape == ref.shape
    weights = np.asarray(w).reshape(-1, n)
    for row, r, wr in zip(got.data.reshape(-1, n), ref.reshape(-1, n), weights):
        k = int((wr > 0).sum())
        assert sorted(row) == sorted(r) == list(range(n))  # a permutation, as torch's
        assert set(row[:k]) == set(np.flatnonzero(wr > 0)) == set(r[:k])
