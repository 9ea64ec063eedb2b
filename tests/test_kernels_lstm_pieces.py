"""The LSTM's compiled kernels with the batch rows split into pieces over threads
(`ops.fused_rnn._lstm_pieces`), and their own small products (`kernels.rnn._mm`, `_mm_nt`,
no BLAS):
row and column counts that are not multiples of the products' blocks of four, every
gradient against the one-piece run (bit for bit: each row is computed the same way in
any piece), the NumPy path and PyTorch; layouts, float64, several layers and directions,
and a training step under rg.jit."""

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn.functional as F
from retrograd import kernels, nn, optim, threads
from retrograd.kernels import rnn as krnn
from retrograd.ops import fused_rnn


@pytest.fixture
def pieces(monkeypatch):
    """Every LSTM kernel call split over two threads, however small."""
    monkeypatch.setattr(fused_rnn, "_LSTM_MIN_WORK", 0)
    old = threads.num_threads()
    threads.set_num_threads(2)
    yield
    threads.set_num_threads(old)


def _spy(monkeypatch):
    calls = []
    for name in ("lstm_forward", "lstm_backward"):
        real = getattr(krnn, name)

        def wrap(*a, real=real, name=name):
            calls.append((name, a[-2], a[-1]))
            return real(*a)
        monkeypatch.setattr(krnn, name, wrap)
    return calls


def _run(mod, x, states, seeds, lib):
    t = rg if lib == "rg" else torch
    xs = [t.tensor(np.ascontiguousarray(a), requires_grad=True) for a in (x, *states)]
    out, (hn, cn) = mod(xs[0], tuple(xs[1:]))
    loss = sum((a * t.tensor(s)).sum() for a, s in zip((out, hn, cn), seeds, strict=True))
    loss.backward()
    got = [out.detach().numpy(), hn.detach().numpy(), cn.detach().numpy()]
    got += [a.grad.numpy() for a in xs]
    got += [p.grad.numpy() for _, p in mod.named_parameters()]
    for p in mod.parameters():
        p.grad = None
    return got


def _case(kw, dtype, L, N, size):
    rg.manual_seed(L + N + sum(size))
    mod = nn.LSTM(*size, dtype=dtype, **kw)
    ref = torch.nn.LSTM(*size, dtype=getattr(torch, np.dtype(dtype).name), **kw)
    with torch.no_grad():
        for name, p in mod.named_parameters():
            getattr(ref, name).copy_(torch.tensor(p.numpy()))
    rng = np.random.default_rng(L * 11 + N)
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * dirs
    H = size[1]
    shape = (N, L, size[0]) if kw.get("batch_first") else (L, N, size[0])
    oshape = (N, L, H * dirs) if kw.get("batch_first") else (L, N, H * dirs)
    x = rng.standard_normal(shape).astype(dtype)
    st = [rng.standard_normal((layers, N, H)).astype(dtype) for _ in range(2)]
    seeds = [rng.standard_normal(s).astype(dtype) for s in (oshape, (layers, N, H),
                                                            (layers, N, H))]
    return mod, ref, x, st, seeds


CASES = [({}, np.float32, 6, 7, (5, 7)),      # 7 rows: pieces of 4 and 3; H 7: K % 4 == 3
         ({}, np.float32, 5, 9, (3, 5)),      # H 5: K % 4 == 1
         ({}, np.float32, 4, 9, (6, 33)),     # a row in a block of four or alone
         ({}, np.float64, 6, 10, (4, 6)),
         ({"batch_first": True}, np.float32, 4, 8, (3, 8)),
         ({"bias": False}, np.float32, 3, 5, (2, 4)),
         ({"num_layers": 2, "bidirectional": True}, np.float32, 5, 6, (3, 5)),
         ({"num_layers": 2, "bidirectional": True}, np.float64, 4, 3, (2, 3))]


@pytest.mark.parametrize("kw, dtype, L, N, size", CASES)
def test_pieces_equal_one_piece_and_match_numpy_and_torch(pieces, monkeypatch, kw, dtype, L,
                                                          N, size):
    mod, ref, x, st, seeds = _case(kw, dtype, L, N, size)
    theirs = _run(ref, x, st, seeds, "torch")
    with kernels.use("numpy"):
        plain = _run(mod, x, st, seeds, "rg")
    calls = _spy(monkeypatch)
    with kernels.use("numba", min_size=0):
        split = _run(mod, x, st, seeds, "rg")
        assert {c[0] for c in calls} == {"lstm_forward", "lstm_backward"}
        assert all((a, b) != (0, N) for _, a, b in calls)  # every call had two pieces
        threads.set_num_threads(1)
        calls.clear()
        whole = _run(mod, x, st, seeds, "rg")
        assert calls and all((a, b) == (0, N) for _, a, b in calls)
    for a, b in zip(split, whole, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b, c in zip(split, plain, theirs, strict=True):
        assert a.dtype == np.dtype(dtype)
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b))
        torch.testing.assert_close(torch.tensor(a), torch.tensor(c))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_products_match_blas(dtype):
    """The kernels' products (`_mm`, `_mm_nt`, compiled with the module's kernels) on
    blocks whose rows, inner size and columns leave every remainder of four, against
    NumPy's product."""
    rng = np.random.default_rng(5)
    with kernels.use("numba", min_size=0):
        mod, _, x, st, seeds = _case({}, dtype, 2, 3, (2, 3))
        _run(mod, x, st, seeds, "rg")  # compiles the module's kernels and helpers
    import numba

    mm = numba.njit(lambda a, b, out: krnn._mm(a, b, out))
    mm_nt = numba.njit(lambda a, bT, out: krnn._mm_nt(a, bT, out))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for R in range(1, 10):
        for K in (1, 2, 3, 4, 5, 8, 11, 64):
            for J in (1, 3, 4, 13):
                a = rng.standard_normal((R, K)).astype(dtype)
                b = rng.standard_normal((K, J)).astype(dtype)
                want = a.astype(np.float64) @ b
                out = np.full((R, J), np.nan, dtype)
                mm(a, b, out)
                np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
                out = np.full((R, J), np.nan, dtype)
                mm_nt(a, np.ascontiguousarray(b.T), out)
                np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_training_under_jit_with_pieces_matches_eager(pieces):
    """A training step with the LSTM under rg.jit, the kernels on and split in pieces:
    the replayed steps give the eager losses and parameters."""
    class Last(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 6, batch_first=True)
            self.head = nn.Linear(6, 3)

        def forward(self, x):
            return self.head(self.lstm(x)[0][:, -1])

    def train(use_jit):
        rg.manual_seed(0)
        model = Last()
        opt = optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = rg.jit(step) if use_jit else step
        r = np.random.default_rng(6)
        losses = [run(rg.tensor(r.standard_normal((10, 7, 4)).astype(np.float32)),
                      rg.tensor(r.integers(0, 3, 10))).item() for _ in range(4)]
        return model, losses

    with kernels.use("numba", min_size=0):
        m_eager, l_eager = train(False)
        m_jit, l_jit = train(True)
    np.testing.assert_allclose(l_jit, l_eager, rtol=1e-6, atol=1e-7)
    for p, q in zip(m_jit.parameters(), m_eager.parameters(), strict=True):
        np.testing.assert_allclose(p.data, q.data, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("first, then", [("numpy", "numba"), ("numba", "numpy")])
def test_mode_switched_between_forward_and_backward(pieces, first, then):
    """Either backward reads either forward's record: the forward with the kernels one
    way and the backward the other (the compiled side split in pieces) match torch."""
    mod, ref, x, st, seeds = _case({}, np.float32, 5, 9, (4, 6))
    theirs = _run(ref, x, st, seeds, "torch")
    xs = [rg.tensor(a, requires_grad=True) for a in (x, *st)]
    with kernels.use(first, min_size=0):
        out, (hn, cn) = mod(xs[0], tuple(xs[1:]))
        loss = sum((a * rg.tensor(s)).sum() for a, s in zip((out, hn, cn), seeds, strict=True))
    with kernels.use(then, min_size=0):
        loss.backward()
    ours = [out.detach().numpy(), hn.detach().numpy(), cn.detach().numpy()]
    ours += [a.grad.numpy() for a in xs] + [p.grad.numpy() for p in mod.parameters()]
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b))
