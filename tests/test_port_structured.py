"""Structured-prediction and sequence-to-sequence programs ported from PyTorch (a
pytorch-crf linear-chain CRF, torch-struct style semiring dynamic programs with marginals
by autograd, CTC training, packed bidirectional RNN encoders, attention seq2seq with beam
search and fairseq's label-smoothed loss): the minimal cases behind each fix, then a few
whole programs compared end to end against torch computed here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

torch.set_num_threads(1)

_INF = float("inf")


def _both(values, dtype="float64"):
    """The same values as a torch tensor and a retrograd tensor."""
    a = np.asarray(values, dtype=dtype)
    return torch.tensor(a), rg.tensor(a)


# ---------------------------------------------------------------- logaddexp at +inf


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_gradient_at_infinite_arguments_is_torchs(name):
    """A +inf argument beside a finite or -inf one takes the whole gradient (1) and the
    other none (0), as PyTorch's g / (1 + exp(other - self)); NaN where both are the same
    infinity; also through a second derivative."""
    a = [-_INF, 0.0, _INF, _INF, -_INF, np.nan, -_INF, _INF, 0.0, 1.5, -700.0]
    b = [-_INF, -_INF, 0.0, _INF, _INF, 0.0, 0.0, -_INF, np.nan, -2.0, 700.0]
    res = []
    for L in (torch, rg):
        x = L.tensor(a, dtype=L.float64, requires_grad=True)
        y = L.tensor(b, dtype=L.float64, requires_grad=True)
        z = getattr(L, name)(x, y)
        gx, gy = L.autograd.grad(z.pow(2).sum(), [x, y], create_graph=True)
        ggx, ggy = L.autograd.grad(gx.sum(), [x, y])
        res.append((z, gx, gy, ggx, ggy))
    for r, t, what in zip(res[1], res[0], ["out", "gx", "gy", "ggx", "ggy"]):
        close(r, t, what)


def test_softplus_gradient_of_nan_is_nan_as_torch():
    """A NaN input's softplus gradient is NaN (it was sigmoid(threshold), about 1), and the
    threshold's first and second derivatives stay PyTorch's."""
    vals = [np.nan, 20.0, 19.0, 21.0, -3.0, 5.0, 10.0]
    for beta in (1.0, 2.0):
        res = []
        for L in (torch, rg):
            x = L.tensor(vals, dtype=L.float64, requires_grad=True)
            y = L.nn.functional.softplus(x, beta=beta, threshold=20.0)
            g, = L.autograd.grad(y.sum(), x, create_graph=True)
            gg, = L.autograd.grad(g.sum(), x)
            res.append((y, g, gg))
        for r, t in zip(res[1], res[0]):
            close(r, t, f"beta={beta}")


@pytest.mark.parametrize("shape,dim,high", [((50, 6, 7), 0, 3), ((4, 30), 1, 2),
                                             ((200, 5), 0, 10), ((33,), 0, 4)])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_mode_index_among_ties_past_16_entries_is_torchs(shape, dim, high, dtype):
    """`mode` (majority vote over an ensemble's decoded labels) returns the index PyTorch's
    CPU kernel does: its std::sort is not stable past 16 entries, so the occurrence it
    reports is not simply the last one."""
    x = np.random.RandomState(0).randint(0, high, shape).astype(dtype)
    tv, ti = torch.tensor(x).mode(dim)
    rv, ri = rg.tensor(x).mode(dim)
    close(rv, tv, "values")
    close(ri, ti, "indices")
