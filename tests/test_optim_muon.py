"""rg.optim.Muon against torch.optim.Muon: the same steps on the same model (float32, where
PyTorch's bfloat16 Newton-Schulz rounding matters, and float64), the Newton-Schulz result
itself, rg.jit replays of the step, state_dict layout, and torch's refusals."""

import numpy as np
import pytest
import torch

import retrograd as rg

RNG = np.random.default_rng(7)


def _steps(lib, dtype, steps=6, **kw):
    """Muon's steps on two matrices given the same gradients (as torch computes gradients
    to the last bit differently, and bfloat16 rounding would magnify that)."""
    rng = np.random.default_rng(3)
    dt = getattr(lib, dtype)
    ps = [lib.tensor(rng.standard_normal(s), dtype=dt, requires_grad=True)
          for s in ((20, 7), (3, 20))]
    opt = lib.optim.Muon(ps, lr=0.02, **kw)
    for _ in range(steps):
        for p in ps:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)), dtype=dt)
        opt.step()
    bufs = [opt.state[p]["momentum_buffer"].detach().numpy() for p in ps]
    return [p.detach().numpy() for p in ps], bufs, opt.state_dict()


def _train(lib, steps=8):
    rng = np.random.default_rng(3)
    ps = [lib.tensor(rng.standard_normal(s), dtype=lib.float32, requires_grad=True)
          for s in ((20, 7), (3, 20))]
    x = lib.tensor(rng.standard_normal((16, 7)), dtype=lib.float32)
    y = lib.tensor(rng.standard_normal((16, 3)), dtype=lib.float32)
    opt = lib.optim.Muon(ps, lr=0.02)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((lib.tanh(x @ ps[0].T) @ ps[1].T - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in ps]


KWS = [{}, {"nesterov": False}, {"momentum": 0.3, "weight_decay": 0.0},
       {"adjust_lr_fn": "match_rms_adamw"}, {"adjust_lr_fn": "original", "ns_steps": 3,
                                             "ns_coefficients": (2.0, -1.5, 0.5)}]


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-13)])
@pytest.mark.parametrize("kw", KWS, ids=[str(k) for k in KWS])
def test_steps_match_torch(dtype, tol, kw):
    want, want_bufs, want_sd = _steps(torch, dtype, **kw)
    got, got_bufs, got_sd = _steps(rg, dtype, **kw)
    for a, b in zip(got_bufs, want_bufs):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(1.0, np.abs(b).max()))
    # The parameters: PyTorch's float32 sums inside its bfloat16 matmuls may round an
    # element the other way now and then, which the iteration spreads (about lr / 256 a
    # step); a float32 iteration, a wrong lr scaling or weight decay is off by 1e-2.
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-3)
        assert np.mean(np.abs(a - b) <= tol * max(1.0, np.abs(b).max())) > 0.4
    assert got_sd["param_groups"] == want_sd["param_groups"]
    assert list(got_sd["state"][0]) == list(want_sd["state"][0]) == ["momentum_buffer"]


def test_training_follows_torch():
    """A small model trained with Muon: gradients differ from torch's in the last bits, so
    the bfloat16 updates may round the other way now and then (about lr * 2**-8)."""
    want_losses, want = _train(torch)
    got_losses, got = _train(rg)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-3)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=0, atol=5e-3)
    assert want_losses[-1] < want_losses[0]


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (16, 16), (24, 9)])
def test_newton_schulz_rounds_as_torch_bfloat16(shape):
    """The orthogonalised update equals PyTorch's bfloat16 result (a plain float32
    iteration would differ by about 1e-2)."""
    from torch.optim._muon import _zeropower_via_newtonschulz as torch_ns

    from retrograd.optim.orthogonal import _newton_schulz

    g = RNG.standard_normal(shape).astype(np.float32)
    want = torch_ns(torch.from_numpy(g), (3.4445, -4.775, 2.0315), 5, 1e-7).float().numpy()
    got = _newton_schulz(g, (3.4445, -4.775, 2.0315), 5, 1e-7, False)
    np.testing.assert_array_equal(got, want)
    traced = _newton_schulz(rg.tensor(g), (3.4445, -4.775, 2.0315), 5, 1e-7, True)
    np.testing.assert_array_equal(traced.numpy(), want)


def test_traced_step_replays_like_eager():
    ws = [rg.tensor(RNG.standard_normal((6, 4)).astype(np.float32), requires_grad=True)
          for _ in range(2)]
    twins = [rg.tensor(w.numpy().copy(), requires_grad=True) for w in ws]
    opt, opt2 = rg.optim.Muon(ws, lr=0.05), rg.optim.Muon(twins, lr=0.05)
    traced = rg.jit(lambda: opt2.step())
    for _ in range(6):
        for w, t in zip(ws, twins):
            g = RNG.standard_normal(w.shape).astype(np.float32)
            w.grad, t.grad = rg.tensor(g.copy()), rg.tensor(g.copy())
        opt.step()
        traced()
    for w, t in zip(ws, twins):
        np.testing.assert_allclose(t.numpy(), w.numpy(), rtol=0, atol=1e-6)
    assert traced.trace_count <= 2


@pytest.mark.parametrize("kw", [{"lr": -1.0}, {"momentum": -0.1}, {"weight_decay": -1.0},
                                {"adjust_lr_fn": "sqrt"}])
def test_bad_arguments_raise_as_torch(kw):
    with pytest.raises(ValueError) as want:
        torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], **kw)
    with pytest.raises(ValueError) as got:
        rg.optim.Muon([rg.zeros(2, 2, requires_grad=True)], **kw)
    assert str(want.value).split()[0] in str(got.value)


def test_refuses_non_matrix_parameters_and_too_many_steps():
    with pytest.raises(ValueError, match="2D"):
        torch.optim.Muon([torch.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match=r"2D parameters.*\(3,\)"):
        rg.optim.Muon([rg.zeros(3, requires_grad=True)])
    w = rg.zeros(2, 2, requires_grad=True)
    opt = rg.optim.Muon([w], ns_steps=100)
    w.grad = rg.ones(2, 2)
    with pytest.raises(ValueError, match="less than 100"):
        opt.step()


def test_dtype_class_is_exported_as_torch_dtype():
    """`rg.dtype` is the class of retrograd's dtypes, as `torch.dtype` is of torch's, so
    `isinstance(t.dtype, torch.dtype)` checks and `dtype: torch.dtype` annotations port."""
    for name in ("float32", "float64", "int64", "bool", "float16", "int8", "uint8"):
        assert isinstance(getattr(torch, name), torch.dtype)
        assert isinstance(getattr(rg, name if name != "bool" else "bool_"), rg.dtype)
    assert isinstance(rg.ones(2).dtype, rg.dtype)
    assert not isinstance("float32", rg.dtype) and not isinstance(rg.float32, str)
    assert rg.dtype("float64") == rg.float64
