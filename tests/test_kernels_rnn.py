"""The LSTM's compiled kernels (`kernels/rnn.py`, called from `ops/fused_rnn.py`) against
PyTorch, each case run with the kernels on (every size) and off: outputs, final states
and every gradient, float32 and float64, layouts, several layers and directions, given
states, one-step sequences, saturated gates, NaN, and the generic path for a second
derivative."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import kernels, nn

MODES = [("numba", 0), ("numpy", None)]


def _pair(kw, dtype, size, ref_dtype=None):
    rg.manual_seed(sum(size) + len(kw))  # the same weights every run
    mod = nn.LSTM(*size, dtype=dtype, **kw)
    ref = torch.nn.LSTM(*size, dtype=getattr(torch, np.dtype(ref_dtype or dtype).name), **kw)
    with torch.no_grad():
        for name, p in mod.named_parameters():
            getattr(ref, name).copy_(torch.tensor(p.numpy()))
    return mod, ref


def _run(mod, x, states, seeds, lib):
    t = rg if lib == "rg" else torch
    prep = (lambda a: a) if lib == "rg" else np.ascontiguousarray
    # (rg: the array's own layout, which creation would refuse when strides are negative,
    # as torch's does; ops may still hand the kernels such views)
    xs = [rg.Tensor._wrap(a).requires_grad_() if lib == "rg" else t.tensor(prep(a),
          requires_grad=True) for a in (x, *states)]
    out, (hn, cn) = mod(xs[0], tuple(xs[1:]) if states else None)
    loss = sum((a * t.tensor(s)).sum() for a, s in zip((out, hn, cn), seeds, strict=True))
    loss.backward()
    got = [out.detach().numpy(), hn.detach().numpy(), cn.detach().numpy()]
    got += [a.grad.numpy() for a in xs]
    got += [p.grad.numpy() for _, p in mod.named_parameters()]
    return got


def _up(x, st, seeds):
    f = lambda a: a.astype(np.float64)  # noqa: E731
    return f(x), [f(a) for a in st], [f(a) for a in seeds]


def _check(kw, dtype, L, N=3, size=(4, 6), states=True, scale=None, nan_at=None, tol=None,
           exact=False):
    """Both kernel modes against torch in `dtype`, or (`exact`) against torch in float64
    on the same numbers."""
    rng = np.random.default_rng(L * 7 + N)
    mod, ref = _pair(kw, dtype, size, np.float64 if exact else None)
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
    st = [rng.standard_normal((layers, N, H)).astype(dtype) for _ in range(2)] if states else []
    oshape = (N, L, H * dirs) if kw.get("batch_first") else (L, N, H * dirs)
    seeds = [rng.standard_normal(s).astype(dtype) for s in (oshape, (layers, N, H),
                                                            (layers, N, H))]
    if exact:
        theirs = _run(ref, *_up(x, st, seeds), "torch")
    else:
        theirs = _run(ref, x, st, seeds, "torch")
    for mode, min_size in MODES:
        for p in mod.parameters():
            p.grad = None
        with kernels.use(mode, min_size=min_size):
            ours = _run(mod, x, st, seeds, "rg")
        for a, b in zip(ours, theirs, strict=True):
            assert a.dtype == (np.dtype(dtype) if exact else b.dtype)
            if exact:
                a = a.astype(np.float64)
            torch.testing.assert_close(torch.tensor(a), torch.tensor(b), equal_nan=True,
                                       msg=lambda m, mode=mode: f"{mode}: {m}",
                                       **(tol or {}))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"bias": False},
                                {"num_layers": 2, "bidirectional": True}])
def test_lstm_matches_torch_with_and_without_kernels(dtype, kw):
    _check(kw, dtype, L=9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_one_step_and_zero_states(dtype):
    _check({}, dtype, L=1)
    _check({"bidirectional": True}, dtype, L=1, N=1, states=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_saturated_gates(dtype):
    """Pre-activations of +-tens to hundreds: the exp underflows (the float32 kernel's
    clamp), sigmoids reach 0 and 1, tanh +-1. float32's gradients through the nearly
    saturated gates are large (tens) and carry float32's rounding of both libraries, so
    they compare with the exact gradients (torch in float64 on the same numbers) and
    slack: torch's own float32 gradients there are off by up to ~1e-3."""
    if dtype == np.float32:
        _check({}, dtype, L=5, scale=40.0, exact=True, tol={"rtol": 1e-4, "atol": 5e-4})
    else:
        _check({}, dtype, L=5, scale=40.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_nan_propagates_like_torch(dtype):
    _check({}, dtype, L=4, nan_at=(2, 1, 0))


def test_lstm_non_contiguous_input_and_states():
    """Reversed, strided and transposed inputs (the bidirectional layer's reversed
    projections are another)."""
    rng = np.random.default_rng(3)
    mod, ref = _pair({}, np.float64, (4, 5))
    x = rng.standard_normal((4, 3, 7))[::-1, :, ::2]
    h0 = rng.standard_normal((1, 5, 3)).transpose(0, 2, 1)
    c0 = rng.standard_normal((1, 5, 3)).transpose(0, 2, 1)
    seeds = [rng.standard_normal(s) for s in ((4, 3, 5), (1, 3, 5), (1, 3, 5))]
    theirs = _run(ref, x, [h0, c0], seeds, "torch")
    with kernels.use("numba", min_size=0):
        ours = _run(mod, x, [h0, c0], seeds, "rg")
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(torch.tensor(a), torch.tensor(b))


def test_lstm_second_derivative_takes_the_generic_path():
    """create_graph records the unrolled recurrence: a gradient of a gradient still
    matches PyTorch with the kernels on."""
    rng = np.random.default_rng(4)
    mod, ref = _pair({}, np.float64, (3, 4))
    x = rng.standard_normal((5, 2, 3))
    res = []
    for lib, m in (("rg", mod), ("torch", ref)):
        t = rg if lib == "rg" else torch
        xt = t.tensor(x, requires_grad=True)
        out = m(xt)[0]
        (gx,) = t.autograd.grad((out * out).sum(), [xt], create_graph=True)
        (ggx,) = t.autograd.grad((gx * gx).sum(), [xt])
        res.append((gx.detach().numpy(), ggx.numpy()))
    with kernels.use("numba", min_size=0):
        xt = rg.tensor(x, requires_grad=True)
        out = mod(xt)[0]
        (gx,) = rg.autograd.grad((out * out).sum(), [xt], create_graph=True)
        (ggx,) = rg.autograd.grad((gx * gx).sum(), [xt])
    for a, b in zip((gx.detach().numpy(), ggx.numpy()), res[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
