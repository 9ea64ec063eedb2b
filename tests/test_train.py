"""`retrograd train` end to end, its errors, its determinism, how it stops early (a loss
that is no longer finite, Ctrl-C), and a training loop whose memory stays flat without the
garbage collector."""

import argparse
import gc
import json
import math
import re
import subprocess
import sys
import tracemalloc
from importlib import metadata

import numpy as np
import pytest

import retrograd as rg
from retrograd import cli, data, nn, optim
from retrograd.cli import train
from retrograd.cli.train import build_model, run
from retrograd.nn import functional as F
from retrograd.serialization import load


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
    assert metrics["test_accuracy"] > 0.8 and metrics["status"] == "finished"
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
    assert "max_pool" in graph and "0.weight" in graph and "4.bias" in graph
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
    ["train", "--lr", "-1"], ["train", "--lr", "0"], ["train", "--lr", "inf"],
    ["train", "--lr", "nan"], ["train", "--lr", "-inf"], ["train", "--batch-size", "1.5"],
    ["train", "--batch-size", "0"], ["train", "--seed", "-1"], ["train", "--seed", "x"],
    ["train", "--bogus"], ["--bogus"], ["train", "extra"], [],
])
def test_bad_flags_one_line_status_2_and_nothing_written(argv, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main([*argv, "--out", str(out)] if argv[:1] == ["train"] else argv) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith("retrograd: error:") and err.count("\n") == 1
    assert "Traceback" not in err and captured.out == ""
    assert not out.exists()


def test_bad_flag_names_the_flag(capsys):
    for argv, words in ((["--seed", "-1"], ("--seed", "-1")), (["--lr", "nan"], ("--lr", "nan")),
                        (["--model", "rnn"], ("--model", "rnn", "mlp", "cnn"))):
        assert cli.main(["train", *argv]) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words), err


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
        gc.collect()  # with the collector off until now: clears CPython's free lists only
        warm = tracemalloc.get_traced_memory()[0]
        steps(1000)
        # Anything the collector finds now was kept alive only by a reference cycle:
        # reference counting did not free it.
        unreachable = gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        if was_enabled:
            gc.enable()
    assert unreachable == 0, f"{unreachable} objects were freed only by the cycle collector"
    # One leaked graph per step would add well over 10 kB each (here: >10 MB in total).
    # (Measured after a collection, which empties CPython's free lists: a free list holds
    # freed small objects, e.g. up to 2,000 2-tuples, which tracemalloc counts as live.)
    assert after - warm < 100_000, after - warm


# ---------------------------------------------------------------- stopping early

def _checkpoint_accuracy(out, model="mlp"):
    """Test accuracy of the checkpoint in `out`, computed here from the file."""
    m = build_model(model)
    m.load_state_dict(load(out / "model.npz"))
    _, _, X_test, y_test = data.load_digits()
    with rg.no_grad():
        return float((m(rg.Tensor(X_test)).data.argmax(1) == y_test).mean())


def _step_that(monkeypatch, after: int, action):
    """Replace the training step: the real one for `after` calls, then `action`."""
    real, calls = train.step, []

    def step(*args):
        calls.append(1)
        if len(calls) > after:
            return action(real, *args)
        return real(*args)

    monkeypatch.setattr(train, "step", step)


def _interrupt(real, *args):
    raise KeyboardInterrupt


def test_a_diverging_run_stops_with_status_1_and_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", "--epochs", "2", "--lr", "1000", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\n")[-1]  # above it, only the progress bar (\r-updated)
    assert last.startswith("retrograd: error: training diverged") and "--lr" in last
    assert "Traceback" not in err and "Warning" not in err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "diverged"


def test_divergence_after_an_epoch_keeps_that_epoch(tmp_path, monkeypatch, capsys):
    steps_per_epoch = math.ceil(1437 / 64)  # 80% of the 1,797 digits, batches of 64
    _step_that(monkeypatch, steps_per_epoch + 3, lambda real, *a: (real(*a), math.nan)[1])
    out = tmp_path / "run"
    assert cli.main(["train", "--epochs", "3", "--batch-size", "64", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\n")[-1]
    assert last.startswith("retrograd: error: training diverged: the loss became nan")
    assert "(epoch 2)" in last and "Traceback" not in err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "diverged" and len(metrics["history"]) == 1
    assert _checkpoint_accuracy(out) == metrics["history"][0]["test_acc"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "graph.svg").exists() and not list(out.glob("*.partial"))


def test_ctrl_c_stops_cleanly_with_130_and_keeps_finished_epochs(tmp_path, monkeypatch, capsys):
    steps_per_epoch = math.ceil(1437 / 64)
    _step_that(monkeypatch, steps_per_epoch + 5, _interrupt)  # in the second epoch
    out = tmp_path / "run"
    assert cli.main(["train", "--epochs", "3", "--batch-size", "64", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\n")[-1]  # above it: the progress bar
    assert last.startswith("retrograd: interrupted in epoch 2 of 3") and "Traceback" not in err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "interrupted" and metrics["epochs_done"] == 1
    assert [h["epoch"] for h in metrics["history"]] == [1]
    assert metrics["test_accuracy"] == metrics["history"][0]["test_acc"]
    assert _checkpoint_accuracy(out) == metrics["history"][0]["test_acc"]
    assert (out / "curves.png").exists() and not list(out.glob("*.partial"))


def test_ctrl_c_before_the_first_epoch_ends(tmp_path, monkeypatch, capsys):
    _step_that(monkeypatch, 2, _interrupt)
    out = tmp_path / "run"
    assert cli.main(["train", "--epochs", "2", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "interrupted in epoch 1 of 2" in err and "no epoch finished" in err
    assert "Traceback" not in err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["status"] == "interrupted" and metrics["history"] == []
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json"]


# ---------------------------------------------------------------- the files

def test_one_epoch_curves_show_points(tmp_path, monkeypatch):
    """With a single epoch a line has nothing to join: each series needs a marker, inside
    the axes' limits."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    row = {"epoch": 1, "lr": 0.1, "train_loss": 1.3, "train_acc": 0.8, "test_loss": 1.4,
           "test_acc": 0.75}
    train._plot(plt, [row], tmp_path / "curves.png", "mlp")
    (fig,) = figures
    axes = fig.get_axes()
    assert len(axes) == 2
    for ax, scale, keys in ((axes[0], 1, ("train_loss", "test_loss")),
                            (axes[1], 100, ("train_acc", "test_acc"))):
        assert len(ax.lines) == 2
        for line, key in zip(ax.lines, keys):
            assert line.get_marker() not in (None, "", "None", " ")
            assert line.get_markersize() > 0
            assert list(line.get_xdata()) == [1] and list(line.get_ydata()) == [scale * row[key]]
            lo, hi = ax.get_ylim()
            assert lo <= scale * row[key] <= hi
        lo, hi = ax.get_xlim()
        assert lo < 1 < hi
        assert [t for t in ax.get_xticks() if lo <= t <= hi] == [1]  # whole epochs only
    matplotlib.pyplot.close(fig)
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_model_graph_fits_a_page(tmp_path):
    out = tmp_path / "run"
    assert run(_args(model="cnn", epochs=1, batch_size=128, out=str(out))) == 0
    graph = out / json.loads((out / "metrics.json").read_text())["files"]["graph"]
    text = graph.read_text()
    if graph.suffix == ".svg":
        width, height = (float(v) for v in
                         re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', text).groups())
        w_page, h_page = (72 * v for v in train.GRAPH_PAGE)  # points
        assert width <= w_page + 1 and height <= h_page + 1
        assert width > w_page / 2 or height > h_page / 2  # scaled to the page, not shrunk away
    else:
        assert "size=" in text and "rankdir=TB" in text


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    try:
        expected = metadata.version("retrograd")
    except metadata.PackageNotFoundError:
        expected = rg.__version__
    assert capsys.readouterr().out == f"retrograd {expected}\n"
    proc = subprocess.run([sys.executable, "-m", "retrograd.cli", "--version"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == f"retrograd {expected}\n"
