"""NumPy's `axis=`/`keepdims=` spellings, which PyTorch accepts for every `dim`/`keepdim`
(`torch.cumprod(alphas, axis=0)` in a DDPM schedule): each function and method gives what
torch gives with the same keywords, and both spellings at once are refused, as in torch."""

import numpy as np
import pytest
import torch

import retrograd as rg

X = np.random.default_rng(3).standard_normal((3, 4, 2))

# (name, extra positional args, keywords); each run as rg.name(x, ...) and x.name(...)
CASES = [
    ("cumsum", (), {"axis": 1}), ("cumprod", (), {"axis": 0}),
    ("logcumsumexp", (), {"axis": 2}), ("cummax", (), {"axis": 1}),
    ("cummin", (), {"axis": 0}), ("sort", (), {"axis": 1}),
    ("sort", (), {"axis": 0, "descending": True}), ("argsort", (), {"axis": 0}),
    ("topk", (2,), {"axis": 1}), ("kthvalue", (2,), {"axis": 1, "keepdims": True}),
    ("amax", (), {"axis": (0, 2)}), ("amin", (), {"axis": 1, "keepdims": True}),
    ("aminmax", (), {"axis": 1}), ("count_nonzero", (), {"axis": 1}),
    ("median", (), {"axis": 1}), ("median", (), {"axis": 0, "keepdims": True}),
    ("nanmedian", (), {"axis": 2}), ("mode", (), {"axis": 1}),
    ("unbind", (), {"axis": 1}), ("squeeze", (), {"axis": 0}),
    ("unsqueeze", (), {"axis": 1}), ("var_mean", (), {"axis": 1, "keepdims": True}),
    ("std_mean", (), {"axis": (0, 1)}), ("sum", (), {"axis": 1, "keepdims": True}),
]


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [a for x in r for a in _flat(x)]
    return [r]


def _check(got, want):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g.data, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("name", "args", "kw"), CASES, ids=[c[0] + str(i) for i, c in
                                                            enumerate(CASES)])
def test_axis_keywords_match_torch(name, args, kw):
    x = np.round(X, 1) if name in ("mode",) else X
    if name == "squeeze":
        x = x[:1]
    want = getattr(torch, name)(torch.tensor(x), *args, **kw)
    _check(getattr(rg, name)(rg.tensor(x), *args, **kw), want)
    if hasattr(torch.Tensor, name):
        _check(getattr(rg.tensor(x), name)(*args, **kw),
               getattr(torch.tensor(x), name)(*args, **kw))


def test_axis_gradient_matches_dim_gradient():
    a = rg.tensor(X, requires_grad=True)
    t = torch.tensor(X, requires_grad=True)
    rg.cumprod(a, axis=1).sum().backward()
    torch.cumprod(t, axis=1).sum().backward()
    np.testing.assert_allclose(a.grad.data, t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["cumsum", "sort", "amax", "median", "unbind", "squeeze"])
def test_dim_and_axis_together_refused(name):
    with pytest.raises(TypeError):
        getattr(torch, name)(torch.tensor(X), dim=1, axis=1)
    with pytest.raises(TypeError, match="both 'dim' and 'axis'"):
        getattr(rg, name)(rg.tensor(X), dim=1, axis=1)


def test_required_dim_still_required():
    for name in ("cumsum", "cummax", "unsqueeze"):
        with pytest.raises(TypeError):
            getattr(torch, name)(torch.tensor(X))
        with pytest.raises(TypeError, match="dim"):
            getattr(rg, name)(rg.tensor(X))
