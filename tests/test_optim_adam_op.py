"""Adam's and AdamW's parameter update is one op (`adam_apply`) when rg.jit traces a step:
the jitted steps equal the eager ones bit for bit, and both follow torch.optim."""

import numpy as np
import pytest
import torch

import retrograd as rg

CASES = [
    ("Adam", {}),
    ("Adam", {"weight_decay": 0.1}),
    ("Adam", {"amsgrad": True, "betas": (0.8, 0.95)}),
    ("AdamW", {}),
    ("AdamW", {"weight_decay": 0.3, "amsgrad": True}),
    ("AdamW", {"maximize": True, "eps": 1e-3}),
]


def _data(dtype):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((5, 3)).astype(dtype), rng.standard_normal(3).astype(dtype),
            rng.standard_normal((8, 5)).astype(dtype))


def _rg_run(name, kw, dtype, jit, steps=6):
    w0, b0, xv = _data(dtype)
    w, b = rg.tensor(w0, requires_grad=True), rg.tensor(b0, requires_grad=True)
    opt = getattr(rg.optim, name)([w, b], lr=0.05, **kw)
    x = rg.tensor(xv)

    def step():
        loss = ((x @ w + b).tanh() ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    fn = rg.jit(step) if jit else step
    for _ in range(steps):
        fn()
    return w.numpy().copy(), b.numpy().copy(), fn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kw", CASES)
def test_jitted_adam_equals_eager_and_torch(name, kw, dtype):
    we, be, _ = _rg_run(name, kw, dtype, jit=False)
    wj, bj, fn = _rg_run(name, kw, dtype, jit=True)
    np.testing.assert_array_equal(wj, we)
    np.testing.assert_array_equal(bj, be)
    assert ("adam_apply" if kw.get("amsgrad") else "adam_step") in fn.graph.source

    w0, b0, xv = _data(dtype)
    w, b = torch.tensor(w0, requires_grad=True), torch.tensor(b0, requires_grad=True)
    opt = getattr(torch.optim, name)([w, b], lr=0.05, **kw)
    x = torch.tensor(xv)
    for _ in range(6):
        loss = ((x @ w + b).tanh() ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.from_numpy(we), w.detach(), **tol)
    torch.testing.assert_close(torch.from_numpy(be), b.detach(), **tol)


def test_adam_apply_changes_lr_between_calls():
    """A new learning rate is a new trace (the factors are attributes), never a stale one."""
    w = rg.tensor(np.ones(4), requires_grad=True)
    opt = rg.optim.Adam([w], lr=0.1)

    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()

    fn = rg.jit(step)
    fn()
    fn()
    before = w.numpy().copy()
    opt.param_groups[0]["lr"] = 0.0
    fn()
    np.testing.assert_array_equal(w.numpy(), before)


def test_a_numpy_learning_rate_is_refused_by_name():
    w = rg.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match="learning rate given as a NumPy array"):
        rg.optim.Adam([w], lr=np.array(0.1))
