"""rg.nn.attention.flex_attention against torch's (eager, CPU): outputs and log-sum-exps
for score_mods (a bias table, ALiBi, soft-capping, a causal score_mod) and mask_mods
(causal, sliding window by and_masks, prefix by or_masks, documents by a lookup table,
a fully masked row), GQA, scale, float32 and float64; create_mask and BlockMask.to_dense
against torch's; gradients (torch refuses backward on CPU) against torch's dense
computation of the same attention, and by finite differences."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.flex_attention as TF

import retrograd as rg
import retrograd.nn.attention.flex_attention as RF

warnings.filterwarnings("ignore", message=".*flex_attention.*")
RNG = np.random.default_rng(3)
QA, KA, VA = (RNG.standard_normal(s) for s in ((2, 4, 7, 8), (2, 2, 9, 8), (2, 2, 9, 3)))
BIAS = RNG.standard_normal((4, 7, 9))
DOCS = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2])


def _mods(lib):
    bias = lib.tensor(BIAS)
    docs = lib.tensor(DOCS)
    slopes = lib.tensor([0.5, 0.25, 0.125, 0.0625])
    score_mods = {
        "none": None,
        "bias": lambda s, b, h, q, k: s + bias[h, q, k].to(s.dtype),
        "alibi": lambda s, b, h, q, k: s - slopes[h].to(s.dtype) * (q - k).abs(),
        "softcap": lambda s, b, h, q, k: 2.0 * lib.tanh(s / 2.0),
        "causal_score": lambda s, b, h, q, k: lib.where(q >= k, s, -float("inf")),
    }
    causal = lambda b, h, q, k: q >= k  # noqa: E731
    window = lambda b, h, q, k: (q - k) <= 2  # noqa: E731
    mask_mods = {
        "none": None,
        "causal": causal,
        "sliding": lib.nn.attention.flex_attention.and_masks(causal, window),
        "prefix": lib.nn.attention.flex_attention.or_masks(causal, lambda b, h, q, k: k < 3),
        "documents": lambda b, h, q, k: docs[q] == docs[k],
        "empty_row": lambda b, h, q, k: (q != 2) & (k <= q),
    }
    return score_mods, mask_mods


def _flex(lib, mod, dtype, score, mask, **kw):
    score_mods, mask_mods = _mods(lib)
    q, k, v = (lib.tensor(a, dtype=getattr(lib, dtype)) for a in (QA, KA, VA))
    bm = None
    if mask_mods[mask] is not None:
        bm = mod.create_block_mask(mask_mods[mask], None, None, 7, 9, BLOCK_SIZE=4)
    out, lse = mod.flex_attention(q, k, v, score_mod=score_mods[score], block_mask=bm,
                                  enable_gqa=True, return_lse=True, **kw)
    return out.numpy(), lse.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("score", ["none", "bias", "alibi", "softcap", "causal_score"])
@pytest.mark.parametrize("mask", ["none", "causal", "sliding", "prefix", "documents",
                                  "empty_row"])
def test_outputs_and_lse_match_torch(dtype, score, mask):
    want = _flex(torch, TF, dtype, score, mask, scale=0.3)
    got = _flex(rg, RF, dtype, score, mask, scale=0.3)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_create_mask_and_block_structure_match_torch():
    for B, H, L, S, bs in [(None, None, 7, 9, 4), (2, 3, 300, 200, 64), (1, None, 5, 5, 128)]:
        f = lambda b, h, q, k: (q >= k) & ((q - k) < 50)  # noqa: E731
        want = TF.create_mask(f, B, H, L, S, device="cpu").numpy()
        got = RF.create_mask(f, B, H, L, S).numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(
            RF.create_block_mask(f, B, H, L, S, BLOCK_SIZE=bs).to_dense().numpy(),
            TF.create_block_mask(f, B, H, L, S, BLOCK_SIZE=bs).to_dense().numpy())


def test_gradients_match_torch_dense_attention():
    """The same attention written densely in torch (bias, sliding causal mask)."""
    def dense_torch():
        q, k, v = (torch.tensor(a, requires_grad=True) for a in (QA, KA, VA))
        bias = torch.tensor(BIAS, requires_grad=True)
        kk, vv = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
        s = q @ kk.transpose(-2, -1) * 0.3 + bias
        i, j = torch.arange(7)[:, None], torch.arange(9)[None]
        s = s.masked_fill(~((i >= j) & (i - j <= 2)), -float("inf"))
        out = torch.softmax(s, -1) @ vv
        return out, (q, k, v, bias)

    def flex_rg():
        q, k, v = (rg.tensor(a, requires_grad=True) for a in (QA, KA, VA))
        bias = rg.tensor(BIAS, requires_grad=True)
        bm = RF.create_block_mask(
            RF.and_masks(lambda b, h, q, k: q >= k, lambda b, h, q, k: q - k <= 2),
            None, None, 7, 9)
        out = RF.flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + bias[h, i, j],
                                block_mask=bm, scale=0.3, enable_gqa=True)
        return out, (q, k, v, bias)

    cot = RNG.standard_normal((2, 4, 7, 3))
    (wo, wins), (go, gins) = dense_torch(), flex_rg()
    (wo * torch.tensor(cot)).sum().backward()
    (go * rg.tensor(cot)).sum().backward()
    np.testing.assert_allclose(go.detach().numpy(), wo.detach().numpy(), rtol=1e-12)
    for a, b in zip(gins, wins):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gradients_by_finite_differences_with_an_empty_row():
    bm = RF.create_block_mask(lambda b, h, q, k: (q != 1) & (k <= q), None, None, 3, 4)
    slopes = rg.tensor([0.3, -0.2], dtype=rg.float64, requires_grad=True)

    def f(q, k, v, sl):
        return RF.flex_attention(q, k, v, block_mask=bm,
                                 score_mod=lambda s, b, h, i, j: s * (1 + sl[h]))

    args = [rg.tensor(RNG.standard_normal(s), requires_grad=True)
            for s in ((1, 2, 3, 4), (1, 2, 4, 4), (1, 2, 4, 2))] + [slopes]
    assert rg.gradcheck(f, tuple(args))
    out = f(*args)
    assert np.all(out.detach().numpy()[:, :, 1] == 0)  # the empty row attends to nothing


def test_bad_arguments_are_refused():
    q = rg.tensor(QA)
    with pytest.raises(ValueError, match="heads"):
        RF.flex_attention(q, rg.tensor(KA), rg.tensor(VA))  # 4 vs 2 heads without GQA
    with pytest.raises(ValueError, match="block_mask covers"):
        RF.flex_attention(q, rg.tensor(KA), rg.tensor(VA), enable_gqa=True,
                          block_mask=RF.create_block_mask(RF.noop_mask, None, None, 3, 3))
    with pytest.raises(ValueError, match="4-d"):
        RF.flex_attention(q[0], rg.tensor(KA), rg.tensor(VA))
