"""Ports of "Dive into Deep Learning" (d2l.ai) code written from scratch: each runs with
torch and with retrograd on the same inputs and must agree."""

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


@pytest.mark.parametrize("xd,td", [("float64", "float32"), ("float32", "float64"),
                                   ("float32", "float32")])
@pytest.mark.parametrize("kw", ["none", "weight", "pos_weight"])
def test_bce_with_logits_result_has_target_dtype(xd, td, kw):
    """d2l's GAN: a float64 net's logits against `torch.ones((batch_size,))` labels give
    a float32 loss in torch (built in place on 1 - target); the gradient keeps the
    input's dtype."""
    xs, ts = np.array([0.3, -1.2, 2.0]), np.array([0.7, 0.1, 1.0])
    res = {}
    for lib in (torch, rg):
        x = lib.tensor(xs, dtype=getattr(lib, xd), requires_grad=True)
        t = lib.tensor(ts, dtype=getattr(lib, td))
        extra = {} if kw == "none" else {kw: lib.tensor([2.0, 0.5, 1.5], dtype=lib.float64)}
        loss = lib.nn.BCEWithLogitsLoss(reduction="sum", **extra)(x, t)
        loss.backward()
        res[lib] = loss, x.grad
    close(res[rg][0], res[torch][0], "loss", tol=1e-6)
    close(res[rg][1], res[torch][1], "grad", tol=1e-6)


@pytest.mark.parametrize("wd", ["float32", "int64"])
def test_multi_margin_loss_weight_of_another_dtype_raises(wd):
    """torch's kernel takes one scalar type: a float32 (or integer) class weight for
    float64 scores raises RuntimeError instead of being converted."""
    for lib in (torch, rg):
        x, y = lib.ones(2, 3, dtype=lib.float64), lib.tensor([0, 2])
        with pytest.raises(RuntimeError):
            lib.nn.functional.multi_margin_loss(x, y, weight=lib.ones(3, dtype=getattr(lib, wd)))
        with pytest.raises(RuntimeError):
            lib.nn.MultiMarginLoss(weight=lib.ones(3, dtype=getattr(lib, wd)))(x, y)


@pytest.mark.parametrize("dtype", ["float32", "float16", None])
def test_arange_of_float_steps_does_not_drift(dtype):
    """d2l plots a pdf on `torch.arange(-7, 7, 0.01)`: torch computes start + i * step in
    double and rounds once, so the last value is 6.99 (NumPy's float32 arange drifted to
    6.9903, and to 9.4 in float16); here within 2 ulps of the range's largest value."""
    for args in ((-7, 7, 0.01), (-5.5, 1.0, 0.1), (0.0, 1000.0, 0.37)):
        t = torch.arange(*args, **({"dtype": getattr(torch, dtype)} if dtype else {}))
        r = rg.arange(*args, **({"dtype": getattr(rg, dtype)} if dtype else {}))
        assert r.shape == t.shape and str(r.dtype) == str(t.dtype).split(".")[-1]
        tn = t.numpy()
        ulp = float(np.spacing(np.abs(tn).max()))
        np.testing.assert_allclose(r.numpy().astype(float), tn.astype(float), rtol=0,
                                   atol=2 * ulp, err_msg=f"arange{args}")


def _linreg_scratch(lib, xs, noise, w0):
    """d2l 3.2: linear regression from scratch with minibatch SGD under no_grad."""
    true_w, true_b = lib.tensor([2, -3.4], dtype=lib.float64), 4.2
    X = lib.tensor(xs)
    y = (lib.matmul(X, true_w) + true_b + lib.tensor(noise)).reshape((-1, 1))
    w = lib.tensor(w0, requires_grad=True)
    b = lib.zeros(1, requires_grad=True, dtype=lib.float64)
    order = np.random.RandomState(0).permutation(len(X)).tolist()
    losses = []
    for _ in range(2):
        for i in range(0, len(X), 10):
            idx = lib.tensor(order[i:i + 10])
            yh = lib.matmul(X[idx], w) + b
            ((yh - y[idx].reshape(yh.shape)) ** 2 / 2).sum().backward()
            with lib.no_grad():
                for p in (w, b):
                    p -= 0.03 * p.grad / 10
                    p.grad.zero_()
        with lib.no_grad():
            losses.append(((lib.matmul(X, w) + b - y) ** 2 / 2).mean())
    return losses + [w, b, true_w - w.reshape(true_w.shape)]


def test_port_linreg_from_scratch():
    rs = np.random.RandomState(1)
    args = rs.normal(size=(50, 2)), rs.normal(0, 0.01, 50), rs.normal(0, 0.01, (2, 1))
    for a, b in zip(_linreg_scratch(rg, *args), _linreg_scratch(torch, *args)):
        close(a, b, tol=1e-10)


def _masked_attention(lib, q, k, v, pred, labels):
    """d2l 10/11: sequence_mask, masked_softmax with repeat_interleave, dot-product
    attention with bmm, and MaskedSoftmaxCELoss subclassing CrossEntropyLoss."""
    nn = lib.nn

    def sequence_mask(X, valid_len, value=0):
        mask = lib.arange(X.size(1), dtype=lib.float32)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    def masked_softmax(X, valid_lens):
        shape = X.shape
        valid_lens = lib.repeat_interleave(valid_lens, shape[1])
        X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
        return nn.functional.softmax(X.reshape(shape), dim=-1)

    class MaskedSoftmaxCELoss(nn.CrossEntropyLoss):
        def forward(self, pred, label, valid_len):
            weights = sequence_mask(lib.ones_like(label), valid_len)
            self.reduction = "none"
            unweighted = super().forward(pred.permute(0, 2, 1), label)
            return (unweighted * weights).mean(dim=1)

    q, k, v = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
    valid = lib.tensor([2, 3])
    scores = lib.bmm(q, k.transpose(1, 2)) / np.sqrt(q.shape[-1])
    att = lib.bmm(masked_softmax(scores, valid), v)
    P = lib.tensor(pred, requires_grad=True)
    loss = MaskedSoftmaxCELoss()(P * att.mean(), lib.tensor(labels), lib.tensor([4, 1]))
    loss.sum().backward()
    return [att, loss, q.grad, k.grad, v.grad, P.grad]


def test_port_masked_attention_and_loss():
    rs = np.random.RandomState(2)
    args = (rs.normal(size=(2, 3, 4)), rs.normal(size=(2, 5, 4)), rs.normal(size=(2, 5, 3)),
            rs.normal(size=(2, 4, 6)), rs.randint(0, 6, (2, 4)))
    for a, b in zip(_masked_attention(rg, *args), _masked_attention(torch, *args)):
        close(a, b, tol=1e-10)
