"""`retrograd train --data PATH` (the user's own arrays) and `--distributed` under mpiexec."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrograd.cli import main

MPIEXEC = Path(sys.executable).parent / "mpiexec"
RETROGRAD = Path(sys.executable).parent / "retrograd"


def _blobs(path: Path, features: int = 16, classes: int = 3, n: int = 240) -> Path:
    """Well-separated Gaussian blobs, as X, y in an .npz."""
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((classes, features)) * 4
    y = rng.integers(0, classes, n)
    X = (centers[y] + rng.standard_normal((n, features))).astype(np.float32)
    np.savez(path, X=X, y=y)
    return path


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text())


def test_train_on_an_npz_of_ones_own(tmp_path, capsys):
    data = _blobs(tmp_path / "blobs.npz")
    out = tmp_path / "run"
    assert main(["train", "--data", str(data), "--epochs", "3", "--out", str(out)]) == 0
    m = _metrics(out)
    assert m["classes"] == 3 and m["n_train"] + m["n_test"] == 240
    assert m["test_accuracy"] > 0.9  # separable blobs
    assert {"model.npz", "curves.png"} <= {p.name for p in out.iterdir()}


def test_the_cnn_takes_square_images_and_refuses_other_shapes(tmp_path, capsys):
    data = _blobs(tmp_path / "img.npz", features=36)  # 6x6 images
    out = tmp_path / "run"
    assert main(["train", "--model", "cnn", "--data", str(data), "--epochs", "1",
                 "--out", str(out)]) == 0
    flat = _blobs(tmp_path / "flat.npz", features=10)
    assert main(["train", "--model", "cnn", "--data", str(flat), "--out",
                 str(tmp_path / "bad")]) == 2
    assert "square" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("content", ["missing", "not-an-npz", "mismatched"])
def test_bad_data_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, content):
    path = tmp_path / "data.npz"
    if content == "not-an-npz":
        path.write_text("hello")
    elif content == "mismatched":
        np.savez(path, X=np.zeros((10, 4), np.float32), y=np.zeros(7, np.int64))
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--data" in err[0]
    assert not (tmp_path / "run").exists()


def _train_ranks(ranks: int, out: Path, *flags: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cmd = [str(RETROGRAD), "train", "--epochs", "2", "--out", str(out), *flags]
    if ranks > 1:
        if not MPIEXEC.exists():
            pytest.fail(f"no mpiexec at {MPIEXEC}: install the test extra")
        cmd = [str(MPIEXEC), "-n", str(ranks)] + cmd + ["--distributed"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_two_ranks_follow_one_process_and_rank_0_alone_writes(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    r1 = _train_ranks(1, one)
    r2 = _train_ranks(2, two)
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    a, b = _metrics(one), _metrics(two)
    assert b["ranks"] == 2 and a["ranks"] == 1
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir())
    # the same global batches: the curves agree up to float32 rounding
    np.testing.assert_allclose([h["train_loss"] for h in b["history"]],
                               [h["train_loss"] for h in a["history"]], rtol=1e-4)
    assert abs(a["test_accuracy"] - b["test_accuracy"]) <= 0.01
    assert r2.stdout.count("test accuracy") == 1  # rank 0 alone reports


def test_a_global_batch_that_does_not_split_is_refused(tmp_path):
    r = subprocess.run([str(MPIEXEC), "-n", "2", str(RETROGRAD), "train", "--distributed",
                        "--batch-size", "33", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert r.returncode != 0
    assert "--batch-size" in r.stderr and "2 ranks" in r.stderr
    assert not (tmp_path / "run").exists()


def test_names_on_two_ranks_follows_one_process(tmp_path):
    data = tmp_path / "names.txt"
    data.write_text("\n".join(["anna", "emma", "olivia", "ava", "isabella", "sophia", "mia",
                               "amelia", "harper", "evelyn", "abigail", "emily"] * 4) + "\n")
    flags = ["--task", "names", "--model", "mlp", "--steps", "10", "--batch-size", "8",
             "--data", str(data), "--no-jit"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    runs = {}
    for ranks in (1, 2):
        out = tmp_path / f"r{ranks}"
        cmd = [str(RETROGRAD), "train", *flags, "--out", str(out)]
        if ranks > 1:
            cmd = [str(MPIEXEC), "-n", "2"] + cmd + ["--distributed"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        runs[ranks] = _metrics(out)
    assert runs[2]["ranks"] == 2
    np.testing.assert_allclose(runs[2]["test_loss"], runs[1]["test_loss"], rtol=1e-5)
    np.testing.assert_allclose([h["train_loss"] for h in runs[2]["history"]],
                               [h["train_loss"] for h in runs[1]["history"]], rtol=1e-5)
