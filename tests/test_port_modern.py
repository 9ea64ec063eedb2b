"""Modern deep-learning code as people write it (LLaMA-style decoders, mixture-of-experts
routing, LoRA fine-tuning, selective scans, CLIP, nn.Transformer, Hugging Face-style
training utilities), reduced to the idioms where retrograd once differed from torch. Each
test runs the same code against torch and retrograd and compares in the test."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


@pytest.mark.parametrize("fn", ["topk", "kthvalue"])
def test_topk_indices_are_row_major_so_view_works_as_in_moe_routing(fn):
    """Mixtral-style routing: `selected_experts.view(-1)` after `torch.topk`."""
    x = np.random.default_rng(0).normal(size=(10, 4))
    for T, t in ((torch, torch.tensor(x)), (rg, rg.tensor(x))):
        if fn == "topk":
            vals, idx = T.topk(t, 2, dim=-1)
        else:
            vals, idx = t.kthvalue(2, dim=0, keepdim=True)
        assert idx.is_contiguous() and vals.is_contiguous()
    tv, ti = torch.topk(torch.tensor(x), 2, dim=-1)
    rv, ri = rg.topk(rg.tensor(x), 2, dim=-1)
    np.testing.assert_array_equal(_np(ti.view(-1)), _np(ri.view(-1)))
    np.testing.assert_array_equal(_np(tv.view(-1)), _np(rv.view(-1)))


@pytest.mark.parametrize("fn", ["svd", "svdvals", "eigh", "eigvalsh", "eig", "where", "nonzero"])
def test_values_and_index_vectors_are_row_major_as_torchs(fn):
    """`S.view(-1)` on batched singular values, `idx.view(1, -1)` on `torch.where`'s
    vectors: torch hands these back row-major, so a `.view` of them works."""
    x = np.random.default_rng(1).normal(size=(4, 3, 3))
    get = {"svd": lambda T, a: T.linalg.svd(a)[1], "svdvals": lambda T, a: T.linalg.svdvals(a),
           "eigh": lambda T, a: T.linalg.eigh(a @ a.mT)[0],
           "eigvalsh": lambda T, a: T.linalg.eigvalsh(a @ a.mT),
           "eig": lambda T, a: T.linalg.eig(a)[0], "where": lambda T, a: T.where(a > 0)[1],
           "nonzero": lambda T, a: T.nonzero(a > 0, as_tuple=True)[2]}[fn]
    t, r = get(torch, torch.tensor(x)), get(rg, rg.tensor(x))
    assert t.is_contiguous() and r.is_contiguous()
    tv, rv = t.view(-1), r.view(-1)
    if fn == "eig":  # LAPACK's order is the same; compare as sets to be safe
        np.testing.assert_allclose(np.sort_complex(_np(tv)), np.sort_complex(_np(rv)), atol=1e-10)
    else:
        np.testing.assert_allclose(_np(tv), _np(rv), atol=1e-10)
