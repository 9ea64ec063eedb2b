"""rg.data: the digits split and the DataLoader."""

import sys

import numpy as np
import pytest

import retrograd as rg
from retrograd import data


@pytest.fixture(scope="module")
def digits():
    return data.load_digits()


def test_load_digits_shapes_dtypes_and_range(digits):
    X_train, y_train, X_test, y_test = digits
    assert X_train.shape == (1437, 64) and X_test.shape == (360, 64)
    assert y_train.shape == (1437,) and y_test.shape == (360,)
    assert X_train.dtype == np.float32 and y_train.dtype == np.int64
    assert X_train.min() == 0.0 and X_train.max() == 1.0
    assert set(np.unique(y_train)) == set(range(10)) == set(np.unique(y_test))
    assert all(a.flags.c_contiguous for a in digits)


def test_load_digits_split_is_fixed_and_stratified(digits):
    again = data.load_digits()
    for a, b in zip(digits, again):
        np.testing.assert_array_equal(a, b)
    other = data.load_digits(seed=1)
    assert not np.array_equal(digits[1], other[1])
    counts = np.bincount(digits[3], minlength=10)
    assert counts.min() >= 35 and counts.max() <= 37  # 20% of ~180 per class
    X_train, _, X_test, _ = data.load_digits(test_size=0.5)
    assert len(X_train) + len(X_test) == 1797 and abs(len(X_test) - 899) <= 1


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 3, "0.2", True])
def test_load_digits_bad_test_size(bad):
    with pytest.raises((ValueError, TypeError), match="test_size"):
        data.load_digits(test_size=bad)


def test_missing_scikit_learn_names_the_extra(monkeypatch):
    for name in ("sklearn", "sklearn.datasets", "sklearn.model_selection"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"\[train\]"):
        data.load_digits()


def test_loader_batches_in_order():
    X = np.arange(10, dtype=np.float32).reshape(10, 1)
    y = np.arange(10)
    dl = data.DataLoader((X, y), batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 1), (4, 1), (2, 1)]
    assert all(isinstance(t, rg.Tensor) for b in batches for t in b)
    assert batches[0][0].dtype == np.float32 and batches[0][1].dtype == np.int64
    np.testing.assert_array_equal(np.concatenate([b[1].data for b in batches]), y)
    dl = data.DataLoader((X, y), batch_size=4, drop_last=True)
    assert len(dl) == 2 and [len(b[1]) for b in dl] == [4, 4]


def test_loader_shuffles_reproducibly_and_covers_everything():
    X, y = np.arange(50.0).reshape(50, 1), np.arange(50)
    a = data.DataLoader((X, y), batch_size=8, shuffle=True, seed=3)
    b = data.DataLoader((X, y), batch_size=8, shuffle=True, seed=3)
    ea1, ea2 = [np.concatenate([t[1].data for t in a]) for _ in range(2)]
    eb1 = np.concatenate([t[1].data for t in b])
    np.testing.assert_array_equal(ea1, eb1)
    assert not np.array_equal(ea1, ea2)  # a new order each epoch
    assert not np.array_equal(ea1, y)
    np.testing.assert_array_equal(np.sort(ea1), y)
    for xb, yb in a:  # rows stay paired
        np.testing.assert_array_equal(xb.data[:, 0], yb.data)


def test_loader_without_seed_follows_manual_seed():
    X = np.arange(20.0)
    rg.manual_seed(5)
    first = [t[0].data for t in data.DataLoader((X,), batch_size=5, shuffle=True)]
    rg.manual_seed(5)
    second = [t[0].data for t in data.DataLoader((X,), batch_size=5, shuffle=True)]
    for p, q in zip(first, second):
        np.testing.assert_array_equal(p, q)


def test_loader_accepts_tensors_and_copies_batches():
    X = rg.arange(6).reshape(6, 1).float()
    dl = data.DataLoader((X, rg.arange(6)), batch_size=3)
    xb, yb = next(iter(dl))
    xb.data[...] = -1
    assert (X.data >= 0).all()  # the dataset is untouched
    assert not xb.requires_grad


@pytest.mark.parametrize("args,exc,match", [
    (((np.ones(3), np.ones(4)),), ValueError, r"different lengths \[3, 4\]"),
    (((np.ones(3),), 0), ValueError, "batch_size"),
    (((np.ones(3),), 2.5), ValueError, "batch_size"),
    (("abc",), TypeError, "tuple"),
    (((np.float64(1.0),),), ValueError, "scalar"),
])
def test_loader_errors(args, exc, match):
    with pytest.raises(exc, match=match):
        data.DataLoader(*args)
