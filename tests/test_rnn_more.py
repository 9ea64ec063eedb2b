"""Recurrent layers beyond the basics, against PyTorch with the same weights (float64):
LSTM with `proj_size`, RNN/LSTM/GRU on a `PackedSequence` (outputs, h_n/c_n at each
sequence's own last step, gradients of the input, the initial states and every
parameter), `rg.nn.utils.rnn` (packing, padding, their gradients), packed against
padded runs of each sequence alone, finite differences, and PyTorch's exception types
for bad lengths and shapes."""

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as TR

import retrograd as rg
import retrograd.nn as nn
from retrograd.nn.utils import rnn as R

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-9, atol=1e-11)


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
    rg.manual_seed(0)


def _pair(kind, *args, **kw):
    """Our layer and PyTorch's, float64, ours holding torch's weights (same keys)."""
    ref = getattr(torch.nn, kind)(*args, dtype=torch.float64, **kw)
    mod = getattr(nn, kind)(*args, dtype=rg.float64, **kw)
    sd = ref.state_dict()
    assert list(mod.state_dict()) == list(sd)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in ref.named_parameters()]
    mod.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})
    return mod, ref


def _leaf(a):
    return rg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(ours, theirs, what=""):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL,
                               err_msg=what)


def _flat_out(out):
    """(output tensor or packed data, h_n / (h_n, c_n)) as a list of tensors."""
    y, h = out
    y = y.data if isinstance(y, (R.PackedSequence, TR.PackedSequence)) else y
    return [y] + (list(h) if isinstance(h, tuple) else [h])


def _compare(mod, ref, inputs_rg, inputs_t, leaves):
    """Forward both, compare outputs; backward a random weighting, compare the
    gradients of the leaves and of every parameter."""
    ours, theirs = _flat_out(mod(*inputs_rg)), _flat_out(ref(*inputs_t))
    assert len(ours) == len(theirs)
    loss_r = loss_t = 0
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        _close(a, b, f"output {k}")
        w = RNG.standard_normal(tuple(b.shape))
        loss_r = loss_r + (a * rg.tensor(w)).sum()
        loss_t = loss_t + (b * torch.tensor(w)).sum()
    loss_r.backward()
    loss_t.backward()
    for k, (a, b) in enumerate(leaves):
        _close(a.grad, b.grad, f"gradient of input {k}")
    for (n, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters()):
        _close(p.grad, q.grad, f"gradient of {n}")


# ---------------------------------------------------------------- LSTM with proj_size

@pytest.mark.parametrize("layers,bidi", [(1, False), (2, False), (2, True)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_proj_size_matches_torch(layers, bidi, batch_first):
    mod, ref = _pair("LSTM", 3, 5, num_layers=layers, bidirectional=bidi, proj_size=2,
                     batch_first=batch_first)
    names = [n for n, _ in mod.named_parameters()]
    assert "weight_hr_l0" in names and mod.weight_hr_l0.shape == (2, 5)
    assert mod.weight_hh_l0.shape == (20, 2)
    dirs = 2 if bidi else 1
    x, xt = _leaf(RNG.standard_normal((2, 4, 3) if batch_first else (4, 2, 3)))
    h, ht = _leaf(RNG.standard_normal((layers * dirs, 2, 2)))
    c, ct = _leaf(RNG.standard_normal((layers * dirs, 2, 5)))
    _compare(mod, ref, (x, (h, c)), (xt, (ht, ct)), [(x, xt), (h, ht), (c, ct)])


def test_lstm_proj_size_unbatched_and_default_state():
    mod, ref = _pair("LSTM", 3, 4, proj_size=3, bidirectional=True)
    x, xt = _leaf(RNG.standard_normal((5, 3)))
    _compare(mod, ref, (x,), (xt,), [(x, xt)])
    y, (h, c) = mod(x)
    assert y.shape == (5, 6) and h.shape == (2, 3) and c.shape == (2, 4)


def test_lstm_proj_size_errors_are_torchs():
    for kw, msg in ((dict(proj_size=5), "smaller than hidden_size"),
                    (dict(proj_size=-1), "positive integer or zero")):
        with pytest.raises(ValueError, match=msg):
            torch.nn.LSTM(3, 5, **kw)
        with pytest.raises(ValueError, match=msg):
            nn.LSTM(3, 5, **kw)
    for kind in ("GRU", "RNN"):
        with pytest.raises(ValueError, match="only supported for LSTM"):
            getattr(torch.nn, kind)(3, 5, proj_size=2)
        with pytest.raises(ValueError, match="only supported for LSTM"):
            getattr(nn, kind)(3, 5, proj_size=2)
    mod, ref = _pair("LSTM", 4, 6, num_layers=2, proj_size=3)
    x = np.zeros((5, 2, 4))
    bad = (np.zeros((2, 2, 6)), np.zeros((2, 2, 6)))  # h_0 of hidden_size, not proj_size
    with pytest.raises(RuntimeError, match=r"\(2, 2, 3\)"):
        ref(torch.tensor(x), tuple(torch.tensor(b) for b in bad))
    with pytest.raises(RuntimeError, match=r"h_0 of shape \(2, 2, 3\), got \(2, 2, 6\)"):
        mod(rg.tensor(x), tuple(rg.tensor(b) for b in bad))
    with pytest.raises(RuntimeError, match="input_size. Expected 4, got 3"):
        mod(rg.zeros(5, 2, 3, dtype=rg.float64))
    with pytest.raises(RuntimeError):
        ref(torch.zeros(5, 2, 3, dtype=torch.float64))
    assert repr(mod) == repr(ref)


# ---------------------------------------------------------------- packed sequences

CASES = [
    ("RNN", {}), ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True)),
    ("GRU", {}), ("GRU", dict(num_layers=2, bidirectional=True)),
    ("LSTM", {}), ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=2, bidirectional=True)),
]


@pytest.mark.parametrize("kind,kw", CASES, ids=[f"{k}-{sorted(v)}" for k, v in CASES])
@pytest.mark.parametrize("sort", ["sorted", "unsorted"])
@pytest.mark.parametrize("with_state", [False, True])
def test_packed_input_matches_torch(kind, kw, sort, with_state):
    mod, ref = _pair(kind, 3, 4, **kw)
    lengths = [5, 3, 3, 1] if sort == "sorted" else [2, 5, 1, 3]
    x, xt = _leaf(RNG.standard_normal((5, 4, 3)))
    p = R.pack_padded_sequence(x, lengths, enforce_sorted=sort == "sorted")
    pt = TR.pack_padded_sequence(xt, lengths, enforce_sorted=sort == "sorted")
    leaves = [(x, xt)]
    args, args_t = (p,), (pt,)
    if with_state:
        dirs = 2 if kw.get("bidirectional") else 1
        n = dirs * kw.get("num_layers", 1)
        h, ht = _leaf(RNG.standard_normal((n, 4, kw.get("proj_size") or 4)))
        leaves.append((h, ht))
        if kind == "LSTM":
            c, ct = _leaf(RNG.standard_normal((n, 4, 4)))
            leaves.append((c, ct))
            args, args_t = (p, (h, c)), (pt, (ht, ct))
        else:
            args, args_t = (p, h), (pt, ht)
    out = mod(*args)
    assert isinstance(out[0], R.PackedSequence)
    np.testing.assert_array_equal(out[0].batch_sizes.numpy(), pt.batch_sizes.numpy())
    _compare(mod, ref, args, args_t, leaves)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_packed_equals_each_sequence_run_alone(kind):
    """h_n and the outputs of a packed batch are those of each sequence run unbatched for
    its own length (both directions), with no reference to PyTorch."""
    dtype = rg.get_default_dtype()
    rg.set_default_dtype(np.float64)
    try:
        mod = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=True)
        lengths = [3, 4, 1]
        seqs = [rg.tensor(RNG.standard_normal((n, 2))) for n in lengths]
        out, h = mod(R.pack_sequence(seqs, enforce_sorted=False))
        padded, got_lengths = R.pad_packed_sequence(out, batch_first=True)
        assert got_lengths.tolist() == lengths
        for i, s in enumerate(seqs):
            y, hi = mod(s)
            np.testing.assert_allclose(padded[i, :lengths[i]].numpy(), y.numpy(), rtol=1e-12)
            assert np.all(padded[i, lengths[i]:].numpy() == 0)
            if kind == "LSTM":
                np.testing.assert_allclose(h[0][:, i].numpy(), hi[0].numpy(), rtol=1e-12)
                np.testing.assert_allclose(h[1][:, i].numpy(), hi[1].numpy(), rtol=1e-12)
            else:
                np.testing.assert_allclose(h[:, i].numpy(), hi.numpy(), rtol=1e-12)
    finally:
        rg.set_default_dtype(dtype)


def test_packed_lstm_gradcheck():
    """Finite differences through packing, a bidirectional projected LSTM on sequences of
    different lengths, and the initial states."""
    dtype = rg.get_default_dtype()
    rg.set_default_dtype(np.float64)
    try:
        mod = nn.LSTM(2, 2, bidirectional=True, proj_size=1)
        x = rg.tensor(RNG.standard_normal((3, 2, 2)), requires_grad=True)
        h = rg.tensor(RNG.standard_normal((2, 2, 1)), requires_grad=True)
        c = rg.tensor(RNG.standard_normal((2, 2, 2)), requires_grad=True)

        def f(x, h, c):
            out, (hn, cn) = mod(R.pack_padded_sequence(x, [2, 3], enforce_sorted=False),
                                (h, c))
            return out.data.sum() + (hn * hn).sum() + cn.sum()

        assert rg.gradcheck(f, [x, h, c])
    finally:
        rg.set_default_dtype(dtype)


def test_packed_input_errors_are_torchs():
    mod, ref = _pair("GRU", 3, 4)
    x = RNG.standard_normal((5, 2, 3))
    p = R.pack_padded_sequence(rg.tensor(x), [5, 3])
    pt = TR.pack_padded_sequence(torch.tensor(x), [5, 3])
    with pytest.raises(RuntimeError, match=r"\(1, 2, 4\)"):
        ref(pt, torch.zeros(1, 3, 4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"hx of shape \(1, 2, 4\), got \(1, 3, 4\)"):
        mod(p, rg.zeros(1, 3, 4, dtype=rg.float64))
    small, small_t = _pair("GRU", 2, 4)
    with pytest.raises(RuntimeError, match="Expected 2, got 3"):
        small_t(pt)
    with pytest.raises(RuntimeError, match="Expected 2, got 3"):
        small(p)


# ---------------------------------------------------------------- rg.nn.utils.rnn

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,sort", [([4, 2, 2, 1], True), ([2, 4, 1, 4], False)])
def test_pack_and_pad_match_torch_with_gradients(batch_first, lengths, sort):
    shape = (4, 4, 2, 3) if batch_first else (4, 4, 2, 3)
    x, xt = _leaf(RNG.standard_normal(shape))
    p = R.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=sort)
    pt = TR.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=sort)
    _close(p.data, pt.data)
    assert p.batch_sizes.dtype == np.int64
    np.testing.assert_array_equal(p.batch_sizes.numpy(), pt.batch_sizes.numpy())
    for a, b in ((p.sorted_indices, pt.sorted_indices),
                 (p.unsorted_indices, pt.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    y, n = R.pad_packed_sequence(p, batch_first=batch_first, padding_value=-2.0,
                                 total_length=6)
    yt, nt = TR.pad_packed_sequence(pt, batch_first=batch_first, padding_value=-2.0,
                                    total_length=6)
    _close(y, yt)
    np.testing.assert_array_equal(n.numpy(), nt.numpy())
    w = RNG.standard_normal(yt.shape)
    (y * rg.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    _close(x.grad, xt.grad)


def test_packed_sequence_is_torchs_named_tuple():
    p = R.pack_sequence([rg.ones(3, 2), rg.ones(1, 2)])
    data, sizes, s, u = p
    assert p._fields == TR.PackedSequence._fields
    assert data.shape == (4, 2) and sizes.tolist() == [2, 1, 1] and s is None and u is None
    assert p.double().data.dtype == np.float64 and p.float() is p
    assert R.PackedSequence(p.data, p.batch_sizes).batch_sizes is not None
    assert R.invert_permutation(rg.tensor([2, 0, 1])).tolist() == \
        TR.invert_permutation(torch.tensor([2, 0, 1])).tolist()


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_matches_torch(side, batch_first):
    shapes = [(3, 2), (1, 2), (4, 2)]
    leaves = [_leaf(RNG.standard_normal(s)) for s in shapes]
    y = R.pad_sequence([a for a, _ in leaves], batch_first, 7.5, side)
    yt = TR.pad_sequence([b for _, b in leaves], batch_first, 7.5, side)
    _close(y, yt)
    w = RNG.standard_normal(yt.shape)
    (y * rg.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    for a, b in leaves:
        _close(a.grad, b.grad)
    ints = R.pad_sequence([rg.tensor([1, 2]), rg.tensor([3])], padding_value=2.5)
    ints_t = TR.pad_sequence([torch.tensor([1, 2]), torch.tensor([3])], padding_value=2.5)
    assert ints.dtype == np.int64 and ints.tolist() == ints_t.tolist()


def test_pack_sequence_unpack_and_unpad_match_torch():
    seqs = [RNG.standard_normal((n, 2)) for n in (2, 4, 3)]
    p = R.pack_sequence([rg.tensor(s) for s in seqs], enforce_sorted=False)
    pt = TR.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    _close(p.data, pt.data)
    for a, b in zip(R.unpack_sequence(p), TR.unpack_sequence(pt)):
        _close(a, b)
    padded = RNG.standard_normal((4, 3, 2))
    ours = R.unpad_sequence(rg.tensor(padded), rg.tensor([4, 1, 2]))
    theirs = TR.unpad_sequence(torch.tensor(padded), torch.tensor([4, 1, 2]))
    assert [tuple(a.shape) for a in ours] == [tuple(b.shape) for b in theirs]
    for a, b in zip(ours, theirs):
        _close(a, b)


def _raises_both(exc, match, ours, theirs):
    with pytest.raises(exc):
        theirs()
    with pytest.raises(exc, match=match):
        ours()


def test_bad_lengths_raise_torchs_exceptions():
    x = np.zeros((4, 3, 2))
    r, t = rg.tensor(x), torch.tensor(x)
    for lengths, match in (([4, 2, 3], r"decreasing order.*\[4, 2, 3\]"),
                           ([4, 2, 0], r"greater than 0.*\[4, 2, 0\]"),
                           ([4, 2], r"got 2 \(batch_size=3"),
                           ([[4, 2, 1]], "1D")):
        _raises_both(RuntimeError, match, lambda n=lengths: R.pack_padded_sequence(r, n),
                     lambda n=lengths: TR.pack_padded_sequence(t, n))
    with pytest.raises(RuntimeError, match=r"\[5, 2, 1\].*4 time steps"):
        R.pack_padded_sequence(r, [5, 2, 1])  # PyTorch reads past the input here
    p = R.pack_padded_sequence(r, [4, 2, 1])
    pt = TR.pack_padded_sequence(t, [4, 2, 1])
    _raises_both(ValueError, "total_length=3.*being 4",
                 lambda: R.pad_packed_sequence(p, total_length=3),
                 lambda: TR.pad_packed_sequence(pt, total_length=3))
    _raises_both(RuntimeError, "empty list", lambda: R.pad_sequence([]),
                 lambda: TR.pad_sequence([]))
    _raises_both(RuntimeError, "left or right, but got middle",
                 lambda: R.pad_sequence([r[0]], padding_side="middle"),
                 lambda: TR.pad_sequence([t[0]], padding_side="middle"))
    _raises_both(RuntimeError, r"\(3, 2\).*\(1, 3\)",
                 lambda: R.pad_sequence([rg.ones(3, 2), rg.ones(1, 3)]),
                 lambda: TR.pad_sequence([torch.ones(3, 2), torch.ones(1, 3)]))
    _raises_both(ValueError, "2 lengths for a batch of 3",
                 lambda: R.unpad_sequence(r, rg.tensor([4, 2])),
                 lambda: TR.unpad_sequence(t.clone(), torch.tensor([4, 2])))


def test_rnn_cell_base_is_exported_with_torchs_parameters():
    cell = nn.RNNCellBase(2, 3, True, 2)
    ref = torch.nn.RNNCellBase(2, 3, True, 2)
    assert [(n, tuple(p.shape)) for n, p in cell.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in ref.named_parameters()]
    assert isinstance(nn.LSTMCell(2, 3), nn.RNNCellBase)
    nn.LSTM(2, 3).flatten_parameters()
    with pytest.raises(RuntimeError, match=r"expected input of shape \(N, 2\)"):
        nn.RNNCell(2, 3)(rg.zeros(4, 3))
    with pytest.raises(RuntimeError):
        torch.nn.RNNCell(2, 3)(torch.zeros(4, 3))


def test_packed_layers_on_a_device_equal_the_host():
    """On the stand-in GPU (CuPy's rules: no silent host copies) a packed bidirectional
    LSTM, its gradients and the padding utilities give the host's numbers."""
    import fake_device

    dtype = rg.get_default_dtype()
    rg.set_default_dtype(np.float64)
    fake_device.install()
    try:
        mod = nn.LSTM(2, 3, bidirectional=True, proj_size=2)
        x = RNG.standard_normal((4, 3, 2))
        results = []
        for dev in ("cpu", "cuda"):
            m = mod.to(dev)
            xs = rg.tensor(x).to(dev).requires_grad_(True)
            p = R.pack_padded_sequence(xs, [2, 4, 3], enforce_sorted=False)
            out, (h, c) = m(p)
            y, lengths = R.pad_packed_sequence(out, batch_first=True, padding_value=-1.0)
            assert lengths.device.type == "cpu" and y.device.type == dev
            (y.sum() + (h * c[:, :, :2]).sum()).backward()
            results.append([t.cpu().numpy() for t in (y, h, c, xs.grad, m.weight_hr_l0.grad)])
            m.zero_grad()
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    finally:
        fake_device.uninstall()
        rg.set_default_dtype(dtype)


def test_packed_sequences_inside_jit_refuse_rather_than_freeze():
    lstm = nn.LSTM(2, 3)
    f = rg.jit(lambda x: lstm(R.pack_padded_sequence(x, [3, 2]))[0].data)
    with pytest.raises(rg.JitError, match="batch sizes decide the shapes"):
        f(rg.randn(3, 2, 2))
    g = rg.jit(lambda x, y: R.pad_sequence([x, y], batch_first=True))
    a, b = rg.randn(2, 3), rg.randn(4, 3)
    np.testing.assert_array_equal(g(a, b).numpy(), R.pad_sequence([a, b], True).numpy())
