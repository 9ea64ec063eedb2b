"""The GRU's compiled kernels (`kernels/rnn.py`, called from `ops/fused_rnn.py`) against
PyTorch, each case run with the kernels on (every size) and off: outputs, final state and
every gradient, float32 and float64, layouts, no bias, several layers and directions, a
given state, one-step sequences, saturated gates, NaN, non-contiguous inputs, a switch of
mode between forward and backward, and the generic path for a second derivative."""

import copy

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels, nn

MODES = [("numba", 0), ("numpy", None)]


def _pair(kw, dtype, size, seed=0):
    """retrograd's and torch's GRU with the same parameters, drawn from `seed` as torch
    draws them (uniform within 1/sqrt(hidden size))."""
    rng = np.random.default_rng(seed)
    mod = nn.GRU(*size, dtype=dtype, **kw)
    ref = torch.nn.GRU(*size, dtype=getattr(torch, np.dtype(dtype).name), **kw)
    k = size[1] ** -0.5
    with torch.no_grad():
        for name, p in mod.named_parameters():
            p.data[...] = rng.uniform(-k, k, p.shape).astype(dtype)
            getattr(ref, name).copy_(torch.tensor(p.numpy()))
    return mod, ref


def _run(mod, x, states, seeds, lib, between=None):
    t = rg if lib == "rg" else torch
    prep = (lambda a: a) if lib == "rg" else np.ascontiguousarray
    # (rg: the array's own layout, which creation would refuse when strides are negative,
    # as torch's does; ops may still hand the kernels such views)
    xs = [rg.Tensor._wrap(a).requires_grad_() if lib == "rg" else t.tensor(prep(a),
          requires_grad=True) for a in (x, *states)]
    out, hn = mod(xs[0], xs[1] if states else None)
    loss = sum((a * t.tensor(s)).sum() for a, s in zip((out, hn), seeds, strict=True))
    if between is None:
        loss.backward()
    else:
        with between():
            loss.backward()
    got = [out.detach().numpy(), hn.detach().numpy()]
    got += [a.grad.numpy() for a in xs]
    got += [p.grad.numpy() for _, p in mod.named_parameters()]
    return got


def _compare(ours, theirs, mode, tol=None):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b), equal_nan=True,
                                   msg=lambda m, mode=mode: f"{mode}: {m}", **(tol or {}))


def _case(kw, dtype, L, N=3, size=(4, 6), states=True, scale=None, nan_at=None, seed=0):
    rng = np.random.default_rng(L * 7 + N + 1000 * seed)
    mod, ref = _pair(kw, dtype, size, seed)
    if scale is not None:  # large weights: saturated gates
        for (_, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters(), strict=True):
            p.data[...] = p.numpy() * scale
            with torch.no_grad():
                q.copy_(torch.tensor(p.numpy()))
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * dirs
    H = size[1]
    shape = (N, L, size[0]) if kw.get("batch_first") else (L, N, size[0])
    x = rng.standard_normal(shape).astype(dtype)
    if nan_at is not None:
        x[nan_at] = np.nan
    st = [rng.standard_normal((layers, N, H)).astype(dtype)] if states else []
    oshape = (N, L, H * dirs) if kw.get("batch_first") else (L, N, H * dirs)
    seeds = [rng.standard_normal(s).astype(dtype) for s in (oshape, (layers, N, H))]
    return mod, ref, x, st, seeds


def _check(kw, dtype, L, tol=None, exact=False, **case):
    """Both kernel modes against torch in `dtype`, or (`exact`) against torch in float64
    on the same data, rounded to `dtype`."""
    mod, ref, x, st, seeds = _case(kw, dtype, L, **case)
    if exact:
        up = [a.astype(np.float64) for a in (x, *st, *seeds)]
        theirs = [a.astype(dtype) for a in _run(
            copy.deepcopy(ref).double(), up[0], up[1:1 + len(st)], up[1 + len(st):], "torch")]
    else:
        theirs = _run(ref, x, st, seeds, "torch")
    for mode, min_size in MODES:
        for p in mod.parameters():
            p.grad = None
        with kernels.use(mode, min_size=min_size):
            ours = _run(mod, x, st, seeds, "rg")
        _compare(ours, theirs, mode, tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"bias": False},
                                {"num_layers": 2, "bidirectional": True}])
def test_gru_matches_torch_with_and_without_kernels(dtype, kw):
    _check(kw, dtype, L=9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_one_step_and_zero_state(dtype):
    _check({}, dtype, L=1)
    _check({"bidirectional": True}, dtype, L=1, N=1, states=False)
    _check({"bias": False}, dtype, L=2, states=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_saturated_gates(dtype):
    """Pre-activations of +-tens to hundreds: the exp underflows (the float32 kernel's
    clamp), sigmoids reach 0 and 1, tanh +-1. float32's gradients through nearly
    saturated gates (tens) lose digits to rounding in any float32 computation (torch's
    own float32 ones differ from the exact ones by up to 1.4e-3 on such draws, twice
    ours), so float32 compares with the exact gradients (torch in float64) and slack."""
    if dtype == np.float32:
        _check({}, dtype, L=5, scale=40.0, exact=True, tol={"rtol": 1e-4, "atol": 5e-4})
    else:
        _check({}, dtype, L=5, scale=40.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_nan_propagates_like_torch(dtype):
    _check({}, dtype, L=4, nan_at=(2, 1, 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_backward_reads_either_forwards_record(dtype):
    """The forward in one mode, the backward in the other: both save one record."""
    mod, ref, x, st, seeds = _case({"num_layers": 2}, dtype, L=6)
    theirs = _run(ref, x, st, seeds, "torch")
    for fwd, bwd in (("numba", "numpy"), ("numpy", "numba")):
        for p in mod.parameters():
            p.grad = None
        with kernels.use(fwd, min_size=0):
            ours = _run(mod, x, st, seeds, "rg",
                        between=lambda bwd=bwd: kernels.use(bwd, min_size=0))
        _compare(ours, theirs, f"{fwd} then {bwd}")


def test_gru_non_contiguous_input_and_state():
    """Reversed, strided and transposed inputs (the bidirectional layer's reversed
    projections are another)."""
    rng = np.random.default_rng(3)
    for kw in ({}, {"bidirectional": True}):
        mod, ref = _pair(kw, np.float64, (4, 5))
        d = 2 if kw else 1
        x = rng.standard_normal((4, 3, 7))[::-1, :, ::2]
        h0 = rng.standard_normal((d, 5, 3)).transpose(0, 2, 1)
        seeds = [rng.standard_normal(s) for s in ((4, 3, 5 * d), (d, 3, 5))]
        theirs = _run(ref, x, [h0], seeds, "torch")
        with kernels.use("numba", min_size=0):
            ours = _run(mod, x, [h0], seeds, "rg")
        _compare(ours, theirs, "numba")


def test_gru_second_derivative_takes_the_generic_path():
    """create_graph records the unrolled recurrence (the generic path): a gradient of a
    gradient (for the input and a weight) still matches PyTorch with the kernels on. The
    second backward also runs the compiled one, through the first's use of the output."""
    rng = np.random.default_rng(4)
    mod, ref = _pair({}, np.float64, (3, 4))
    x = rng.standard_normal((5, 2, 3))
    res = []
    for lib, m in (("rg", mod), ("torch", ref)):
        t = rg if lib == "rg" else torch
        with kernels.use("numba", min_size=0):
            xt = t.tensor(x, requires_grad=True)
            w = m.weight_hh_l0
            out = m(xt)[0]
            gx, gw = t.autograd.grad((out * out).sum(), [xt, w], create_graph=True)
            ggx, ggw = t.autograd.grad((gx * gx).sum() + (gw * gw).sum(), [xt, w])
        res.append([a.detach().numpy() for a in (gx, gw, ggx, ggw)])
    for a, b in zip(*res, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_gru_kernels_run_only_when_on(monkeypatch):
    """The compiled path is the one taken under 'numba' (so the cases above test it), and
    never under 'numpy' or below the size threshold."""
    from retrograd.kernels import rnn as krnn
    calls = []
    for name in ("gru_forward", "gru_backward"):
        fn = getattr(krnn, name)
        monkeypatch.setattr(krnn, name, lambda *a, fn=fn, name=name: (calls.append(name),
                                                                    fn(*a))[1])
    mod, ref, x, st, seeds = _case({}, np.float32, L=3)
    for mode, min_size, expected in (("numba", 0, ["gru_forward", "gru_backward"]),
                                     ("numpy", None, []), ("numba", 10 ** 9, [])):
        calls.clear()
        with kernels.use(mode, min_size=min_size):
            _run(mod, x, st, seeds, "rg")
        assert calls == expected, mode


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}])
def test_gru_pieces_on_openblas_threads_equal_one_piece_and_torch(monkeypatch, dtype, kw):
    """With two intra-op threads and OpenBLAS's threads to lend, every GRU kernel call is
    split into two pieces of batch rows (7 rows: 4 and 3), giving the one-piece values bit
    for bit and torch's; where no thread can be lent, one piece."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from retrograd import threads
    from retrograd.kernels import rnn as krnn
    from retrograd.ops import fused_rnn
    monkeypatch.setattr(fused_rnn, "_LSTM_MIN_WORK", 0)
    calls = []
    for name in ("gru_forward", "gru_backward"):
        fn = getattr(krnn, name)
        monkeypatch.setattr(krnn, name, lambda *a, fn=fn: (calls.append(a[-2:]), fn(*a))[1])
    mod, ref, x, st, seeds = _case(kw, dtype, L=5, N=7)
    theirs = _run(ref, x, st, seeds, "torch")
    old = threads.num_threads()
    try:
        with threadpoolctl.threadpool_limits(2, user_api="blas"), \
                kernels.use("numba", min_size=0):
            threads.set_num_threads(2)
            lent = threads.lends(1)
            openblas = any(c.internal_api == "openblas" and c.threading_layer == "pthreads"
                           for c in threads._blas_libs())
            assert lent or not openblas  # NumPy's OpenBLAS lends its threads
            split = _run(mod, x, st, seeds, "rg")
            assert set(calls) == ({(0, 4), (4, 7)} if lent else {(0, 7)})
            assert len(calls) == (2 if lent else 1) * 2 * len(mod.all_weights)
            monkeypatch.setattr(threads, "lends", lambda extra: False)
            calls.clear()
            for p in mod.parameters():
                p.grad = None
            whole = _run(mod, x, st, seeds, "rg")
            assert calls and all(c == (0, 7) for c in calls)
    finally:
        threads.set_num_threads(old)
    for a, b in zip(split, whole, strict=True):
        np.testing.assert_array_equal(a, b)
    _compare(split, theirs, "pieces")
