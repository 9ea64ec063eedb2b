"""PyTorch twins of `grid_sample` and its adjoint `grid_sample_t` (merged into
test_ops.TORCH).

PyTorch's grid sampler has no forward-mode derivative, which the generated forward
tests need, so the twin is the sampling written with differentiable torch ops (gather
and polynomial weights), and every call checks its values against
`torch.nn.functional.grid_sample` itself. (tests/test_grid_sample.py compares our
gradients with the native sampler's directly.) Leading dimensions before (N, C) are
folded into the channels."""

import itertools

import torch
import torch.nn.functional as F

_A = -0.75


def _unnormalise(g, size, align):
    return (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2


def _reflect(c, size, align):
    low, span = (0.0, size - 1) if align else (-0.5, float(size))
    if span == 0:
        return torch.zeros_like(c)
    d = (c - low).abs()
    extra = d - torch.floor(d / span).detach() * span
    odd = torch.floor(d / span).remainder(2) == 1
    return torch.where(odd, span - extra, extra) + low


def _pad(c, size, padding, align):
    if padding == "border":
        return c.clamp(0, size - 1)
    if padding == "reflection":
        return _reflect(c, size, align).clamp(0, size - 1)
    return c


def _cubic(t):
    def near(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _axis(g, size, mode, padding, align):
    """[(pixel index, weight)] along one coordinate."""
    c = _unnormalise(g, size, align)
    if mode == "bicubic":
        base = torch.floor(c).detach()
        pos = [_pad(base + (j - 1), size, padding, align) for j in range(4)]
        return list(zip(pos, _cubic(c - base)))
    c = _pad(c, size, padding, align)
    if mode == "nearest":
        return [(torch.round(c).detach(), c * 0 + 1)]  # on the grid, as the native op
    base = torch.floor(c).detach()
    return [(base, 1 - (c - base)), (base + 1, c - base)]


def _sample(x, grid, mode, padding, align):
    """x (N, C, *S), grid (N, *So, k) -> (N, C, *So)."""
    nd = grid.shape[-1]
    n, ch = x.shape[:2]
    sizes = tuple(x.shape[2:])
    flat = x.reshape(n, ch, -1)
    g = grid.reshape(n, -1, nd)
    per, stride = [], 1
    for k in range(nd):
        size = sizes[nd - 1 - k]
        per.append([(p, w, stride, size) for p, w in _axis(g[..., k], size, mode, padding,
                                                           align)])
        stride *= size
    out = 0
    for combo in itertools.product(*per):
        idx, weight, valid = 0, 1, True
        for p, w, s, size in combo:
            valid = valid & (p >= 0) & (p <= size - 1)
            idx = idx + p.clamp(0, size - 1).long() * s
            weight = weight * w
        vals = torch.gather(flat, 2, idx[:, None, :].expand(n, ch, idx.shape[1]))
        out = out + vals * torch.where(valid, weight, 0)[:, None, :]
    return out.reshape((n, ch) + tuple(grid.shape[1:-1]))


def _folded(x, nd):
    """(*L, N, C, *S) -> (N, L*C, *S), and how to unfold a result."""
    lead = tuple(x.shape[:-nd - 2])
    n, c = x.shape[-nd - 2], x.shape[-nd - 1]
    y = x.reshape((-1, n, c) + tuple(x.shape[-nd:])).transpose(0, 1)
    y = y.reshape((n, -1) + tuple(x.shape[-nd:]))

    def unfold(r):
        r = r.reshape((n, -1, c) + tuple(r.shape[2:])).transpose(0, 1)
        return r.reshape(lead + (n, c) + tuple(r.shape[3:]))
    return y, unfold


def _grid_sample(x, grid, mode, padding_mode, align_corners, deriv=None):
    assert deriv is None or not any(deriv)
    y, unfold = _folded(x, grid.shape[-1])
    out = _sample(y, grid, mode, padding_mode, align_corners)
    native = F.grid_sample(y.detach(), grid.detach(), mode=mode, padding_mode=padding_mode,
                           align_corners=align_corners)
    torch.testing.assert_close(out.detach(), native, rtol=1e-5, atol=1e-6)
    return unfold(out)


def _grid_sample_t(g, grid, mode, padding_mode, align_corners, size, deriv=None):
    """The adjoint in the image: the gradient of grid_sample, kept differentiable."""
    nd = grid.shape[-1]
    shape = tuple(g.shape[:-nd]) + tuple(size)
    z = torch.zeros(shape, dtype=g.dtype, requires_grad=True)
    with torch.enable_grad():
        out = _grid_sample(z, grid, mode, padding_mode, align_corners, deriv)
        (r,) = torch.autograd.grad(out, z, g, create_graph=True)
    return r


TWINS = {"grid_sample": _grid_sample, "grid_sample_t": _grid_sample_t}
