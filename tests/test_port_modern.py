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


_KEYWORD_CALLS = {
    "split_size": lambda T, x, m: x.split(split_size=[1, 3], dim=-1),
    "split_tensor": lambda T, x, m: T.split(tensor=x, split_size_or_sections=2, dim=1),
    "copy_non_blocking": lambda T, x, m: x.clone().copy_(m[:, :3], non_blocking=True),
    "float_memory_format": lambda T, x, m: x.float(memory_format=T.preserve_format),
    "double_memory_format": lambda T, x, m: x.double(memory_format=T.contiguous_format),
    "half_memory_format": lambda T, x, m: x.half(memory_format=T.preserve_format),
    "long_memory_format": lambda T, x, m: x.long(memory_format=T.preserve_format),
    "matmul_other": lambda T, x, m: x.matmul(other=m),
    "torch_matmul_other": lambda T, x, m: T.matmul(x, other=m),
    "maximum_other": lambda T, x, m: x.maximum(other=-x),
    "minimum_other": lambda T, x, m: T.minimum(input=x, other=-x),
    "new_zeros_layout": lambda T, x, m: x.new_zeros(2, 3, layout=T.strided, pin_memory=False),
    "new_ones_pin": lambda T, x, m: x.new_ones((2,), pin_memory=False),
    "new_empty_pin": lambda T, x, m: x.new_empty((2,), pin_memory=False).zero_(),
    "new_full_pin": lambda T, x, m: x.new_full((2,), 3.0, layout=T.strided, pin_memory=False),
}


@pytest.mark.parametrize("name", sorted(_KEYWORD_CALLS))
def test_tensor_methods_take_torchs_keyword_names(name):
    """Keyword names ported code passes (`x.split(split_size=...)` in mamba-minimal,
    `p.copy_(q, non_blocking=True)` in EMA helpers, `x.float(memory_format=...)`)."""
    rng = np.random.default_rng(2)
    x, m = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 4))
    got = {}
    for T in (torch, rg):
        out = _KEYWORD_CALLS[name](T, T.tensor(x), T.tensor(m))
        got[T] = out if isinstance(out, tuple) else (out,)
    assert len(got[torch]) == len(got[rg])
    for a, b in zip(got[torch], got[rg]):
        assert str(a.dtype).replace("torch.", "") == str(b.dtype)
        np.testing.assert_allclose(_np(a), _np(b), atol=1e-12)


def test_register_hook_takes_the_keyword_hook():
    seen = []
    for T in (torch, rg):
        w = T.ones(3, requires_grad=True)
        y = w * 2
        y.register_hook(hook=lambda g: g * 3)
        w.register_hook(hook=lambda g: seen.append(_np(g).copy()))
        y.sum().backward()
    np.testing.assert_array_equal(seen[0], seen[1])


_EINSUMS = [("bld,dn->bldn", [(1, 2, 3), (3, 4)], ["float64", "float32"]),
            ("bld,bln,bld->bldn", [(1, 2, 3), (1, 2, 4), (1, 2, 3)],
             ["float64", "float32", "float64"]),
            ("ij,jk,j->ik", [(2, 3), (3, 4), (3,)], ["float64", "float32", "float64"]),
            ("ij,k->k", [(2, 3), (4,)], ["float32", "float64"]),
            ("ij,jk->ijk", [(2, 3), (3, 4)], ["float64", "complex64"]),
            ("ij,jk->ijk", [(2, 3), (3, 4)], ["int64", "float32"]),
            ("ij,jk->ik", [(2, 3), (3, 4)], ["float64", "float32"]),
            ("i,i,i->", [(3,), (3,), (3,)], ["float64", "float64", "float32"]),
            ("ij,ij->", [(2, 3), (2, 3)], ["float32", "float64"])]


@pytest.mark.parametrize("spec,shapes,dtypes", _EINSUMS)
def test_einsum_of_mixed_dtypes_promotes_or_refuses_where_torch_does(spec, shapes, dtypes):
    """mamba-minimal in float64: `einsum('bld,dn->bldn', delta, A)` with `A` made by
    `.float()`. PyTorch multiplies (promoting) where no label is summed across a pair, and
    refuses only a batched matrix product of two dtypes."""
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=s) for s in shapes]
    out = {}
    for T in (torch, rg):
        ts = [T.tensor(a).to(getattr(T, d)) for a, d in zip(arrays, dtypes)]
        for t in ts:
            if (t.is_floating_point() or t.is_complex()) if T is torch else t.dtype.kind in "fc":
                t.requires_grad_(True)
        try:
            y = T.einsum(spec, *ts)
        except RuntimeError as e:
            out[T] = type(e)
            continue
        y.abs().sum().backward()
        out[T] = (y, [t.grad for t in ts])
    if out[torch] is RuntimeError:
        assert out[rg] is not None and not isinstance(out[rg], tuple)
        with pytest.raises(RuntimeError):
            rg.einsum(spec, *[rg.tensor(a).to(getattr(rg, d)) for a, d in zip(arrays, dtypes)])
        return
    (ty, tg), (ry, rg_) = out[torch], out[rg]
    assert str(ty.dtype).replace("torch.", "") == str(ry.dtype)
    np.testing.assert_allclose(_np(ty), _np(ry), rtol=1e-6, atol=1e-6)
    for a, b in zip(tg, rg_):
        assert (a is None) == (b is None)
        if a is not None:
            assert str(a.dtype).replace("torch.", "") == str(b.dtype)
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,kw", [
    ("Adam", {}), ("AdamW", {"weight_decay": 0.2, "betas": (0.9, 0.98), "eps": 1e-6}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("AdamW", {"maximize": True}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"momentum": 0.9, "dampening": 0.1})])
def test_optimizers_step_a_zero_dim_parameter_as_torch(name, kw):
    """CLIP's `logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))` is 0-d: Adam
    crashed on it and SGD's momentum buffer stopped accumulating (NumPy arithmetic on a 0-d
    array gives a scalar, not an array to update in place)."""
    got = []
    for T in (torch, rg):
        s = T.nn.Parameter(T.ones([], dtype=T.float64) * np.log(1 / 0.07))
        w = T.nn.Parameter(T.tensor([1.0, -2.0], dtype=T.float64))
        opt = getattr(T.optim, name)([s, w], lr=0.05, **kw)
        trace = []
        for _ in range(4):
            opt.zero_grad()
            (s.exp() * 0.01 + (w ** 2).sum() * s).backward()
            opt.step()
            trace.append(np.concatenate([np.atleast_1d(_np(s)), _np(w)]))
        got.append((np.array(trace), s.shape))
    assert tuple(got[0][1]) == tuple(got[1][1]) == ()
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("where", ["lambda", "lambda_none", "lambda_cpu", "dict", "device"])
def test_load_takes_torchs_map_location_forms(tmp_path, where):
    """`torch.load(path, map_location=lambda storage, loc: storage)` (older scripts) and
    `map_location={'cuda:0': 'cpu'}` load onto the host as in torch; a function returning
    something else is refused with TypeError, as torch refuses it."""
    forms = {"lambda": lambda T: (lambda storage, loc: storage),
             "lambda_none": lambda T: (lambda storage, loc: None),
             "lambda_cpu": lambda T: (lambda storage, loc: storage.cpu()),
             "dict": lambda T: {"cuda:0": "cpu"}, "device": lambda T: T.device("cpu")}
    state = {"model": {"w": np.arange(6.0).reshape(2, 3)}, "step": 3}
    got = {}
    for T in (torch, rg):
        path = tmp_path / f"{T.__name__}.pt"
        T.save({"model": {"w": T.tensor(state["model"]["w"])}, "step": 3}, str(path))
        kw = {"weights_only": False} if T is torch else {}
        got[T] = T.load(str(path), map_location=forms[where](T), **kw)
    np.testing.assert_array_equal(_np(got[torch]["model"]["w"]), _np(got[rg]["model"]["w"]))
    assert got[rg]["model"]["w"].device.type == "cpu" and got[rg]["step"] == 3


def test_load_refuses_a_map_location_function_returning_no_tensor(tmp_path):
    rg.save({"w": rg.ones(2)}, str(tmp_path / "r.pt"))
    torch.save({"w": torch.ones(2)}, str(tmp_path / "t.pt"))
    with pytest.raises(TypeError):
        torch.load(str(tmp_path / "t.pt"), map_location=lambda s, loc: 5)
    with pytest.raises(TypeError):
        rg.load(str(tmp_path / "r.pt"), map_location=lambda s, loc: 5)


def _lists(T, seed=4):
    rng = np.random.default_rng(seed)
    a = [T.tensor(rng.uniform(0.5, 2.0, size=s)) for s in ((2,), (3, 2))]
    b = [T.tensor(rng.uniform(0.5, 2.0, size=s)) for s in ((2,), (3, 2))]
    return a, b


_FOREACH = {
    "lerp_ema": lambda T, a, b: T._foreach_lerp_(a, b, weight=1.0 - 0.99),
    "lerp_tensors": lambda T, a, b: T._foreach_lerp(a, b, b),
    "mul_scalar_": lambda T, a, b: T._foreach_mul_(a, 0.5),
    "mul_tensor": lambda T, a, b: T._foreach_mul(a, T.tensor(3.0, dtype=T.float64)),
    "add_alpha_": lambda T, a, b: T._foreach_add_(a, b, alpha=0.5),
    "add_scalars": lambda T, a, b: T._foreach_add(a, [1.0, 2.0]),
    "sub_alpha": lambda T, a, b: T._foreach_sub(a, b, alpha=2),
    "div_": lambda T, a, b: T._foreach_div_(a, b),
    "maximum": lambda T, a, b: T._foreach_maximum(a, b),
    "minimum_": lambda T, a, b: T._foreach_minimum_(a, b),
    "clamp_min_": lambda T, a, b: T._foreach_clamp_min_(a, 1.0),
    "clamp_max": lambda T, a, b: T._foreach_clamp_max(a, 1.0),
    "pow_scalar_base": lambda T, a, b: T._foreach_pow(2.0, a),
    "pow_lists": lambda T, a, b: T._foreach_pow(a, b),
    "addcmul_": lambda T, a, b: T._foreach_addcmul_(a, b, b, value=0.1),
    "addcdiv_scalars": lambda T, a, b: T._foreach_addcdiv(a, b, a, [1.0, 2.0]),
    "addcdiv_tensor_values": lambda T, a, b: T._foreach_addcdiv_(a, b, a, T.tensor([1.0, 2.0])),
    "sqrt": lambda T, a, b: T._foreach_sqrt(a),
    "neg_": lambda T, a, b: T._foreach_neg_(a),
    "exp_": lambda T, a, b: T._foreach_exp_(a),
    "norm": lambda T, a, b: T._foreach_norm(a),
    "norm_inf": lambda T, a, b: T._foreach_norm(a, ord=float("inf")),
    "max": lambda T, a, b: T._foreach_max(a),
    "copy_": lambda T, a, b: T._foreach_copy_(a, b),
    "zero_": lambda T, a, b: T._foreach_zero_(a),
    "clone": lambda T, a, b: T._foreach_clone(a),
}


@pytest.mark.parametrize("name", sorted(_FOREACH))
def test_foreach_functions_as_torch(name):
    """timm's ModelEmaV3: `torch._foreach_lerp_(ema_params, model_params, 1 - decay)`, and the
    other multi-tensor forms: values, return kinds (a tuple of new tensors; the list itself
    for the in-place forms) and what they do to the list in place."""
    got = {}
    for T in (torch, rg):
        a, b = _lists(T)
        out = _FOREACH[name](T, a, b)
        got[T] = (out, a)
    (to, ta), (ro, ra) = got[torch], got[rg]
    assert type(to) is type(ro)
    if isinstance(to, list):
        assert ro is got[rg][1]
    for x, y in zip(list(to) + ta, list(ro) + ra):
        assert str(x.dtype).replace("torch.", "") == str(y.dtype)
        np.testing.assert_allclose(_np(x), _np(y), rtol=1e-13, atol=1e-13)


def test_foreach_out_of_place_is_differentiable_and_refuses_bad_lists_as_torch():
    grads = []
    for T in (torch, rg):
        a, b = _lists(T)
        for t in a:
            t.requires_grad_(True)
        out = T._foreach_addcmul(T._foreach_mul(a, 3.0), a, b, value=0.5)
        sum(o.sum() for o in out).backward()
        grads.append([_np(t.grad) for t in a])
        with pytest.raises(RuntimeError):
            T._foreach_add([T.ones(2)], [T.ones(2), T.ones(2)])
        with pytest.raises(RuntimeError):
            T._foreach_add([], [])
    for x, y in zip(*grads):
        np.testing.assert_allclose(x, y, rtol=1e-13)


_EMPTY_INDEX = {
    "write": lambda t: (t.__setitem__((1, []), -float("inf")), t)[1],
    "write_rows": lambda t: (t.__setitem__([], 5.0), t)[1],
    "read": lambda t: t[1, []],
    "read_rows": lambda t: t[[]],
    "read_pairs": lambda t: t[[], []],
}


@pytest.mark.parametrize("name", sorted(_EMPTY_INDEX))
def test_an_empty_list_index_selects_nothing_as_in_torch(name):
    """Hugging Face's no-repeat-ngram processor: `scores[b, banned_tokens] = -inf` with
    `banned_tokens == []` (NumPy reads [] as a float array and refuses it)."""
    x = np.arange(12.0).reshape(3, 4)
    t, r = _EMPTY_INDEX[name](torch.tensor(x)), _EMPTY_INDEX[name](rg.tensor(x))
    assert tuple(t.shape) == tuple(r.shape) and str(t.dtype)[6:] == str(r.dtype)
    np.testing.assert_array_equal(_np(t), _np(r))


def test_an_empty_list_index_has_a_zero_gradient_as_in_torch():
    grads = []
    for T in (torch, rg):
        w = T.ones(3, 4, dtype=T.float64, requires_grad=True)
        (w[1, []].sum() + w[0, 0]).backward()
        grads.append(_np(w.grad))
    np.testing.assert_array_equal(*grads)


_COMPLEX_OPTIMIZERS = [
    ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"weight_decay": 0.01}), ("AdamW", {"amsgrad": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}), ("RMSprop", {"lr": 0.01}),
    ("Adagrad", {}), ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("Adadelta", {"lr": 1.0}),
    ("Rprop", {}), ("ASGD", {}), ("SGD", {"momentum": 0.9, "nesterov": True,
                                          "weight_decay": 0.1}),
    ("LBFGS", {"lr": 0.5})]


@pytest.mark.parametrize("name,kw", _COMPLEX_OPTIMIZERS)
def test_optimizers_step_complex_parameters_as_pairs_of_reals_as_torch(name, kw):
    """S4D's `C = nn.Parameter(torch.randn(H, N // 2, dtype=torch.cfloat))`: torch's optimizers
    update a complex parameter through `view_as_real`, each part with its own moments (the
    element-wise |g|^2 or g*g of a complex gradient gave other numbers, and AMSGrad blew up)."""
    kw = {"lr": 0.1, **kw}
    c0 = np.array([1.0 + 2.0j, -0.5 + 0.3j, 2.0 - 1.0j])
    got = []
    for T in (torch, rg):
        p = T.nn.Parameter(T.tensor(c0, dtype=T.complex128))
        opt = getattr(T.optim, name)([p], **kw)

        def closure(p=p, opt=opt):
            opt.zero_grad()
            loss = (p * p.conj()).real.sum() + (p ** 3).real.sum() * 0.1 + p.imag.sum()
            loss.backward()
            return loss
        trace = []
        for _ in range(4):
            if name == "LBFGS":
                opt.step(closure)
            else:
                closure()
                opt.step()
            trace.append(_np(p).copy())
        got.append((np.array(trace), {k: v for k, v in opt.state[p].items()
                                      if isinstance(v, T.Tensor) and v.ndim}))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-10, atol=1e-12)
    for k, v in got[0][1].items():  # the state is complex, as torch's
        if name != "LBFGS":
            assert str(v.dtype)[6:] == str(got[1][1][k].dtype), k


def test_adafactor_refuses_complex_parameters_as_torch():
    for T in (torch, rg):
        p = T.nn.Parameter(T.tensor([1 + 2j, 3 - 1j]))
        opt = T.optim.Adafactor([p], lr=0.1)
        (p * p.conj()).real.sum().backward()
        with pytest.raises(RuntimeError, match="complex"):
            opt.step()


def test_parameters_take_user_attributes_as_torch():
    """Mamba's `self.A_log._no_weight_decay = True` and S4's `param._optim = {...}`, read back
    to build optimizer groups; the attribute survives `.double()`/`.half()` as in torch."""
    got = []
    for T in (torch, rg):
        m = T.nn.Linear(2, 2)
        m.weight._optim = {"lr": 1e-3, "weight_decay": 0.0}
        m.bias._no_weight_decay = True
        m.double()
        got.append((m.weight._optim, getattr(m.bias, "_no_weight_decay", False),
                    hasattr(m.weight, "_no_weight_decay"), m.weight.__dict__))
    assert got[0] == got[1]


_SHAPE_KEYWORDS = {
    "reshape_shape": lambda T, t: t.reshape(shape=(t.shape[0], 2, 2, 3)),  # MAE/DiT unpatchify
    "torch_reshape_input": lambda T, t: T.reshape(input=t, shape=(4, 6)),
    "view_size": lambda T, t: t.view(size=(4, 6)),
    "view_dtype": lambda T, t: t.view(dtype=T.int64),
    "expand_size": lambda T, t: t[:1].expand(size=(3, 3, 4)),
    "permute_dims": lambda T, t: t.permute(dims=(2, 0, 1)),
    "torch_permute_input": lambda T, t: T.permute(input=t, dims=[1, 2, 0]),
    "repeat_repeats": lambda T, t: t.repeat(repeats=(1, 2, 1)),
    "torch_transpose_input": lambda T, t: T.transpose(input=t, dim0=0, dim1=2),
    "torch_flatten_input": lambda T, t: T.flatten(input=t, start_dim=1),
    "torch_squeeze_input": lambda T, t: T.squeeze(input=t[:1], dim=0),
    "torch_unsqueeze_input": lambda T, t: T.unsqueeze(input=t, dim=0),
    "torch_clamp_input": lambda T, t: T.clamp(input=t, min=3.0),
    "torch_max_input": lambda T, t: T.max(input=t, dim=1).indices,
    "torch_where_keywords": lambda T, t: T.where(condition=t > 5, input=t, other=T.zeros_like(t)),
    "new_zeros_size": lambda T, t: t.new_zeros(size=(2, 3)),
    "new_ones_size": lambda T, t: t.new_ones(size=(2,)),
    "new_empty_size": lambda T, t: t.new_empty(size=(2,)).zero_(),
}


@pytest.mark.parametrize("name", sorted(_SHAPE_KEYWORDS))
def test_shape_functions_take_torchs_keywords(name):
    """MAE's and DiT's `x.reshape(shape=(N, h, w, p, p, c))`, `x.permute(dims=...)`,
    `torch.where(condition=..., input=..., other=...)`: torch's keyword names."""
    x = np.arange(24.0).reshape(2, 3, 4)
    t, r = _SHAPE_KEYWORDS[name](torch, torch.tensor(x)), _SHAPE_KEYWORDS[name](rg, rg.tensor(x))
    assert tuple(t.shape) == tuple(r.shape) and str(t.dtype)[6:] == str(r.dtype)
    np.testing.assert_array_equal(_np(t), _np(r))


def test_shape_keyword_and_positional_sizes_together_are_refused_as_torch():
    for T in (torch, rg):
        t = T.ones(2, 3)
        with pytest.raises(TypeError):
            t.reshape(3, 2, shape=(6,))
        with pytest.raises(TypeError):
            t.permute(1, 0, dims=(1, 0))
