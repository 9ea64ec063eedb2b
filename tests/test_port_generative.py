"""Generative vision models ported from their PyTorch sources (DDPM/DDIM U-Nets, VAEs,
VQ-VAEs, DCGAN/WGAN-GP/StyleGAN-style GANs, pix2pix, super-resolution, spatial
transformers), built once on torch and once on retrograd from the same class bodies, with
torch's weights loaded into retrograd; outputs, losses, gradients and optimiser steps are
compared in float64. Each gap the ports found has its minimal case here too."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _close(a, b, rtol=1e-7, atol=1e-9):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def _strides(t) -> tuple:
    """Element strides of a tensor of either library, size-1 dims left out (they never
    matter to a view)."""
    if isinstance(t, torch.Tensor):
        st = t.stride()
    else:
        st = tuple(s // t.data.itemsize for s in t.data.strides)
    return tuple(s for s, n in zip(st, t.shape) if n > 1)


# ------------------------------------------------- copies of broadcast tensors are row-major
def _broadcast_cases(T):
    return [T.ones(3, 1).expand(3, 4), T.ones(1, 4).expand(3, 4),
            T.ones(4, 1, 2).expand(4, 3, 2).permute(2, 0, 1),
            T.ones(2, 1, 3).permute(2, 1, 0).expand(3, 5, 2),
            T.ones(1, 3, 1, 2).permute(3, 1, 2, 0).expand(2, 3, 4, 5),
            T.ones(2, 1, 3, 1).permute(3, 2, 1, 0).expand(4, 3, 5, 2)]


@pytest.mark.parametrize("k", range(6))
@pytest.mark.parametrize("how", ["clone", "double", "to"])
def test_copy_of_a_broadcast_is_laid_out_as_torch(k, how):
    t = _broadcast_cases(torch)[k].float().requires_grad_()
    r = _broadcast_cases(rg)[k].float().requires_grad_()
    ops = {"clone": lambda x: x.clone(), "double": lambda x: x.double(),
           "to": lambda x, T=None: x.to(torch.float64 if isinstance(x, torch.Tensor)
                                        else rg.float64)}
    assert _strides(ops[how](r)) == _strides(ops[how](t))


def test_repeat_of_a_parameter_views_as_torch():
    # StyleGAN's constant input: const.repeat(batch, 1, 1, 1), then a grouped conv's view
    for T in (torch, rg):
        const = T.nn.Parameter(T.ones(1, 8, 4, 4))
        x = const.repeat(4, 1, 1, 1)
        assert tuple(x.view(1, 32, 4, 4).shape) == (1, 32, 4, 4)
    r = rg.nn.Parameter(rg.ones(1, 3, 2))
    assert _strides(r.repeat(2, 2, 1)) == _strides(torch.ones(1, 3, 2, requires_grad=True)
                                                   .repeat(2, 2, 1))


# --------------------------------------------------------------------- Adam's betas check
@pytest.mark.parametrize("opt", ["Adam", "AdamW"])
def test_adam_refuses_integer_betas_as_torch(opt):
    with pytest.raises(ValueError, match="both floats"):
        getattr(torch.optim, opt)([torch.zeros(2, requires_grad=True)], betas=(0, 0.99))
    with pytest.raises(ValueError, match="both floats"):
        getattr(rg.optim, opt)([rg.zeros(2, requires_grad=True)], betas=(0, 0.99))
    getattr(rg.optim, opt)([rg.zeros(2, requires_grad=True)], betas=(0.0, 0.99))


# ------------------------------------- in-place activations after normalisations (pix2pix)
def _producers(T):
    F = T.nn.functional
    return {
        "instance_norm": lambda x: F.instance_norm(x),
        "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
        "batch_norm_stats": lambda x: F.batch_norm(x, T.zeros(3, dtype=x.dtype),
                                                   T.ones(3, dtype=x.dtype), training=True),
        "InstanceNorm2d": lambda x: T.nn.InstanceNorm2d(3)(x),
        "group_norm": lambda x: F.group_norm(x, 3),
        "layer_norm": lambda x: F.layer_norm(x, (2, 2)),
    }


_WRITES = {
    "LeakyReLU(0.2, True)": lambda T, h: T.nn.LeakyReLU(0.2, True)(h),
    "ReLU(True)": lambda T, h: T.nn.ReLU(True)(h),
    "mul_": lambda T, h: h.mul_(2.0),
    "sigmoid_": lambda T, h: h.sigmoid_(),
    "view().add_": lambda T, h: h.view(-1).add_(1.0),
    "setitem": lambda T, h: h.__setitem__(0, 1.5),
}


def _inplace_after(T, make, write, inp, w):
    x = inp.clone().requires_grad_(True)
    h = make(x * w)
    write(T, h)
    (h * h.detach().sin()).sum().backward()
    return h, x.grad


@pytest.mark.parametrize("write", list(_WRITES))
@pytest.mark.parametrize("norm", list(_producers(torch)))
def test_inplace_write_into_a_normalisation_output_keeps_the_gradient(norm, write):
    # the normalisation's forward handed its backward xhat, the very array the in-place
    # activation overwrites: the gradient came out silently wrong
    gen = torch.Generator().manual_seed(0)
    inp = torch.randn(2, 3, 2, 2, generator=gen, dtype=torch.float64)
    w = torch.randn(2, 3, 2, 2, generator=gen, dtype=torch.float64)
    ht, gt = _inplace_after(torch, _producers(torch)[norm], _WRITES[write], inp, w)
    hr, gr = _inplace_after(rg, _producers(rg)[norm], _WRITES[write],
                            rg.tensor(inp.numpy()), rg.tensor(w.numpy()))
    _close(ht, hr)
    _close(gt, gr)


@pytest.mark.parametrize("kind", ["GRU", "RNN", "LSTM"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_inplace_write_into_a_recurrent_output_keeps_the_gradient(kind, batch_first):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(4, 5, batch_first=batch_first, dtype=torch.float64)
    rm = getattr(rg.nn, kind)(4, 5, batch_first=batch_first, dtype=rg.float64)
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    inp = torch.randn(3, 2, 4, dtype=torch.float64)
    outs = []
    for m, x in ((tm, inp.clone().requires_grad_()),
                 (rm, rg.tensor(inp.numpy()).requires_grad_())):
        y = m(x)[0]
        y.mul_(1.5)
        y.relu_()
        (y * y.detach().cos()).sum().backward()
        outs.append((y, x.grad))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1])



def test_jit_training_step_with_inplace_activations_after_norms():
    # rg.jit refused the write (the normalised output was a reshape of a temporary, which
    # the tracer took for a view of another tensor); eager and replays now match torch
    def make(T):
        return T.nn.Sequential(T.nn.Conv2d(3, 4, 3), T.nn.InstanceNorm2d(4),
                               T.nn.LeakyReLU(0.2, True), T.nn.Conv2d(4, 2, 3),
                               T.nn.BatchNorm2d(2, affine=False), T.nn.ReLU(True)).double()

    torch.manual_seed(0)
    tm, rm = make(torch), make(rg)
    _load(tm, rm)
    topt, ropt = torch.optim.SGD(tm.parameters(), 0.1), rg.optim.SGD(rm.parameters(), 0.1)

    def step(x):
        ropt.zero_grad()
        y = rm(x)
        loss = (y * y.detach().cos()).sum()
        loss.backward()
        ropt.step()
        return loss

    jitted = rg.jit(step)
    for _ in range(3):
        x = torch.randn(2, 3, 7, 7, dtype=torch.float64)
        lr = jitted(rg.tensor(x.numpy()))
        topt.zero_grad()
        y = tm(x)
        lt = (y * y.detach().cos()).sum()
        lt.backward()
        topt.step()
        _close(lt, lr)
    _same_state(tm, rm)


# ---------------------------------------------------- cdist's compute_mode (VQ-VAE lookups)
@pytest.mark.parametrize("mode", [None, "use_mm_for_euclid_dist_if_necessary",
                                  "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
@pytest.mark.parametrize("rows", [(3, 4), (30, 8)])
def test_cdist_compute_mode_as_torch(mode, rows):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, rows[0], 5, generator=gen, dtype=torch.float64)
    c = torch.randn(rows[1], 5, generator=gen, dtype=torch.float64)
    w = torch.randn(2, *rows, generator=gen, dtype=torch.float64)
    kw = {} if mode is None else {"compute_mode": mode}
    xt, ct = x.clone().requires_grad_(), c.clone().requires_grad_()
    xr, cr = rg.tensor(x.numpy()).requires_grad_(), rg.tensor(c.numpy()).requires_grad_()
    dt, dr = torch.cdist(xt, ct, **kw), rg.cdist(xr, cr, **kw)
    _close(dt, dr, rtol=1e-12)
    (dt * w).sum().backward()
    (dr * rg.tensor(w.numpy())).sum().backward()
    _close(xt.grad, xr.grad, rtol=1e-10)
    _close(ct.grad, cr.grad, rtol=1e-10)
    assert torch.equal(dt.argmin(-1), torch.from_numpy(dr.argmin(-1).numpy()))


def test_cdist_refuses_bad_arguments_as_torch():
    for T in (torch, rg):
        with pytest.raises(ValueError, match="not a valid value for compute_mode"):
            T.cdist(T.ones(3, 2), T.ones(4, 2), compute_mode="mm")
        with pytest.raises(RuntimeError):
            T.cdist(T.ones(3, 2), T.ones(4, 2, dtype=T.float64))
        with pytest.raises(RuntimeError, match="floating-point"):
            T.cdist(T.ones(3, 2, dtype=T.long), T.ones(4, 2, dtype=T.long))



# ------------------------------------------------------------- random draws of other dtypes
_DRAWS = {"randn": lambda T, dt: T.randn(3, dtype=dt), "rand": lambda T, dt: T.rand(3, dtype=dt),
          "randn_like": lambda T, dt: T.randn_like(T.ones(3, dtype=dt)),
          "rand_like": lambda T, dt: T.rand_like(T.ones(3, dtype=dt))}


@pytest.mark.parametrize("fn", list(_DRAWS))
@pytest.mark.parametrize("dt", ["int64", "int32", "bool"])
def test_random_draws_refuse_integer_dtypes_as_torch(fn, dt):
    # rg.randn(dtype=rg.long) returned zeros (float samples truncated)
    with pytest.raises(NotImplementedError):
        _DRAWS[fn](torch, getattr(torch, dt))
    with pytest.raises(NotImplementedError):
        _DRAWS[fn](rg, getattr(rg, dt if dt != "bool" else "bool_"))


@pytest.mark.parametrize("fn", list(_DRAWS))
def test_complex_random_draws_as_torch(fn):
    # complex samples had a zero imaginary part (and the normal a real part of variance 1)
    rg.manual_seed(0)
    torch.manual_seed(0)
    make = _DRAWS[fn]
    z = make(rg, rg.complex128) if "like" in fn else getattr(rg, fn)(100000, dtype=rg.complex128)
    t = make(torch, torch.complex128) if "like" in fn else \
        getattr(torch, fn)(100000, dtype=torch.complex128)
    assert z.dtype == rg.complex128 and t.dtype == torch.complex128
    if "like" in fn:
        return
    zr, zi, tr, ti = (np.asarray(a) for a in (z.real.numpy(), z.imag.numpy(), t.real.numpy(),
                                               t.imag.numpy()))
    for a, b in ((zr, tr), (zi, ti)):
        assert abs(a.mean() - b.mean()) < 0.02 and abs(a.var() - b.var()) < 0.02
        assert (a.min() >= 0) == (b.min() >= 0)


# ======================================================================= whole programs
def _load(tm, rm) -> None:
    rm.load_state_dict({k: rg.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})


def _same_grads(tm, rm, rtol=1e-7) -> None:
    rp = dict(rm.named_parameters())
    for n, p in tm.named_parameters():
        assert (p.grad is None) == (rp[n].grad is None), n
        if p.grad is not None:
            _close(p.grad, rp[n].grad, rtol=rtol, atol=1e-10)


def _same_state(tm, rm, rtol=1e-7) -> None:
    rs = rm.state_dict()
    for k, v in tm.state_dict().items():
        _close(v, rs[k], rtol=rtol, atol=1e-10)


def _pix2pix(T):
    """pytorch-CycleGAN-and-pix2pix's U-Net generator and PatchGAN, InstanceNorm variant: the
    in-place LeakyReLU(0.2, True) writes into the previous block's normalised output."""
    nn = T.nn

    class Block(nn.Module):
        def __init__(self, outer, inner, sub=None, outermost=False, innermost=False):
            super().__init__()
            self.outermost = outermost
            down = nn.Conv2d(outer, inner, 4, 2, 1, bias=True)
            if outermost:
                layers = [down, sub, nn.ReLU(True), nn.ConvTranspose2d(inner * 2, outer, 4, 2, 1),
                          nn.Tanh()]
            elif innermost:
                layers = [nn.LeakyReLU(0.2, True), down, nn.ReLU(True),
                          nn.ConvTranspose2d(inner, outer, 4, 2, 1), nn.InstanceNorm2d(outer)]
            else:
                layers = [nn.LeakyReLU(0.2, True), down, nn.InstanceNorm2d(inner), sub,
                          nn.ReLU(True), nn.ConvTranspose2d(inner * 2, outer, 4, 2, 1),
                          nn.InstanceNorm2d(outer), nn.Dropout(0.0)]
            self.model = nn.Sequential(*layers)

        def forward(self, x):
            return self.model(x) if self.outermost else T.cat([x, self.model(x)], 1)

    gen = Block(3, 4, Block(4, 8, Block(8, 8, innermost=True)), outermost=True)
    disc = nn.Sequential(nn.Conv2d(6, 4, 4, 2, 1), nn.LeakyReLU(0.2, True),
                         nn.Conv2d(4, 8, 4, 2, 1), nn.InstanceNorm2d(8), nn.LeakyReLU(0.2, True),
                         nn.Conv2d(8, 1, 3, 1, 1))
    return gen.double(), disc.double()


def test_pix2pix_instance_norm_training_steps():
    torch.manual_seed(0)
    (tg, td), (rgen, rd) = _pix2pix(torch), _pix2pix(rg)
    _load(tg, rgen)
    _load(td, rd)
    opts = [(torch.optim.Adam(m.parameters(), 2e-4, betas=(0.5, 0.999)),
             rg.optim.Adam(r.parameters(), 2e-4, betas=(0.5, 0.999)))
            for m, r in ((tg, rgen), (td, rd))]
    for _ in range(2):
        a, b = torch.randn(2, 3, 16, 16, dtype=torch.float64), torch.randn(2, 3, 16, 16,
                                                                          dtype=torch.float64)
        ra, rb = rg.tensor(a.numpy()), rg.tensor(b.numpy())
        ft, fr = tg(a), rgen(ra)
        _close(ft, fr)
        for (to, ro) in opts:
            to.zero_grad()
            ro.zero_grad()
        pt = td(torch.cat([a, ft], 1))
        pr = rd(rg.cat([ra, fr], 1))
        lt = torch.nn.functional.mse_loss(pt, torch.ones_like(pt)) + \
            100 * torch.nn.functional.l1_loss(ft, b)
        lr = rg.nn.functional.mse_loss(pr, rg.ones_like(pr)) + \
            100 * rg.nn.functional.l1_loss(fr, rb)
        _close(lt, lr)
        lt.backward()
        lr.backward()
        _same_grads(tg, rgen)
        opts[0][0].step()
        opts[0][1].step()
        td.zero_grad()
        rd.zero_grad()
        lt = torch.nn.functional.mse_loss(td(torch.cat([a, ft.detach()], 1)), torch.zeros_like(pt))
        lr = rg.nn.functional.mse_loss(rd(rg.cat([ra, fr.detach()], 1)), rg.zeros_like(pr))
        lt.backward()
        lr.backward()
        _same_grads(td, rd)
        opts[1][0].step()
        opts[1][1].step()
    _same_state(tg, rgen)
    _same_state(td, rd)


def _stylegan(T):
    """rosinality's stylegan2-pytorch pieces: equalised-lr modulated/demodulated conv as one
    grouped conv over the batch, fed from const.repeat(batch, 1, 1, 1) (then .view), noise
    injection, a [1, 3, 3, 1] blur as a fixed depthwise conv, minibatch stddev."""
    nn, F = T.nn, T.nn.functional

    class ModConv(nn.Module):
        def __init__(self, cin, cout, k, sdim, demodulate=True):
            super().__init__()
            self.weight = nn.Parameter(T.randn(1, cout, cin, k, k, dtype=T.float64))
            self.mod_w = nn.Parameter(T.randn(cin, sdim, dtype=T.float64))
            self.mod_b = nn.Parameter(T.ones(cin, dtype=T.float64))
            self.scale, self.demodulate, self.pad = 1 / math.sqrt(cin * k * k), demodulate, k // 2

        def forward(self, x, style):
            b, cin, h, w = x.shape
            style = F.linear(style, self.mod_w / math.sqrt(self.mod_w.shape[1]), self.mod_b)
            weight = self.scale * self.weight * style.view(b, 1, cin, 1, 1)
            if self.demodulate:
                demod = T.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
                weight = weight * demod.view(b, -1, 1, 1, 1)
            weight = weight.view(-1, cin, *weight.shape[-2:])
            out = F.conv2d(x.view(1, b * cin, h, w), weight, padding=self.pad, groups=b)
            return out.view(b, -1, *out.shape[-2:])

    class Gen(nn.Module):
        def __init__(self):
            super().__init__()
            self.const = nn.Parameter(T.randn(1, 4, 4, 4, dtype=T.float64))
            self.conv = ModConv(4, 4, 3, 6)
            self.noise_w = nn.Parameter(T.zeros(1, dtype=T.float64) + 0.1)
            self.to_rgb = ModConv(4, 3, 1, 6, demodulate=False)
            k = T.tensor([1.0, 3.0, 3.0, 1.0], dtype=T.float64)
            k = k[None, :] * k[:, None]
            self.register_buffer("blur", (k / k.sum()).expand(3, 1, 4, 4).clone())

        def forward(self, z, noise):
            z = z * T.rsqrt(T.mean(z ** 2, dim=1, keepdim=True) + 1e-8)
            x = self.const.repeat(z.shape[0], 1, 1, 1)
            x = F.leaky_relu(self.conv(x, z) + self.noise_w * noise, 0.2) * math.sqrt(2)
            x = F.interpolate(self.to_rgb(x, z), scale_factor=2, mode="nearest")
            return F.conv2d(F.pad(x, (2, 1, 2, 1)), self.blur, groups=3)

    def minibatch_std(x, group=2):
        b, c, h, w = x.shape
        s = x.view(group, -1, 1, c, h, w)
        s = T.sqrt(s.var(0, unbiased=False) + 1e-8).mean([2, 3, 4], keepdim=True).squeeze(2)
        return T.cat([x, s.repeat(group, 1, h, w)], 1)

    return Gen().double(), minibatch_std


def test_stylegan_modulated_conv_and_r1_penalty():
    torch.manual_seed(0)
    (tg, tstd), (rgen, rstd) = _stylegan(torch), _stylegan(rg)
    _load(tg, rgen)
    z, noise = torch.randn(4, 6, dtype=torch.float64), torch.randn(4, 1, 4, 4, dtype=torch.float64)
    ft, fr = tg(z, noise), rgen(rg.tensor(z.numpy()), rg.tensor(noise.numpy()))
    _close(ft, fr)
    xt, xr = ft.detach().requires_grad_(), rg.tensor(ft.detach().numpy()).requires_grad_()
    outs = []
    for T, f, x, std in ((torch, ft, xt, tstd), (rg, fr, xr, rstd)):
        d_real = std(x).pow(2).mean([1, 2, 3])
        g, = T.autograd.grad(d_real.sum(), x, create_graph=True)
        r1 = g.pow(2).reshape(g.shape[0], -1).sum(1).mean()
        loss = T.nn.functional.softplus(-std(f).mean([1, 2, 3])).mean() + 5 * r1
        loss.backward()
        outs.append((loss, x.grad))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1])
    _same_grads(tg, rgen)


def _ddpm(T):
    """A DDPM epsilon-model in the style of openai/improved-diffusion, tiny: sinusoidal
    timestep embedding, a ResBlock with GroupNorm, SiLU and a scale-shift time embedding,
    an attention block over H*W (einsum), a label embedding with a null class (CFG)."""
    nn, F = T.nn, T.nn.functional

    def timestep_embedding(t, dim, max_period=10000):
        half = dim // 2
        freqs = T.exp(-math.log(max_period) * T.arange(0, half, dtype=T.float64) / half)
        args = t[:, None].double() * freqs[None]
        return T.cat([T.cos(args), T.sin(args)], dim=-1)

    class Net(nn.Module):
        def __init__(self, ch=8):
            super().__init__()
            self.ch = ch
            self.temb = nn.Sequential(nn.Linear(ch, 2 * ch), nn.SiLU(), nn.Linear(2 * ch, 2 * ch))
            self.label = nn.Embedding(3, 2 * ch)
            self.inp = nn.Conv2d(3, ch, 3, padding=1)
            self.norm1, self.conv1 = nn.GroupNorm(4, ch), nn.Conv2d(ch, ch, 3, padding=1)
            self.emb_out = nn.Sequential(nn.SiLU(), nn.Linear(2 * ch, 2 * ch))
            self.norm2, self.conv2 = nn.GroupNorm(4, ch), nn.Conv2d(ch, ch, 3, padding=1)
            self.anorm, self.qkv = nn.GroupNorm(4, ch), nn.Conv1d(ch, 3 * ch, 1)
            self.proj = nn.Conv1d(ch, ch, 1)
            self.out = nn.Sequential(nn.GroupNorm(4, ch), nn.SiLU(), nn.Conv2d(ch, 3, 3, padding=1))

        def forward(self, x, t, y):
            emb = self.temb(timestep_embedding(t, self.ch)) + self.label(y)
            h0 = self.inp(x)
            h = self.conv1(F.silu(self.norm1(h0)))
            scale, shift = T.chunk(self.emb_out(emb)[..., None, None], 2, dim=1)
            h = h0 + self.conv2(F.silu(self.norm2(h) * (1 + scale) + shift))
            b, c, hh, ww = h.shape
            flat = h.reshape(b, c, -1)
            q, k, v = self.qkv(self.anorm(flat)).reshape(b * 2, 3 * c // 2, -1).split(c // 2, 1)
            s = 1 / math.sqrt(math.sqrt(c // 2))
            w = T.softmax(T.einsum("bct,bcs->bts", q * s, k * s), dim=-1)
            a = T.einsum("bts,bcs->bct", w, v).reshape(b, c, -1)
            return self.out((flat + self.proj(a)).reshape(b, c, hh, ww))

    return Net().double()


def test_ddpm_training_step_ema_and_guided_ddim_sampling():
    torch.manual_seed(0)
    tm, rm = _ddpm(torch), _ddpm(rg)
    _load(tm, rm)
    steps = 10
    sched = {}
    for T in (torch, rg):
        betas = T.linspace(1e-4, 0.02, steps, dtype=T.float64)
        ac = T.cumprod(1.0 - betas, dim=0)
        sched[T] = (ac, T.nn.functional.pad(ac[:-1], (1, 0), value=1.0))

    def extract(a, t):
        return a.gather(-1, t).reshape(t.shape[0], 1, 1, 1)

    emas = [(m, {k: v.detach().clone() for k, v in m.state_dict().items()}) for m in (tm, rm)]
    opts = (torch.optim.AdamW(tm.parameters(), 1e-3), rg.optim.AdamW(rm.parameters(), 1e-3))
    for _ in range(2):
        x0 = torch.randn(4, 3, 4, 4, dtype=torch.float64)
        noise = torch.randn_like(x0)
        t = torch.randint(0, steps, (4,))
        y = torch.where(torch.rand(4) < 0.3, torch.full((4,), 2), torch.randint(0, 2, (4,)))
        losses = []
        for T, m, opt in ((torch, tm, opts[0]), (rg, rm, opts[1])):
            a0, n, tt, yy = ((x0, noise, t, y) if T is torch else
                             (rg.tensor(v.numpy()) for v in (x0, noise, t, y)))
            a = extract(sched[T][0], tt)
            loss = T.nn.functional.mse_loss(m(a.sqrt() * a0 + (1 - a).sqrt() * n, tt, yy), n)
            opt.zero_grad()
            loss.backward()
            T.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            losses.append(loss)
        _close(*losses)
        _same_grads(tm, rm)
        for m, ema in emas:
            with (torch.no_grad() if m is tm else rg.no_grad()):
                for k, v in m.state_dict().items():
                    ema[k].mul_(0.9).add_(v, alpha=0.1)
    _same_state(tm, rm)
    for k in emas[0][1]:
        _close(emas[0][1][k], emas[1][1][k])
    xt = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    samples = []
    for T, m in ((torch, tm), (rg, rm)):
        ac, ac_prev = sched[T]
        x, y = ((xt, torch.tensor([0, 1])) if T is torch
                else (rg.tensor(xt.numpy()), rg.tensor([0, 1])))
        with T.no_grad():
            for i in reversed(range(0, steps, 3)):
                t = T.full((2,), i, dtype=T.long)
                e_c, e_u = m(T.cat([x, x]), T.cat([t, t]), T.cat([y, T.full_like(y, 2)])).chunk(2)
                eps = e_u + 3.0 * (e_c - e_u)
                a, ap = extract(ac, t), extract(ac_prev, t)
                x0 = ((x - (1 - a).sqrt() * eps) / a.sqrt()).clamp(-1, 1)
                x = ap.sqrt() * x0 + (1 - ap).sqrt() * eps
        samples.append(x)
    _close(*samples)


def _vqvae(T):
    """A VQ-VAE with a codebook looked up through cdist/argmin, the straight-through
    estimator z + (q - z).detach(), codebook and commitment losses, and EMA statistics
    kept with one_hot, index_add_ and bincount."""
    nn, F = T.nn, T.nn.functional

    class VQ(nn.Module):
        def __init__(self, k=6, d=4):
            super().__init__()
            self.codebook = nn.Embedding(k, d)
            self.register_buffer("cluster_size", T.zeros(k, dtype=T.float64))
            self.register_buffer("embed_sum", T.zeros(k, d, dtype=T.float64))

        def forward(self, z):
            b, c, h, w = z.shape
            flat = z.permute(0, 2, 3, 1).reshape(-1, c)
            idx = T.cdist(flat, self.codebook.weight).argmin(dim=1)
            zq = self.codebook(idx).view(b, h, w, c).permute(0, 3, 1, 2)
            loss = F.mse_loss(zq, z.detach()) + 0.25 * F.mse_loss(zq.detach(), z)
            if self.training:
                with T.no_grad():
                    onehot = F.one_hot(idx, self.codebook.num_embeddings).type(flat.dtype)
                    self.cluster_size.mul_(0.9).add_(onehot.sum(0), alpha=0.1)
                    es = T.zeros_like(self.embed_sum).index_add_(0, idx, flat)
                    self.embed_sum.mul_(0.9).add_(es, alpha=0.1)
            usage = T.bincount(idx, minlength=self.codebook.num_embeddings)
            return z + (zq - z).detach(), loss, usage

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), nn.ReLU(True), nn.Conv2d(8, 4, 1))
            self.vq = VQ()
            self.dec = nn.Sequential(nn.ConvTranspose2d(4, 8, 4, 2, 1), nn.ReLU(True),
                                     nn.Conv2d(8, 1, 3, padding=1))

        def forward(self, x):
            zq, loss, usage = self.vq(self.enc(x))
            return self.dec(zq), loss, usage

    return Model().double()


def test_vqvae_straight_through_and_ema_codebook():
    torch.manual_seed(0)
    tm, rm = _vqvae(torch), _vqvae(rg)
    _load(tm, rm)
    opts = (torch.optim.Adam(tm.parameters(), 1e-2), rg.optim.Adam(rm.parameters(), 1e-2))
    for _ in range(3):
        x = torch.rand(3, 1, 8, 8, dtype=torch.float64)
        outs = []
        for T, m, opt, xx in ((torch, tm, opts[0], x), (rg, rm, opts[1], rg.tensor(x.numpy()))):
            rec, vq_loss, usage = m(xx)
            loss = T.nn.functional.mse_loss(rec, xx) + vq_loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            outs.append((loss, usage))
        _close(outs[0][0], outs[1][0])
        assert outs[0][1].tolist() == outs[1][1].tolist()
        _same_grads(tm, rm)
    _same_state(tm, rm)
