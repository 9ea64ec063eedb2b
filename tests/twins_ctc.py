"""PyTorch twin of CTC's forward-backward node (`ops/ctc.py`), for the generated tests.

PyTorch's `ctc_loss` takes per-class log-probabilities, not our per-state `emit`, so the
twin is the alpha recursion written with torch ops (a log-sum-exp that is -inf, with a
zero gradient, where every term is -inf), differentiated by torch's autograd.
"""

import numpy as np
import torch


def _lse(*terms):
    m = terms[0].detach()
    for t in terms[1:]:
        m = torch.maximum(m, t.detach())
    m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    total = sum(torch.exp(t - m) for t in terms)
    some = total > 0
    return torch.where(some, torch.log(torch.where(some, total, torch.ones_like(total))) + m,
                       torch.full_like(total, -np.inf))


def _ctc_loglik(emit, skip, il, tl):
    t_max, n, big_l = emit.shape
    mask = torch.where(torch.as_tensor(skip), 0.0, -np.inf).to(emit.dtype)
    alpha = torch.full((n, big_l), -np.inf, dtype=emit.dtype)
    alpha[:, 0] = 0.0
    pad = torch.full((n, 2), -np.inf, dtype=emit.dtype)
    il, tl = torch.as_tensor(il), torch.as_tensor(tl)
    for t in range(t_max):
        p = torch.cat([pad, alpha], 1)
        step = _lse(alpha, p[:, 1:big_l + 1], p[:, :big_l] + mask) + emit[t]
        alpha = torch.where((t < il)[:, None], step, alpha)
    rows = torch.arange(n)
    last = alpha[rows, 2 * tl]
    before = torch.where(tl > 0, alpha[rows, (2 * tl - 1).clamp(min=0)],
                         torch.tensor(-np.inf, dtype=emit.dtype))
    return _lse(last, before)


TWINS = {"ctc_loglik": _ctc_loglik}
