"""Diffusion-model training and sampling code as its reference repos write it
(denoising-diffusion-pytorch's GaussianDiffusion, improved-diffusion's losses, diffusers'
scheduler steps, k-diffusion's samplers and EDM preconditioning, EMA of parameters), run
on torch and on retrograd from the same inputs and weights and compared."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

# --------------------------------------------------------------- scans accumulate wide


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64"])
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_scans_accumulate_in_the_wider_type_as_torch(fn, dtype):
    """torch's CPU cumsum/cumprod keep the running value in double for float32 (float for
    half, complex128 for complex64) and round each output once: diffusers'
    alphas_cumprod = torch.cumprod(1 - betas, 0) of float32 betas must be the same bits."""
    rs = np.random.RandomState(0)
    x = 1 - rs.uniform(0, 0.02, (3, 400))
    if dtype == "complex64":
        x = x + 1j * rs.uniform(-0.01, 0.01, x.shape)
    x = x.astype(dtype)
    for dim in (0, 1, -1):
        want = getattr(torch, fn)(torch.tensor(x), dim).numpy()
        got = getattr(rg, fn)(rg.tensor(x), dim).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_float32_alphas_cumprod_and_its_gradient_match_torch():
    """The scheduler's float32 schedule (scaled-linear betas, their cumulative product and
    the sigmas from it) and the backward of a float32 cumsum/cumprod/logcumsumexp."""
    betas = (np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000) ** 2).astype(np.float32)
    out = {}
    for T in (torch, rg):
        b = T.tensor(betas, requires_grad=True)
        ac = T.cumprod(1.0 - b, dim=0)
        sig = ((1 - ac) / ac) ** 0.5
        lse = T.logcumsumexp(b * 100, 0)
        (sig.sum() + T.cumsum(b, 0).sum() + lse.sum()).backward()
        out[T] = (ac, sig, lse, b.grad)
    np.testing.assert_array_equal(out[rg][0].detach().numpy(), out[torch][0].detach().numpy())
    np.testing.assert_array_equal(out[rg][2].detach().numpy(), out[torch][2].detach().numpy())
    close(out[rg][1], out[torch][1], "sigmas", 1e-6)
    close(out[rg][3], out[torch][3], "grad", 1e-5)


# --------------------------------------------------------------- error types


@pytest.mark.parametrize("fn", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_of_a_0d_tensor_is_index_error(fn):
    """A scipy-free LMS coefficient that integrates a constant 0-d tensor: torch raises
    IndexError (no dimension to integrate along), so must retrograd."""
    for T in (torch, rg):
        with pytest.raises(IndexError):
            getattr(T, fn)(T.tensor(1.0), T.arange(3.0))
        with pytest.raises(IndexError):
            getattr(T, fn)(T.tensor(1.0))


# --------------------------------------------------------------- torch._utils


def _fp16_util_program(T, U, W, G):
    """improved-diffusion's fp16_util: a flat float32 master copy of the parameters, the
    model's gradients flattened onto it, an optimizer step on the master, and the result
    unflattened and copied back into the model."""
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2)).double()
    with T.no_grad():
        for p, w in zip(model.parameters(), W):
            p.copy_(T.tensor(w))
    model_params = list(model.parameters())
    master = T.nn.Parameter(U._flatten_dense_tensors([p.detach().float() for p in model_params]))
    master.requires_grad = True
    opt = T.optim.Adam([master], lr=1e-2)
    for g in G:
        model.zero_grad()
        (model(T.tensor(g)) ** 2).mean().backward()
        master.grad = U._flatten_dense_tensors([p.grad.detach().float() for p in model_params])
        opt.step()
        for p, mp in zip(model_params, U._unflatten_dense_tensors(master.detach(), model_params)):
            p.detach().copy_(mp)
    one = U._flatten_dense_tensors([model_params[0]])
    return master, [p.detach().clone() for p in model_params], one


def test_torch_utils_flatten_dense_tensors_as_fp16_util_uses_them():
    """`from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors` (old
    mixed-precision utilities): the same flat master, steps and unflattened views."""
    import torch._utils as tu

    import retrograd._utils as ru

    rs = np.random.RandomState(0)
    W = [rs.randn(4, 3), rs.randn(4), rs.randn(2, 4), rs.randn(2)]
    G = [rs.randn(5, 3) for _ in range(3)]
    want = _fp16_util_program(torch, tu, W, G)
    got = _fp16_util_program(rg, ru, W, G)
    close(got[0], want[0], "master", 1e-6)
    for a, b in zip(got[1], want[1]):
        close(a, b, "param", 1e-6)
    close(got[2], want[2], "one tensor flattened", 0.0)
    assert rg._utils is ru
    views = ru._unflatten_dense_tensors(rg.arange(5.0), [rg.ones(2), rg.ones(3)])
    assert isinstance(views, tuple) and [tuple(v.shape) for v in views] == [(2,), (3,)]
    with pytest.raises(RuntimeError):
        ru._unflatten_dense_tensors(rg.arange(5.0), [rg.ones(2), rg.ones(4)])
    with pytest.raises(RuntimeError):
        tu._unflatten_dense_tensors(torch.arange(5.0), [torch.ones(2), torch.ones(4)])
    x = rg.ones(2, 3, requires_grad=True)
    (ru._flatten_dense_tensors([x, rg.ones(2)]) * rg.arange(8.0)).sum().backward()
    close(x.grad, torch.arange(6.0).reshape(2, 3), "grad through the flattening", 0.0)


# --------------------------------------------------------------- powers of a number


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("e", [3, 3.0, -2.0, -0.5, 4.0])
def test_power_of_a_python_number_is_torchs_kernel(e, dtype):
    """torch computes x ** 3 as x * x * x, x ** -2 as 1 / (x * x) and x ** -0.5 as
    1 / sqrt(x) (improved-diffusion's 0.044715 * x ** 3, EDM's (sigma * sigma_data) ** -2,
    diffusers' alpha_prod ** -0.5), and the gradient's x ** (e - 1) the same way (x ** 4's
    is 4 * x * x * x). Same bits for those, by every spelling; a power that is torch's
    general pow routine (x ** 4 itself, x ** -3 in x ** -2's gradient) to rounding."""
    rs = np.random.RandomState(0)
    x = rs.uniform(0.1, 2.0, 4000).astype(dtype)
    g = rs.randn(4000).astype(dtype)
    res = {}
    for T in (torch, rg):
        a = T.tensor(x, requires_grad=True)
        y = a ** e
        y.backward(T.tensor(g))
        b = T.tensor(x)
        c = b.clone()
        c **= e
        res[T] = [a.grad, y.detach(), T.pow(b, e), b.pow(e), c, b.clone().pow_(e)]
    exact = {0} if e == 4.0 else set(range(1, 6)) | ({0} if e == 3 else set())
    for k, (got, want) in enumerate(zip(res[rg], res[torch])):
        assert got.dtype == getattr(rg, dtype), k
        if k in exact:
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(k))
        else:
            close(got, want, str(k), 1e-6)


# --------------------------------------------------------------- whole programs


def _extract(a, t, x_shape):
    b, *_ = t.shape
    return a.gather(-1, t).reshape(b, *((1,) * (len(x_shape) - 1)))


def _gaussian_diffusion(T, W):
    """denoising-diffusion-pytorch's GaussianDiffusion around a small time-conditioned
    conv net: cosine schedule in float64 kept as float32 buffers, v-prediction with
    min-SNR weights, offset noise, self-conditioning."""
    nn, F = T.nn, T.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.time_mlp = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 8))
            self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
            self.norm = nn.GroupNorm(2, 8)
            self.conv2 = nn.Conv2d(8, 2, 3, padding=1)

        def forward(self, x, time, x_self_cond=None):
            x_self_cond = x_self_cond if x_self_cond is not None else T.zeros_like(x)
            x = T.cat((x_self_cond, x), dim=1)
            emb = T.exp(T.arange(3) * -(math.log(10000) / 2))
            emb = time[:, None] * emb[None, :]
            ss = self.time_mlp(T.cat((emb.sin(), emb.cos()), dim=-1))
            scale, shift = ss[:, :, None, None].chunk(2, dim=1)
            h = self.norm(self.conv1(x)) * (scale.repeat(1, 2, 1, 1) + 1) + shift.repeat(1, 2, 1, 1)
            return self.conv2(F.silu(h))

    class GaussianDiffusion(nn.Module):
        def __init__(self, model, timesteps=12):
            super().__init__()
            self.model = model
            s = 0.008
            t = T.linspace(0, timesteps, timesteps + 1, dtype=T.float64) / timesteps
            ac = T.cos((t + s) / (1 + s) * math.pi * 0.5) ** 2
            ac = ac / ac[0]
            betas = T.clip(1 - (ac[1:] / ac[:-1]), 0, 0.999)
            alphas = 1. - betas
            alphas_cumprod = T.cumprod(alphas, dim=0)
            alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.)
            self.num_timesteps = int(betas.shape[0])

            def reg(name, val):
                self.register_buffer(name, val.to(T.float32))
            reg('alphas_cumprod', alphas_cumprod)
            reg('sqrt_alphas_cumprod', T.sqrt(alphas_cumprod))
            reg('sqrt_one_minus_alphas_cumprod', T.sqrt(1. - alphas_cumprod))
            reg('sqrt_recip_alphas_cumprod', T.sqrt(1. / alphas_cumprod))
            reg('sqrt_recipm1_alphas_cumprod', T.sqrt(1. / alphas_cumprod - 1))
            posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)
            reg('posterior_log_variance_clipped', T.log(posterior_variance.clamp(min=1e-20)))
            reg('posterior_mean_coef1', betas * T.sqrt(alphas_cumprod_prev) / (1. - alphas_cumprod))
            reg('posterior_mean_coef2',
                (1. - alphas_cumprod_prev) * T.sqrt(alphas) / (1. - alphas_cumprod))
            snr = alphas_cumprod / (1 - alphas_cumprod)
            clipped = snr.clone()
            clipped.clamp_(max=5)
            reg('loss_weight', clipped / (snr + 1))

        def model_predictions(self, x, t, x_self_cond=None, clip_x_start=False):
            v = self.model(x, t, x_self_cond)
            x_start = (_extract(self.sqrt_alphas_cumprod, t, x.shape) * x
                       - _extract(self.sqrt_one_minus_alphas_cumprod, t, x.shape) * v)
            if clip_x_start:
                x_start = T.clamp(x_start, min=-1., max=1.)
            pred_noise = ((_extract(self.sqrt_recip_alphas_cumprod, t, x.shape) * x - x_start)
                          / _extract(self.sqrt_recipm1_alphas_cumprod, t, x.shape))
            return pred_noise, x_start

        def p_losses(self, x_start, t, noise, offset, self_cond):
            noise = noise + 0.1 * offset[:, :, None, None]
            x = (_extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
                 + _extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise)
            x_self_cond = None
            if self_cond:
                with T.no_grad():
                    x_self_cond = self.model_predictions(x, t)[1]
                    x_self_cond.detach_()
            out = self.model(x, t, x_self_cond)
            target = (_extract(self.sqrt_alphas_cumprod, t, x_start.shape) * noise
                      - _extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * x_start)
            loss = F.smooth_l1_loss(out, target, reduction='none')
            loss = loss.mean(dim=list(range(1, loss.ndim)))
            return (loss * _extract(self.loss_weight, t, loss.shape)).mean()

        @T.inference_mode()
        def p_sample_loop(self, img, noises):
            x_start = None
            for t in reversed(range(self.num_timesteps)):
                bt = T.full((img.shape[0],), t, dtype=T.long)
                _, x_start = self.model_predictions(img, bt, x_start)
                x_start.clamp_(-1., 1.)
                mean = (_extract(self.posterior_mean_coef1, bt, img.shape) * x_start
                        + _extract(self.posterior_mean_coef2, bt, img.shape) * img)
                log_var = _extract(self.posterior_log_variance_clipped, bt, img.shape)
                img = mean + (0.5 * log_var).exp() * (noises[t] if t > 0 else 0.)
            return img

        @T.inference_mode()
        def ddim_sample(self, img, noises, steps=4, eta=0.5):
            times = T.linspace(-1, self.num_timesteps - 1, steps=steps + 1)
            times = list(reversed(times.int().tolist()))
            x_start = None
            for i, (time, time_next) in enumerate(zip(times[:-1], times[1:])):
                tc = T.full((img.shape[0],), time, dtype=T.long)
                pred_noise, x_start = self.model_predictions(img, tc, x_start, True)
                if time_next < 0:
                    img = x_start
                    continue
                alpha, alpha_next = self.alphas_cumprod[time], self.alphas_cumprod[time_next]
                sigma = eta * ((1 - alpha / alpha_next) * (1 - alpha_next) / (1 - alpha)).sqrt()
                c = (1 - alpha_next - sigma ** 2).sqrt()
                img = x_start * alpha_next.sqrt() + c * pred_noise + sigma * noises[i]
            return img

    T.set_default_dtype(T.float64)
    try:
        gd = GaussianDiffusion(Net())
        if W is not None:
            gd.model.load_state_dict({k: T.tensor(v) for k, v in W.items()})
        return gd
    finally:
        T.set_default_dtype(T.float32)


def _train_and_sample(T, gd, data):
    T.set_default_dtype(T.float64)  # the time embedding follows the default dtype
    try:
        return _train_and_sample_f64(T, gd, data)
    finally:
        T.set_default_dtype(T.float32)


def _train_and_sample_f64(T, gd, data):
    opt = T.optim.Adam(gd.parameters(), lr=1e-3)
    out = {"losses": [], "grads": [], "norms": []}
    for step in range(2):
        for micro in (slice(0, 2), slice(2, 4)):
            args = [T.tensor(data[k][step][micro]) for k in ("x0", "t", "noise", "offset")]
            loss = gd.p_losses(*args, self_cond=step == 0)
            (loss / 2).backward()
            out["losses"].append(loss.detach())
        out["norms"].append(T.nn.utils.clip_grad_norm_(gd.parameters(), 1.0))
        out["grads"] += [p.grad.clone() for p in gd.parameters()]
        opt.step()
        opt.zero_grad()
    out["params"] = [p.detach().clone() for p in gd.parameters()]
    gd.eval()
    img, noises = T.tensor(data["img"]), [T.tensor(z) for z in data["noises"]]
    out["p_sample"] = gd.p_sample_loop(img, noises)
    out["ddim"] = gd.ddim_sample(img, noises)
    out["buffers"] = [b for _, b in gd.named_buffers()]
    return out


def test_gaussian_diffusion_training_and_sampling_match_torch():
    """Two accumulated micro-batches per step, clip_grad_norm_, Adam; then ancestral
    sampling and DDIM with eta from the same noise. The float32 schedule buffers are the
    same bits; samples through them are float32-accurate (float32 exp and sqrt differ in
    the last bit between libraries); losses, gradients and parameters of the float64
    model agree to 1e-9."""
    rs = np.random.RandomState(0)
    data = {"x0": rs.uniform(-1, 1, (2, 4, 2, 4, 4)), "t": rs.randint(0, 12, (2, 4)),
            "noise": rs.randn(2, 4, 2, 4, 4), "offset": rs.randn(2, 4, 2),
            "img": rs.randn(2, 2, 4, 4), "noises": rs.randn(12, 2, 2, 4, 4)}
    tgd = _gaussian_diffusion(torch, None)
    W = {k: v.numpy().copy() for k, v in tgd.model.state_dict().items()}
    want = _train_and_sample(torch, tgd, data)
    got = _train_and_sample(rg, _gaussian_diffusion(rg, W), data)
    for a, b in zip(got["buffers"], want["buffers"]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for k in ("losses", "norms", "grads", "params"):
        for i, (a, b) in enumerate(zip(got[k], want[k], strict=True)):
            close(a, b, f"{k}[{i}]", 1e-9)
    close(got["p_sample"], want["p_sample"], "p_sample", 1e-5)
    close(got["ddim"], want["ddim"], "ddim", 1e-5)
