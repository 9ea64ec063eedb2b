"""Ports of neural-ODE and neural-operator programs (torchdiffeq-style solvers and adjoint,
FFJORD's Hutchinson trace, the Fourier Neural Operator with complex weights) compared with
PyTorch run inside each test, plus the gaps the port found."""

import math

import numpy as np
import pytest
from port_compare import close

import retrograd as rg

torch = pytest.importorskip("torch")


def test_private_C_linalg_error_is_linalg_error():
    """torchdiffeq's implicit solvers catch `torch._C._LinAlgError` around a solve."""
    assert torch._C._LinAlgError is torch.linalg.LinAlgError
    assert rg._C._LinAlgError is rg.linalg.LinAlgError
    for lib in (torch, rg):
        with pytest.raises(lib._C._LinAlgError):
            lib.linalg.solve(lib.zeros(2, 2, dtype=lib.float64), lib.ones(2, dtype=lib.float64))


def _fused_step(lib, name, complex_first):
    w = lib.nn.Parameter(lib.tensor(np.arange(3) + 1j))
    r = lib.nn.Parameter(lib.tensor(np.arange(3.0)))
    w.grad, r.grad = lib.ones_like(w), lib.ones_like(r)
    opt = getattr(lib.optim, name)([w, r] if complex_first else [r, w], lr=0.1, fused=True)
    try:
        opt.step()
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return type(e).__name__, str(e).split(" but ")[0], r.detach().numpy().tolist()
    return None, w.detach().numpy().tolist(), r.detach().numpy().tolist()


@pytest.mark.parametrize("name", ["SGD", "Adagrad", "Adam", "AdamW"])
@pytest.mark.parametrize("complex_first", [True, False])
def test_fused_optimizers_refuse_complex_parameters(name, complex_first):
    """`fused=True` on a complex parameter raises as PyTorch's step does, updating nothing."""
    want = _fused_step(torch, name, complex_first)
    assert want[0] is not None
    assert _fused_step(rg, name, complex_first) == want


def _fno_program(lib):
    """FNO1d/2d training as in the reference repo, in float64 with complex128 spectral
    weights: Adam with weight decay (complex parameters viewed as real), StepLR, LpLoss."""
    nn, F = lib.nn, lib.nn.functional
    rs = np.random.RandomState(0)

    class SpectralConv2d(nn.Module):
        def __init__(self, cin, cout, m1, m2):
            super().__init__()
            self.cout, self.m1, self.m2 = cout, m1, m2
            scale = 1 / (cin * cout)
            self.weights1 = nn.Parameter(scale * lib.rand(cin, cout, m1, m2, dtype=lib.cdouble))
            self.weights2 = nn.Parameter(scale * lib.rand(cin, cout, m1, m2, dtype=lib.cdouble))

        def forward(self, x):
            m1, m2 = self.m1, self.m2
            x_ft = lib.fft.rfft2(x)
            out_ft = lib.zeros(x.shape[0], self.cout, x.size(-2), x.size(-1) // 2 + 1,
                               dtype=lib.cdouble)
            out_ft[:, :, :m1, :m2] = lib.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2],
                                                self.weights1)
            out_ft[:, :, -m1:, :m2] = lib.einsum("bixy,ioxy->boxy", x_ft[:, :, -m1:, :m2],
                                                 self.weights2)
            return lib.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))

    class FNO2d(nn.Module):
        def __init__(self, modes, width):
            super().__init__()
            self.p = nn.Linear(3, width)
            self.conv0 = SpectralConv2d(width, width, modes, modes)
            self.w0 = nn.Conv2d(width, width, 1)
            self.norm = nn.InstanceNorm2d(width)
            self.q = nn.Linear(width, 1)

        def forward(self, x):
            b, sx, sy = x.shape[0], x.shape[1], x.shape[2]
            gx = lib.linspace(0, 1, sx, dtype=lib.float64).reshape(1, sx, 1, 1)
            gy = lib.linspace(0, 1, sy, dtype=lib.float64).reshape(1, 1, sy, 1)
            grid = lib.cat((gx.repeat([b, 1, sy, 1]), gy.repeat([b, sx, 1, 1])), dim=-1)
            x = self.p(lib.cat((x, grid), dim=-1)).permute(0, 3, 1, 2)
            x = F.pad(x, [0, 2, 0, 2])
            x = F.gelu(self.norm(self.conv0(self.norm(x))) + self.w0(x))
            return self.q(x[..., :-2, :-2].permute(0, 2, 3, 1))

    def rel_l2(x, y):
        n = x.size()[0]
        diff = lib.norm(x.reshape(n, -1) - y.reshape(n, -1), 2, 1)
        return lib.sum(diff / lib.norm(y.reshape(n, -1), 2, 1))

    model = FNO2d(3, 4).double()
    sd = {}
    for k, v in model.state_dict().items():
        a = rs.randn(*v.shape) * 0.3
        sd[k] = lib.tensor(a + 0.1j * rs.randn(*v.shape) if v.is_complex() else a)
    model.load_state_dict(sd)
    x, y = lib.tensor(rs.randn(2, 8, 8, 1)), lib.tensor(rs.randn(2, 8, 8, 1))
    opt = lib.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-3)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    out = []
    for _ in range(3):
        opt.zero_grad()
        loss = rel_l2(model(x), y)
        loss.backward()
        out += [loss.detach()] + [p.grad.clone() for p in model.parameters()]
        opt.step()
        sched.step()
    return out + [p.detach().clone() for p in model.parameters()]


def test_fno2d_complex_weights_training_matches_torch():
    got, want = _fno_program(rg), _fno_program(torch)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        close(a, b, f"fno {i}", 1e-9)


def _adjoint_program(lib):
    """A torchdiffeq-style adjoint: a custom Function whose backward integrates the augmented
    system with autograd.grad(..., allow_unused=True) under enable_grad; its gradients are
    compared with direct backprop through the same RK4 solve."""
    nn = lib.nn

    class Func(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(3, 8), nn.Linear(8, 2)
            self.unused = nn.Parameter(lib.zeros(2, dtype=lib.float64))

        def forward(self, t, y):
            return self.l2(lib.tanh(self.l1(lib.cat([y, t.expand(y.shape[0], 1)], 1))))

    def rk4(f, y, t0, t1, n=4):
        h = (t1 - t0) / n
        for i in range(n):
            tt = t0 + i * h
            k1 = f(tt, y)
            k2 = f(tt + h / 2, y + h / 2 * k1)
            k3 = f(tt + h / 2, y + h / 2 * k2)
            k4 = f(tt + h, y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    class Adjoint(lib.autograd.Function):
        @staticmethod
        def forward(ctx, y0, t, func, *params):
            ctx.func = func
            with lib.no_grad():
                y1 = rk4(func, y0, t[0], t[1])
            ctx.save_for_backward(t, y1, *params)
            return y1

        @staticmethod
        def backward(ctx, a1):
            t, y1, *params = ctx.saved_tensors
            func = ctx.func

            def aug(tt, s):
                y, a = s[..., :2], s[..., 2:4]
                with lib.enable_grad():
                    y_ = y.detach().requires_grad_(True)
                    f = func(tt, y_)
                    vjps = lib.autograd.grad(f, (y_, *params), -a, allow_unused=True,
                                             retain_graph=True)
                vp = [lib.zeros_like(p) if g is None else g for p, g in zip(params, vjps[1:])]
                return lib.cat([f, vjps[0]] + [g.reshape(1, -1).expand(y.shape[0], -1)
                                               / y.shape[0] for g in vp], -1)

            n = sum(p.numel() for p in params)
            s = lib.cat([y1, a1, lib.zeros(y1.shape[0], n, dtype=y1.dtype)], -1)
            with lib.no_grad():
                s = rk4(aug, s, t[1], t[0])
            gp, k = [], 4
            for p in params:
                gp.append(s[:, k:k + p.numel()].sum(0).reshape(p.shape))
                k += p.numel()
            return (s[:, 2:4], None, None, *gp)

    rs = np.random.RandomState(0)
    func = Func().double()
    with lib.no_grad():
        for p in func.parameters():
            p.copy_(lib.tensor(rs.randn(*p.shape) * 0.4))
    y0 = lib.tensor(rs.randn(3, 2), requires_grad=True)
    t = lib.tensor([0.0, 1.0], dtype=lib.float64)
    params = tuple(func.parameters())
    loss = (Adjoint.apply(y0, t, func, *params) ** 2).sum()
    loss.backward()
    adj = [y0.grad.clone()] + [p.grad.clone() for p in params]
    func.zero_grad()
    y0.grad = None
    (rk4(func, y0, t[0], t[1]) ** 2).sum().backward()
    direct = [y0.grad] + [p.grad for p in params[1:]]  # params[0] is `unused`
    return [loss.detach()] + adj, direct


def test_adjoint_function_matches_torch_and_direct_backprop():
    (got, got_direct), (want, want_direct) = _adjoint_program(rg), _adjoint_program(torch)
    for i, (a, b) in enumerate(zip(got + got_direct, want + want_direct)):
        close(a, b, f"adjoint {i}", 1e-9)
    for a, b in zip(got[1:2] + got[3:], got_direct):  # the adjoint agrees with backprop
        close(a, b, "adjoint vs direct", 1e-3)
    assert float(got[2].abs().max()) == 0.0  # the unused parameter's zero gradient


def _cnf_program(lib):
    """FFJORD's CNF log-likelihood: ConcatSquash layers, the Hutchinson trace estimator with
    a fixed e (autograd.grad with create_graph=True), RK4, and two Adam steps."""
    nn = lib.nn
    rs = np.random.RandomState(0)

    class ConcatSquash(nn.Module):
        def __init__(self, din, dout):
            super().__init__()
            self.layer, self.gate = nn.Linear(din, dout), nn.Linear(1, dout)
            self.hyper_bias = nn.Linear(1, dout, bias=False)

        def forward(self, t, x):
            tt = t.view(1, 1)
            return self.layer(x) * lib.sigmoid(self.gate(tt)) + self.hyper_bias(tt)

    net = nn.ModuleList([ConcatSquash(2, 8), ConcatSquash(8, 2)]).double()
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(rs.randn(*p.shape) * 0.3))
    x, e = lib.tensor(rs.randn(6, 2)), lib.tensor(rs.choice([-1.0, 1.0], size=(6, 2)))

    def odefunc(t, state):
        y = state[0]
        with lib.set_grad_enabled(True):
            y.requires_grad_(True)
            dy = net[1](t, nn.functional.softplus(net[0](t, y)))
            e_dzdx = lib.autograd.grad(dy, y, e, create_graph=True)[0]
            div = (e_dzdx * e).view(y.shape[0], -1).sum(dim=1)
        return dy, -div.view(-1, 1)

    def odeint(state, t0, t1, n=3):
        h = (t1 - t0) / n
        for i in range(n):
            tt = t0 + i * h
            k1 = odefunc(tt, state)
            k2 = odefunc(tt + h / 2, tuple(s + h / 2 * k for s, k in zip(state, k1)))
            k3 = odefunc(tt + h / 2, tuple(s + h / 2 * k for s, k in zip(state, k2)))
            k4 = odefunc(tt + h, tuple(s + h * k for s, k in zip(state, k3)))
            state = tuple(s + h / 6 * (a + 2 * b + 2 * c + d)
                          for s, a, b, c, d in zip(state, k1, k2, k3, k4))
        return state

    opt = lib.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-5)
    out = []
    for _ in range(2):
        opt.zero_grad()
        z, dlogp = odeint((x, lib.zeros(x.shape[0], 1).to(x)),
                          lib.tensor(0.0, dtype=lib.float64), lib.tensor(0.5, dtype=lib.float64))
        logpz = (-0.5 * math.log(2 * math.pi) - z.pow(2) / 2).sum(1, keepdim=True)
        loss = -lib.mean(logpz - dlogp)
        loss.backward()
        out += [loss.detach(), z.detach(), dlogp.detach()]
        out += [p.grad.clone() for p in net.parameters()]
        opt.step()
    return out + [p.detach().clone() for p in net.parameters()]


def test_ffjord_hutchinson_cnf_matches_torch():
    got, want = _cnf_program(rg), _cnf_program(torch)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        close(a, b, f"cnf {i}", 1e-9)


@pytest.mark.parametrize("dtype", ["complex128", "complex64", "float64"])
def test_module_to_complex_warns_as_torch(dtype):
    """`Module.to(complex dtype)` gives PyTorch's UserWarning about complex modules."""
    import warnings

    def warned(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m = lib.nn.Linear(2, 2).to(getattr(lib, dtype))
        assert str(m.weight.dtype).replace("torch.", "") == dtype
        return [(x.category, str(x.message)) for x in w]

    assert warned(rg) == warned(torch)


@pytest.mark.parametrize("init", ["trunc_normal_", "orthogonal_"])
@pytest.mark.parametrize("shape", [(3, 4), (0, 3)])
def test_init_refuses_complex_as_torch(init, shape):
    """trunc_normal_ and orthogonal_ on a complex weight raise NotImplementedError as in
    PyTorch (an empty one passes orthogonal_ untouched there too)."""
    def run(lib):
        t = lib.zeros(*shape, dtype=lib.complex128)
        try:
            getattr(lib.nn.init, init)(t)
        except NotImplementedError:
            return "raised"
        return t.abs().sum().item()

    assert run(rg) == run(torch)
