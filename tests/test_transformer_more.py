"""Attention and transformer layers against PyTorch with the same weights (float64):
`MultiheadAttention` with kdim/vdim, add_bias_kv, add_zero_attn and every kind of mask
(outputs, attention weights, gradients of query, key, value and every parameter),
`F.multi_head_attention_forward`, `TransformerDecoderLayer`, `TransformerDecoder`,
`Transformer`, PyTorch's inference-path results (NaN rows, zeroed padding), finite
differences, and PyTorch's exception types for wrong masks and shapes."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn as nn
import retrograd.nn.functional as F

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-9, atol=1e-11)
L, S, N, E, H = 3, 4, 2, 4, 2


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
    rg.manual_seed(0)


def _pair(kind, *args, **kw):
    """Our module and PyTorch's, float64, ours holding torch's weights (same keys)."""
    ref = getattr(torch.nn, kind)(*args, dtype=torch.float64, **kw)
    mod = getattr(nn, kind)(*args, dtype=rg.float64, **kw)
    _load(mod, ref)
    return mod, ref


def _load(mod, ref):
    sd = ref.state_dict()
    assert list(mod.state_dict()) == list(sd)
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in ref.named_parameters()]
    mod.load_state_dict({k: v.detach().numpy() for k, v in sd.items()})


def _leaves(*arrays):
    return ([rg.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _close(ours, theirs, what=""):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL,
                               err_msg=what)


def _masks(kwargs: dict) -> tuple[dict, dict]:
    """The same masks as ours and as torch's (arrays given; None kept)."""
    return ({k: None if v is None else rg.tensor(v) for k, v in kwargs.items()},
            {k: None if v is None else torch.tensor(v) for k, v in kwargs.items()})


def _compare(mod, ref, arrays, masks=None, extra=None):
    """Call both on the same leaves and masks; compare every output, then the gradients of
    the leaves and of every parameter after a backward of a random weighting."""
    (ours_in, theirs_in), (m_r, m_t) = _leaves(*arrays), _masks(masks or {})
    ours = mod(*ours_in, **m_r, **(extra or {}))
    theirs = ref(*theirs_in, **m_t, **(extra or {}))
    ours = list(ours) if isinstance(ours, tuple) else [ours]
    theirs = list(theirs) if isinstance(theirs, tuple) else [theirs]
    loss_r = loss_t = 0
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert tuple(a.shape) == tuple(b.shape)
        _close(a, b, f"output {k}")
        w = RNG.standard_normal(tuple(b.shape))
        loss_r = loss_r + (a * rg.tensor(w)).sum()
        loss_t = loss_t + (b * torch.tensor(w)).sum()
    loss_r.backward()
    loss_t.backward()
    for k, (a, b) in enumerate(zip(ours_in, theirs_in)):
        _close(a.grad, b.grad, f"gradient of input {k}")
    for (n, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters()):
        assert (p.grad is None) == (q.grad is None), n
        if q.grad is not None:
            _close(p.grad, q.grad, f"gradient of {n}")


# ---------------------------------------------------------------- MultiheadAttention

def _bool(shape, p=0.3):
    m = RNG.random(shape) < p
    m[..., 0] = False  # every query keeps a key
    return m


MASKS = {
    "none": lambda: {},
    "bool2d": lambda: dict(attn_mask=_bool((L, S))),
    "float2d": lambda: dict(attn_mask=RNG.standard_normal((L, S))),
    "bool3d": lambda: dict(attn_mask=_bool((N * H, L, S))),
    "float3d": lambda: dict(attn_mask=RNG.standard_normal((N * H, L, S))),
    "kpm_bool": lambda: dict(key_padding_mask=_bool((N, S), 0.4)),
    "kpm_float": lambda: dict(key_padding_mask=np.where(_bool((N, S), 0.4), -np.inf, 0.5)),
    "both_bool": lambda: dict(attn_mask=_bool((L, S)), key_padding_mask=_bool((N, S), 0.4)),
    "both_float": lambda: dict(attn_mask=RNG.standard_normal((N * H, L, S)),
                               key_padding_mask=RNG.standard_normal((N, S))),
}
CONFIGS = {
    "plain": dict(),
    "kdim_vdim": dict(kdim=3, vdim=5),
    "bias_kv_zero_attn": dict(add_bias_kv=True, add_zero_attn=True),
    "zero_attn_no_bias": dict(add_zero_attn=True, bias=False),
    "batch_first_bias_kv": dict(batch_first=True, add_bias_kv=True, kdim=3),
}
WEIGHTS = {"no_weights": dict(need_weights=False), "averaged": dict(need_weights=True),
           "per_head": dict(need_weights=True, average_attn_weights=False)}


@pytest.mark.parametrize("mask", sorted(MASKS))
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("weights", sorted(WEIGHTS))
def test_multihead_attention_matches_torch(config, mask, weights):
    kw = CONFIGS[config]
    mod, ref = _pair("MultiheadAttention", E, H, **kw)
    kd, vd = kw.get("kdim", E), kw.get("vdim", E)
    shape = (lambda n, d: (N, n, d)) if kw.get("batch_first") else (lambda n, d: (n, N, d))
    arrays = [RNG.standard_normal(s) for s in (shape(L, E), shape(S, kd), shape(S, vd))]
    _compare(mod, ref, arrays, MASKS[mask](), WEIGHTS[weights])


@pytest.mark.parametrize("weights", sorted(WEIGHTS))
def test_multihead_attention_unbatched_with_masks(weights):
    mod, ref = _pair("MultiheadAttention", E, H, add_bias_kv=True)
    arrays = [RNG.standard_normal(s) for s in ((L, E), (S, E), (S, E))]
    masks = dict(attn_mask=_bool((H, L, S)), key_padding_mask=_bool((S,), 0.4))
    _compare(mod, ref, arrays, masks, WEIGHTS[weights])


def test_multihead_attention_self_attention_and_causal_hint():
    mod, ref = _pair("MultiheadAttention", E, H, batch_first=True)
    x = RNG.standard_normal((N, L, E))
    causal = np.triu(np.ones((L, L), bool), 1)
    for need in (False, True):
        (xr,), (xt,) = _leaves(x)
        a = mod(xr, xr, xr, attn_mask=rg.tensor(causal), is_causal=True, need_weights=need)
        b = ref(xt, xt, xt, attn_mask=torch.tensor(causal), is_causal=True, need_weights=need)
        _close(a[0], b[0])
        a[0].sum().backward()
        b[0].sum().backward()
        _close(xr.grad, xt.grad)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        ref(torch.tensor(x), torch.tensor(x), torch.tensor(x), is_causal=True)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        mod(rg.tensor(x), rg.tensor(x), rg.tensor(x), is_causal=True)


def test_rows_that_see_no_key_are_torchs_zeros_or_nans():
    """General path: zeros without weights, NaN with them; PyTorch's inference fast path
    (eval, no grad, batch_first, self-attention, bool masks): NaN."""
    mod, ref = _pair("MultiheadAttention", E, H, batch_first=True)
    x = RNG.standard_normal((N, S, E))
    kpm = np.zeros((N, S), bool)
    kpm[1] = True
    for train, grad in ((True, True), (False, False)):
        mod.train(train)
        ref.train(train)
        with rg.set_grad_enabled(grad), torch.set_grad_enabled(grad):
            for need in (False, True):
                xr, xt = rg.tensor(x), torch.tensor(x)
                a = mod(xr, xr, xr, key_padding_mask=rg.tensor(kpm), need_weights=need)
                b = ref(xt, xt, xt, key_padding_mask=torch.tensor(kpm), need_weights=need)
                np.testing.assert_allclose(a[0].detach().numpy(), b[0].detach().numpy(),
                                           **TOL, equal_nan=True)
                assert np.isnan(a[0].detach().numpy()[1]).all() == (need or not train)


def test_functional_multi_head_attention_forward_matches_torch():
    e, h = 4, 2
    arrays = [RNG.standard_normal(s) for s in ((L, N, e), (S, N, 3), (S, N, 5), (e, e), (e, 3),
                                                  (e, 5), (3 * e,), (e, e), (e,), (1, 1, e),
                                                  (1, 1, e))]
    ours, theirs = _leaves(*arrays)
    kpm = _bool((N, S), 0.4)
    outs = []
    for lib, xs, mask in ((F, ours, rg.tensor(kpm)), (torch.nn.functional, theirs,
                                                      torch.tensor(kpm))):
        q, k, v, wq, wk, wv, b, wo, bo, bk, bv = xs
        out, w = lib.multi_head_attention_forward(
            q, k, v, e, h, None, b, bk, bv, True, 0.0, wo, bo, training=True,
            key_padding_mask=mask, need_weights=True, use_separate_proj_weight=True,
            q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv, average_attn_weights=False)
        (out.sum() + (w * w).sum()).backward()
        outs.append((out, w))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1])
    for a, b in zip(ours, theirs):
        _close(a.grad, b.grad)


def test_functional_static_key_and_value():
    e, h = 4, 2
    arrays = [RNG.standard_normal(s) for s in ((L, N, e), (3 * e, e), (e, e),
                                                  (N * h, S, e // h), (N * h, S, e // h))]
    ours, theirs = _leaves(*arrays)
    res = []
    for lib, (q, w, wo, sk, sv) in ((F, ours), (torch.nn.functional, theirs)):
        out, _ = lib.multi_head_attention_forward(
            q, q, q, e, h, w, None, None, None, False, 0.0, wo, None, static_k=sk,
            static_v=sv, need_weights=False)
        out.sum().backward()
        res.append(out)
    _close(*res)
    for a, b in zip(ours, theirs):
        if b.grad is not None:
            _close(a.grad, b.grad)


def test_multihead_attention_gradcheck_with_masks():
    dtype = rg.get_default_dtype()
    rg.set_default_dtype(np.float64)
    try:
        mod = nn.MultiheadAttention(4, 2, add_bias_kv=True, kdim=3)
        q = rg.tensor(RNG.standard_normal((2, 2, 4)), requires_grad=True)
        k = rg.tensor(RNG.standard_normal((3, 2, 3)), requires_grad=True)
        v = rg.tensor(RNG.standard_normal((3, 2, 4)), requires_grad=True)
        mask = rg.tensor(RNG.standard_normal((2, 3)))
        kpm = rg.tensor(np.array([[False, False, True], [False, True, True]]))

        def f(q, k, v):
            out, w = mod(q, k, v, attn_mask=mask, key_padding_mask=kpm,
                         average_attn_weights=False)
            return (out * out).sum() + (w * w).sum()

        assert rg.gradcheck(f, [q, k, v])
    finally:
        rg.set_default_dtype(dtype)


def _raises_both(exc, match, ours, theirs):
    with pytest.raises(exc):
        theirs()
    with pytest.raises(exc, match=match):
        ours()


def test_wrong_masks_and_shapes_raise_torchs_exceptions():
    mod, ref = _pair("MultiheadAttention", E, H)
    x = RNG.standard_normal((L, N, E))
    xr, xt = rg.tensor(x), torch.tensor(x)

    def both(exc, match, **masks):
        m_r, m_t = _masks(masks)
        _raises_both(exc, match, lambda: mod(xr, xr, xr, **m_r), lambda: ref(xt, xt, xt, **m_t))

    both(RuntimeError, r"2-D attn_mask is \(3, 4\).*\(3, 3\)", attn_mask=np.zeros((L, S), bool))
    both(RuntimeError, r"3-D attn_mask is \(2, 3, 3\).*\(4, 3, 3\)",
         attn_mask=np.zeros((2, L, L), bool))
    both(AssertionError, r"`attn_mask`.*\(2, 1, 3, 3\)", attn_mask=np.zeros((2, 1, L, L)))
    both(AssertionError, r"key_padding_mask shape of \(2, 3\).*\(3, 2\)",
         key_padding_mask=np.zeros((L, N), bool))
    both(AssertionError, r"key_padding_mask.*2-D.*\(2, 3, 1\)",
         key_padding_mask=np.zeros((N, L, 1), bool))
    both(AssertionError, "only bool and floating types of key_padding_mask",
         key_padding_mask=np.zeros((N, L), np.int64))
    both(AssertionError, "only bool and floating types of attn_mask",
         attn_mask=np.zeros((L, L), np.int64))
    y = RNG.standard_normal((L, N, 3))
    _raises_both(AssertionError, r"embedding dimension of 4.*\(3, 2, 3\)",
                 lambda: mod(rg.tensor(y), xr, xr), lambda: ref(torch.tensor(y), xt, xt))
    _raises_both(AssertionError, r"key shape \(2, 2, 4\) does not match value shape",
                 lambda: mod(xr, xr[:2], xr), lambda: ref(xt, xt[:2], xt))
    _raises_both(AssertionError, "divisible by num_heads", lambda: nn.MultiheadAttention(5, 2),
                 lambda: torch.nn.MultiheadAttention(5, 2))
    # the layers' wrong-shape errors are ValueErrors too, as before
    with pytest.raises(ValueError):
        mod(xr, xr, xr, attn_mask=rg.zeros(L, S))


def test_mismatched_mask_types_warn_as_torch():
    mod, ref = _pair("MultiheadAttention", E, H)
    x = RNG.standard_normal((L, N, E))
    masks = dict(attn_mask=np.zeros((L, L)), key_padding_mask=np.zeros((N, L), bool))
    m_r, m_t = _masks(masks)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        ref(torch.tensor(x), torch.tensor(x), torch.tensor(x), **m_t)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        mod(rg.tensor(x), rg.tensor(x), rg.tensor(x), **m_r)


# ---------------------------------------------------------------- decoder and Transformer

LAYER_KW = {
    "post": dict(),
    "pre_gelu": dict(norm_first=True, activation="gelu"),
    "batch_first_no_bias": dict(batch_first=True, bias=False),
    "callable": dict(activation="callable", layer_norm_eps=1e-3),
}


def _layer_kw(name):
    kw = dict(LAYER_KW[name])
    calls = None
    if kw.get("activation") == "callable":
        kw["activation"] = torch.tanh
        calls = rg.tanh
    return kw, calls


def _decoder_masks(batch_first):
    t, s = 3, 4
    causal = np.triu(np.full((t, t), -np.inf), 1)
    return dict(tgt_mask=causal, memory_mask=_bool((t, s), 0.2),
                tgt_key_padding_mask=_bool((N, t), 0.3),
                memory_key_padding_mask=_bool((N, s), 0.3))


@pytest.mark.parametrize("name", sorted(LAYER_KW))
@pytest.mark.parametrize("masked", [False, True])
def test_decoder_layer_matches_torch(name, masked):
    kw, ours_act = _layer_kw(name)
    ref = torch.nn.TransformerDecoderLayer(E, H, 8, dropout=0.0, dtype=torch.float64, **kw)
    if ours_act is not None:
        kw["activation"] = ours_act
    mod = nn.TransformerDecoderLayer(E, H, 8, dropout=0.0, dtype=rg.float64, **kw)
    _load(mod, ref)
    bf = kw.get("batch_first", False)
    tgt = RNG.standard_normal((N, 3, E) if bf else (3, N, E))
    mem = RNG.standard_normal((N, 4, E) if bf else (4, N, E))
    _compare(mod, ref, [tgt, mem], _decoder_masks(bf) if masked else {})


def test_decoder_stack_matches_torch_and_is_causal_hint():
    ref = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(E, H, 8, dropout=0.0, dtype=torch.float64), 2,
        norm=torch.nn.LayerNorm(E, dtype=torch.float64))
    mod = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 8, dropout=0.0,
                                                           dtype=rg.float64), 2,
                                norm=nn.LayerNorm(E, dtype=rg.float64))
    _load(mod, ref)
    arrays = [RNG.standard_normal((3, N, E)), RNG.standard_normal((4, N, E))]
    masks = _decoder_masks(False)
    _compare(mod, ref, arrays, masks)
    causal = dict(tgt_mask=np.triu(np.full((3, 3), -np.inf), 1))
    _compare(mod, ref, arrays, causal, dict(tgt_is_causal=True))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(batch_first, norm_first):
    kw = dict(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=8, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    ref = torch.nn.Transformer(**kw, dtype=torch.float64)
    mod = nn.Transformer(**kw, dtype=rg.float64)
    _load(mod, ref)
    src = RNG.standard_normal((N, 4, E) if batch_first else (4, N, E))
    tgt = RNG.standard_normal((N, 3, E) if batch_first else (3, N, E))
    masks = _decoder_masks(batch_first)
    masks.update(src_mask=_bool((4, 4), 0.2), src_key_padding_mask=_bool((N, 4), 0.3))
    _compare(mod, ref, [src, tgt], masks)
    _compare(mod, ref, [src, tgt])


def test_transformer_unbatched_custom_parts_and_mask_helper():
    enc = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(E, H, 8, dropout=0.0, dtype=torch.float64), 1,
        enable_nested_tensor=False)
    ref = torch.nn.Transformer(E, H, dim_feedforward=8, dropout=0.0, custom_encoder=enc,
                               num_decoder_layers=1, activation="gelu", dtype=torch.float64)
    ours_enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(E, H, 8, dropout=0.0, dtype=rg.float64), 1,
        enable_nested_tensor=False)
    mod = nn.Transformer(E, H, dim_feedforward=8, dropout=0.0, custom_encoder=ours_enc,
                         num_decoder_layers=1, activation="gelu", dtype=rg.float64)
    _load(mod, ref)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=rg.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    np.testing.assert_array_equal(mask.numpy(), mask_t.numpy())
    assert nn.Transformer.generate_square_subsequent_mask(2).dtype == rg.get_default_dtype()
    _compare(mod, ref, [RNG.standard_normal((4, E)), RNG.standard_normal((3, E))],
             dict(tgt_mask=mask_t.numpy()), dict(tgt_is_causal=True))


def test_transformer_errors_are_torchs():
    mod = nn.Transformer(E, H, 1, 1, 8, dtype=rg.float64)
    ref = torch.nn.Transformer(E, H, 1, 1, 8, dtype=torch.float64)
    for s, t, match in (((4, 2, E), (3, 3, E), "batch number"),
                        ((4, 2, E), (3, 2, E + 1), "feature number")):
        _raises_both(RuntimeError, match,
                     lambda s=s, t=t: mod(rg.zeros(*s, dtype=rg.float64),
                                          rg.zeros(*t, dtype=rg.float64)),
                     lambda s=s, t=t: ref(torch.zeros(*s, dtype=torch.float64),
                                          torch.zeros(*t, dtype=torch.float64)))
    _raises_both(RuntimeError, "relu/gelu, not swish",
                 lambda: nn.TransformerDecoderLayer(E, H, activation="swish"),
                 lambda: torch.nn.TransformerDecoderLayer(E, H, activation="swish"))


# ---------------------------------------------------------------- the encoder's arguments

def test_encoder_takes_torchs_arguments_and_warns_alike():
    layer = nn.TransformerEncoderLayer(E, H, 8)
    with pytest.warns(UserWarning, match="batch_first was not True"):
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, 8), 1)
    with pytest.warns(UserWarning, match="batch_first was not True"):
        enc = nn.TransformerEncoder(layer, 1)
    assert not enc.use_nested_tensor and enc.enable_nested_tensor and enc.mask_check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False, mask_check=False)
    assert not enc.mask_check
    assert nn.TransformerEncoderLayer(E, H, activation="gelu").activation_relu_or_gelu == 2


@pytest.mark.parametrize("mask_check", [True, False])
@pytest.mark.parametrize("aligned", [True, False])
def test_encoder_inference_zeroes_padding_as_torch(mask_check, aligned):
    """Eval mode without gradients: PyTorch's nested-tensor path (padding comes out as
    zeros before the final norm; with mask_check=False each row keeps its first
    positions) and its fused layer; in training, the general path."""
    ref_layer = torch.nn.TransformerEncoderLayer(E, H, 8, dropout=0.0, batch_first=True,
                                                 dtype=torch.float64)
    ref = torch.nn.TransformerEncoder(ref_layer, 2, mask_check=mask_check,
                                      norm=torch.nn.LayerNorm(E, dtype=torch.float64))
    mod = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 8, dropout=0.0,
                                                           batch_first=True, dtype=rg.float64),
                                2, mask_check=mask_check, norm=nn.LayerNorm(E, dtype=rg.float64))
    _load(mod, ref)
    x = RNG.standard_normal((3, 4, E))
    kpm = np.array([[False, False, True, True], [False, False, False, False],
                    [True, True, True, True]])
    if not aligned:
        kpm[1, 1] = True
    for train in (False, True):
        mod.train(train)
        ref.train(train)
        with torch.no_grad(), rg.no_grad():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch: nested tensors are a prototype
                b = ref(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm))
            a = mod(rg.tensor(x), src_key_padding_mask=rg.tensor(kpm))
        np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL, equal_nan=True)


def test_encoder_layer_inference_path_gives_nan_rows_as_torch():
    ref = torch.nn.TransformerEncoderLayer(E, H, 8, dropout=0.0, batch_first=True,
                                           dtype=torch.float64).eval()
    mod = nn.TransformerEncoderLayer(E, H, 8, dropout=0.0, batch_first=True,
                                     dtype=rg.float64).eval()
    _load(mod, ref)
    x = RNG.standard_normal((2, 3, E))
    am = np.array([[False, True, True], [True, True, True], [False, False, False]])
    with torch.no_grad(), rg.no_grad():
        b = ref(torch.tensor(x), src_mask=torch.tensor(am))
        a = mod(rg.tensor(x), src_mask=rg.tensor(am))
    assert np.isnan(b.numpy()[:, 1]).all()
    np.testing.assert_allclose(a.numpy(), b.numpy(), **TOL, equal_nan=True)
    a = mod(rg.tensor(x), src_mask=rg.tensor(am))  # with gradients: the general path
    b = ref(torch.tensor(x), src_mask=torch.tensor(am))
    assert not np.isnan(b.detach().numpy()).any()
    _close(a, b)


def test_masked_attention_on_a_device_equals_the_host():
    """On the stand-in GPU (CuPy's rules: no silent host copies): masked attention with
    and without weights, a Transformer step, and the encoder's inference zeroing."""
    import fake_device

    fake_device.install()
    try:
        mha = nn.MultiheadAttention(E, H, add_bias_kv=True, batch_first=True, dtype=rg.float64)
        tr = nn.Transformer(E, H, 1, 1, 8, dropout=0.0, batch_first=True, dtype=rg.float64)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 8, batch_first=True,
                                                               dtype=rg.float64), 1).eval()
        x = RNG.standard_normal((N, L, E))
        kpm = np.array([[False, False, True], [True, True, True]])
        results = []
        for dev in ("cpu", "cuda"):
            q = rg.tensor(x).to(dev).requires_grad_(True)
            pad = rg.tensor(kpm).to(dev)
            a, w = mha.to(dev)(q, q, q, key_padding_mask=pad, attn_mask=rg.tensor(
                np.triu(np.ones((L, L), bool), 1)).to(dev))
            b, _ = mha(q, q, q, key_padding_mask=pad, need_weights=False)
            causal = nn.Transformer.generate_square_subsequent_mask(L, device=dev,
                                                                    dtype=rg.float64)
            t = tr.to(dev)(q, q, tgt_mask=causal, src_key_padding_mask=pad[:1].expand(N, L))
            (a.sum() + b.sum() + t.sum()).backward()
            with rg.no_grad():
                z = enc.to(dev)(q, src_key_padding_mask=pad)
            results.append([v.detach().cpu().numpy() for v in (a, w, b, t, q.grad, z)])
        for u, v in zip(*results):
            np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-15, equal_nan=True)
        assert np.all(results[0][-1][1] == 0)  # the fully padded sequence: zeros
    finally:
        fake_device.uninstall()
