"""rg.utils.tensorboard.SummaryWriter, as torch.utils.tensorboard's: the event files hold
what was logged (scalars and histograms from retrograd Tensors, text), read back from the
files themselves; PyTorch's argument names and its refusal of add_graph."""

import struct

import numpy as np
import pytest

import retrograd as rg

tbx = pytest.importorskip("tensorboardX")  # the test extra installs it
from tensorboardX.proto import event_pb2  # noqa: E402

from retrograd.utils.tensorboard import SummaryWriter  # noqa: E402


def _events(log_dir):
    """Every Event in the directory's event files (TFRecord framing: length, CRC, data, CRC)."""
    out = []
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        raw = path.read_bytes()
        at = 0
        while at < len(raw):
            (n,) = struct.unpack("<Q", raw[at:at + 8])
            ev = event_pb2.Event()
            ev.ParseFromString(raw[at + 12:at + 12 + n])
            out.append(ev)
            at += 12 + n + 4
    return out


def test_scalars_histograms_and_text_reach_the_event_file(tmp_path):
    losses = [rg.tensor(2.5) / (k + 1) for k in range(3)]
    weights = rg.randn(100, dtype=rg.float64)
    with SummaryWriter(log_dir=str(tmp_path), comment="ignored with log_dir") as w:
        assert w.get_logdir() == w.log_dir == str(tmp_path)
        for k, loss in enumerate(losses):
            w.add_scalar("loss/train", loss, k, new_style=False)
        w.add_scalars("acc", {"train": rg.tensor(0.5), "test": 0.25}, 0)
        w.add_histogram("weights", weights, 3)
        w.add_text("note", "hello", 0)
    events = _events(tmp_path)
    scalars = {(v.tag, e.step): v.simple_value for e in events if e.HasField("summary")
               for v in e.summary.value if v.HasField("simple_value")}
    for k, loss in enumerate(losses):
        assert scalars[("loss/train", k)] == pytest.approx(loss.item(), rel=1e-6)
    histo = [v.histo for e in events if e.HasField("summary") for v in e.summary.value
             if v.HasField("histo")]
    assert len(histo) == 1
    assert histo[0].num == 100
    assert histo[0].min == pytest.approx(weights.min().item())
    assert histo[0].max == pytest.approx(weights.max().item())
    assert histo[0].sum == pytest.approx(weights.sum().item())
    acc_dirs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert acc_dirs == ["acc_test", "acc_train"]  # add_scalars: one run per key, as torch
    assert _events(tmp_path / "acc_train")[-1].summary.value[0].simple_value == 0.5


def test_add_graph_is_refused(tmp_path):
    with SummaryWriter(str(tmp_path)) as w, pytest.raises(NotImplementedError, match="graph"):
        w.add_graph(rg.nn.Linear(2, 2), rg.ones(1, 2))


def test_default_log_dir_is_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_exp") as w:
        w.add_scalar("x", np.float32(1.0), 0)
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.endswith("_exp")
