"""PyTorch twin of the reparameterised gamma draw (`ops/sampling.py`), for the generated
tests.

PyTorch has no op of ours' shape: its `_standard_gamma` draws inside, and its
derivative is `torch._standard_gamma_grad(alpha, x)`, dx/dalpha at a fixed level of
the distribution function. The twin is an autograd.Function with our op's value,
P^-1(alpha, P(alpha0, x)) (x itself where alpha == alpha0, as in every sample; SciPy's
inverse elsewhere), and derivatives built on `torch._standard_gamma_grad`:
d/dalpha = grad(alpha, out), d/dx = p(alpha0, x) / p(alpha, out),
d/dalpha0 = -grad(alpha0, x) p(alpha0, x) / p(alpha, out), p the Gamma(., 1) density.
PyTorch's `_standard_gamma_grad` is an approximation (about 1e-7 relative error in
float64 in our measurements; tests/test_distributions_rsample.py), so the generated
tests compare gradients with it at a looser tolerance than elsewhere.
"""

import numpy as np
import scipy.special as sc
import torch


def _log_pdf(a, x):
    return (a - 1.0) * torch.log(x) - x - torch.lgamma(a)


def _sum_to(g, shape):
    lead = g.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and g.shape[i + lead] != 1)
    return (g.sum(dims, keepdim=True) if dims else g).reshape(shape)


def _grad(alpha, x):
    alpha, x = torch.broadcast_tensors(alpha, x)
    return torch._standard_gamma_grad(alpha.contiguous(), x.contiguous())


class _StandardGammaReparam(torch.autograd.Function):
    @staticmethod
    def forward(alpha, x, alpha0):
        alpha, x, alpha0 = torch.broadcast_tensors(alpha, x, alpha0)
        same = alpha == alpha0
        if bool(same.all()):
            return x.clone()
        a, xx, a0 = (t.detach().numpy().astype(np.float64) for t in (alpha, x, alpha0))
        p, q = sc.gammainc(a0, xx), sc.gammaincc(a0, xx)
        moved = np.where(p < 0.5, sc.gammaincinv(a, p), sc.gammainccinv(a, q))
        return torch.where(same, x, torch.tensor(moved, dtype=x.dtype))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs, output)
        ctx.args = (*inputs, output)

    @staticmethod
    def _rules(alpha, x, alpha0, out):
        ratio = torch.exp(_log_pdf(alpha0, x) - _log_pdf(alpha, out))
        return _grad(alpha, out), ratio, -_grad(alpha0, x) * ratio

    @staticmethod
    def backward(ctx, g):
        alpha, x, alpha0, out = ctx.saved_tensors
        derivs = _StandardGammaReparam._rules(alpha, x, alpha0, out)
        return tuple(_sum_to(g * d, t.shape) for d, t in zip(derivs, (alpha, x, alpha0)))

    @staticmethod
    def jvp(ctx, t_alpha, t_x, t_alpha0):
        derivs = _StandardGammaReparam._rules(*ctx.args)
        total = 0
        for d, t in zip(derivs, (t_alpha, t_x, t_alpha0)):
            if t is not None:
                total = total + d * t
        return total


TWINS = {"standard_gamma_reparam": _StandardGammaReparam.apply}
