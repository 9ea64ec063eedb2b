"""is_causal attention: a NaN or inf in a key that a query may not see leaves that query's
row as PyTorch leaves it (the hidden scores are set to -inf, not added to: inf + -inf is
NaN), as PyTorch's default CPU kernel does. The fast path and the generic path (forward
mode) both. A NaN in a query row makes that row NaN, as PyTorch's math backend gives (its
float32 CPU flash kernel returns 0 there instead)."""

import warnings

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import retrograd as rg

F = torch.nn.functional


def _qkv(bad, where, dtype):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 2, 5, 3)).astype(dtype) for _ in range(3))
    {"k": k, "q": q}[where][0, 1, 2, 0] = bad
    return q, k, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["k", "q"])
def test_hidden_nonfinite_key_leaves_earlier_rows(bad, where, dtype):
    q, k, v = _qkv(bad, where, dtype)
    with sdpa_kernel(SDPBackend.MATH if where == "q" else SDPBackend.FLASH_ATTENTION):
        want = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)),
                                              is_causal=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = rg.nn.functional.scaled_dot_product_attention(*(rg.tensor(a) for a in (q, k, v)),
                                                            is_causal=True)
    if where == "k":  # rows 0 and 1 of that head cannot see key 2
        assert np.isfinite(got.numpy()[0, 1, :2]).all()
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, equal_nan=True)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_generic_path_masks_the_same(bad):
    """Forward mode runs the generic rules (ops): the tangent's rows agree with torch.func."""
    q, k, v = _qkv(bad, "k", np.float64)
    tv = np.random.default_rng(4).standard_normal(v.shape)

    def rg_f(vv):
        return rg.nn.functional.scaled_dot_product_attention(rg.tensor(q), rg.tensor(k), vv,
                                                             is_causal=True)

    def torch_f(vv):  # the masked softmax as defined (torch's forward AD has no flash kernel)
        s = torch.from_numpy(q) @ torch.from_numpy(k).transpose(-2, -1) / np.sqrt(q.shape[-1])
        hidden = ~torch.ones(5, 5, dtype=torch.bool).tril()
        return torch.softmax(s.masked_fill(hidden, -torch.inf), -1) @ vv

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, got = rg.func.jvp(rg_f, (rg.tensor(v),), (rg.tensor(tv),))
    _, want = torch.func.jvp(torch_f, (torch.from_numpy(v),), (torch.from_numpy(tv),))
    assert np.isfinite(got.numpy()[0, 1, :2]).all()
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, equal_nan=True)
