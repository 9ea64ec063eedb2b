"""CTC's forward-backward as one node: `ctc_loglik(emit, skip, il, tl)`, the log-likelihood
of each sequence's target (shape (N,)), computed with the alpha recursion over the T frames
on arrays, for the whole batch at once (a fused file: its rules may ask `m is NUMPY`).

`emit` (T, N, L) holds each frame's log-probability of each extended label (blank, y1,
blank, y2, ..., blank; L = 2S + 1), `skip` (N, L, bool) where a state may be entered from
two states back (a label that differs from the previous label), `il` and `tl` (N,) the
input and target lengths. With alpha_{-1} = (0, -inf, ...):

    alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) if skip(s))
                 + emit[t, s]                                       (frames t < il)
    loglik = logsumexp(alpha(2 tl), alpha(2 tl - 1))

The derivative with respect to `emit` is the posterior of each state at each frame,
exp(alpha_t(s) + beta_t(s) - emit[t, s] - loglik), with the beta recursion run backwards
from the last frame; `ctc_posterior` computes it (0 for a sequence that has no alignment
at all: the caller decides what its gradient is). The posterior is not differentiated
again (`ctc_posterior` has no rule): as in PyTorch, CTC is differentiable once.
"""

from __future__ import annotations

import numpy as np

from ..devices import namespace_of
from ..primitive import NUMPY, defop


def _lse(xp, *terms):
    """log(sum(exp(terms))) element-wise, -inf where every term is (no warning, no NaN)."""
    m = terms[0]
    for t in terms[1:]:
        m = xp.maximum(m, t)
    m = xp.where(m == -np.inf, 0.0, m)
    total = xp.exp(terms[0] - m)
    for t in terms[1:]:
        total += xp.exp(t - m)
    with np.errstate(divide="ignore"):
        return xp.log(total) + m


def _shift(xp, a, k: int, fill=-np.inf):
    """`a` moved k places along the last axis (right for k > 0), `fill` entering."""
    out = xp.full_like(a, fill)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


def _skip_mask(xp, skip, dtype):
    return xp.where(skip, xp.zeros((), dtype), xp.asarray(-np.inf, dtype))


def _alphas(emit, skip, il, tl):
    """(alpha (T, N, L) at each frame, frozen after each sequence's last; loglik (N,))."""
    xp = namespace_of(emit)
    t_max, n, big_l = emit.shape
    mask = _skip_mask(xp, skip, emit.dtype)
    alpha = xp.full((n, big_l), -np.inf, emit.dtype)
    alpha[:, 0] = 0.0
    alphas = xp.empty_like(emit)
    running = xp.arange(t_max)[:, None] < il[None, :]  # (T, N)
    for t in range(t_max):
        step = _lse(xp, alpha, _shift(xp, alpha, 1), _shift(xp, alpha, 2) + mask) + emit[t]
        alpha = xp.where(running[t][:, None], step, alpha)
        alphas[t] = alpha
    rows = xp.arange(n)
    last = alpha[rows, 2 * tl]
    before = xp.where(tl > 0, alpha[rows, xp.maximum(2 * tl - 1, 0)], -np.inf)
    return alphas, _lse(xp, last, before)


def _betas(emit, skip, il, tl):
    """beta (T, N, L): the log-probability of the frames t .. il - 1 (emit[t] included)
    from state s at frame t; -inf from each sequence's last frame on."""
    xp = namespace_of(emit)
    t_max, n, big_l = emit.shape
    mask = _skip_mask(xp, skip, emit.dtype)
    rows = xp.arange(n)
    ends = xp.zeros((n, big_l), bool)
    ends[rows, 2 * tl] = True
    ends[rows, xp.maximum(2 * tl - 1, 0)] |= tl > 0
    betas = xp.full_like(emit, -np.inf)
    beta = xp.full((n, big_l), -np.inf, emit.dtype)
    for t in range(t_max - 1, -1, -1):
        step = _lse(xp, beta, _shift(xp, beta, -1), _shift(xp, beta + mask, -2)) + emit[t]
        first = xp.where(ends, emit[t], -np.inf)  # the sequence's last frame
        beta = xp.where((t == il - 1)[:, None], first, xp.where((t < il - 1)[:, None], step,
                                                                 -np.inf))
        betas[t] = beta
    return betas


def _posterior(emit, skip, il, tl, alphas=None, loglik=None):
    """exp(alpha + beta - emit - loglik) at the frames t < il of the sequences that have an
    alignment, 0 elsewhere."""
    xp = namespace_of(emit)
    if alphas is None:
        alphas, loglik = _alphas(emit, skip, il, tl)
    betas = _betas(emit, skip, il, tl)
    t_max = emit.shape[0]
    live = (xp.arange(t_max)[:, None] < il[None, :]) & (loglik > -np.inf)[None, :]
    with np.errstate(invalid="ignore"):
        logp = alphas + betas - emit - xp.where(live[..., None], loglik[None, :, None], 0.0)
    return xp.where(live[..., None], xp.exp(xp.where(live[..., None], logp, -np.inf)), 0.0)


def _loglik(emit, skip, il, tl):
    return _alphas(emit, skip, il, tl)[1]


def _loglik_saving(emit, skip, il, tl):
    alphas, loglik = _alphas(emit, skip, il, tl)
    return loglik, (alphas, loglik)


def _loglik_vjp(m, g, out, emit, skip, il, tl):
    # `out` is what the forward saved (alphas, loglik) when it ran with NUMPY, else None
    if m is NUMPY:
        post = _posterior(emit, skip, il, tl, *(out if isinstance(out, tuple) else ()))
        post *= g[None, :, None]
        return post
    return m.ctc_posterior(emit, skip, il, tl) * m.reshape(g, shape=(1, emit.shape[1], 1))


def _loglik_jvp(m, t, out, emit, skip, il, tl):
    return m.sum(m.ctc_posterior(emit, skip, il, tl) * t, axis=(-3, -1))


ctc_posterior = defop("ctc_posterior", _posterior, fresh=True)
ctc_loglik = defop("ctc_loglik", _loglik, (_loglik_vjp, None, None, None),
                   (_loglik_jvp, None, None, None), saving=_loglik_saving, smooth=False,
                   fresh=True, fresh_vjps=True)
