"""The fused layer_norm and recurrence rows through their public layers, against PyTorch:
float32 accuracy on both of layer_norm's forward routes, a backward run twice on one graph
(a scan op's rules share one computation per cotangent), and second derivatives through the
layers (the generic paths)."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import nn
from retrograd.nn import functional as F

RNG = np.random.default_rng(11)


def _pair(a, dtype):
    return (rg.tensor(a.astype(dtype), requires_grad=True),
            torch.tensor(a.astype(dtype), requires_grad=True))


@pytest.mark.parametrize("offset", [0.0, 3.0, 1e3])
def test_layer_norm_float32_is_as_accurate_as_torch(offset):
    """Rows with small and large means against their spread (the one-pass and the centred
    statistics): the float32 error against a float64 reference stays near PyTorch's own."""
    x = RNG.standard_normal((64, 48)) * RNG.uniform(0.1, 3.0, (64, 1))
    x[::2] += offset * RNG.uniform(-1, 1, (32, 1))
    w, b = RNG.standard_normal(48), RNG.standard_normal(48)
    g = RNG.standard_normal(x.shape)
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    yr = torch.nn.functional.layer_norm(ref[0], (48,), ref[1], ref[2])
    yr.backward(torch.tensor(g))
    expect = [yr.detach().numpy()] + [t.grad.numpy() for t in ref]

    def run32(lib):
        ts = [_pair(a, np.float32)[lib] for a in (x, w, b)]
        f = F.layer_norm if lib == 0 else torch.nn.functional.layer_norm
        y = f(ts[0], (48,), ts[1], ts[2])
        y.backward(rg.tensor(g.astype(np.float32)) if lib == 0 else torch.tensor(g).float())
        return [np.asarray(y.detach().numpy(), np.float64)] + \
            [np.asarray(t.grad.numpy(), np.float64) for t in ts]

    ours, theirs = run32(0), run32(1)
    for o, t, e in zip(ours, theirs, expect, strict=True):
        scale = np.abs(e).max()
        assert np.abs(o - e).max() <= 4 * np.abs(t - e).max() + 1e-6 * scale


def test_layer_norm_second_derivatives_match_torch():
    x, tx = _pair(RNG.standard_normal((3, 2, 5)), np.float64)
    w, tw = _pair(RNG.standard_normal((2, 5)), np.float64)
    b, tb = _pair(RNG.standard_normal((2, 5)), np.float64)
    v = RNG.standard_normal((3, 2, 5))
    y = F.layer_norm(x, (2, 5), w, b)
    ty = torch.nn.functional.layer_norm(tx, (2, 5), tw, tb)
    gs = rg.autograd.grad((y * y * rg.tensor(v)).sum(), [x, w, b], create_graph=True)
    tgs = torch.autograd.grad((ty * ty * torch.tensor(v)).sum(), [tx, tw, tb], create_graph=True)
    h = rg.autograd.grad(sum((gi * gi).sum() for gi in gs), [x, w, b])
    th = torch.autograd.grad(sum((gi * gi).sum() for gi in tgs), [tx, tw, tb])
    for a, t in zip(h, th, strict=True):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-9, atol=1e-11)


def _layers(kind, dtype, size=(3, 4), **kw):
    mod = getattr(nn, kind)(*size, dtype=dtype, **kw)
    ref = getattr(torch.nn, kind)(*size, dtype=getattr(torch, np.dtype(dtype).name), **kw)
    with torch.no_grad():
        for name, p in mod.named_parameters():
            getattr(ref, name).copy_(torch.tensor(p.numpy()))
    return mod, ref


def _loss(out, final):
    """A loss reading the outputs and the final states (an LSTM's h and c)."""
    if isinstance(final, tuple):
        return (out * out).sum() + (final[0] * final[1]).sum()
    return (out * out).sum() + (final * final).sum()


KINDS = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]


@pytest.mark.parametrize("kind,kw", KINDS)
def test_recurrent_backward_twice_on_one_graph_matches_torch(kind, kw):
    """retain_graph: the same cotangent object twice (nothing handed out the first time is
    handed out again), then another cotangent."""
    mod, ref = _layers(kind, np.float64, **kw)
    x, tx = _pair(RNG.standard_normal((5, 2, 3)), np.float64)
    loss = _loss(*mod(x))
    tloss = _loss(*ref(tx))
    seed = rg.tensor(1.0, dtype=rg.float64)
    for k in range(3):
        loss.backward(seed if k < 2 else seed * 2.0, retain_graph=k < 2)
        tloss.backward(torch.tensor(1.0 if k < 2 else 2.0, dtype=torch.float64),
                       retain_graph=k < 2)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
        for (_, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_float32_matches_torch_at_benchmark_size(kind):
    mod, ref = _layers(kind, np.float32, size=(32, 64))
    x, tx = _pair(RNG.standard_normal((64, 32, 32)), np.float32)
    out = mod(x)[0]
    tout = ref(tx)[0]
    g = RNG.standard_normal(out.shape).astype(np.float32)
    out.backward(rg.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    for (_, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind,kw", KINDS)
def test_recurrent_second_derivatives_match_torch(kind, kw, bidirectional):
    mod, ref = _layers(kind, np.float64, bidirectional=bidirectional, **kw)
    x, tx = _pair(RNG.standard_normal((3, 2, 3)), np.float64)
    params = [p for _, p in mod.named_parameters()]
    tparams = [p for _, p in ref.named_parameters()]
    gs = rg.autograd.grad(_loss(*mod(x)), [x] + params, create_graph=True)
    tgs = torch.autograd.grad(_loss(*ref(tx)), [tx] + tparams, create_graph=True)
    h2 = rg.autograd.grad(sum((gi * gi).sum() for gi in gs), [x] + params)
    th2 = torch.autograd.grad(sum((gi * gi).sum() for gi in tgs), [tx] + tparams)
    for a, t in zip(h2, th2, strict=True):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-8, atol=1e-10)
