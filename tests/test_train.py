"""`retrograd train` end to end, its errors, its determinism, and a training loop whose
memory stays flat without the garbage collector."""

import argparse
import gc
import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import retrograd as rg
from retrograd import cli, data, nn, optim
from retrograd.nn import functional as F
from retrograd.serialization import load
from retrograd.train import build_model, run


def _args(**kw):
    base = dict(model="mlp", epochs=None, batch_size=None, lr=None, seed=0, out="runs/latest")
    base.update(kw)
    return argparse.Namespace(**base)


def test_train_one_epoch_end_to_end(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "retrograd.cli", "train", "--epochs", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "test accuracy" in proc.stdout
    assert "epoch 1/1" in proc.stderr and "test_acc" in proc.stderr  # the progress bar
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs"] == 1 and len(metrics["history"]) == 1
    assert metrics["test_accuracy"] > 0.8
    assert metrics["checkpoint_test_accuracy"] == metrics["test_accuracy"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    graph = (out / metrics["files"]["graph"]).read_text()
    assert "linear" in graph and "cross_entropy" in graph and "0.weight" in graph
    model = build_model("mlp")
    model.load_state_dict(load(out / "model.npz"))
    X_train, y_train, X_test, y_test = data.load_digits()
    with rg.no_grad():
        acc = (model(rg.Tensor(X_test)).data.argmax(1) == y_test).mean()
    assert acc == pytest.approx(metrics["test_accuracy"])


def test_train_cnn_one_epoch(tmp_path, capsys):
    out = tmp_path / "cnn"
    assert run(_args(model="cnn", epochs=1, batch_size=64, out=str(out))) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "cnn" and metrics["batch_size"] == 64
    assert metrics["test_accuracy"] > 0.8
    graph = (out / metrics["files"]["graph"]).read_text()
    assert "max_pool2d" in graph and "0.weight" in graph and "4.bias" in graph
    model = build_model("cnn")
    model.load_state_dict(load(out / "model.npz"))
    assert "test accuracy" in capsys.readouterr().out


def test_same_seed_same_numbers(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((a, 0), (b, 0), (c, 1)):
        assert run(_args(epochs=1, batch_size=64, lr=0.05, seed=seed, out=str(out))) == 0
    ha, hb, hc = (json.loads((d / "metrics.json").read_text())["history"] for d in (a, b, c))
    assert ha == hb
    assert ha != hc
    assert (a / "model.npz").read_bytes() == (b / "model.npz").read_bytes()
    assert json.loads((a / "metrics.json").read_text())["lr"] == 0.05


@pytest.mark.parametrize("argv", [
    ["train", "--model", "rnn"], ["train", "--epochs", "0"], ["train", "--epochs", "x"],
    ["train", "--lr", "-1"], ["train", "--batch-size", "1.5"], ["train", "--bogus"],
])
def test_bad_flags_one_line_and_status_2(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("retrograd: error:") and err.count("\n") == 1
    assert "Traceback" not in err


def test_out_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert cli.main(["train", "--epochs", "1", "--out", str(f / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("retrograd: error:") and err.count("\n") == 1


def test_bad_flag_exit_status_from_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "retrograd.cli", "train", "--model", "rnn"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_training_memory_is_flat_without_gc():
    """1,000 steps with the garbage collector off: reference counting alone must free every
    graph, so traced memory after step 1,000 equals that after the warm-up."""
    rg.manual_seed(0)
    r = np.random.default_rng(0)
    X, y = r.standard_normal((256, 64)).astype(np.float32), r.integers(0, 10, 256)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    loader = data.DataLoader((X, y), batch_size=32, shuffle=True, seed=0)

    def steps(n):
        done = 0
        while done < n:
            for xb, yb in loader:
                loss = F.cross_entropy(model(xb), yb, label_smoothing=0.1)
                opt.zero_grad()
                loss.backward()
                opt.step()
                done += 1
                if done == n:
                    return

    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        steps(100)
        warm = tracemalloc.get_traced_memory()[0]
        steps(1000)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        if was_enabled:
            gc.enable()
    # One leaked graph per step would add well over 10 kB each (here: >10 MB in total).
    assert after - warm < 100_000, after - warm
