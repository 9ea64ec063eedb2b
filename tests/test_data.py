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


# ------------------------------------------------------------ datasets of samples


class _Squares:
    """A PyTorch-style dataset: __len__ and __getitem__ returning (x, y) tuples."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i, i * i], dtype=np.float32), i % 3


def test_loader_takes_a_dataset_object_and_a_list_of_pairs():
    ds = _Squares(7)
    pairs = [ds[i] for i in range(7)]
    X = np.stack([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    for dataset in (ds, pairs):
        batches = list(data.DataLoader(dataset, batch_size=3, shuffle=True, seed=2))
        ref = list(data.DataLoader((X, y), batch_size=3, shuffle=True, seed=2))
        assert len(batches) == len(ref) == 3
        for (xb, yb), (xr, yr) in zip(batches, ref):
            assert xb.dtype == np.float32 and yb.dtype == np.int64
            np.testing.assert_array_equal(xb.data, xr.data)
            np.testing.assert_array_equal(yb.data, yr.data)


def test_loader_dataset_errors_name_the_sample():
    with pytest.raises(ValueError, match=r"field 0 of sample 1 has shape \(3,\), sample 0's "
                                         r"has \(2,\)"):
        list(data.DataLoader([(np.zeros(2), 0), (np.zeros(3), 1)], batch_size=2))
    with pytest.raises(ValueError, match="sample 1 has 1 fields, sample 0 has 2"):
        data.DataLoader([(np.zeros(2), 0), (np.zeros(2),)])
    with pytest.raises(TypeError, match="dtype"):
        data.DataLoader([("a", 0)])


# ------------------------------------------------------------ shards


@pytest.mark.parametrize("n,bs,size,drop_last", [(40, 8, 2, False), (37, 8, 2, False),
                                                 (37, 12, 4, False), (37, 12, 4, True),
                                                 (29, 12, 3, False), (10, 4, 4, False)])
def test_shards_of_a_step_make_the_one_process_batch(n, bs, size, drop_last):
    X, y = np.arange(n, dtype=np.float64).reshape(n, 1), np.arange(n)
    one = list(data.DataLoader((X, y), batch_size=bs, shuffle=True, seed=4, drop_last=drop_last))
    shards = [data.DataLoader((X, y), batch_size=bs, shuffle=True, seed=4, drop_last=drop_last,
                              shard=(r, size)) for r in range(size)]
    assert len({len(s) for s in shards}) == 1  # every rank takes the same number of steps
    per_rank = [list(s) for s in shards]
    assert all(len(p) == len(s) for p, s in zip(per_rank, shards))
    short = n % bs
    dropped = not drop_last and 0 < short < size  # too few rows to give every rank one
    assert len(shards[0]) == len(one) - dropped
    for step, (xb, yb) in enumerate(one[:len(shards[0])]):
        parts = [p[step] for p in per_rank]
        assert all(len(pt[1]) > 0 for pt in parts)
        np.testing.assert_array_equal(np.concatenate([pt[1].data for pt in parts]), yb.data)
        np.testing.assert_array_equal(np.concatenate([pt[0].data for pt in parts]), xb.data)
        if len(yb) == bs:
            assert {len(pt[1]) for pt in parts} == {bs // size}


def test_shard_errors():
    X = np.zeros((10, 1))
    with pytest.raises(ValueError, match="global batch.*divisible by 4.*batch_size=6"):
        data.DataLoader((X,), batch_size=6, shard=(0, 4))
    with pytest.raises(ValueError, match="seed"):
        data.DataLoader((X,), batch_size=4, shuffle=True, shard=(1, 2))
    for bad in ((2, 2), (-1, 2), (0,), [0, 2], (0.0, 2), "0,2"):
        with pytest.raises(ValueError, match=r"shard must be \(rank, size\)"):
            data.DataLoader((X,), batch_size=4, shard=bad)


# ------------------------------------------------------------ the user's own arrays


def _idx(path, arr, gz):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(">f4"): 0x0D}
    raw = bytes([0, 0, codes[arr.dtype], arr.ndim]) + \
        b"".join(int(d).to_bytes(4, "big") for d in arr.shape) + arr.tobytes()
    if gz:
        import gzip
        raw = gzip.compress(raw)
        path = path.with_name(path.name + ".gz")
    path.write_bytes(raw)
    return path


def _mnist_dir(d, gz, n_train=12, n_test=5):
    rng = np.random.default_rng(0)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 4, 3), dtype=np.uint8),
              "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 4, 3), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8)}
    arrays["train-images-idx3-ubyte"][0, 0, 0] = 255
    arrays["train-labels-idx1-ubyte"][0] = 9
    d.mkdir(exist_ok=True)
    for name, a in arrays.items():
        _idx(d / name, a, gz)
    return arrays


@pytest.mark.parametrize("gz", [False, True])
def test_load_arrays_reads_mnist_idx_files(tmp_path, gz):
    raw = _mnist_dir(tmp_path / "mnist", gz)
    X_train, y_train, X_test, y_test = data.load_arrays(tmp_path / "mnist")
    assert X_train.shape == (12, 4, 3) and X_test.shape == (5, 4, 3)
    assert X_train.dtype == np.float32 and y_train.dtype == np.int64
    np.testing.assert_allclose(X_train, raw["train-images-idx3-ubyte"] / 255.0, rtol=1e-6)
    assert X_train.max() == 1.0
    np.testing.assert_array_equal(y_test, raw["t10k-labels-idx1-ubyte"])
    np.testing.assert_array_equal(data.read_idx(next((tmp_path / "mnist").glob("t10k-l*"))),
                                  raw["t10k-labels-idx1-ubyte"])


def test_read_idx_big_endian_floats(tmp_path):
    a = (np.arange(6).reshape(2, 3) / 4).astype(">f4")
    out = data.read_idx(_idx(tmp_path / "f", a, gz=True))
    assert out.dtype == np.float32 and out.dtype.isnative
    np.testing.assert_array_equal(out, a)


def test_load_arrays_idx_errors(tmp_path):
    d = tmp_path / "m"
    _mnist_dir(d, gz=False)
    p = d / "train-labels-idx1-ubyte"
    p.write_bytes(p.read_bytes()[:-2])
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte: the header says shape "
                                         r"\(12,\).*12 bytes.*holds 10"):
        data.load_arrays(d)
    p.write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ValueError, match="not an IDX file"):
        data.load_arrays(d)
    p.unlink()
    with pytest.raises(FileNotFoundError, match="no train-labels-idx1-ubyte"):
        data.load_arrays(d)
    (d / "t.gz").write_bytes(b"\x1f\x8bnot really")
    with pytest.raises(ValueError, match="corrupt gzip"):
        data.read_idx(d / "t.gz")
    e = tmp_path / "short"
    _mnist_dir(e, gz=True, n_train=12, n_test=5)
    _idx(e / "t10k-labels-idx1-ubyte", np.zeros(4, np.uint8), gz=True)
    with pytest.raises(ValueError, match=r"t10k-images.*5 samples \(shape \(5, 4, 3\)\).*"
                                         r"t10k-labels.*4 labels \(shape \(4,\)\)"):
        data.load_arrays(e)


def test_load_arrays_npz_with_a_split(tmp_path):
    rng = np.random.default_rng(1)
    arrays = dict(X_train=rng.random((20, 5)), y_train=rng.integers(0, 4, 20),
                  X_test=rng.random((6, 5)), y_test=rng.integers(0, 4, 6))
    np.savez(tmp_path / "d.npz", **arrays)
    out = data.load_arrays(tmp_path / "d.npz")
    for got, key in zip(out, ("X_train", "y_train", "X_test", "y_test")):
        np.testing.assert_array_equal(got, arrays[key].astype(got.dtype))
    assert out[0].dtype == np.float32 and out[1].dtype == np.int64
    # Keras' mnist.npz spells them x_train, ...; labels may be whole floats or (n, 1)
    np.savez(tmp_path / "k.npz", x_train=arrays["X_train"], y_train=arrays["y_train"][:, None],
             x_test=arrays["X_test"], y_test=arrays["y_test"].astype(np.float32))
    for a, b in zip(data.load_arrays(tmp_path / "k.npz"), out):
        np.testing.assert_array_equal(a, b)


def test_load_arrays_npz_x_y_is_split_by_test_size_and_seed(tmp_path):
    X, y = np.arange(50, dtype=np.uint8).reshape(25, 2), np.arange(25) % 5
    np.savez(tmp_path / "xy.npz", X=X, y=y)
    X_train, y_train, X_test, y_test = data.load_arrays(tmp_path / "xy.npz", test_size=0.2)
    assert len(X_test) == 5 and len(X_train) == 20
    np.testing.assert_allclose(np.sort(np.concatenate([X_train, X_test]).ravel()),
                               np.arange(50) / 255, rtol=1e-6)
    for Xs, ys in ((X_train, y_train), (X_test, y_test)):  # rows stay paired
        np.testing.assert_array_equal(np.round(Xs[:, 0] * 255 / 2).astype(int) % 5, ys)
    again = data.load_arrays(tmp_path / "xy.npz", test_size=0.2)
    np.testing.assert_array_equal(again[3], y_test)
    other = data.load_arrays(tmp_path / "xy.npz", test_size=0.2, seed=1)
    assert not np.array_equal(other[2], X_test)
    assert len(data.load_arrays(tmp_path / "xy.npz", test_size=7)[2]) == 7
    with pytest.raises(ValueError, match="test_size"):
        data.load_arrays(tmp_path / "xy.npz", test_size=25)


@pytest.mark.parametrize("arrays,match", [
    (dict(X=np.zeros((4, 2)), y=np.zeros(3, int)),
     r"\['X'\] has 4 samples \(shape \(4, 2\)\) but .*\['y'\] has 3 labels \(shape \(3,\)\)"),
    (dict(X=np.zeros((4, 2)), y=np.array([0, 1, 0.5, 1])), "whole class indices"),
    (dict(X=np.zeros((4, 2)), y=np.array([0, 1, -1, 1])), "found -1"),
    (dict(X=np.zeros((4, 2)), y=np.array(["a", "b", "a", "b"])), "must be integers"),
    (dict(X=np.zeros(4), y=np.zeros(4, int)), r"at least 2 dimensions, got shape \(4,\)"),
    (dict(X=np.full((4, 2), np.nan), y=np.zeros(4, int)), "NaN"),
    (dict(X_train=np.zeros((4, 2)), y_train=np.zeros(4, int)), r"lacks \['X_test', 'y_test'\]"),
    (dict(data=np.zeros((4, 2))), r"holds \['data'\]; expected X_train"),
    (dict(X_train=np.zeros((4, 2)), y_train=np.zeros(4, int), X_test=np.zeros((2, 3)),
          y_test=np.zeros(2, int)), r"samples of shape \(2,\).*has \(3,\)"),
    (dict(X_train=np.zeros((4, 2)), y_train=np.arange(4), X_test=np.zeros((2, 2)),
          y_test=np.array([0, 7])), r"label 7 but the labels of .*only go up to 3"),
])
def test_load_arrays_npz_errors_name_the_file_and_shapes(tmp_path, arrays, match):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=match) as info:
        data.load_arrays(tmp_path / "bad.npz")
    assert "bad.npz" in str(info.value)


def test_load_arrays_refuses_pickles_and_non_npz(tmp_path):
    np.savez(tmp_path / "obj.npz", X=np.array([object()] * 2), y=np.zeros(2, int))
    with pytest.raises(ValueError, match="obj.npz.*pickle"):
        data.load_arrays(tmp_path / "obj.npz")
    (tmp_path / "t.npz").write_text("hello")
    with pytest.raises(ValueError, match="t.npz: not a readable .npz"):
        data.load_arrays(tmp_path / "t.npz")
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        data.load_arrays(tmp_path / "nowhere.npz")
