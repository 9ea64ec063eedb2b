"""Gaps found by running PyTorch's OpInfo sample inputs (ops 'l' to 'q') against
retrograd, each rebuilt here by hand and compared with torch computed in the test:
lstsq's 'gels' driver and its singular values' gradient, tensor tolerances of
matrix_rank and pinv, nextafter's gradient, normal's layout keyword, native_group_norm
on an empty batch and its differentiable statistics; plus small whole programs."""

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


def _r(t: torch.Tensor) -> rg.Tensor:
    """The same values in retrograd, requiring grad when `t` does."""
    out = rg.tensor(t.detach().numpy().copy())
    return out.requires_grad_(True) if t.requires_grad else out


def _pair(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, dtype=torch.float64, generator=g)
    return t.clone().requires_grad_(True), _r(t).requires_grad_(True)


# ---------------------------------------------------------------- lstsq

@pytest.mark.parametrize("shapes", [((4, 3), (4, 2)), ((2, 3), (2, 2)), ((2, 5, 3), (2, 5, 1))])
def test_lstsq_gels_no_rank_and_residuals_when_tall(shapes):
    ta, ra = _pair(*shapes[0], seed=1)
    tb, rb = _pair(*shapes[1], seed=2)
    e = torch.linalg.lstsq(ta, tb, driver="gels")
    a = rg.linalg.lstsq(ra, rb, driver="gels")
    for name in ("solution", "residuals", "rank", "singular_values"):
        close(getattr(a, name), getattr(e, name), name)
    if e.residuals.numel():  # the residuals' gradient, as torch's
        ge = torch.autograd.grad((e.residuals * e.residuals).sum(), [ta, tb])
        ga = rg.autograd.grad((a.residuals * a.residuals).sum(), [ra, rb])
        for x, y in zip(ga, ge):
            close(x, y, "grad", 1e-8)


@pytest.mark.parametrize("driver", ["gelsd", "gelss"])
def test_lstsq_singular_values_carry_no_gradient(driver):
    ta, ra = _pair(4, 3, seed=3)
    tb, rb = _pair(4, 2, seed=4)
    e = torch.linalg.lstsq(ta, tb, driver=driver)
    a = rg.linalg.lstsq(ra, rb, driver=driver)
    assert a.singular_values.requires_grad == e.singular_values.requires_grad
    assert a.residuals.requires_grad == e.residuals.requires_grad
    close(a.singular_values, e.singular_values)


# ---------------------------------------------------------------- tensor tolerances

def _batch():
    g = torch.Generator().manual_seed(5)
    A = torch.randn(3, 4, 4, dtype=torch.float64, generator=g)
    A[1, :, 0] = A[1, :, 1] * 1e-3  # a nearly singular matrix
    return A


TOLS = [dict(rtol=torch.tensor([0.1, 0.2, 0.9], dtype=torch.float64)),
        dict(atol=torch.tensor([0.5, 2.0, 0.0], dtype=torch.float64)),
        dict(atol=torch.tensor([1.0], dtype=torch.float64), rtol=torch.tensor(0.01))]


@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("kw", TOLS)
def test_matrix_rank_and_pinv_take_tensor_tolerances(kw, hermitian):
    A = _batch()
    if hermitian:
        A = A + A.mT
    rkw = {k: _r(v) for k, v in kw.items()}
    close(rg.linalg.matrix_rank(_r(A), hermitian=hermitian, **rkw),
          torch.linalg.matrix_rank(A, hermitian=hermitian, **kw), "rank")
    close(rg.linalg.pinv(_r(A), hermitian=hermitian, **rkw),
          torch.linalg.pinv(A, hermitian=hermitian, **kw), "pinv", 1e-8)


def test_matrix_rank_empty_batch_tensor_rtol():
    A = torch.zeros(0, 5, 5, dtype=torch.float64)
    r = torch.zeros(0, dtype=torch.float32)
    close(rg.linalg.matrix_rank(_r(A), atol=None, rtol=_r(r)),
          torch.linalg.matrix_rank(A, atol=None, rtol=r))


def test_pinv_tensor_rtol_gradient():
    tA, rA = _pair(3, 4, 2, seed=6)
    tr = torch.tensor([1e-3, 1e-2, 0.1], dtype=torch.float64)
    ge = torch.autograd.grad(torch.linalg.pinv(tA, rtol=tr).square().sum(), tA)[0]
    ga = rg.autograd.grad(rg.linalg.pinv(rA, rtol=_r(tr)).square().sum(), rA)[0]
    close(ga, ge, "grad", 1e-8)


# ---------------------------------------------------------------- nextafter, normal

def test_nextafter_is_differentiable_in_input():
    tx, rx = _pair(3, 4, seed=7)
    ty, ry = _pair(4, seed=8)
    e, a = torch.nextafter(tx, ty), rg.nextafter(rx, ry)
    close(a, e, "value", 0)
    assert a.requires_grad
    c = torch.randn(3, 4, dtype=torch.float64)
    ge = torch.autograd.grad(e, [tx, ty], c)
    ga = rg.autograd.grad(a, [rx, ry], _r(c))
    for x, y in zip(ga, ge):
        close(x, y, "grad", 0)


def test_normal_takes_layout_and_pin_memory():
    e = torch.normal(1.6, 0.3, [2, 3], dtype=torch.float64, layout=torch.strided,
                     pin_memory=False)
    a = rg.normal(1.6, 0.3, [2, 3], dtype=rg.float64, layout=rg.strided, pin_memory=False)
    assert tuple(a.shape) == tuple(e.shape) and a.dtype == rg.float64
    with pytest.raises(NotImplementedError):
        torch.normal(0.0, 1.0, [2], layout=torch.sparse_coo)
    with pytest.raises(NotImplementedError):
        rg.normal(0.0, 1.0, [2], layout=rg.sparse_coo)


# ---------------------------------------------------------------- native_group_norm

def test_native_group_norm_empty_batch():
    x = torch.zeros(0, 2, dtype=torch.float64)
    w, b = torch.ones(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
    e = torch.native_group_norm(x, w, b, 0, 2, 1, 1, 1e-5)
    a = rg.native_group_norm(_r(x), _r(w), _r(b), 0, 2, 1, 1, 1e-5)
    for x_, y_ in zip(a, e):
        close(x_, y_)


def test_native_group_norm_statistics_are_differentiable():
    tx, rx = _pair(2, 6, 3, seed=9)
    tw, rw = _pair(6, seed=10)
    tb, rb = _pair(6, seed=11)
    e = torch.native_group_norm(tx, tw, tb, 2, 6, 3, 2, 0.5)
    a = rg.native_group_norm(rx, rw, rb, 2, 6, 3, 2, 0.5)
    assert [t.requires_grad for t in a] == [t.requires_grad for t in e]
    cots = [torch.randn(t.shape, dtype=torch.float64) for t in e]
    ge = torch.autograd.grad(list(e), [tx, tw, tb], cots)
    ga = rg.autograd.grad(list(a), [rx, rw, rb], [_r(c) for c in cots])
    for x, y in zip(ga, ge):
        close(x, y, "grad", 1e-8)


# ---------------------------------------------------------------- whole programs

def _poly_fit(L, x, y, coef0, driver, steps=3):
    """Fit a polynomial by lstsq inside an outer loop that moves the sample points to
    shrink the residuals (SGD); the losses and the final points come back."""
    x = L.nn.Parameter(x)
    opt = L.optim.SGD([x], lr=1e-3)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        V = L.stack([x ** k for k in range(3)], -1)
        sol = L.linalg.lstsq(V, y[:, None], driver=driver)
        fit = (V @ sol.solution).squeeze(-1)
        loss = ((fit - y) ** 2).sum() + sol.residuals.sum() \
            + 1e-2 * (sol.solution - coef0).square().sum()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, x.detach()


@pytest.mark.parametrize("driver", ["gels", "gelsd"])
def test_program_polynomial_fit_with_lstsq(driver):
    g = torch.Generator().manual_seed(12)
    x = torch.linspace(-1, 1, 8, dtype=torch.float64)
    y = 1 - 2 * x + 0.5 * x ** 3 + 0.1 * torch.randn(8, dtype=torch.float64, generator=g)
    coef0 = torch.tensor([[1.0], [-2.0], [0.0]], dtype=torch.float64)
    le, xe = _poly_fit(torch, x.clone(), y, coef0, driver)
    la, xa = _poly_fit(rg, _r(x), _r(y), _r(coef0), driver)
    for a, e in zip(la, le):
        close(a, e, "loss", 1e-8)
    close(xa, xe, "points", 1e-8)


def _rank_aware_pinv(L, A, rtol):
    """Per-matrix tolerances: the numerical rank and a pseudo-inverse penalty, as a
    regulariser in a small solve."""
    rank = L.linalg.matrix_rank(A.detach(), rtol=rtol)
    P = L.linalg.pinv(A, rtol=rtol)
    loss = (P.square().sum((-2, -1)) * rank.to(A.dtype)).sum()
    return loss, rank


def test_program_rank_aware_pinv():
    A = _batch().requires_grad_(True)
    rA = _r(A.detach()).requires_grad_(True)
    rtol = torch.tensor([1e-2, 1e-2, 0.5], dtype=torch.float64)
    le, ke = _rank_aware_pinv(torch, A, rtol)
    la, ka = _rank_aware_pinv(rg, rA, _r(rtol))
    close(ka, ke, "rank")
    close(la, le, "loss", 1e-8)
    close(rg.autograd.grad(la, rA)[0], torch.autograd.grad(le, A)[0], "grad", 1e-7)


def test_program_group_norm_statistics_regulariser():
    """A conv block whose loss also uses native_group_norm's mean and rstd (a feature-
    statistics penalty); two Adam steps."""
    torch.manual_seed(13)
    tconv = torch.nn.Conv1d(2, 4, 3, dtype=torch.float64)
    rconv = rg.nn.Conv1d(2, 4, 3, dtype=rg.float64)
    rconv.load_state_dict({k: _r(v) for k, v in tconv.state_dict().items()})
    x = torch.randn(3, 2, 7, dtype=torch.float64)

    def run(L, conv, x):
        opt = L.optim.Adam(conv.parameters(), lr=1e-2)
        out = []
        for _ in range(2):
            opt.zero_grad()
            h = conv(x)
            y, mean, rstd = L.native_group_norm(h, None, None, 3, 4, 5, 2, 1e-5)
            loss = y.tanh().sum() + mean.square().sum() + rstd.log().sum()
            loss.backward()
            opt.step()
            out.append(loss.detach())
        return out

    le, la = run(torch, tconv, x), run(rg, rconv, _r(x))
    for a, e in zip(la, le):
        close(a, e, "loss", 1e-8)
    close(rconv.weight, tconv.weight, "weight", 1e-8)


# ---------------------------------------------------------------- nll_loss dtype

@pytest.mark.parametrize("case", ["nll_f16", "nll_f32_default64", "ce_weight_default64",
                                  "ce_smooth_default64"])
def test_mean_reduced_class_losses_keep_the_input_dtype(case):
    """'mean' divides by the total weight; the result keeps the input's dtype, not the
    default dtype's."""
    F, G = torch.nn.functional, rg.nn.functional
    old_t, old_r = torch.get_default_dtype(), rg.get_default_dtype()
    dt = torch.float16 if case == "nll_f16" else torch.float32
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(14)).to(dt)
    t = torch.tensor([0, 2, 1, -100])
    try:
        if case != "nll_f16":
            torch.set_default_dtype(torch.float64)
            rg.set_default_dtype(rg.float64)
        if case.startswith("nll"):
            e, a = F.nll_loss(x, t), G.nll_loss(_r(x), _r(t))
        elif case == "ce_weight_default64":
            w = torch.tensor([0.2, 1.0, 3.0], dtype=dt)
            e, a = F.cross_entropy(x, t, weight=w), G.cross_entropy(_r(x), _r(t), weight=_r(w))
        else:
            e = F.cross_entropy(x, t, label_smoothing=0.1)
            a = G.cross_entropy(_r(x), _r(t), label_smoothing=0.1)
    finally:
        torch.set_default_dtype(old_t)
        rg.set_default_dtype(old_r)
    close(a, e, case, 2e-3 if dt == torch.float16 else 1e-6)


# ---------------------------------------------------------------- lerp

def test_lerp_float16_rounds_once_like_torch():
    g = torch.Generator().manual_seed(15)
    x, y = torch.randn(200, generator=g).half(), torch.randn(200, generator=g).half()
    w = torch.rand(200, generator=g).half()
    close(rg.lerp(_r(x), _r(y), _r(w)), torch.lerp(x, y, w), "tensor weight", 0)
    close(rg.lerp(_r(x), _r(y[:1].reshape(())), 0.4), torch.lerp(x, y[:1].reshape(()), 0.4),
          "number weight", 0)


def test_lerp_complex_number_weight():
    g = torch.Generator().manual_seed(16)
    x = torch.randn(3, 4, dtype=torch.complex128, generator=g)
    y = torch.randn(3, 4, dtype=torch.complex128, generator=g)
    close(rg.lerp(_r(x), _r(y), 0.4j), torch.lerp(x, y, 0.4j))
    close(rg.lerp(_r(x), _r(y), 0.3 + 0.6j), torch.lerp(x, y, 0.3 + 0.6j))
    with pytest.raises(RuntimeError):
        torch.lerp(x.real, y.real, 0.4j)
    with pytest.raises(RuntimeError):
        rg.lerp(_r(x.real), _r(y.real), 0.4j)


# ---------------------------------------------------------------- complex forms

def _cpair(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, dtype=torch.complex128, generator=g) * scale
    return t.clone().requires_grad_(True), _r(t).requires_grad_(True)


@pytest.mark.parametrize("name", ["ldexp", "logaddexp", "l1_loss"])
def test_complex_inputs_like_torch(name):
    tx, rx = _cpair(3, 4, seed=17, scale=2.0)
    ty, ry = _cpair(3, 4, seed=18, scale=2.0)
    if name == "l1_loss":
        e, a = torch.nn.functional.l1_loss(tx, ty), rg.nn.functional.l1_loss(rx, ry)
    else:
        e, a = getattr(torch, name)(tx, ty), getattr(rg, name)(rx, ry)
    close(a, e, name, 1e-12)
    c = torch.randn(e.shape, dtype=e.dtype, generator=torch.Generator().manual_seed(19))
    ge = torch.autograd.grad(e, [tx, ty], c)
    ga = rg.autograd.grad(a, [rx, ry], _r(c))
    for x, y in zip(ga, ge):
        close(x, y, "grad", 1e-10)


def test_complex_logaddexp_edge_values():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([complex(-inf, 1), complex(inf, 0), complex(1, 2), complex(nan, 0)])
    y = torch.tensor([complex(-inf, 2), complex(1, 1), complex(1, -1), complex(1, 0)])
    a, e = rg.logaddexp(_r(x), _r(y)).numpy(), torch.logaddexp(x, y).numpy()
    assert a.dtype == e.dtype
    np.testing.assert_allclose(a, e, rtol=1e-12, equal_nan=True)


# ---------------------------------------------------------------- refusals (error inputs)

def _same_refusal(tf, rf):
    """torch raises; retrograd raises an exception of the same type."""
    with pytest.raises(Exception) as te:
        tf()
    with pytest.raises(type(te.value)):
        rf()


@pytest.mark.parametrize("case", ["float_steps", "bool_steps", "negative_steps",
                                  "float_tensor_steps", "1d_start", "1d_end"])
@pytest.mark.parametrize("fn", ["linspace", "logspace"])
def test_space_refusals(fn, case):
    def call(L):
        f = getattr(L, fn)
        if case == "float_steps":
            return f(0, 3, 1.0)
        if case == "bool_steps":
            return f(0, 3, True)
        if case == "negative_steps":
            return f(0, 3, -1)
        if case == "float_tensor_steps":
            return f(0, 3, L.tensor(2.0))
        if case == "1d_start":
            return f(L.zeros(2), L.tensor(3.0), 4)
        return f(L.tensor(0.0), L.ones(1), 4)
    _same_refusal(lambda: call(torch), lambda: call(rg))


def test_space_still_takes_0d_tensors():
    e = torch.linspace(torch.tensor(0.5), torch.tensor(3), 5)
    a = rg.linspace(rg.tensor(0.5), rg.tensor(3), rg.tensor(5))
    close(a, e)


@pytest.mark.parametrize("start", ["vector", "bool", "float"])
def test_narrow_tensor_start_must_be_0d_integral(start):
    x = torch.randn(4, 5)
    s = {"vector": torch.tensor([2]), "bool": torch.tensor(True),
         "float": torch.tensor(2.0)}[start]
    _same_refusal(lambda: x.narrow(1, s, 2), lambda: _r(x).narrow(1, _r(s), 2))
    close(_r(x).narrow(1, rg.tensor(2), 2), x.narrow(1, torch.tensor(2), 2))


@pytest.mark.parametrize("fn,shape", [("max_pool1d", (0, 10)), ("max_pool1d", (2, 0, 10)),
                                      ("avg_pool1d", (0, 10)), ("max_pool2d", (1, 0, 4, 4)),
                                      ("avg_pool2d", (1, 2, 0, 4)), ("max_pool3d", (0, 1, 2, 10)),
                                      ("avg_pool3d", (1, 0, 1, 2, 2))])
def test_pools_refuse_empty_channels_or_planes(fn, shape):
    x = torch.randn(*shape)
    _same_refusal(lambda: getattr(torch.nn.functional, fn)(x, 1),
                  lambda: getattr(rg.nn.functional, fn)(_r(x), 1))


def test_pools_take_an_empty_batch():
    x = torch.randn(0, 2, 4, 4)
    close(rg.nn.functional.max_pool2d(_r(x), 2), torch.nn.functional.max_pool2d(x, 2))
    close(rg.nn.functional.avg_pool2d(_r(x), 2), torch.nn.functional.avg_pool2d(x, 2))


def test_multinomial_out():
    p = torch.tensor([[0.2, 0.8], [0.5, 0.5]], dtype=torch.float64)
    for shape in [(2, 2), (1, 2)]:  # the right shape, and one resized
        oe, oa = torch.empty(*shape, dtype=torch.int64), rg.empty(*shape, dtype=rg.int64)
        e, a = torch.multinomial(p, 2, out=oe), rg.multinomial(_r(p), 2, out=oa)
        assert e is oe and a is oa
        assert tuple(oa.shape) == tuple(oe.shape) and oa.dtype == rg.int64
        assert sorted(oa.numpy()[0].tolist()) == [0, 1]  # without replacement
    _same_refusal(lambda: torch.multinomial(p, 2, out=torch.empty(2, 2, dtype=torch.float64)),
                  lambda: rg.multinomial(_r(p), 2, out=rg.empty(2, 2, dtype=rg.float64)))
