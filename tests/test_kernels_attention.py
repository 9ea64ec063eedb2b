"""Attention's compiled softmax and its vjp (`kernels.attention`, float32) against torch,
with the kernels on (every size) and off: values and the three gradients, causal or not,
more queries than keys and fewer, a row whose scores overflow the diagonal shift, and
NaN and inf in queries and keys (a row with a NaN or inf it sees is NaN, hidden keys
leave earlier rows alone, as in torch's math backend)."""

import warnings

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import retrograd as rg
from retrograd import kernels
from retrograd.kernels import attention as KA

F = torch.nn.functional
MODES = ["numba", "numpy"]


def _run(q, k, v, g, causal, scale=None):
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(*ts, is_causal=causal, scale=scale)
    want.backward(torch.from_numpy(g))
    rs = [rg.tensor(a, requires_grad=True) for a in (q, k, v)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = rg.nn.functional.scaled_dot_product_attention(*rs, is_causal=causal, scale=scale)
        got.backward(rg.tensor(g))
    return (want, *(t.grad for t in ts)), (got, *(t.grad for t in rs))


def _close(want, got, **kw):
    for w, r in zip(want, got):
        torch.testing.assert_close(torch.from_numpy(np.asarray(r.numpy())), w.detach(),
                                   equal_nan=True, **kw)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("L,S", [(16, 16), (5, 7), (9, 4), (1, 1)])
def test_values_and_gradients_as_torch(mode, causal, L, S):
    rng = np.random.default_rng(L * 10 + S)
    q = rng.standard_normal((3, 2, L, 8)).astype(np.float32)
    k = rng.standard_normal((3, 2, S, 8)).astype(np.float32)
    v = rng.standard_normal((3, 2, S, 5)).astype(np.float32)
    g = rng.standard_normal((3, 2, L, 5)).astype(np.float32)
    with kernels.use(mode, min_size=0):
        want, got = _run(q, k, v, g, causal, scale=0.7)
    _close(want, got, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("mode", MODES)
def test_overflowing_rows_take_the_maximum(mode):
    """Scores far above the diagonal (key 0 of each row, by 200): exp of the shift would
    overflow, so the row is shifted by its maximum; the weights are still torch's."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 2, 6, 4)).astype(np.float32)
    k = rng.standard_normal((2, 2, 6, 4)).astype(np.float32)
    q[..., 0] = 10.0
    k[..., 0, :] = 0.0
    k[..., 0, 0] = 40.0
    v = rng.standard_normal((2, 2, 6, 3)).astype(np.float32)
    g = rng.standard_normal((2, 2, 6, 3)).astype(np.float32)
    for causal in (True, False):
        with kernels.use(mode, min_size=0):
            want, got = _run(q, k, v, g, causal)
        _close(want, got, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["q", "k"])
@pytest.mark.parametrize("causal", [True, False])
def test_nonfinite_scores(mode, bad, where, causal):
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 2, 5, 3)).astype(np.float32) for _ in range(3))
    {"q": q, "k": k}[where][0, 1, 2, 0] = bad
    ts = [torch.from_numpy(a) for a in (q, k, v)]
    # torch's math backend adds its causal mask (a hidden NaN key spoils every row); its
    # flash kernel sets it, as retrograd does; a NaN query row is NaN in the math backend
    with sdpa_kernel(SDPBackend.MATH if where == "q" else SDPBackend.FLASH_ATTENTION):
        want = F.scaled_dot_product_attention(*ts, is_causal=causal)
    with kernels.use(mode, min_size=0), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = rg.nn.functional.scaled_dot_product_attention(*(rg.tensor(a) for a in (q, k, v)),
                                                            is_causal=causal)
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, equal_nan=True)


def test_kernel_exp_is_within_one_ulp():
    """The weights of one visible key against an offset x are 1 / (1 + exp(x)): the exp
    behind them against float64's, within 3 ulps with the two divisions (0 below -87.3)."""
    x = np.linspace(-80.0, 0.0, 4001, dtype=np.float32)
    s = np.zeros((x.size, 2), np.float32)  # row: diagonal score 0, then key 1 scored x
    s[:, 1] = x
    flat = s.reshape(x.size, 2)
    # L = 1 query per head, non-causal, scale 1: weights (1, e^x) / (1 + e^x)
    KA.softmax_rows_(flat, flat.view(np.int32), 1, 2, np.float32(1.0), False,
                     np.empty(2, np.float32), np.empty(2, np.float32), np.empty(2, np.int32))
    e = s[:, 1].astype(np.float64) / s[:, 0].astype(np.float64)  # = exp(x) up to rounding
    want = np.exp(x.astype(np.float64))
    assert np.all(np.abs(e - want) <= 3 * 2.0 ** -23 * want)
    z = np.zeros((1, 2), np.float32)
    z[0, 1] = -100.0
    KA.softmax_rows_(z, z.view(np.int32), 1, 2, np.float32(1.0), False,
                     np.empty(2, np.float32), np.empty(2, np.float32), np.empty(2, np.int32))
    assert z[0, 1] == 0.0 and z[0, 0] == 1.0


def test_the_compiled_path_runs():
    """With the kernels on, float32 attention goes through both loops (a spy)."""
    calls = []
    orig = (KA.softmax_rows_, KA.softmax_rows_vjp_)

    def spy(i):
        def f(*a):
            calls.append(i)
            return orig[i](*a)
        return f

    KA.softmax_rows_, KA.softmax_rows_vjp_ = spy(0), spy(1)
    try:
        rng = np.random.default_rng(0)
        q, k, v = (rg.tensor(rng.standard_normal((2, 2, 4, 3)).astype(np.float32),
                             requires_grad=True) for _ in range(3))
        with kernels.use("numba", min_size=0):
            rg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    finally:
        KA.softmax_rows_, KA.softmax_rows_vjp_ = orig
    assert calls == [0, 1]
