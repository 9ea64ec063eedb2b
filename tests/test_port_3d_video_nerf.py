"""3-D, video and neural rendering written in plain PyTorch (C3D/R(2+1)D-style video
nets, a 3-D UNet with Dice loss and sliding-window inference, NeRF volume rendering and
hierarchical sampling, a multiresolution hash encoding, point-cloud voxelisation, an SDF
with an eikonal term, camera math, 5-D grid_sample), run on torch and on retrograd from
the same inputs and weights and compared in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close, close_grads

import retrograd as rg


def _init_state(tm) -> dict:
    """The torch module's initial state as retrograd tensors (taken before it trains)."""
    return {k: rg.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}


# --------------------------------------------------------------- max_unpool index errors

@pytest.mark.parametrize("nd", [2, 3])
def test_max_unpool_out_of_range_index_is_runtime_error(nd):
    """MaxUnpool with an output size too small for the pooled indices (a 7-wide input
    pooled by 2 and unpooled to 6): torch raises RuntimeError ('Found an invalid max
    index'), so code catching RuntimeError must catch it here too."""
    x = np.random.default_rng(0).standard_normal((1, 2) + (7,) * nd)
    for T in (torch, rg):
        pool = getattr(T.nn.functional, f"max_pool{nd}d")
        unpool = getattr(T.nn.functional, f"max_unpool{nd}d")
        p, i = pool(T.tensor(x), 2, return_indices=True)
        i = i.clone()
        i.view(-1)[0] = 7 ** nd - 1  # the last input position lies past a 6-wide output
        with pytest.raises(RuntimeError):
            unpool(p, i, 2)


# --------------------------------------------------------------- whole programs

def _video_net(T):
    """A small C3D/R(2+1)D-flavoured clip classifier."""
    nn = T.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv3d(3, 4, (3, 3, 3), padding=(1, 1, 1))
            self.pool1 = nn.MaxPool3d((1, 2, 2), (1, 2, 2))
            self.spatial = nn.Conv3d(4, 6, (1, 3, 3), padding=(0, 1, 1), bias=False)
            self.bn = nn.BatchNorm3d(6)
            self.temporal = nn.Conv3d(6, 8, (3, 1, 1), padding=(1, 0, 0), bias=False)
            self.pool2 = nn.MaxPool3d(2, 2, ceil_mode=True)
            self.conv3 = nn.Conv3d(8, 8, 3, padding=2, dilation=2, groups=4)
            self.pool3 = nn.AvgPool3d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
            self.gap = nn.AdaptiveAvgPool3d(1)
            self.drop = nn.Dropout3d(0.0)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            x = self.pool1(T.relu(self.conv1(x)))
            x = self.pool2(T.relu(self.temporal(T.relu(self.bn(self.spatial(x))))))
            x = self.drop(self.pool3(nn.functional.relu(self.conv3(x))))
            return self.fc(self.gap(x).flatten(1))

    return Net()


def test_video_clip_classifier_trains_like_torch():
    """Conv3d (dilation/groups), (2+1)D factorised convs, BatchNorm3d, MaxPool3d and
    AvgPool3d with ceil_mode, AdaptiveAvgPool3d, label-smoothed cross-entropy and SGD
    with momentum: three steps, then eval outputs and running stats."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 3, 5, 10, 10)), np.array([1, 3])
    res, state = {}, None
    for T in (torch, rg):
        m = _video_net(T).double()
        if T is rg:
            m.load_state_dict(state)
        else:
            state = _init_state(m)
        opt = T.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = T.nn.functional.cross_entropy(m(T.tensor(x)), T.tensor(y), label_smoothing=0.1)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        m.eval()
        res[T] = (m, losses, m(T.tensor(x)).detach(), m.bn.running_var)
    for a, b in zip(res[rg][1:], res[torch][1:]):
        close(rg.stack(a) if isinstance(a, list) else a,
              torch.stack(b) if isinstance(b, list) else b)
    close_grads(res[torch][0], res[rg][0])


def _nerf_render(T, mlp, c2w, u_strat, u_pdf, n=6):
    """NeRF (nerf-pytorch): rays with meshgrid indexing='xy', stratified samples,
    positional encoding, raw2outputs compositing (exclusive cumprod via cat of ones) and
    sample_pdf (cumsum, searchsorted right=True, gather, where, clamp)."""
    H = W = 4
    i, j = T.meshgrid(T.linspace(0, W - 1, W), T.linspace(0, H - 1, H), indexing="xy")
    dirs = T.stack([(i - W * .5) / 5., -(j - H * .5) / 5., -T.ones_like(i)], -1)
    rays_d = T.sum(dirs[..., None, :] * c2w[:3, :3], -1).reshape(-1, 3)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    t = T.linspace(0., 1., steps=n)
    z = (2. * (1. - t) + 6. * t).expand([rays_o.shape[0], n])
    mids = .5 * (z[..., 1:] + z[..., :-1])
    upper, lower = T.cat([mids, z[..., -1:]], -1), T.cat([z[..., :1], mids], -1)
    z = lower + (upper - lower) * u_strat
    pts = rays_o[..., None, :] + rays_d[..., None, :] * z[..., :, None]
    enc = [pts] + [f(2. ** k * pts) for k in range(3) for f in (T.sin, T.cos)]
    raw = mlp(T.cat(enc, -1))
    dists = z[..., 1:] - z[..., :-1]
    dists = T.cat([dists, T.Tensor([1e10]).to(dists.dtype).expand(dists[..., :1].shape)], -1)
    dists = dists * T.norm(rays_d[..., None, :], dim=-1)
    alpha = 1. - T.exp(-T.nn.functional.relu(raw[..., 3]) * dists)
    ones = T.ones((alpha.shape[0], 1), dtype=alpha.dtype)
    weights = alpha * T.cumprod(T.cat([ones, 1. - alpha + 1e-10], -1), -1)[:, :-1]
    rgb = T.sum(weights[..., None] * T.sigmoid(raw[..., :3]), -2)
    depth = T.sum(weights * z, -1)
    disp = 1. / T.max(1e-10 * T.ones_like(depth), depth / T.sum(weights, -1))
    # sample_pdf on the detached weights
    bins, w = .5 * (z[..., 1:] + z[..., :-1]), weights[..., 1:-1].detach() + 1e-5
    cdf = T.cumsum(w / T.sum(w, -1, keepdim=True), -1)
    cdf = T.cat([T.zeros_like(cdf[..., :1]), cdf], -1)
    inds = T.searchsorted(cdf, u_pdf.contiguous(), right=True)
    below = T.max(T.zeros_like(inds - 1), inds - 1)
    above = T.min((cdf.shape[-1] - 1) * T.ones_like(inds), inds)
    g = T.stack([below, above], -1)
    shape = [g.shape[0], g.shape[1], cdf.shape[-1]]
    cdf_g = T.gather(cdf.unsqueeze(1).expand(shape), 2, g)
    bins_g = T.gather(bins.unsqueeze(1).expand(shape), 2, g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = T.where(denom < 1e-5, T.ones_like(denom), denom)
    samples = bins_g[..., 0] + (u_pdf - cdf_g[..., 0]) / denom * (bins_g[..., 1] - bins_g[..., 0])
    z_all, _ = T.sort(T.cat([z, samples.clamp(0, 10)], -1), -1)
    return rgb, disp, depth, z_all, inds


def test_nerf_render_and_adam_steps_like_torch():
    rng = np.random.default_rng(2)
    c2w = np.array([[1, 0, 0, .1], [0, .8, -.6, .2], [0, .6, .8, 3.]])
    u1, u2, tgt = rng.random((16, 6)), np.sort(rng.random((16, 5)), -1), rng.random((16, 3))
    res, state = {}, None
    for T in (torch, rg):
        nn = T.nn
        mlp = nn.Sequential(nn.Linear(21, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                            nn.Linear(16, 4)).double()
        if T is rg:
            mlp.load_state_dict(state)
        else:
            state = _init_state(mlp)
        opt = T.optim.Adam(mlp.parameters(), lr=5e-3)
        outs = []
        for _ in range(2):
            rgb, disp, depth, z_all, inds = _nerf_render(T, mlp, T.tensor(c2w), T.tensor(u1),
                                                         T.tensor(u2))
            loss = T.mean((rgb - T.tensor(tgt)) ** 2)
            psnr = -10. * T.log(loss) / T.log(T.tensor([10.], dtype=loss.dtype))
            opt.zero_grad()
            loss.backward()
            opt.step()
            outs += [loss.detach(), psnr.detach(), rgb.detach(), disp.detach(), z_all, inds]
        res[T] = (mlp, outs)
    for a, b in zip(res[rg][1], res[torch][1]):
        close(a, b)
    close_grads(res[torch][0], res[rg][0])


def _unet(T):
    """A tiny 3-D UNet with an auxiliary deep-supervision head."""
    nn, F = T.nn, T.nn.functional

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1 = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1),
                                    nn.InstanceNorm3d(4, affine=True), nn.LeakyReLU(0.01))
            self.b = nn.Sequential(nn.Conv3d(4, 8, 3, padding=1), nn.InstanceNorm3d(8), nn.PReLU())
            self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
            self.d1 = nn.Conv3d(8, 3, 1)
            self.aux = nn.Conv3d(8, 3, 1)

        def forward(self, x):
            e1 = self.e1(x)
            b = self.b(F.max_pool3d(e1, 2))
            out = self.d1(T.cat([self.up(b), e1], 1))
            aux = F.interpolate(self.aux(b), size=x.shape[2:], mode="trilinear",
                                align_corners=False)
            up = F.interpolate(out, scale_factor=2, mode="trilinear", align_corners=True)
            return out, aux, up

    return UNet()


def test_unet3d_dice_and_sliding_window_like_torch():
    """A tiny 3-D UNet (InstanceNorm3d, ConvTranspose3d, trilinear upsampling with
    align_corners both ways), soft Dice over one-hot targets permuted to channels-first,
    and sliding-window inference with F.pad and a count map."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((1, 1, 4, 4, 4)), rng.integers(0, 3, (1, 4, 4, 4))
    big = rng.standard_normal((1, 1, 3, 6, 5))
    res, state = {}, None
    for T in (torch, rg):
        F = T.nn.functional
        m = _unet(T).double()
        if T is rg:
            m.load_state_dict(state)
        else:
            state = _init_state(m)
        logits, aux, up = m(T.tensor(x))
        probs = F.softmax(logits, dim=1)
        oh = F.one_hot(T.tensor(y), num_classes=3).permute(0, 4, 1, 2, 3).to(probs.dtype)
        inter, card = T.sum(probs * oh, (0, 2, 3, 4)), T.sum(probs + oh, (0, 2, 3, 4))
        dice = ((2. * inter + 1e-5) / (card + 1e-5)).mean()
        loss = 1 - dice + .5 * F.cross_entropy(aux, T.tensor(y))
        loss.backward()
        with T.no_grad():
            img = F.pad(T.tensor(big), (0, 0, 0, 0, 1, 0))  # depth 3 -> 4
            acc = T.zeros((1, 3) + tuple(img.shape[2:]), dtype=img.dtype)
            cnt = T.zeros((1, 1) + tuple(img.shape[2:]), dtype=img.dtype)
            for h in (0, 2):
                for w in (0, 1):
                    p = m(img[:, :, :, h:h + 4, w:w + 4])[0]
                    acc[:, :, :, h:h + 4, w:w + 4] += p
                    cnt[..., h:h + 4, w:w + 4] += 1
            sw = (acc / cnt)[:, :, 1:]
        res[T] = (m, [loss.detach(), up.detach(), sw, sw.argmax(1)])
    for a, b in zip(res[rg][1], res[torch][1]):
        close(a, b)
    close_grads(res[torch][0], res[rg][0], tol=1e-7)


def test_hash_encoding_voxels_sdf_and_grid_sample_like_torch():
    """Instant-NGP hash encoding (int64 multiply and xor, floor, trilinear weights,
    Embedding), voxelisation (unique return_inverse, scatter_reduce mean/amax), an SDF's
    eikonal term through autograd.grad(create_graph=True), and 5-D grid_sample."""
    rng = np.random.default_rng(4)
    pts, emb = rng.random((20, 3)), rng.standard_normal((64, 2)) * 1e-2
    lin_w, lin_b = rng.standard_normal((1, 3)), rng.standard_normal(1)
    vol, grid = rng.standard_normal((1, 2, 3, 4, 5)), rng.random((1, 2, 3, 4, 3)) * 2.6 - 1.3
    res = {}
    for T in (torch, rg):
        x = T.tensor(pts)
        e = T.nn.Embedding.from_pretrained(T.tensor(emb), freeze=False)
        offs = T.tensor([[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)])
        primes = T.tensor([1, 2654435761, 805459861], dtype=T.int64)
        xs = x * 5
        x0 = T.floor(xs).long()
        w = xs - x0.to(x.dtype)
        h = (x0.unsqueeze(1) + offs) * primes
        idx = (h[..., 0] ^ h[..., 1] ^ h[..., 2]) % 64
        ww = T.where(offs.bool(), w.unsqueeze(1), 1 - w.unsqueeze(1)).prod(-1, keepdim=True)
        feat = (e(idx) * ww).sum(1)
        feat.pow(2).sum().backward()
        coords = T.floor(x / 0.25).to(T.int64)
        uniq, inv, counts = T.unique(coords, dim=0, return_inverse=True, return_counts=True)
        f = x.clone().requires_grad_(True)
        at = inv[:, None].expand(-1, 3)
        mean = T.zeros(len(uniq), 3, dtype=f.dtype).scatter_reduce(0, at, f, reduce="mean",
                                                                    include_self=False)
        amax = T.zeros(len(uniq), 3, dtype=f.dtype).scatter_reduce(0, at, f, reduce="amax",
                                                                    include_self=False)
        (mean.sum() + amax.pow(2).sum()).backward()
        p = (x * 2 - 1).requires_grad_(True)
        sdf = T.nn.functional.softplus(p @ T.tensor(lin_w).T + T.tensor(lin_b), beta=10) - .5
        g = T.autograd.grad(sdf, p, grad_outputs=T.ones_like(sdf), create_graph=True)[0]
        eik = ((g.norm(2, dim=-1) - 1) ** 2).mean()
        (gp,) = T.autograd.grad(eik + sdf.abs().mean(), p)
        outs = [idx, feat.detach(), e.weight.grad, uniq, inv, counts, mean.detach(),
                amax.detach(), f.grad, eik.detach(), gp]
        for pm in ("zeros", "border", "reflection"):
            for ac in (True, False):
                v, gr = T.tensor(vol, requires_grad=True), T.tensor(grid, requires_grad=True)
                o = T.nn.functional.grid_sample(v, gr, mode="bilinear", padding_mode=pm,
                                                align_corners=ac)
                o.pow(2).sum().backward()
                outs += [o.detach(), v.grad, gr.grad]
        res[T] = outs
    for i, (a, b) in enumerate(zip(res[rg], res[torch])):
        close(a, b, str(i))


# --------------------------------------------------------------- pooling integer volumes

@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("nd", [2, 3])
def test_max_pool_of_integer_label_volume(dtype, nd):
    """max_pool2d/3d of an integer label map (downsampling a segmentation target):
    PyTorch's CPU kernels take it; values and indices in the input's dtype, padding never
    chosen where the real values equal the dtype's minimum (uint8 zeros)."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, (2, 2) + (5, 6, 7)[3 - nd:]).astype(dtype)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=2, stride=1, padding=1, dilation=2)):
        f = f"max_pool{nd}d"
        t, ti = getattr(torch.nn.functional, f)(torch.tensor(a), return_indices=True, **kw)
        r, ri = getattr(rg.nn.functional, f)(rg.tensor(a), return_indices=True, **kw)
        close(r, t, str(kw))
        close(ri, ti, str(kw))


def test_max_pool_all_minus_inf_window_takes_first_real_position():
    """A window whose real values are all -inf (a masked volume): PyTorch's index, and so
    the gradient, goes to the window's first real position, never into the padding."""
    f = np.full((1, 1, 3, 4, 5), -np.inf)
    f[0, 0, 1, 1, 1] = 1.
    res = {}
    for T in (torch, rg):
        x = T.tensor(f, requires_grad=True)
        out, idx = T.nn.functional.max_pool3d(x, 2, 1, 1, return_indices=True)
        out[out > -1].sum().backward()
        res[T] = (idx, x.grad, T.nn.functional.max_pool2d(T.tensor(f[:, :, 0]), 3, 2, 1,
                                                          return_indices=True)[1])
    for a, b in zip(res[rg], res[torch]):
        close(a, b)


def test_avg_pool_of_int64_truncates_like_torch():
    """avg_pool1d/2d/3d of int64: PyTorch sums the window and divides by the count (or
    divisor_override, negative too) rounding toward zero, keeping int64."""
    a = np.random.default_rng(6).integers(-50, 50, (2, 2, 5, 6, 7))
    for nd in (1, 2, 3):
        x = a[(slice(None), slice(None)) + (0,) * (3 - nd)]
        f = f"avg_pool{nd}d"
        for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                   dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                   dict(kernel_size=2, divisor_override=-3)):
            if nd == 1 and "divisor_override" in kw:
                continue
            close(getattr(rg.nn.functional, f)(rg.tensor(x), **kw),
                  getattr(torch.nn.functional, f)(torch.tensor(x), **kw), f"{f} {kw}")


@pytest.mark.parametrize("call", [
    lambda T, x: T.nn.functional.max_pool1d(x[:, :, 0, 0], 2),
    lambda T, x: T.nn.functional.max_pool2d(x[:, :, 0] > 0, 2),
    lambda T, x: T.nn.functional.avg_pool3d(x.to(T.int32), 2),
    lambda T, x: T.nn.functional.adaptive_avg_pool3d(x, 2),
    lambda T, x: T.nn.functional.adaptive_max_pool3d(x, 2),
])
def test_pooling_unsupported_integer_input_is_not_implemented_error(call):
    """The integer and bool pools PyTorch's CPU kernels lack raise NotImplementedError
    there (a RuntimeError); retrograd's refusal is that type too."""
    a = np.random.default_rng(7).integers(-5, 5, (1, 2, 4, 4, 4))
    for T in (torch, rg):
        with pytest.raises(NotImplementedError):
            call(T, T.tensor(a))
