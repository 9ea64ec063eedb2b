"""Patterns from PyTorch's official tutorials (pytorch/tutorials: basics, blitz, examples_*,
torch.func, forward-mode AD, double backward) that retrograd ran differently or refused;
each is reproduced inline, small, and compared with torch."""

from __future__ import annotations

import io
from functools import partial

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw
import torch.func as tf

import retrograd as rg
import retrograd.autograd.forward_ad as rfw
import retrograd.func as rf
import retrograd.nn as rnn
import retrograd.nn.functional as RF
from retrograd.serialization import CheckpointError

RNG = np.random.default_rng(0)


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def close(a, b, tol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---------------------------------------------------------------- tensors (tensorqs)

@pytest.mark.parametrize("name", ["float", "int", "bool", "cfloat", "cdouble", "complex64",
                                  "complex128", "uint16", "uint32", "uint64"])
def test_torch_dtype_spellings(name):
    ours = rg.zeros(2, dtype=getattr(rg, name))
    ref = torch.zeros(2, dtype=getattr(torch, name))
    assert str(ours.dtype) == str(ref.dtype).removeprefix("torch.")
    assert ours.dtype.itemsize == ref.dtype.itemsize


def test_rand_like_with_torch_float_and_star_import_keeps_builtins():
    x = rg.rand_like(rg.tensor([[1, 2], [3, 4]]), dtype=rg.float)
    assert x.dtype == torch.rand_like(torch.tensor([[1, 2]]), dtype=torch.float).numpy().dtype
    ns: dict = {}
    exec("from retrograd import *", ns)
    assert ns.get("float", float) is float and "int" not in ns and "bool" not in ns


def test_matmul_and_mul_out():
    a = arr(4, 4)
    t = torch.tensor(a)
    ours, ref = rg.rand_like(rg.tensor(a)), torch.rand_like(t)
    r = rg.matmul(rg.tensor(a), rg.tensor(a).T, out=ours)
    torch.matmul(t, t.T, out=ref)
    assert r is ours
    close(ours, ref)
    z = rg.zeros(4, 4)
    rg.mul(rg.tensor(a), rg.tensor(a), out=z)
    close(z, t * t)


# ---------------------------------------------------------------- save / load (saveloadrun)

def test_load_weights_only_and_state_dict_round_trip(tmp_path):
    m = rnn.Sequential(rnn.Linear(3, 4), rnn.ReLU(), rnn.Linear(4, 2))
    path = tmp_path / "model_weights.pth"
    rg.save(m.state_dict(), path)
    m2 = rnn.Sequential(rnn.Linear(3, 4), rnn.ReLU(), rnn.Linear(4, 2))
    res = m2.load_state_dict(rg.load(path, weights_only=True))
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    tres = tm.load_state_dict(tm.state_dict())
    assert repr(res) == repr(tres) == "<All keys matched successfully>"
    x = rg.tensor(arr(5, 3))
    close(m2(x), m(x))
    buf = io.BytesIO()
    rg.save({"epoch": 3, "model_state_dict": m.state_dict()}, buf)
    buf.seek(0)
    ck = rg.load(buf, map_location="cpu", weights_only=False, mmap=False)
    assert ck["epoch"] == 3


def test_load_state_dict_reports_keys_like_torch():
    m, tm = rnn.Linear(2, 2), torch.nn.Linear(2, 2)
    sd = {k: v for k, v in m.state_dict().items() if k != "bias"}
    tsd = {k: v for k, v in tm.state_dict().items() if k != "bias"}
    assert repr(m.load_state_dict(sd, strict=False)) == repr(tm.load_state_dict(tsd, strict=False))


def test_whole_module_save_refused_with_a_hint(tmp_path):
    with pytest.raises(CheckpointError, match="state_dict"):
        rg.save(rnn.Linear(2, 2), tmp_path / "model.pth")
    with pytest.raises(TypeError, match="pickle"):
        rg.load(tmp_path / "x.pth", pickle_module=object())


# ---------------------------------------------------------------- graph (blitz nn tutorial)

def test_next_functions_pairs_like_torch():
    def build(L, w, b):
        x = L.tensor(w, requires_grad=True)
        y = L.tensor(b, requires_grad=True)
        c = L.tensor(b)
        return ((x * y) * c).sum(), x

    a, b = arr(3), arr(3)
    ours, ox = build(rg, a, b)
    ref, _ = build(torch, a, b)
    (mul2, i0), = ours.grad_fn.next_functions
    (tmul2, _), = ref.grad_fn.next_functions
    assert i0 == 0
    assert [n is None for n, _ in mul2.next_functions] == \
        [n is None for n, _ in tmul2.next_functions]
    (mul1, _), _ = mul2.next_functions
    (tmul1, _), _ = tmul2.next_functions
    names = [type(n).__name__ for n, _ in mul1.next_functions]
    assert names == [type(n).__name__ for n, _ in tmul1.next_functions] == ["AccumulateGrad"] * 2
    assert mul1.next_functions[0][0].variable is ox


# ---------------------------------------------------------------- torch.func with dicts (NTK, ...)

def _params(L):
    return {"w": L.tensor(W), "b": L.tensor(B)}


W, B, X = arr(3, 2), arr(3), arr(2)


def _f(L, p, x):
    return L.tanh(p["w"] @ x + p["b"])


@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
def test_jacobians_of_dict_params(which):
    ours = getattr(rf, which)(partial(_f, rg))(_params(rg), rg.tensor(X))
    ref = getattr(tf, which)(partial(_f, torch))(_params(torch), torch.tensor(X))
    assert list(ours) == list(ref)
    for k in ref:
        close(ours[k], ref[k])
    ours = getattr(rf, which)(partial(_f, rg), argnums=(0, 1))(_params(rg), rg.tensor(X))
    ref = getattr(tf, which)(partial(_f, torch), argnums=(0, 1))(_params(torch), torch.tensor(X))
    close(ours[0]["w"], ref[0]["w"])
    close(ours[1], ref[1])

    def two(L, p, x):
        y = _f(L, p, x)
        return {"y": y, "s": y.sum()}

    ours = getattr(rf, which)(partial(two, rg))(_params(rg), rg.tensor(X))
    ref = getattr(tf, which)(partial(two, torch))(_params(torch), torch.tensor(X))
    close(ours["s"]["b"], ref["s"]["b"])
    close(ours["y"]["w"], ref["y"]["w"])


def test_hessian_vjp_jvp_of_dict_params():
    def loss(L, p, x):
        return _f(L, p, x).sum()

    ours = rf.hessian(partial(loss, rg))(_params(rg), rg.tensor(X))
    ref = tf.hessian(partial(loss, torch))(_params(torch), torch.tensor(X))
    close(ours["w"]["b"], ref["w"]["b"])
    close(ours["b"]["b"], ref["b"]["b"])
    _, fn = rf.vjp(lambda p: _f(rg, p, rg.tensor(X)), _params(rg))
    _, tfn = tf.vjp(lambda p: _f(torch, p, torch.tensor(X)), _params(torch))
    (g,), (tg,) = fn(rg.ones(3)), tfn(torch.ones(3))
    close(g["w"], tg["w"])
    tan = {"w": arr(3, 2), "b": arr(3)}
    _, t = rf.jvp(lambda p: _f(rg, p, rg.tensor(X)), (_params(rg),),
                  ({k: rg.tensor(v) for k, v in tan.items()},))
    _, tt = tf.jvp(lambda p: _f(torch, p, torch.tensor(X)), (_params(torch),),
                   ({k: torch.tensor(v) for k, v in tan.items()},))
    close(t, tt)
    with pytest.raises(ValueError, match="containers"):
        rf.jvp(lambda p: _f(rg, p, rg.tensor(X)), (_params(rg),), ({"w": rg.ones(3, 2)},))


def test_ntk_vmap_of_jacrev_over_dict_params():
    def fnet(L, p, x):
        return _f(L, p, x)

    xs = arr(4, 2)
    ours = rf.vmap(rf.jacrev(partial(fnet, rg)), (None, 0))(_params(rg), rg.tensor(xs))
    ref = tf.vmap(tf.jacrev(partial(fnet, torch)), (None, 0))(_params(torch), torch.tensor(xs))
    close(ours["w"], ref["w"])
    k = rg.einsum("Naf,Mbf->NMab", ours["w"].flatten(2), ours["w"].flatten(2))
    tk = torch.einsum("Naf,Mbf->NMab", ref["w"].flatten(2), ref["w"].flatten(2))
    close(k, tk, 1e-4)


# ---------------------------------------------------------------- forward-mode AD tutorial

def _exp_fn(L):
    class Fn(L.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            result = L.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result
            del ctx.result
            return gO

    return Fn


def test_make_dual_with_a_float32_tangent_for_a_float64_primal():
    p, t = arr(3, 3, dtype=np.float64), arr(3, 3)
    with rfw.dual_level():
        out = _exp_fn(rg).apply(rfw.make_dual(rg.tensor(p, requires_grad=True), rg.tensor(t)))
        ours = rfw.unpack_dual(out).tangent
    with tfw.dual_level():
        out = _exp_fn(torch).apply(tfw.make_dual(torch.tensor(p, requires_grad=True),
                                                 torch.tensor(t)))
        ref = tfw.unpack_dual(out).tangent
    assert ours.dtype == np.float64 and ref.dtype == torch.float64
    close(ours, ref)
    with rfw.dual_level(), pytest.raises(TypeError, match="floating"):
        rfw.make_dual(rg.tensor(p), rg.ones(3, 3, dtype=rg.int64))


def test_gradcheck_forward_ad_keywords():
    p = rg.tensor(arr(3, dtype=np.float64), requires_grad=True)
    kw = dict(check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
              check_batched_grad=False)
    assert rg.autograd.gradcheck(_exp_fn(rg).apply, (p,), **kw)
    assert torch.autograd.gradcheck(_exp_fn(torch).apply, (torch.tensor(p.numpy(),
                                                                        requires_grad=True),), **kw)

    class Wrong(rg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return rg.exp(x)

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, gI):
            return gI * 2

    assert not rg.autograd.gradcheck(Wrong.apply, (p,), raise_exception=False, **kw)
    with pytest.raises(rg.GradcheckError):
        rg.autograd.gradcheck(Wrong.apply, (p,), **kw)
    assert rg.autograd.gradcheck(Wrong.apply, (p,), check_forward_ad=False,
                                 raise_exception=False) is False
    assert rg.autograd.gradgradcheck(lambda x: (x ** 3).sum(), (p,), check_fwd_over_rev=True)


# ---------------------------------------------------------------- in-place after an op

@pytest.mark.parametrize("f", [lambda x: x ** 2, lambda x: x / 2, lambda x: x ** 3.0],
                         ids=["pow", "div", "powf"])
def test_in_place_on_a_result_whose_output_backward_does_not_read(f):
    v = arr(3)

    def run(L):
        x = L.tensor(v, requires_grad=True)
        y = f(x)
        y += 1
        y.sum().backward()
        return x.grad

    close(run(rg), run(torch))


def test_in_place_on_an_output_that_backward_reads_still_refused():
    x = rg.tensor(arr(3), requires_grad=True)
    y = x.exp()
    y += 1
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def test_in_place_on_a_quotient_is_allowed_as_in_torch():
    # torch's div backward reads its inputs, not its output (-g * ((a / b) / b))
    va, vb = arr(3), arr(3) + 3

    def run(L):
        a = L.tensor(va, requires_grad=True)
        b = L.tensor(vb, requires_grad=True)
        z = a / b
        z += 1
        z.sum().backward()
        return np.concatenate([np.asarray(a.grad), np.asarray(b.grad)])

    close(run(rg), run(torch))


# ---------------------------------------------------------------- double backward tutorial

def _sinh(L):
    class Sinh(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = L.exp(x)
            expnegx = L.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input

    return lambda x: Sinh.apply(x)[0]


def test_double_backward_through_saved_outputs_the_caller_dropped():
    v = arr(3, 3, dtype=np.float64)
    res = []
    for L in (rg, torch):
        x = L.tensor(v, requires_grad=True)
        gx, = L.autograd.grad(_sinh(L)(x).sum(), x, create_graph=True)
        gg, = L.autograd.grad(gx.sum(), x)
        res.append((gx, gg))
    close(res[0][0], res[1][0], 1e-10)
    close(res[0][1], res[1][1], 1e-10)
    x = rg.tensor(v, requires_grad=True)
    assert rg.autograd.gradgradcheck(_sinh(rg), (x,))


def test_meta_device_keeps_shapes_and_refuses_values():
    m = rnn.Linear(2, 2).to("meta")
    assert m.weight.device == "meta" and m.weight.shape == (2, 2)
    with pytest.raises(NotImplementedError, match="meta"):
        m(rg.ones(1, 2).to("meta"))


def test_functional_call_with_module_and_linear():
    m = rnn.Linear(3, 2)
    p = {"weight": rg.tensor(arr(2, 3)), "bias": rg.tensor(arr(2))}
    x = arr(4, 3)
    close(rf.functional_call(m, p, (rg.tensor(x),)),
          torch.nn.functional.linear(torch.tensor(x), torch.tensor(p["weight"].numpy()),
                                     torch.tensor(p["bias"].numpy())))
    close(RF.linear(rg.tensor(x), p["weight"], p["bias"]), m(rg.tensor(x)) * 0
          + rf.functional_call(m, p, rg.tensor(x)))


# ---------------------------------------------------------------- legacy spellings (char_rnn, ...)

@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
                                  "ByteTensor", "BoolTensor", "HalfTensor"])
def test_legacy_tensor_types(name):
    data = [[1.7, -1.2], [0.0, 3.0]] if name != "ByteTensor" else [[1.7, 2.2]]
    ours, ref = getattr(rg, name)(data), getattr(torch, name)(data)
    assert str(ours.dtype) == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert getattr(rg, name)(2, 3).shape == tuple(getattr(torch, name)(2, 3).shape)
    assert isinstance(ours, getattr(rg, name)) and isinstance(ref, getattr(torch, name))
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(ours, getattr(rg, other)) and not isinstance(ref, getattr(torch, other))
    conv = rg.zeros(2).type(getattr(rg, name))
    assert str(conv.dtype) == str(torch.zeros(2).type(getattr(torch, name)).dtype).removeprefix(
        "torch.")


def test_legacy_tensor_type_refuses_another_dtype():
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.tensor([1, 2]))
    with pytest.raises(TypeError):
        rg.FloatTensor(rg.tensor([1, 2]))
    x = rg.tensor([1.0])
    assert rg.FloatTensor(x) is x


def test_step_lr_takes_a_float_step_size_like_torch():
    def lrs(L, step):
        p = L.zeros(1, requires_grad=True)
        opt = L.optim.SGD([p], lr=5.0)
        sched = L.optim.lr_scheduler.StepLR(opt, step, gamma=0.95)
        out = []
        for _ in range(4):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr()[0])
        return out

    for step in (1.0, 2.0, 1.5):
        np.testing.assert_allclose(lrs(rg, step), lrs(torch, step))
    with pytest.raises(ValueError):
        rg.optim.lr_scheduler.StepLR(rg.optim.SGD([rg.zeros(1, requires_grad=True)], lr=1.0), 0)


# ---------------------------------------------------------------- conv/bn custom function tutorial

def _square_once(L, mod):
    class Sq(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @mod.once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    return Sq


def test_once_differentiable():
    import torch.autograd.function as tfn

    import retrograd.autograd.function as rfn

    v = arr(4, dtype=np.float64)
    for L, mod in ((rg, rfn), (torch, tfn)):
        sq = _square_once(L, mod)
        x = L.tensor(v, requires_grad=True)
        g, = L.autograd.grad(sq.apply(x).sum(), x)
        close(g, 2 * v)
        assert L.autograd.gradcheck(sq.apply, (x,))
        g, = L.autograd.grad(sq.apply(x).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError):  # no graph: the backward was not recorded
            L.autograd.grad(g.sum(), x)
        seed = L.ones((), dtype=L.float64, requires_grad=True)
        g, = L.autograd.grad(sq.apply(x * 1).sum(), x, grad_outputs=seed, create_graph=True)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="not"):  # the chain is cut: unused
            L.autograd.grad(g.sum(), x)
        with pytest.raises(RuntimeError, match="once_differentiable"):
            g.sum().backward()
    assert rfn.Function is rg.autograd.Function


# ---------------------------------------------------------------- blitz autograd: finetuning

def test_sequential_and_module_list_item_assignment_and_deletion():
    got = []
    for L in (rnn, torch.nn):
        s = L.Sequential(L.Linear(1, 2), L.ReLU(), L.Linear(2, 3), L.Tanh())
        s[2] = L.Linear(2, 5)
        s[-1] = L.Sigmoid()
        del s[1]
        m = L.ModuleList([L.ReLU(), L.Tanh(), L.Linear(1, 1)])
        m[0] = L.Sigmoid()
        del m[0:2]
        got.append((list(s.state_dict()), tuple(s[1].weight.shape), type(s[-1]).__name__,
                    len(m), list(m.state_dict())))
        with pytest.raises(IndexError):
            s[5] = L.ReLU()
    assert got[0] == got[1]


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_optimizer_over_frozen_and_trainable_parameters(opt):
    w1, w2, x = arr(8, 4), arr(3, 8), arr(2, 4)
    kw = {"lr": 1e-2, "momentum": 0.9} if opt in ("SGD", "RMSprop") else {"lr": 1e-2}
    res = []
    for L in (rg, torch):
        frozen = L.tensor(w1)  # requires_grad False: a frozen layer
        head = L.tensor(w2, requires_grad=True)
        o = getattr(L.optim, opt)([frozen, head], **kw)
        for _ in range(3):
            o.zero_grad()
            ((x_ := L.tensor(x)) @ frozen.T @ head.T).pow(2).sum().backward()
            o.step()
        assert frozen.grad is None and x_ is not None
        res.append((frozen, head))
    close(res[0][0], w1)
    close(res[0][1], res[1][1], 1e-4)


def test_tensor_copies_numpy_data_as_torch_does():
    for L in (rg, torch):
        a = np.ones(3, dtype=np.float32)
        t = L.tensor(a)
        t.add_(1)
        np.testing.assert_array_equal(a, np.ones(3))  # torch.tensor: always a copy
        b = np.ones(3, dtype=np.float32)
        L.as_tensor(b).add_(1)
        c = np.ones(3, dtype=np.float32)
        L.from_numpy(c).add_(1)
        np.testing.assert_array_equal(b, 2 * np.ones(3))  # these two share memory
        np.testing.assert_array_equal(c, 2 * np.ones(3))
        w = np.ones(2, dtype=np.float32)
        p = L.tensor(w, requires_grad=True)
        with L.no_grad():
            p.mul_(3)
        np.testing.assert_array_equal(w, np.ones(2))


# ---------------------------------------------------------------- module forward hooks

def _hooked_run(L, nnm):
    np_rng = np.random.default_rng(3)
    model = nnm.Sequential(nnm.Linear(4, 8), nnm.ReLU(), nnm.Linear(8, 3))
    with L.no_grad():
        for p in model.parameters():
            p.copy_(L.tensor(np_rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    x = L.tensor(np_rng.standard_normal((2, 4)).astype(np.float32))
    acts, out = {}, []
    h = model[1].register_forward_hook(lambda m, i, o: acts.__setitem__("relu", o.detach()))
    h2 = model[0].register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
    out.append(model(x))
    out.append(acts["relu"])
    out.append(len(model[0]._forward_pre_hooks))
    h2.remove()
    out.append(model(x))
    with model.register_forward_hook(lambda m, i, o: o + 1):
        out.append(model(x))
    out.append(model(x))
    h.remove()
    acts.clear()
    model(x)
    out.append(len(acts))
    lin = nnm.Linear(4, 2)
    lin.register_forward_pre_hook(lambda m, a, k: ((a[0] + 1,), k), with_kwargs=True)
    lin.register_forward_hook(lambda m, a, o: o * 3, prepend=True)
    with L.no_grad():
        lin.weight.fill_(0.5)
        lin.bias.fill_(0.25)
    out.append(lin(x))
    out.append(isinstance(model[1], nnm.ReLU) and type(model[1]).__name__ == "ReLU")
    return out


def test_forward_hooks_and_pre_hooks_like_torch():
    ours, ref = _hooked_run(rg, rnn), _hooked_run(torch, torch.nn)
    for a, b in zip(ours, ref):
        if isinstance(b, torch.Tensor):
            close(a, b)
        else:
            assert a == b


# ---------------------------------------------------------------- pruning tutorial

def _pruned_lenet(L, nnm, prune):
    np_rng = np.random.default_rng(5)
    model = nnm.Sequential(nnm.Conv2d(1, 4, 3), nnm.ReLU(), nnm.Flatten(), nnm.Linear(4 * 6 * 6, 5))
    with L.no_grad():
        for p in model.parameters():
            p.copy_(L.tensor(np_rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    conv, fc = model[0], model[3]
    out = [sorted(n for n, _ in conv.named_parameters())]
    prune.l1_unstructured(conv, name="bias", amount=2)
    prune.l1_unstructured(conv, name="weight", amount=0.3)
    prune.ln_structured(conv, name="weight", amount=0.5, n=2, dim=0)  # a container now
    out += [sorted(n for n, _ in conv.named_parameters()),
            sorted(n for n, _ in conv.named_buffers()), conv.weight_mask, conv.bias_mask,
            conv.weight, prune.is_pruned(model)]
    hook = [h for h in conv._forward_pre_hooks.values() if h._tensor_name == "weight"][0]
    out.append([type(h).__name__ for h in hook])
    prune.global_unstructured([(conv, "weight"), (fc, "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.4)
    out += [fc.weight_mask, conv.weight_mask]
    prune.custom_from_mask(fc, name="bias", mask=L.tensor([0, 1, 0, 1, 1]))
    x = L.tensor(np_rng.standard_normal((2, 1, 8, 8)).astype(np.float32))
    y = model(x)
    y.sum().backward()
    out += [y, conv.weight_orig.grad, fc.bias_orig.grad]
    with L.no_grad():
        conv.weight_orig.add_(1.0)
    out.append(model(x))  # the pre-hook recomputes weight from weight_orig
    prune.remove(conv, "weight")
    out += [sorted(n for n, _ in conv.named_parameters()), conv.weight, list(model.state_dict())]
    return out


def test_pruning_like_torch():
    import torch.nn.utils.prune as tprune

    from retrograd.nn.utils import prune as rprune

    ours = _pruned_lenet(rg, rnn, rprune)
    ref = _pruned_lenet(torch, torch.nn, tprune)
    for a, b in zip(ours, ref, strict=True):
        if isinstance(b, torch.Tensor):
            close(a, b, 1e-4)
        else:
            assert a == b
    with pytest.raises(ValueError, match="pruned before"):
        rprune.remove(rnn.Linear(2, 2), "weight")


def test_random_pruning_counts_like_torch():
    from retrograd.nn.utils import prune as rprune

    m = rnn.Conv2d(2, 6, 3)
    rprune.random_unstructured(m, "weight", amount=0.3)
    assert int(m.weight_mask.sum().item()) == 108 - round(0.3 * 108)
    rprune.random_structured(m, "weight", amount=2, dim=0)
    kept = (m.weight_mask.sum((1, 2, 3)) > 0).sum().item()
    assert kept == 4
    with pytest.raises(ValueError):
        rprune.l1_unstructured(rnn.Linear(2, 2), "weight", amount=5)


# ---------------------------------------------------------------- introyt: tensors in depth

@pytest.mark.parametrize("name,args", [("zeros", (2, 2)), ("ones", (2, 2)), ("empty", (2, 2)),
                                       ("full", ((2, 2), 3.5)), ("arange", (4,)),
                                       ("linspace", (0.0, 1.0, 4)), ("eye", (3,))])
def test_creation_out(name, args):
    for dt in (np.float32, np.float64):
        ours, ref = rg.zeros(1, dtype=dt), torch.zeros(1, dtype=getattr(torch, str(np.dtype(dt))))
        r = getattr(rg, name)(*args, out=ours)
        t = getattr(torch, name)(*args, out=ref)
        assert r is ours and t is ref
        if name != "empty":
            close(ours, ref)
        assert ours.shape == tuple(ref.shape) and str(ours.dtype) == str(ref.dtype)[6:]


def test_rand_out_keeps_the_object():
    c = rg.zeros(2, 2)
    assert rg.rand(2, 2, out=c) is c and float(c.sum()) > 0
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        rg.zeros(2, out=rg.zeros(2, requires_grad=True))


def test_top_level_in_place_functions():
    from retrograd.api.inplace_functions import NAMES

    extra = {"clamp_": (0.0, 0.5), "clamp_max_": (0.5,), "clamp_min_": (0.4,),
             "clip_": (0.0, 0.5), "fill_": (2.0,), "xlogy_": (0.5,)}
    tensor_args = {"ldexp_": np.array([1.0, 2.0]), "resize_as_": np.zeros((2, 1)),
                   "gcd_": np.array([4, 9]), "lcm_": np.array([4, 9])}
    for n in NAMES:
        v = np.array([0.3, 0.6]) + (1.0 if n in ("acosh_", "arccosh_") else 0.0)
        if n in ("gcd_", "lcm_"):
            v = np.array([6, 12])
        ours, ref = rg.tensor(v), torch.tensor(v)
        ours_args, ref_args = extra.get(n, ()), extra.get(n, ())
        if n in tensor_args:
            ours_args, ref_args = (rg.tensor(tensor_args[n]),), (torch.tensor(tensor_args[n]),)
        r, t = getattr(rg, n)(ours, *ours_args), getattr(torch, n)(ref, *ref_args)
        assert r is ours and t is ref, n
        close(ours, ref, 1e-12)
    leaf = rg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        rg.sin_(leaf)
