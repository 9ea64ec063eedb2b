"""Porting round: differentiable image processing (kornia, torchvision.transforms.v2 tensor
kernels, image-restoration repos) compared with PyTorch, in float64 with gradients, and on
uint8 images exactly."""

import math

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.nn import functional as F
from tests.port_compare import close

TF = torch.nn.functional


# ---------------------------------------------------------------- uint8 resizing

_U8_CASES = [((2, 3, 7, 9), {"scale_factor": 1.5}),
             ((2, 3, 7, 9), {"scale_factor": 0.6}),
             ((1, 1, 7, 9), {"size": (5, 4)}),
             ((1, 3, 7, 9), {"size": (11, 3), "align_corners": True}),
             ((2, 5, 20, 24), {"scale_factor": (2.5, 0.45), "align_corners": True}),
             ((1, 3, 20, 24), {"scale_factor": (0.3, 1.3)}),
             ((1, 2, 9, 8), {"scale_factor": (0.7, 1.3), "recompute_scale_factor": True}),
             ((1, 3, 1, 6), {"size": (4, 9)}),
             ((1, 2, 8, 8), {"size": (8, 11)})]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("shape, kw", _U8_CASES)
def test_interpolate_resizes_uint8_images_bit_exactly_as_torch(mode, antialias, shape, kw):
    """torchvision's v2 `resize` hands uint8 images to `interpolate` (bilinear or bicubic,
    antialiased or not); it was refused as not floating. PyTorch resizes them in fixed point
    (int16 weights, a rounded uint8 intermediate after each pass): the same bytes here."""
    x = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    want = TF.interpolate(torch.tensor(x), mode=mode, antialias=antialias, **kw).numpy()
    got = F.interpolate(rg.tensor(x), mode=mode, antialias=antialias, **kw)
    assert got.dtype == np.uint8 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_interpolate_uint8_saturates_and_keeps_other_integers_refused():
    """Bicubic overshoot on a hard edge saturates at 0 and 255 (not wrapped); int64 stays
    refused with torch's exception kind; an unchanged size is a copy."""
    x = np.zeros((1, 1, 4, 8), np.uint8)
    x[..., 4:] = 255
    want = TF.interpolate(torch.tensor(x), scale_factor=2.3, mode="bicubic").numpy()
    got = F.interpolate(rg.tensor(x), scale_factor=2.3, mode="bicubic").numpy()
    np.testing.assert_array_equal(got, want)
    with pytest.raises(NotImplementedError):
        TF.interpolate(torch.tensor(x).long(), scale_factor=2, mode="bilinear")
    with pytest.raises(NotImplementedError):
        F.interpolate(rg.tensor(x).long(), scale_factor=2, mode="bilinear")
    same = F.interpolate(rg.tensor(x), size=(4, 8), mode="bilinear", antialias=True)
    np.testing.assert_array_equal(same.numpy(), x)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("scale", [(0.5, 1.05), (1.08, 1.05), (0.45, 0.99)])
def test_antialiased_interpolate_keeps_a_dimension_whose_size_stays(mode, scale):
    """antialias=True with a scale_factor that leaves a size unchanged (10 * 1.05 -> 10):
    PyTorch's separable kernel skips that dimension (a copy); it was resampled at 1/1.05.
    Values as torch's; the gradient is the adjoint of that forward, built from torch's
    forward on unit images (torch's own backward still resamples the kept dimension, so
    it fails gradcheck there)."""
    x = np.random.default_rng(2).standard_normal((1, 2, 8, 10))
    want = TF.interpolate(torch.tensor(x), scale_factor=scale, mode=mode, antialias=True)
    g = np.random.default_rng(3).standard_normal(want.shape)
    units = torch.eye(80, dtype=torch.float64).reshape(80, 1, 8, 10)
    jac = TF.interpolate(units, scale_factor=scale, mode=mode, antialias=True).reshape(80, -1)
    adjoint = (g.reshape(2, -1) @ jac.numpy().T).reshape(x.shape)
    xi = rg.tensor(x, requires_grad=True)
    y = F.interpolate(xi, scale_factor=scale, mode=mode, antialias=True)
    (y * rg.tensor(g)).sum().backward()
    close(y, want, tol=1e-12)
    close(xi.grad, adjoint, tol=1e-12)


def test_interpolate_refuses_recompute_scale_factor_with_an_explicit_size():
    """torch raises ValueError for size= with recompute_scale_factor=True; the port
    resized silently. False or None with a size stay accepted in both."""
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 7))
    with pytest.raises(ValueError):
        TF.interpolate(torch.tensor(x), size=(3, 4), recompute_scale_factor=True)
    with pytest.raises(ValueError, match="recompute_scale_factor"):
        F.interpolate(rg.tensor(x), size=(3, 4), recompute_scale_factor=True)
    close(F.interpolate(rg.tensor(x), size=(3, 4), mode="bilinear", recompute_scale_factor=False),
          TF.interpolate(torch.tensor(x), size=(3, 4), mode="bilinear",
                         recompute_scale_factor=False))


# ---------------------------------------------------------------- whole programs

def _v2_pipeline(L, img):
    """torchvision.transforms.v2's tensor kernels on a uint8 batch: resize (antialiased),
    grayscale, brightness, contrast, solarize, posterize, autocontrast, equalize."""
    img = L.nn.functional.interpolate(img, size=(13, 17), mode="bilinear", antialias=True)
    r, g, b = img.unbind(dim=-3)
    gray = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).round_().to(img.dtype)
    bright = img.mul(1.3).clamp_(0, 255).to(img.dtype)
    mean = L.mean(gray.to(L.float32), dim=(-2, -1), keepdim=True).unsqueeze(-3)
    contrast = img.mul(0.7).add_(mean, alpha=0.3).clamp_(0, 255).to(img.dtype)
    sol = L.where(contrast >= 128, 255 - contrast, contrast)
    post = sol & (((1 << 3) - 1) << 5)
    ft = bright.to(L.float32)
    lo, hi = ft.amin(dim=(-2, -1), keepdim=True), ft.amax(dim=(-2, -1), keepdim=True)
    eq = lo == hi
    scale = (hi - lo).mul_(1.0 / 255).masked_fill_(eq, 1.0)
    auto = ft.sub_(lo.masked_fill(eq, 0.0)).div_(scale).clamp_(0, 255).to(L.uint8)
    flat = auto.flatten(0, -3).flatten(1).to(L.int64)
    ones = flat.new_ones(1).expand_as(flat)
    hist = flat.new_zeros(flat.shape[0], 256).scatter_add_(1, flat, ones)
    cum = hist.cumsum(dim=-1)
    step = (cum[:, -1:] - hist[:, -1:]).div(255, rounding_mode="floor")
    lut = cum.sub(hist).add_(step.div(2, rounding_mode="floor"))
    lut = lut.div_(step.clamp(min=1), rounding_mode="floor").clamp_(0, 255).to(L.uint8)
    equal = lut.gather(1, flat).view(auto.shape)
    return gray, bright, contrast, post, auto, equal


def test_port_torchvision_v2_uint8_pipeline():
    x = np.random.default_rng(3).integers(0, 256, (2, 3, 24, 30)).astype(np.uint8)
    for a, b in zip(_v2_pipeline(rg, rg.tensor(x)), _v2_pipeline(torch, torch.tensor(x))):
        close(a, b)


def _kornia_like(L, img, theta):
    """A differentiable augmentation and loss: affine warp (grid_sample on affine_grid),
    Gaussian blur by a grouped conv with reflect padding, Sobel magnitude, RGB->HSV with
    atan2/fmod, a bicubic antialiased down-scale and an SSIM-style score."""
    Fn = L.nn.functional
    grid = Fn.affine_grid(theta, list(img.shape), align_corners=False)
    w = Fn.grid_sample(img, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    x = L.arange(5, dtype=img.dtype) - 2
    g = L.exp(-x.pow(2.0) / (2 * 1.2 ** 2))
    g = g / g.sum()
    k2 = (g[:, None] @ g[None, :]).expand(3, 1, 5, 5)
    blur = Fn.conv2d(Fn.pad(w, [2, 2, 2, 2], mode="reflect"), k2, groups=3)
    kx = L.tensor([[-1., 0., 1.], [-2., 0., 2.], [-1., 0., 1.]], dtype=img.dtype)
    sob = Fn.conv2d(Fn.pad(blur.reshape(-1, 1, *blur.shape[-2:]), (1, 1, 1, 1), mode="replicate"),
                    L.stack([kx, kx.t()]).unsqueeze(1))
    mag = L.sqrt(sob.pow(2).sum(1) + 1e-6)
    r, gg, b = blur.unbind(1)
    hue = L.fmod(L.atan2(math.sqrt(3) * (gg - b), 2 * r - gg - b) + 2 * math.pi, 2 * math.pi)
    small = Fn.interpolate(blur, scale_factor=0.45, mode="bicubic", antialias=True)
    def box(t):
        return Fn.avg_pool2d(t, 3, 1, 1, count_include_pad=False)
    mu1, mu2 = box(img), box(blur)
    s12 = box(img * blur) - mu1 * mu2
    s1, s2 = box(img * img) - mu1 ** 2, box(blur * blur) - mu2 ** 2
    ssim = ((2 * mu1 * mu2 + 1e-4) * (2 * s12 + 9e-4)) / (
        (mu1 ** 2 + mu2 ** 2 + 1e-4) * (s1 + s2 + 9e-4))
    loss = mag.mean() + hue.mean() * 0.1 + small.pow(2).mean() + (1 - ssim.mean())
    return loss, blur, mag, hue, small


def test_port_kornia_style_augment_and_loss_with_gradients():
    rng = np.random.default_rng(5)
    img = rng.random((2, 3, 11, 13))
    theta = np.array([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]], [[1.1, 0.0, -0.1], [0.05, 0.95, 0.1]]])
    out = {}
    for L in (torch, rg):
        i, t = L.tensor(img, requires_grad=True), L.tensor(theta, requires_grad=True)
        res = _kornia_like(L, i, t)
        res[0].backward()
        out[L.__name__] = (*res, i.grad, t.grad)
    for a, b in zip(out["retrograd"], out["torch"]):
        close(a, b, tol=1e-9)


def test_port_restoration_net_adam_steps():
    """A small super-resolution/denoising net (reflect/replicate/circular conv padding,
    PReLU, PixelShuffle, bicubic skip) trained three AdamW steps on L1 + total variation:
    losses and parameters as torch's (AdamW's update written out on the torch side, whose
    optimizers import torch._dynamo, seconds on a first use)."""
    def build(L):
        nn = L.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
                self.body = nn.Sequential(
                    nn.Conv2d(8, 8, 3, padding=1, padding_mode="replicate"), nn.PReLU(8),
                    nn.Conv2d(8, 8, 3, padding=2, dilation=2, padding_mode="circular"))
                self.up = nn.Sequential(nn.Conv2d(8, 12, 3, padding=1), nn.PixelShuffle(2))
                self.tail = nn.Sequential(nn.Conv2d(3, 12, 3, padding=1), nn.PixelShuffle(2))

            def forward(self, x):
                f = self.head(x)
                f = f + self.body(f)
                u = self.tail(self.up(f))
                return u + L.nn.functional.interpolate(x, scale_factor=4, mode="bicubic")
        return Net().double()

    rng = np.random.default_rng(9)
    x, y = rng.random((2, 3, 6, 6)), rng.random((2, 3, 24, 24))
    tnet, rnet = build(torch), build(rg)
    rnet.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tnet.state_dict().items()})
    hist = {}
    for L, net in ((torch, tnet), (rg, rnet)):
        params = list(net.parameters())
        opt = rg.optim.AdamW(params, lr=1e-2, weight_decay=0.01) if L is rg else None
        moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params] if opt is None \
            else []
        xs, ys, losses = L.tensor(x), L.tensor(y), []
        for step in range(1, 4):
            net.zero_grad()
            o = net(xs)
            tv = (o[..., 1:, :] - o[..., :-1, :]).abs().mean() \
                + (o[..., 1:] - o[..., :-1]).abs().mean()
            loss = L.nn.functional.l1_loss(o, ys) + 0.05 * tv
            loss.backward()
            losses.append(loss.item())
            if opt is not None:
                opt.step()
                continue
            with torch.no_grad():
                for p, (m, v) in zip(params, moments):
                    p.mul_(1 - 1e-2 * 0.01)
                    m.lerp_(p.grad, 0.1)
                    v.mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                    denom = (v.sqrt() / math.sqrt(1 - 0.999 ** step)).add_(1e-8)
                    p.addcdiv_(m, denom, value=-1e-2 / (1 - 0.9 ** step))
        hist[L.__name__] = losses
    np.testing.assert_allclose(hist["retrograd"], hist["torch"], rtol=1e-10)
    for (k, a), (_, b) in zip(rnet.named_parameters(), tnet.named_parameters()):
        close(a, b, k, tol=1e-9)


# ---------------------------------------------------------------- dtypes torch refuses

def _refusals(L):
    Fn = L.nn.functional
    idx = L.zeros(1, 1, 2, 2, dtype=L.int64)
    return {
        "unfold": lambda x: Fn.unfold(x, 2),
        "fold": lambda x: Fn.fold(x.reshape(1, 4, 1), (2, 2), 2),
        "max_unpool2d": lambda x: Fn.max_unpool2d(x, idx, 2),
        "pad reflect": lambda x: Fn.pad(x, (1, 1, 1, 1), mode="reflect"),
        "pad replicate": lambda x: Fn.pad(x, (1, 1, 1, 1), mode="replicate"),
        "conv2d": lambda x: Fn.conv2d(x, L.ones(1, 1, 2, 2).to(x.dtype)),
        "conv_transpose2d": lambda x: Fn.conv_transpose2d(x, L.ones(1, 1, 2, 2).to(x.dtype)),
        "avg_pool2d": lambda x: Fn.avg_pool2d(x, 2),
        "lp_pool2d": lambda x: Fn.lp_pool2d(x, 2, 2),
        "bilinear": lambda x: Fn.interpolate(x, scale_factor=2, mode="bilinear"),
        "nearest": lambda x: Fn.interpolate(x, scale_factor=2),
        "bilinear aa": lambda x: Fn.interpolate(x, scale_factor=0.5, mode="bilinear",
                                                antialias=True),
    }


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "complex64"])
def test_image_ops_refuse_the_dtypes_torch_refuses(dtype):
    """Each op on each dtype: where PyTorch's CPU kernel is "not implemented" for the
    dtype (im2col/col2im on integers, max_unpool on non-floating, reflect/replicate pads
    and convolutions on bool, transposed convolutions on integers but int64, avg/lp pools
    and interpolation on complex, antialiasing on float16) the port raises what
    `except NotImplementedError` catches, instead of computing; elsewhere both compute."""
    for name, fn in _refusals(torch).items():
        x = torch.ones(1, 1, 2, 2).to(getattr(torch, dtype))
        try:
            fn(x)
            refused = False
        except NotImplementedError:
            refused = True
        ours = _refusals(rg)[name]
        if refused:
            with pytest.raises(NotImplementedError):
                ours(rg.ones(1, 1, 2, 2).to(getattr(rg, dtype)))
        else:
            ours(rg.ones(1, 1, 2, 2).to(getattr(rg, dtype)))


def test_backends_cpu_capability_as_torch(monkeypatch):
    """torchvision's resize kernels ask `torch.backends.cpu.get_cpu_capability()` whether
    to resize uint8 natively; the name was missing. Same answer as torch on this CPU, and
    ATEN_CPU_CAPABILITY lowers it as it does torch's (read at torch's start, so only ours is
    checked for that)."""
    assert rg.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert rg.backends.cpu.get_cpu_capability() == "DEFAULT"
