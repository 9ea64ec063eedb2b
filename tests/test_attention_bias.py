"""rg.nn.attention.bias (causal_upper_left, causal_lower_right, CausalVariant, CausalBias)
against torch's: the masks they stand for, scaled_dot_product_attention's values and
gradients with one as attn_mask (L < S, L == S, L > S, scale, enable_gqa, 3-D inputs,
float64 and float32, a query that sees no key), the errors and warning torch gives,
forward mode (rg.func.jvp against torch.func.jvp) and rg.jit of a function using one."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.bias as TB
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.attention.bias as RB

RNG = np.random.default_rng(11)
SIZES = [(3, 7), (7, 3), (5, 5), (1, 6), (6, 1)]
VARIANTS = ["causal_upper_left", "causal_lower_right"]


def _make(lib, mod, kind, L, S):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # lower right, L > S
        return getattr(mod, kind)(L, S)


def _inputs(L, S, heads=(4, 4), batch=(2,), ev=5):
    return (RNG.standard_normal(batch + (heads[0], L, 3)),
            RNG.standard_normal(batch + (heads[1], S, 3)),
            RNG.standard_normal(batch + (heads[1], S, ev)))


def _run(arrays, kind, L, S, dtype, **kw):
    """(torch's output and q, k, v grads, rg's) for one call; the bias is (L, S)."""
    out = []
    for lib, mod, fn in ((torch, TB, TF.scaled_dot_product_attention),
                         (rg, RB, rg.nn.functional.scaled_dot_product_attention)):
        xs = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]
        y = fn(*xs, _make(lib, mod, kind, L, S), **kw)
        g = np.cos(np.arange(np.prod(y.shape))).reshape(tuple(y.shape))
        y.backward(lib.tensor(g, dtype=getattr(lib, dtype)))
        out.append([np.asarray(t.detach().numpy()) for t in [y] + [x.grad for x in xs]])
    return out


@pytest.mark.parametrize("kind", VARIANTS)
@pytest.mark.parametrize("size", SIZES)
def test_materialize_and_fields_match_torch(kind, size):
    t, r = _make(torch, TB, kind, *size), _make(rg, RB, kind, *size)
    want = t._materialize()
    got = r._materialize()
    assert got.dtype == rg.bool and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert isinstance(r, rg.Tensor) and isinstance(r, RB.CausalBias)
    assert tuple(r.shape) == tuple(t.shape)  # torch's (variant, L, S)
    assert (int(r.variant), r.seq_len_q, r.seq_len_kv) == (int(t.variant), t.seq_len_q,
                                                            t.seq_len_kv)
    assert r.variant.name == t.variant.name
    np.testing.assert_array_equal(r._materialize(device="cpu").numpy(), want.numpy())
    assert "True" in repr(r) and repr(r).count("True") == repr(t).count("True")


def test_causal_variant_enum_matches_torch():
    assert [(v.name, int(v)) for v in RB.CausalVariant] == \
        [(v.name, int(v)) for v in TB.CausalVariant]
    assert RB.__all__ == TB.__all__
    assert rg.nn.attention.bias is RB


@pytest.mark.parametrize("kind", VARIANTS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("gqa", [False, True])
def test_sdpa_with_bias_values_and_grads_float64(kind, size, gqa):
    L, S = size
    arrays = _inputs(L, S, heads=(4, 2) if gqa else (4, 4))
    want, got = _run(arrays, kind, L, S, "float64", scale=0.6, enable_gqa=gqa)
    for w, g in zip(want, got):
        assert w.shape == g.shape
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", VARIANTS)
@pytest.mark.parametrize("size", [(3, 7), (7, 3), (5, 5)])
def test_sdpa_with_bias_float32_and_3d(kind, size):
    L, S = size
    want, got = _run(_inputs(L, S), kind, L, S, "float32")
    for w, g in zip(want, got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    arrays = [a[0] for a in _inputs(L, S)]  # (H, L, E): not 4-D
    want, got = _run(arrays, kind, L, S, "float64")
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_lower_right_rows_that_see_no_key_match_torch():
    arrays = _inputs(6, 2)
    want, got = _run(arrays, "causal_lower_right", 6, 2, "float64")
    assert not np.isnan(want[0]).any()  # torch's math path: zeros, not NaN
    np.testing.assert_array_equal(got[0][..., :4, :], want[0][..., :4, :])
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_bias_sizes_follow_torch():
    # upper left, and any L == S bias, is is_causal on the inputs' own lengths;
    # a lower-right L != S bias is its mask, which must broadcast to (L, S)
    arrays = _inputs(5, 3)
    for kind, size in (("causal_upper_left", (4, 2)), ("causal_lower_right", (4, 4)),
                       ("causal_lower_right", (1, 3))):
        want, got = _run(arrays, kind, *size, "float64")
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)
    for size in ((4, 3), (5, 6), (1, 4), (1, 2)):
        with pytest.raises(RuntimeError):
            TF.scaled_dot_product_attention(*map(torch.tensor, arrays),
                                            _make(torch, TB, "causal_lower_right", *size))
        with pytest.raises(RuntimeError):
            rg.nn.functional.scaled_dot_product_attention(
                *map(rg.tensor, arrays), _make(rg, RB, "causal_lower_right", *size))


def test_errors_match_torch():
    arrays = _inputs(3, 5)
    for lib, mod, fn in ((torch, TB, TF.scaled_dot_product_attention),
                         (rg, RB, rg.nn.functional.scaled_dot_product_attention)):
        q, k, v = map(lib.tensor, arrays)
        for kind in VARIANTS:
            with pytest.raises(ValueError, match="CausalBias should not be used with causal"):
                fn(q, k, v, getattr(mod, kind)(3, 5), is_causal=True)
        with pytest.raises(ValueError, match="same dtype"):
            fn(q.float(), k, v, mod.causal_lower_right(3, 5))
        with pytest.raises(AssertionError, match="only supports 2D"):
            mod.causal_upper_left(3)
        with pytest.raises(AssertionError, match="only supports 2D"):
            mod.causal_lower_right(1, 2, 3)
        with pytest.raises(AssertionError, match="must be a CausalVariant"):
            mod.CausalBias(1, 2, 3)
        with pytest.raises(TypeError):
            mod.causal_lower_right(2.5, 3)
        with pytest.raises(RuntimeError, match="negative dimension"):
            mod.causal_lower_right(-1, 3)


def test_lower_right_warning_matches_torch():
    for mod in (TB, RB):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            mod.causal_lower_right(5, 3)
            mod.causal_lower_right(3, 5)
            mod.causal_upper_left(5, 3)
        assert [str(x.message) for x in w] == [
            "Lower right causal bias will produce NaNs in the output when "
            "seq_len_q > seq_len_kv!"]


@pytest.mark.parametrize("kind", VARIANTS)
@pytest.mark.parametrize("size", [(3, 6), (5, 2)])
def test_forward_mode_matches_torch(kind, size):
    L, S = size
    primals = _inputs(L, S)
    tangents = _inputs(L, S)
    tp = tuple(torch.tensor(a) for a in primals)
    tt = tuple(torch.tensor(a) for a in tangents)
    tbias, rbias = _make(torch, TB, kind, L, S), _make(rg, RB, kind, L, S)
    want = torch.func.jvp(lambda q, k, v: TF.scaled_dot_product_attention(
        q, k, v, tbias), tp, tt)
    got = rg.func.jvp(lambda q, k, v: rg.nn.functional.scaled_dot_product_attention(
        q, k, v, rbias), tuple(rg.tensor(a) for a in primals),
        tuple(rg.tensor(a) for a in tangents))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", VARIANTS)
def test_jit_of_a_function_using_a_bias(kind):
    L, S = 2, 5
    captured = getattr(RB, kind)(L, S)

    def inside(q, k, v):
        return rg.nn.functional.scaled_dot_product_attention(q, k, v, getattr(RB, kind)(L, S))

    def closure(q, k, v):
        return rg.nn.functional.scaled_dot_product_attention(q, k, v, captured)

    def argument(q, k, v, b):
        return rg.nn.functional.scaled_dot_product_attention(q, k, v, b)

    tb = getattr(TB, kind)(L, S)
    for fn in (inside, closure, argument):
        jitted = rg.jit(fn)
        for _ in range(3):  # trace, then replay on new values
            arrays = _inputs(L, S)
            want = TF.scaled_dot_product_attention(*map(torch.tensor, arrays), tb).numpy()
            extra = (captured,) if fn is argument else ()
            got = jitted(*map(rg.tensor, arrays), *extra)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


def test_sdpa_params_and_fused_kernel_checks_match_torch():
    import torch.nn.attention as TA

    import retrograd.nn.attention as RA
    assert RA.SDPAParams is rg.backends.cuda.SDPAParams
    assert RA.can_use_flash_attention is rg.backends.cuda.can_use_flash_attention
    arrays = _inputs(3, 5)
    for lib, mod in ((torch, TA), (rg, RA)):
        q, k, v = map(lib.tensor, arrays)
        p = mod.SDPAParams(q, k, v, None, 0, 1, False)
        assert (p.query is q, p.key is k, p.value is v, p.attn_mask, p.dropout, p.is_causal,
                p.enable_gqa) == (True, True, True, None, 0.0, True, False)
        assert type(p.dropout) is float
        with pytest.raises(AttributeError):
            p.is_causal = False
        with pytest.raises(TypeError):
            mod.SDPAParams(q, k, v, None, 0.0, False)
        with pytest.raises(TypeError):
            mod.SDPAParams(arrays[0], k, v, None, 0.0, False, False)
        with pytest.raises(TypeError):
            mod.SDPAParams(query=q, key=k, value=v, attn_mask=None, dropout=0.0,
                           is_causal=False, enable_gqa=False)
        with pytest.raises(TypeError):
            mod.can_use_flash_attention(1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answers = [f(p, d) for f in (mod.can_use_flash_attention,
                                         mod.can_use_efficient_attention) for d in (False, True)]
        if lib is torch:
            want = answers
    assert answers == want == [False] * 4  # a CPU tensor: no fused CUDA kernel
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not rg.backends.cuda.can_use_cudnn_attention(p, True)


def test_bands_without_a_mask_run_the_fused_op():
    # upper left (any L, S), L == S, and a one-row lower-right band need no mask tensor
    for kind, L, S in (("causal_upper_left", 3, 7), ("causal_upper_left", 5, 5),
                       ("causal_lower_right", 5, 5), ("causal_lower_right", 1, 7)):
        q, k, v = (rg.tensor(a, requires_grad=True) for a in _inputs(L, S))
        out = rg.nn.functional.scaled_dot_product_attention(q, k, v, _make(rg, RB, kind, L, S))
        assert repr(out.grad_fn) == "<attention>", (kind, L, S)
