"""Gaps found by a second-order and complex sweep over PyTorch's OpInfo samples: for each
case the inputs are rebuilt by hand; the double backward (vjp with create_graph=True, then
the gradient of <vjp, w> w.r.t. the inputs and the cotangent) or the complex128 vjp of the
real loss sum((out * conj(v)).real) is compared with torch computed here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce")


def _grad2(lib, f, arrays, v, ws):
    """(f's values, its vjp with cotangent v, and the gradient of <vjp, ws> w.r.t. the
    inputs and v) in `lib`, as NumPy arrays (None where a gradient is absent)."""
    xs = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = f(lib, *xs)
    vt = lib.tensor(v, requires_grad=True)
    g = lib.autograd.grad(out, xs, vt, create_graph=True)
    s = sum((gi * lib.tensor(w)).sum() for gi, w in zip(g, ws))
    gg = lib.autograd.grad(s, xs + [vt], allow_unused=True)
    return [out] + list(g) + list(gg)


def _same2(f, *arrays, seed: int = 0) -> None:
    """f (written for either library) agrees in torch and retrograd: values, vjps and the
    second-order gradients."""
    gen = np.random.default_rng(seed)
    out = f(torch, *[torch.tensor(a) for a in arrays])
    v = gen.standard_normal(tuple(out.shape))
    ws = [gen.standard_normal(a.shape) for a in arrays]
    e, a = _grad2(torch, f, arrays, v, ws), _grad2(rg, f, arrays, v, ws)
    for i, (x, y) in enumerate(zip(e, a)):
        x = torch.zeros(()) if x is None else x
        y = rg.zeros(()) if y is None else y
        close(y, x, f"result {i}", tol=1e-9)


# ------------------------------------------------- prod reductions with zeros, 2nd order

_X = np.array([[0.0, 13.0], [0.0, 0.0], [15.0, 19.0]])
_SRC = np.array([[2.0, 0.0], [0.0, 0.0], [2.0, 3.0], [2.0, 2.0]])


def test_index_reduce_prod_double_backward_with_zeros():
    """torch's OpInfo sample: one zero from self or from source, a zero from each, none.
    The double backward of each exclusive product was lost where a zero was masked out."""
    _same2(lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 1, 2, 0]), s, "prod",
                                            include_self=True), _X, _SRC)


def test_scatter_reduce_prod_double_backward_with_zeros():
    idx = np.array([[0, 1, 0, 1], [1, 0, 0, 1], [0, 0, 1, 1]])
    x = np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 0.0]])
    src = np.array([[0.0, 4.0, 5.0, 1.5], [2.0, 0.0, 0.5, 3.0], [0.0, 1.0, 2.0, 0.0]])
    _same2(lambda lib, x, s: x.scatter_reduce(1, lib.tensor(idx), s, "prod"), x, src)
    _same2(lambda lib, x, s: x.scatter_reduce(1, lib.tensor(idx), s, "prod",
                                              include_self=False), x, src)


def test_prod_reduce_single_zero_first_order_unchanged():
    """No zeros, and a zero self taking the others' product: first and second order."""
    x = np.array([[1.5, 2.0], [0.0, -3.0]])
    src = np.array([[2.0, 0.5], [-1.0, 4.0], [3.0, 2.0]])
    _same2(lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 1, 1]), s, "prod"), x, src)


# ------------------------------------------------- gather with an empty index

@pytest.mark.parametrize("shape,dtype", [((2, 0), "uint8"), ((0, 3), "int64"),
                                         ((2, 0), "float64")])
def test_gather_empty_index_of_any_rank(shape, dtype):
    """torch checks only `dim` for an empty index: an empty result of its shape, still on
    the input's graph (a zero gradient), where we refused the rank or the dtype."""
    x = np.random.default_rng(0).standard_normal(5)
    res = []
    for lib in (torch, rg):
        xt = lib.tensor(x, requires_grad=True)
        out = lib.gather(xt, 0, lib.zeros(shape, dtype=getattr(lib, dtype)))
        assert out.requires_grad
        res.append((out, lib.autograd.grad(out.sum(), xt)[0]))
    close(res[1][0], res[0][0])
    close(res[1][1], res[0][1])
    with pytest.raises(IndexError):
        rg.gather(rg.tensor(x), 1, rg.zeros((2, 0), dtype=rg.int64))


# ------------------------------------------------- lstsq's empty residuals

@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd"])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_lstsq_empty_residuals_are_on_the_graph(driver, dtype):
    """Where torch leaves the residuals empty (m <= n, or gelsy), they still require grad
    (a second differentiable output, real for complex A), and a loss using them works."""
    gen = np.random.default_rng(1)
    a, b = gen.standard_normal((2, 3)), gen.standard_normal((2, 2))
    res = []
    for lib in (torch, rg):
        A = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
        B = lib.tensor(b, dtype=getattr(lib, dtype))
        sol, resid, _, _ = lib.linalg.lstsq(A, B, driver=driver)
        assert resid.requires_grad and tuple(resid.shape) == (0,)
        res.append((resid, lib.autograd.grad(sol.abs().sum() + resid.sum(), A)[0]))
        with lib.no_grad():
            assert not lib.linalg.lstsq(A, B, driver=driver)[1].requires_grad
    close(res[1][0], res[0][0])
    close(res[1][1], res[0][1], tol=1e-8)


# ------------------------------------------------- whole programs

def _sgd(lib, params, lr: float) -> None:
    with lib.no_grad():
        for p in params:
            p.sub_(lr * p.grad)


def _critic(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 16), nn.LayerNorm(16), nn.LeakyReLU(0.2),
                         nn.Linear(16, 16), nn.Softplus(), nn.Linear(16, 1)).double()


def test_wgan_gp_critic_steps_match_torch():
    """WGAN-GP: the gradient penalty's double backward through Linear/LayerNorm/LeakyReLU/
    Softplus, three SGD steps of the critic (by hand: torch.optim's first import is slow)."""
    tD, rD = _critic(torch), _critic(rg)
    rD.load_state_dict({k: rg.tensor(v.detach().numpy().copy())
                        for k, v in tD.state_dict().items()})
    gen = np.random.default_rng(0)
    for _ in range(3):
        arrays = gen.standard_normal((8, 4)), gen.standard_normal((8, 4)), gen.random((8, 1))
        losses = []
        for lib, D in ((torch, tD), (rg, rD)):
            real, fake, eps = (lib.tensor(a) for a in arrays)
            D.zero_grad()
            inter = (eps * real + (1 - eps) * fake).requires_grad_(True)
            d_int = D(inter)
            g, = lib.autograd.grad(d_int, inter, lib.ones_like(d_int), create_graph=True)
            gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
            loss = D(fake).mean() - D(real).mean() + 10.0 * gp
            loss.backward()
            _sgd(lib, D.parameters(), 1e-2)
            losses.append(loss)
        close(losses[1], losses[0])
    for (k, p), (_, q) in zip(tD.named_parameters(), rD.named_parameters()):
        close(q, p, k)


def test_complex_network_sgd_steps_match_torch():
    """Complex weights, FFT filtering, modReLU, angle and |z|: complex gradients of a real
    loss (torch's conjugate-Wirtinger convention) and three SGD steps."""
    gen = np.random.default_rng(0)

    def c(*shape):
        return gen.standard_normal(shape) + 1j * gen.standard_normal(shape)
    init = [c(8, 6) / 3, c(8), c(8), c(3, 8) / 3]
    X, Y = c(5, 6), gen.standard_normal((5, 3))

    def run(lib):
        ps = [lib.tensor(a.copy(), requires_grad=True) for a in init]
        x, y = lib.tensor(X), lib.tensor(Y)
        grads = []
        for _ in range(3):
            w1, b, f, w2 = ps
            h = lib.fft.ifft(lib.fft.fft(x @ w1.T + b, dim=-1) * f, dim=-1)
            mag = h.abs()
            h = h * (lib.nn.functional.relu(mag - 0.5) / (mag + 1e-6))
            z = h @ w2.T
            logits = z.real + lib.angle(z) + (z * z.conj()).real.sqrt()
            loss = ((logits - y) ** 2).mean() + 1e-3 * sum((p.abs() ** 2).sum() for p in ps)
            loss.backward()
            grads += [p.grad.clone() for p in ps]
            _sgd(lib, ps, 1e-2)
            for p in ps:
                p.grad = None
        return grads + ps

    for i, (e, a) in enumerate(zip(run(torch), run(rg))):
        close(a, e, f"tensor {i}", tol=1e-12)


def test_second_order_maml_and_hessian_match_torch():
    """Second-order MAML (two inner steps with create_graph) through SiLU/ELU, then a
    Hessian and an hvp of a task loss w.r.t. a bias (autograd.functional)."""
    gen = np.random.default_rng(0)
    init = [gen.standard_normal((16, 1)) * 0.5, np.zeros(16),
            gen.standard_normal((16, 16)) * 0.25, np.zeros(16),
            gen.standard_normal((1, 16)) * 0.25, np.zeros(1)]
    tasks = []
    for _ in range(2):
        a, ph = gen.uniform(0.1, 5), gen.uniform(0, np.pi)
        xs, xq = gen.uniform(-5, 5, (5, 1)), gen.uniform(-5, 5, (5, 1))
        tasks.append((xs, a * np.sin(xs + ph), xq, a * np.sin(xq + ph)))

    def run(lib):
        F = lib.nn.functional
        ps = [lib.tensor(p.copy(), requires_grad=True) for p in init]

        def net(x, w):
            h = F.silu(F.linear(x, w[0], w[1]))
            return F.linear(F.elu(F.linear(h, w[2], w[3])), w[4], w[5])
        meta = 0
        for xs, ys, xq, yq in tasks:
            xs, ys, xq, yq = (lib.tensor(v) for v in (xs, ys, xq, yq))
            fast = ps
            for _ in range(2):
                g = lib.autograd.grad(F.mse_loss(net(xs, fast), ys), fast, create_graph=True)
                fast = [w - 0.01 * gi for w, gi in zip(fast, g)]
            meta = meta + F.mse_loss(net(xq, fast), yq)
        meta.backward()
        xs, ys = lib.tensor(tasks[0][0]), lib.tensor(tasks[0][1])

        def f(b):
            return F.mse_loss(net(xs, [ps[0], b] + ps[2:]), ys)
        H = lib.autograd.functional.hessian(f, ps[1].detach())
        _, hv = lib.autograd.functional.hvp(f, ps[1].detach(), lib.ones(16, dtype=lib.float64))
        return [meta] + [p.grad for p in ps] + [H, hv]

    for i, (e, a) in enumerate(zip(run(torch), run(rg))):
        close(a, e, f"result {i}", tol=1e-12)


# ------------------------------------------------- complex pow, first and second order

@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 0 ** y and log(0): NaN, as torch
def test_complex_pow_double_backward_and_zero_base():
    """The exponent's derivative tests "y >= 0" where the base is 0; for a complex y torch
    means real and >= 0. Tensors refused the comparison under create_graph, and NumPy's
    lexicographic order gave 0 where torch gives NaN (0 ** (1+1j))."""
    xs = np.array([0, 0, 0, 1.5 - 0.5j, -2 + 1j, 0.3j])
    ys = np.array([1 + 1j, 2 + 0j, -1 + 0j, 0.5 + 2j, 3 + 0j, -0.5 + 0.2j])
    gen = np.random.default_rng(0)
    v, w = (gen.standard_normal(6) + 1j * gen.standard_normal(6) for _ in range(2))

    def run(lib):
        x, y = (lib.tensor(a, requires_grad=True) for a in (xs, ys))
        vt = lib.tensor(v, requires_grad=True)
        gx, gy = lib.autograd.grad(x ** y, (x, y), vt, create_graph=True)
        s = sum((g * lib.tensor(w).conj()).real.sum() for g in (gx, gy))
        return [gx, gy] + list(lib.autograd.grad(s, (x, y, vt)))

    for i, (e, a) in enumerate(zip(run(torch), run(rg))):
        e, a = e.detach().numpy(), a.detach().numpy()
        assert a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12, err_msg=f"result {i}")
