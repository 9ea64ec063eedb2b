"""rg.save / rg.load and load_state_dict: round trips, exact paths, and every bad file
(truncated, corrupted, foreign, pickled) refused with a clear error and nothing executed."""

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import retrograd as rg
from retrograd import nn
from retrograd.serialization import CheckpointError, load, save


def _model():
    return nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, (rg.Tensor, np.ndarray, np.generic)):
        x, y = np.asarray(a.data if isinstance(a, rg.Tensor) else a), \
            np.asarray(b.data if isinstance(b, rg.Tensor) else b)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


RICH = {
    "weights": rg.randn(3, 4),
    "f64": np.arange(6, dtype=np.float64).reshape(2, 3).T,  # not C-contiguous
    "fortran": np.asfortranarray(np.ones((2, 3), dtype=np.float32)),
    "ints": np.array([1, -2, 3], dtype=np.int64),
    "u8": np.arange(4, dtype=np.uint8),
    "mask": np.array([True, False]),
    "complex": np.array([1 + 2j]),
    "scalar0d": rg.tensor(2.5),
    "empty": np.zeros((0, 3)),
    "npscalar": np.float32(1.5),
    "state": {0: {"step": 3, "exp_avg": rg.zeros(2)}, 7: {}},
    "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "nesterov": False, "params": [0, 7]}],
    "misc": (None, "text", 1e300, float("inf"), float("nan"), -3, True, [1, [2, (3,)]]),
}


def test_round_trip_keeps_types_dtypes_and_values(tmp_path):
    path = tmp_path / "ck"
    save(RICH, path)
    _same(RICH, load(path))


def test_writes_exactly_the_given_path(tmp_path):
    for name in ("model", "model.pt", "weights.ckpt", "a.npz"):
        save({"w": rg.ones(2)}, tmp_path / name)
    assert sorted(os.listdir(tmp_path)) == ["a.npz", "model", "model.pt", "weights.ckpt"]
    save({"w": rg.ones(3)}, str(tmp_path / "model"))  # overwrite in place
    assert load(tmp_path / "model")["w"].shape == (3,)
    assert sorted(os.listdir(tmp_path)) == ["a.npz", "model", "model.pt", "weights.ckpt"]


def test_file_objects_and_numpy_interop(tmp_path):
    buf = io.BytesIO()
    save({"w": rg.ones(2, 2)}, buf)
    buf.seek(0)
    assert load(buf)["w"].shape == (2, 2)
    save({"w": np.arange(3.0)}, tmp_path / "c")
    with np.load(tmp_path / "c", allow_pickle=False) as z:  # plain NumPy can read the arrays
        np.testing.assert_array_equal(z["a0"], np.arange(3.0))


def test_model_round_trip(tmp_path):
    rg.manual_seed(0)
    a, b = _model(), _model()
    x = rg.randn(2, 1, 6, 6)
    assert not np.allclose(a(x).data, b(x).data)
    save(a.state_dict(), tmp_path / "m")
    result = b.load_state_dict(load(tmp_path / "m"))
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(a(x).data, b(x).data)


def test_unsavable_objects_are_named_and_leave_old_file(tmp_path):
    path = tmp_path / "m"
    save({"w": rg.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(CheckpointError, match=r"set.*\['bad'\]"):
        save({"w": rg.ones(2), "bad": {1, 2}}, path)
    with pytest.raises(CheckpointError, match="dtype object"):
        save({"w": np.array([object()])}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m"]  # no temporary files left behind


# ---------------------------------------------------------------- bad files

@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good"
    save({"model": nn.Linear(3, 2).state_dict(), "step": 3, "ints": np.arange(3)}, path)
    return path.read_bytes()


def test_every_truncation_is_refused(tmp_path, good):
    path = tmp_path / "t"
    for n in sorted(set(range(0, len(good), 37)) | {1, 4, len(good) - 1}):
        path.write_bytes(good[:n])
        with pytest.raises(CheckpointError) as info:
            load(path)
        assert str(path) in str(info.value)


def test_every_single_byte_corruption_is_refused_or_harmless(tmp_path, good):
    """Flip each byte: the result is a CheckpointError or exactly the saved content."""
    path = tmp_path / "c"
    path.write_bytes(good)
    reference = load(path)
    refused = 0
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0xFF
        path.write_bytes(bytes(bad))
        try:
            got = load(path)
        except CheckpointError:
            refused += 1
            continue
        _same(reference, got)  # only fields that carry no content (e.g. timestamps)
    assert refused > 0.75 * len(good)  # the rest: zip header fields such as timestamps


@pytest.mark.parametrize("content,match", [
    (b"", "empty"),
    (b"hello, this is text\n", "not a retrograd checkpoint"),
    (bytes(range(256)) * 4, "not a retrograd checkpoint"),
    (b"\x93NUMPY\x01\x00" + b"x" * 50, "single .npy"),
])
def test_files_that_are_not_checkpoints(tmp_path, content, match):
    path = tmp_path / "x"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=match):
        load(path)


def test_plain_npz_and_pytorch_files_are_not_checkpoints(tmp_path):
    np.savez(tmp_path / "plain.npz", a=np.ones(3))
    with pytest.raises(CheckpointError, match="no __retrograd__.json"):
        load(tmp_path / "plain.npz")
    import torch
    torch.save({"w": torch.ones(2)}, tmp_path / "t.pt")
    with pytest.raises(CheckpointError, match="PyTorch"):
        load(tmp_path / "t.pt")


def test_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope")


class _Hostile:
    """Unpickling this runs code that creates a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def test_hostile_pickle_is_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"w": _Hostile(marker)})
    pickle.loads(payload)  # control: the payload really does run code when unpickled
    assert marker.exists()
    marker.unlink()

    raw = tmp_path / "evil.pkl"
    raw.write_bytes(payload)
    with pytest.raises(CheckpointError, match="pickle"):
        load(raw)

    zipped = tmp_path / "evil.zip"  # a PyTorch-style archive with a pickle inside
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
    with pytest.raises(CheckpointError):
        load(zipped)

    # A retrograd-looking archive whose array entry is a pickled object array.
    sneaky = tmp_path / "sneaky"
    save({"w": np.zeros(2)}, sneaky)
    obj = np.array([_Hostile(marker)], dtype=object)
    with zipfile.ZipFile(sneaky, "a") as zf:
        names = zf.namelist()
    rebuilt = tmp_path / "sneaky2"
    with zipfile.ZipFile(sneaky) as src, zipfile.ZipFile(rebuilt, "w") as dst:
        for n in names:
            if n == "a0.npy":
                with dst.open(n, "w") as f:
                    np.lib.format.write_array(f, obj, allow_pickle=True)
            else:
                dst.writestr(n, src.read(n))
    with pytest.raises(CheckpointError, match="object"):
        load(rebuilt)
    assert not marker.exists()


# ---------------------------------------------------------------- load_state_dict

def _params(m):
    return {k: v.data.copy() for k, v in m.state_dict().items()}


def test_load_state_dict_missing_unexpected_and_shape_errors_change_nothing():
    rg.manual_seed(1)
    model = _model()
    good = {k: rg.Tensor(v.data + 1) for k, v in model.state_dict().items()}
    before = _params(model)

    missing = dict(good)
    del missing["3.bias"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "3.bias"'):
        model.load_state_dict(missing)

    extra = dict(good, **{"4.weight": rg.ones(2)})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "4.weight"'):
        model.load_state_dict(extra)

    shaped = dict(good, **{"0.weight": rg.ones(2, 1, 2, 2)})
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.weight.*\(2, 1, 2, 2\).*"
                                           r"\(2, 1, 3, 3\)"):
        model.load_state_dict(shaped)
    with pytest.raises(RuntimeError, match="size mismatch"):  # even when not strict
        model.load_state_dict(shaped, strict=False)

    junk = dict(good, **{"3.bias": "not numbers"})
    with pytest.raises(RuntimeError, match="3.bias.*expected a Tensor"):
        model.load_state_dict(junk)
    with pytest.raises(TypeError, match="mapping"):
        model.load_state_dict([1, 2])

    for k, v in _params(model).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)


def test_load_state_dict_all_problems_in_one_message():
    model = _model()
    sd = {k: v for k, v in model.state_dict().items() if k != "0.bias"}
    sd["3.weight"] = rg.ones(1, 1)
    sd["zzz"] = rg.ones(1)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(sd)
    msg = str(info.value)
    assert '"0.bias"' in msg and '"zzz"' in msg and "size mismatch for 3.weight" in msg


def test_load_state_dict_non_strict_reports_keys():
    model = _model()
    sd = {k: v for k, v in model.state_dict().items() if k != "0.bias"}
    sd["extra"] = rg.ones(1)
    result = model.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["extra"]


def test_load_state_dict_copies_values_into_the_same_parameters():
    model = _model()
    weight = model[0].weight
    sd = {k: np.full(v.shape, 0.5) for k, v in model.state_dict().items()}  # float64 arrays
    model.load_state_dict(sd)
    assert model[0].weight is weight and weight.dtype == np.float32
    np.testing.assert_array_equal(weight.data, 0.5)
    sd["0.weight"][...] = 2.0  # no aliasing of the source
    assert (weight.data == 0.5).all()


# ---------------------------------------------------------------- hostile sizes, missing folders

def _rebuild(src_path, dst_path, meta=None, compress=zipfile.ZIP_STORED, arrays_compress=None):
    """Copy a checkpoint, optionally replacing its metadata and compressing entries."""
    with zipfile.ZipFile(src_path) as src, zipfile.ZipFile(dst_path, "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            if n == "__retrograd__.json":
                dst.writestr(n, data if meta is None else meta, compress_type=compress)
            else:
                dst.writestr(n, data, compress_type=arrays_compress or zipfile.ZIP_STORED)


def test_save_writes_stored_entries(tmp_path):
    save({"w": rg.randn(3, 4), "n": 3}, tmp_path / "ck")
    with zipfile.ZipFile(tmp_path / "ck") as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}


def test_compressed_metadata_bomb_is_refused_before_reading(tmp_path, monkeypatch):
    save({"w": np.ones(2)}, tmp_path / "ck")
    with zipfile.ZipFile(tmp_path / "ck") as zf:
        meta = zf.read("__retrograd__.json")
    bomb = meta[:-1] + b" " * (8 << 20) + meta[-1:]  # still valid JSON, 8 MB of blanks
    _rebuild(tmp_path / "ck", tmp_path / "bomb", meta=bomb, compress=zipfile.ZIP_DEFLATED)
    assert (tmp_path / "bomb").stat().st_size < 100_000
    read = []
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda self, *a, **k: read.append(a))
    with pytest.raises(CheckpointError, match="compressed") as info:
        load(tmp_path / "bomb")
    assert str(tmp_path / "bomb") in str(info.value)
    assert read == []  # refused from the directory entry, nothing inflated


def test_compressed_array_entry_is_refused(tmp_path):
    save({"w": np.zeros(1000)}, tmp_path / "ck")
    _rebuild(tmp_path / "ck", tmp_path / "z", arrays_compress=zipfile.ZIP_DEFLATED)
    with pytest.raises(CheckpointError, match="a0.npy is compressed"):
        load(tmp_path / "z")


def test_oversized_stored_metadata_is_refused(tmp_path, monkeypatch):
    from retrograd import serialization

    save({"w": np.ones(2), "names": ["x" * 100] * 10}, tmp_path / "ck")
    monkeypatch.setattr(serialization, "_MAX_META", 500)
    with pytest.raises(CheckpointError, match="more than the 500 allowed"):
        load(tmp_path / "ck")
    with pytest.raises(CheckpointError, match="more than the 500"):
        save({"names": ["x" * 100] * 10}, tmp_path / "big")
    assert not (tmp_path / "big").exists()


def test_save_to_a_missing_folder_names_the_path(tmp_path):
    target = tmp_path / "no" / "such" / "model.ckpt"
    with pytest.raises(FileNotFoundError) as info:
        save({"w": np.ones(2)}, target)
    assert str(target) in str(info.value)
    assert info.value.filename == str(target)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotADirectoryError, match="afile"):
        save({"w": np.ones(2)}, tmp_path / "afile" / "model.ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
