"""The LSTM's NumPy fast path (`ops/fused_rnn.py`) against PyTorch: sequence lengths that
are not a multiple of the backward's block of steps, given initial states, saturated gates
(the sigmoid as 1 / (1 + exp(-z)) overflows exp quietly), float32 and float64."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import nn

RNG = np.random.default_rng(5)


def _pair(kind_kw, dtype, size):
    mod = nn.LSTM(*size, dtype=dtype, **kind_kw)
    ref = torch.nn.LSTM(*size, dtype=getattr(torch, np.dtype(dtype).name), **kind_kw)
    with torch.no_grad():
        for name, p in mod.named_parameters():
            getattr(ref, name).copy_(torch.tensor(p.numpy()))
    return mod, ref


def _run(mod, x, h0, c0, gy, gh, gc, lib):
    t = rg if lib == "rg" else torch
    xs = [t.tensor(a, requires_grad=True) for a in (x, h0, c0)]
    out, (hn, cn) = mod(xs[0], (xs[1], xs[2]))
    loss = (out * t.tensor(gy)).sum() + (hn * t.tensor(gh)).sum() + (cn * t.tensor(gc)).sum()
    loss.backward()
    got = [out.detach().numpy(), hn.detach().numpy(), cn.detach().numpy()]
    got += [a.grad.numpy() for a in xs]
    got += [p.grad.numpy() for _, p in mod.named_parameters()]
    return got


@pytest.mark.parametrize("L", [1, 7, 8, 9, 19])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}, {"bias": False}])
def test_lstm_lengths_and_states_match_torch(L, kw):
    mod, ref = _pair(kw, np.float64, (3, 5))
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1) * dirs
    x = RNG.standard_normal((L, 4, 3))
    h0, c0 = RNG.standard_normal((2, layers, 4, 5))
    gy = RNG.standard_normal((L, 4, 5 * dirs))
    gh, gc = RNG.standard_normal((2, layers, 4, 5))
    ours = _run(mod, x, h0, c0, gy, gh, gc, "rg")
    theirs = _run(ref, x, h0, c0, gy, gh, gc, "torch")
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_lstm_saturated_gates_match_torch_without_warnings():
    """Pre-activations of +-hundreds: exp(-z) overflows to inf, the sigmoid is exactly 0,
    and nothing warns. float64 against PyTorch closely; float32's error against that float64
    reference stays near PyTorch's own float32 error (the gradients through saturated gates
    are tiny and carry float32's rounding)."""
    torch.manual_seed(0)
    rg.manual_seed(0)
    x = RNG.standard_normal((10, 2, 3)) * 300
    h0, c0 = RNG.standard_normal((2, 1, 2, 6))
    gy = RNG.standard_normal((10, 2, 6))
    gh, gc = RNG.standard_normal((2, 1, 2, 6))
    mod, ref = _pair({}, np.float64, (3, 6))
    mod32, ref32 = _pair({}, np.float32, (3, 6))
    with torch.no_grad():
        for (_, p), (_, q), (_, p32) in zip(ref.named_parameters(), ref32.named_parameters(),
                                            mod32.named_parameters(), strict=True):
            p.copy_(q.double())
            q64 = q.detach().numpy()
            p32.data[...] = q64
    for (_, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters(), strict=True):
        p.data[...] = q.detach().numpy()
    args = (x, h0, c0, gy, gh, gc)
    args32 = tuple(a.astype(np.float32) for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _run(mod, *args, "rg")
        ours32 = _run(mod32, *args32, "rg")
    truth = _run(ref, *args, "torch")
    theirs32 = _run(ref32, *args32, "torch")
    for a, a32, t, t32 in zip(ours, ours32, truth, theirs32, strict=True):
        assert np.all(np.isfinite(a)) and np.all(np.isfinite(a32))
        # saturated gates: 1 - s cancels at the O(1) scale of the cotangents, so an output
        # that saturation made tiny keeps absolute (not relative) errors of that scale
        scale = max(np.abs(t).max(), 1.0)
        np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-12 * scale)
        assert np.abs(a32 - t).max() <= 4 * np.abs(t32 - t).max() + 1e-5 * scale


def test_gru_saturated_gates_match_torch_without_warnings():
    """The GRU's fast path takes its sigmoids the same way: saturated gates, no warning."""
    torch.manual_seed(0)
    rg.manual_seed(0)
    mod = nn.GRU(3, 6, dtype=np.float64)
    ref = torch.nn.GRU(3, 6, dtype=torch.float64)
    with torch.no_grad():
        for name, p in mod.named_parameters():
            getattr(ref, name).copy_(torch.tensor(p.numpy()))
    x = RNG.standard_normal((10, 2, 3)) * 300
    h0 = RNG.standard_normal((1, 2, 6))
    gy = RNG.standard_normal((10, 2, 6))
    got = []
    for lib, m in (("rg", mod), ("torch", ref)):
        t = rg if lib == "rg" else torch
        xs = [t.tensor(a, requires_grad=True) for a in (x, h0)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out, hn = m(xs[0], xs[1])
            ((out * t.tensor(gy)).sum() + (hn * hn).sum()).backward()
        got.append([out.detach().numpy(), hn.detach().numpy()] + [a.grad.numpy() for a in xs]
                   + [p.grad.numpy() for _, p in m.named_parameters()])
    for a, b in zip(*got, strict=True):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * max(np.abs(b).max(), 1.0))
