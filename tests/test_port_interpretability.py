"""Interpretability and adversarial-robustness programs (pytorch-grad-cam, captum's
algorithms in plain torch, FGSM/PGD/C&W/TRADES tutorials, DeepDream, Fourier feature
visualisation) ported to retrograd, each compared with torch in float64; plus the gaps
the port found."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


def _net(L):
    nn = L.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1), nn.ReLU())
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.classifier = nn.Linear(6, 4)

        def forward(self, x):
            return self.classifier(L.flatten(self.avgpool(self.features(x)), 1))
    return Net()


def _pair():
    """The same small CNN in both libraries, float64, in eval mode."""
    torch.manual_seed(0)
    tm = _net(torch).double()
    bn = tm.features[1]
    with torch.no_grad():
        bn.running_mean.uniform_(-.2, .2)
        bn.running_var.uniform_(.5, 1.5)
    rm = _net(rg).double()
    rm.load_state_dict({k: rg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm.eval(), rm.eval()


def _x(seed=0, n=2, hw=8):
    return np.random.default_rng(seed).random((n, 3, hw, hw))


def test_inplace_write_into_backward_hooked_module_output_raises():
    """A full backward hook wraps the module's output in an identity Function returning a
    view; an in-place ReLU after it (grad-cam on a conv followed by ReLU(inplace=True))
    raised AttributeError (the Function's first input is the hook callback), where torch
    raises RuntimeError."""
    for L in (torch, rg):
        m = L.nn.Sequential(L.nn.Linear(3, 3), L.nn.ReLU(inplace=True)).double()
        m[0].register_full_backward_hook(lambda mod, gi, go: None)
        with pytest.raises(RuntimeError):
            m(L.ones(2, 3, dtype=L.float64))


def test_inplace_write_into_custom_function_view_output_raises():
    """A custom Function whose non-tensor first argument precedes the input it returns a
    view of: the in-place write is refused as in torch."""
    for L in (torch, rg):
        class Ident(L.autograd.Function):
            @staticmethod
            def forward(ctx, scale, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return None, g
        x = L.ones(3, dtype=L.float64, requires_grad=True) * 1
        y = Ident.apply(2.0, x)
        with pytest.raises(RuntimeError):
            y.mul_(2)


def test_per_example_saliency_through_inplace_relu_under_vmap():
    """torch.func's per-example saliency (vmap of grad, functional_call) of a CNN with
    ReLU(inplace=True): in-place writes into batched tensors used to be refused."""
    tm, rm = _pair()
    x = _x(1, n=3)
    res = []
    for L, m in ((torch, tm), (rg, rm)):
        params = {k: v.detach() for k, v in m.named_parameters()}
        buffers = {k: v.detach() for k, v in m.named_buffers()}

        def f(xi, m=m, L=L, params=params, buffers=buffers):
            return L.func.functional_call(m, (params, buffers), (xi.unsqueeze(0),))[0, 1]
        g = L.func.vmap(L.func.grad(f))(L.tensor(x))
        j = L.func.jacfwd(lambda v, m=m: m(v).sum(0))(L.tensor(x[:1]))
        res.append((g, j))
    for a, b in zip(*res[::-1]):
        close(a, b, tol=1e-12)


def test_inplace_ops_on_batched_and_dual_tensors_match_torch():
    """mul_, relu_, setitem and add_ on tensors batched by vmap or carrying jvp tangents
    (torch's relu_ saves its output, which the later writes change: its backward raises,
    so torch runs the same values with an out-of-place clamp)."""
    def f(L, v):
        h = v.sin()
        h.mul_(v)
        if L is rg:
            L.nn.functional.relu(h, inplace=True)
        else:
            h = h.clamp(min=0)
        h[0] = v[1]
        h.add_(1.0)
        return h
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    res = []
    for L in (torch, rg):
        xt = L.tensor(x, requires_grad=True)
        out = L.func.vmap(lambda v, L=L: f(L, v))(xt)
        out.pow(2).sum().backward()
        res.append((out, xt.grad, L.func.jacfwd(lambda v, L=L: f(L, v))(L.tensor(x[0])),
                    L.func.jacrev(lambda v, L=L: f(L, v))(L.tensor(x[0])),
                    L.func.jvp(lambda v, L=L: f(L, v), (L.tensor(x[1]),), (L.tensor(x[2]),))[1]))
    for a, b in zip(*res[::-1]):
        close(a, b, tol=1e-12)
    with pytest.raises(RuntimeError, match="vmap"):  # an unbatched target, as torch.vmap
        rg.func.vmap(lambda v: rg.zeros(4, dtype=v.dtype).copy_(v))(rg.tensor(x))


def _gradcam_program(L, model, x, target=2):
    """pytorch-grad-cam: forward hook saving activations, full backward hook saving
    gradients, Grad-CAM and Grad-CAM++ maps; guided backprop; integrated gradients."""
    F = L.nn.functional
    acts, grads = {}, {}
    layer = model.features[4]
    h1 = layer.register_forward_hook(lambda m, i, o: acts.__setitem__("a", o))
    h2 = layer.register_full_backward_hook(lambda m, gi, go: grads.__setitem__("g", go[0]))
    out = model(x)
    model.zero_grad()
    out[:, target].sum().backward(retain_graph=True)
    h1.remove()
    h2.remove()
    a, g = acts["a"], grads["g"]
    cam = F.relu((g.mean(dim=(2, 3), keepdim=True) * a).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
    mn, mx = cam.amin(dim=(1, 2, 3), keepdim=True), cam.amax(dim=(1, 2, 3), keepdim=True)
    cam = (cam - mn) / (mx - mn + 1e-7)
    g2 = g.pow(2)
    aij = g2 / (2 * g2 + a.sum(dim=(2, 3), keepdim=True) * g.pow(3) + 1e-7)
    aij = L.where(g != 0, aij, L.zeros_like(aij))
    campp = F.relu(((aij * F.relu(g)).sum(dim=(2, 3), keepdim=True) * a).sum(1))
    hs = []
    for m in model.modules():
        if isinstance(m, L.nn.ReLU):
            m.inplace = False
            hs.append(m.register_full_backward_hook(
                lambda m, gi, go: (L.clamp(gi[0], min=0.0),)))
    xg = x.clone().requires_grad_()
    o = model(xg)
    o.gather(1, o.argmax(dim=1)[:, None]).sum().backward()
    for h in hs:
        h.remove()
    model.features[2].inplace = True
    steps = 8
    alphas = L.linspace(0, 1, steps + 1)
    path = (alphas.view(-1, 1, 1, 1, 1) * x.unsqueeze(0)).reshape(-1, *x.shape[1:])
    path.requires_grad_(True)
    outs = model(path)[:, target]
    ig, = L.autograd.grad(outs, path, grad_outputs=L.ones_like(outs))
    ig = x * L.trapezoid(ig.view(steps + 1, *x.shape), dx=1.0 / steps, dim=0)
    return (cam.detach(), campp.detach(), model.features[0].weight.grad, xg.grad,
            xg.grad.abs().max(dim=1)[0], ig)


def _attack_program(L, model, x, y, d0):
    """FGSM, PGD (Linf with a given random start; L2 with renorm), TRADES' KL step and
    one SGD step of its loss."""
    F = L.nn.functional
    xa = x.clone().requires_grad_(True)
    F.cross_entropy(model(xa), y).backward()
    fgsm = L.clamp(x + 0.03 * xa.grad.sign(), 0, 1)
    eps, alpha = 8 / 255, 2 / 255
    adv = L.clamp(x + d0, 0, 1)
    for _ in range(3):
        adv.requires_grad = True
        g, = L.autograd.grad(L.nn.CrossEntropyLoss()(model(adv), y), adv)
        adv = adv.detach() + alpha * g.sign()
        adv = L.clamp(L.min(L.max(adv, x - eps), x + eps), 0, 1).detach()
    delta = (d0 * 10).requires_grad_(True)
    for _ in range(3):
        F.cross_entropy(model(x + delta), y, reduction="sum").backward()
        gn = delta.grad.norm(p=2, dim=(1, 2, 3), keepdim=True) + 1e-10
        with L.no_grad():
            delta.add_(0.1 * delta.grad / gn)
            delta.copy_(L.renorm(delta, p=2, dim=0, maxnorm=0.5))
        delta.grad.zero_()
    kl = L.nn.KLDivLoss(reduction="sum")
    xr = (x + 0.001 * d0).requires_grad_()
    g, = L.autograd.grad(kl(F.log_softmax(model(xr), 1), F.softmax(model(x), 1)), [xr])
    x_adv = L.clamp(L.min(L.max(xr.detach() + 0.01 * g.sign(), x - 0.03), x + 0.03), 0, 1)
    opt = L.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y) + 6.0 / x.size(0) * kl(
        F.log_softmax(model(x_adv), dim=1), F.softmax(model(x), dim=1))
    loss.backward()
    opt.step()
    return fgsm, adv, delta.detach(), x_adv, loss.detach(), model.classifier.weight.detach()


def _dream_program(L, model, x, init, shifts):
    """DeepDream (jitter by roll, two octaves, normalised gradient ascent on an activation)
    and a Fourier-parameterised, colour-decorrelated image optimised with Adam."""
    F = L.nn.functional
    acts = {}
    hk = model.features[4].register_forward_hook(lambda m, i, o: acts.__setitem__("a", o))
    octs = [x, F.interpolate(x, scale_factor=1 / 1.4, mode="bilinear", align_corners=False)]
    detail = L.zeros_like(octs[-1])
    for o, ob in enumerate(octs[::-1]):
        if o:
            detail = F.interpolate(detail, size=ob.shape[-2:], mode="bilinear",
                                   align_corners=False)
        img = (ob + detail).clone().requires_grad_(True)
        for sx, sy in shifts:
            model(L.roll(img, shifts=(sx, sy), dims=(-2, -1)))
            acts["a"].norm().backward()
            with L.no_grad():
                img += 0.05 * img.grad / (img.grad.abs().mean() + 1e-8)
                img.clamp_(0, 1)
                img.grad.zero_()
        detail = img.detach() - ob
    h, w = x.shape[-2:]
    f64 = L.float64
    freqs = L.sqrt(L.fft.rfftfreq(w, dtype=f64) ** 2 + L.fft.fftfreq(h, dtype=f64)[:, None] ** 2)
    scale = 0.01 / L.maximum(freqs, L.tensor(1.0 / max(w, h), dtype=f64))
    cc = L.tensor([[0.26, 0.09, 0.02], [0.27, 0.00, -0.05], [0.27, -0.09, 0.03]], dtype=f64)
    cc = cc / L.max(L.linalg.norm(cc, dim=0))
    p = init.clone().requires_grad_(True)
    opt = L.optim.Adam([p], lr=0.05)
    for _ in range(3):
        image = L.fft.irfftn(L.view_as_complex(p) * scale, s=(h, w), norm="ortho") / 4
        image = L.sigmoid(L.matmul(image.permute(0, 2, 3, 1), cc.T).permute(0, 3, 1, 2))
        opt.zero_grad()
        model(image)
        (-acts["a"][:, 3].mean()).backward()
        opt.step()
    hk.remove()
    return img.detach(), p.detach(), image.detach()


def test_gradcam_guided_backprop_integrated_gradients_program():
    tm, rm = _pair()
    x = _x(2)
    want = _gradcam_program(torch, tm, torch.tensor(x))
    got = _gradcam_program(rg, rm, rg.tensor(x))
    for a, b in zip(got, want):
        close(a, b, tol=1e-10)


def test_fgsm_pgd_trades_program():
    tm, rm = _pair()
    x, y = _x(3, n=3), np.array([0, 3, 1])
    d0 = np.random.default_rng(4).uniform(-8 / 255, 8 / 255, x.shape)
    want = _attack_program(torch, tm, *map(torch.tensor, (x, y, d0)))
    got = _attack_program(rg, rm, *map(rg.tensor, (x, y, d0)))
    for a, b in zip(got, want):
        close(a, b, tol=1e-10)


def test_deepdream_and_fourier_feature_visualisation_program():
    tm, rm = _pair()
    x = _x(5, n=1, hw=10)
    init = np.random.default_rng(6).standard_normal((1, 3, 10, 6, 2))
    shifts = [(1, -2), (0, 1)]
    want = _dream_program(torch, tm, torch.tensor(x), torch.tensor(init), shifts)
    got = _dream_program(rg, rm, rg.tensor(x), rg.tensor(init), shifts)
    for a, b in zip(got, want):
        close(a, b, tol=1e-10)
