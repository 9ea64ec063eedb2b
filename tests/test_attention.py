"""F.scaled_dot_product_attention against PyTorch: masks (bool, float, broadcast), causal,
scale, grouped-query attention, dropout's statistics, and bad arguments."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

rng = np.random.default_rng(0)
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}


def _case(qs, ks, vs, dtype, mask=None, **kw):
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    ours = [rg.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    om = tm = None
    if mask is not None:
        if mask.dtype == bool:
            om, tm = rg.tensor(mask), torch.tensor(mask)
        else:
            om = rg.tensor(mask.astype(dtype), requires_grad=True)
            tm = torch.tensor(mask.astype(dtype), requires_grad=True)
    out = F.scaled_dot_product_attention(*ours, attn_mask=om, **kw)
    ref = TF.scaled_dot_product_attention(*theirs, attn_mask=tm, **kw)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **TOL[dtype])
    w = rng.standard_normal(out.shape).astype(dtype)
    (out * rg.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in zip(ours + ([om] if om is not None and om.requires_grad else []),
                    theirs + ([tm] if tm is not None and tm.requires_grad else [])):
        np.testing.assert_allclose(a.grad.data, b.grad.numpy(), **TOL[dtype])


SHAPES = [((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), ((5, 4), (6, 4), (6, 3)),
          ((2, 1, 4, 8), (2, 1, 4, 8), (2, 1, 4, 8))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", range(len(SHAPES)))
@pytest.mark.parametrize("kind", ["none", "causal", "bool", "bool-broadcast", "float",
                                  "scale", "dead-row"])
def test_matches_torch(kind, shapes, dtype):
    qs, ks, vs = SHAPES[shapes]
    L, S = qs[-2], ks[-2]
    kw, mask = {}, None
    if kind == "causal":
        kw["is_causal"] = True
    elif kind == "bool":
        mask = rng.random(qs[:-2] + (L, S)) > 0.3
        mask[..., 0] = True
    elif kind == "bool-broadcast":
        mask = rng.random((L, S)) > 0.3
        mask[:, 0] = True
    elif kind == "float":
        mask = rng.standard_normal((L, S))
    elif kind == "scale":
        kw["scale"] = 0.37
    elif kind == "dead-row":  # a query that may see no key gives zeros, as in torch
        mask = rng.random((L, S)) > 0.3
        mask[0] = False
        mask[1:, 0] = True
    _case(qs, ks, vs, dtype, mask, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grouped_query_attention_matches_torch(dtype):
    _case((2, 6, 5, 4), (2, 2, 7, 4), (2, 2, 7, 3), dtype, enable_gqa=True)
    _case((2, 4, 5, 4), (2, 1, 5, 4), (2, 1, 5, 4), dtype, enable_gqa=True, is_causal=True)


def test_float_mask_with_minus_inf_rows_gives_zeros_like_torch():
    mask = np.zeros((4, 5))
    mask[1] = -np.inf
    mask[2, 1:] = -np.inf
    _case((2, 4, 3), (2, 5, 3), (2, 5, 3), "float64", mask)


def test_dropout_uses_rg_generator_and_scales_survivors():
    q = rg.tensor(rng.standard_normal((2, 2, 64, 8)))
    k = rg.tensor(rng.standard_normal((2, 2, 64, 8)))
    v = rg.tensor(np.ones((2, 2, 64, 8)))
    rg.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.25)
    rg.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.25)
    np.testing.assert_array_equal(a.data, b.data)
    # rows of the weights sum to 1 before dropout: with v = 1 each output is the kept mass
    # scaled by 1/(1-p); its mean over many rows is 1 within sampling error
    assert abs(a.data.mean() - 1.0) < 0.05
    assert not np.allclose(a.data, 1.0)
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    np.testing.assert_array_equal(zero.data, 0.0)


def test_dropout_is_refused_inside_jit():
    q = rg.tensor(rng.standard_normal((2, 4, 3)))
    f = rg.jit(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5))
    with pytest.raises(rg.JitError if hasattr(rg, "JitError") else Exception, match="random"):
        f(q)


def test_jit_replays_attention_with_masks():
    mask = rng.random((5, 5)) > 0.3
    mask[:, 0] = True
    m = rg.tensor(mask)

    def loss(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum() + \
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum()

    eager = rg.func.grad(loss, argnums=(0, 1, 2))
    fast = rg.jit(eager)
    args1 = [rg.tensor(rng.standard_normal((2, 5, 4))) for _ in range(3)]
    args2 = [rg.tensor(rng.standard_normal((2, 5, 4))) for _ in range(3)]
    fast(*args1)
    for u, v in zip(fast(*args2), eager(*args2)):
        np.testing.assert_allclose(u.data, v.data, rtol=1e-12, atol=1e-12)


BAD = [
    (dict(q=(2, 5, 4), k=(2, 6, 3), v=(2, 6, 3)), ValueError, r"same embedding size"),
    (dict(q=(2, 5, 4), k=(2, 6, 4), v=(2, 7, 4)), ValueError, r"same sequence length"),
    (dict(q=(2, 5, 4), k=(2, 6, 4), v=(2, 6, 4), attn_mask=np.ones((5, 5), bool)), ValueError,
     r"attn_mask of shape \(5, 5\) does not broadcast to .*\(2, 5, 6\)"),
    (dict(q=(1, 4, 5, 4), k=(1, 3, 5, 4), v=(1, 3, 5, 4), enable_gqa=True), ValueError,
     r"must be equal and divide the number of query heads \(4\)"),
    (dict(q=(1, 4, 5, 4), k=(1, 2, 5, 4), v=(1, 2, 5, 4)), ValueError,
     r"do not broadcast.*enable_gqa"),
    (dict(q=(2, 5, 4), k=(2, 5, 4), v=(2, 5, 4), attn_mask=np.ones((5, 5), bool),
          is_causal=True), ValueError, r"attn_mask should not be set when is_causal"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_arguments(case):
    kw, exc, pattern = BAD[case]
    kw = dict(kw)
    q, k, v = (rg.tensor(rng.standard_normal(kw.pop(n))) for n in "qkv")
    if "attn_mask" in kw:
        kw["attn_mask"] = rg.tensor(kw["attn_mask"])
    with pytest.raises(exc, match=pattern):
        F.scaled_dot_product_attention(q, k, v, **kw)
