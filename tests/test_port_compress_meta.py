"""Ports of model-compression and meta-learning code (pruning, parametrizations, LoRA,
distillation, fake quantisation, MAML/Reptile, model ensembling) compared with PyTorch,
computed here in both libraries from the same weights and inputs."""

import importlib
import warnings

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg


def _both(f):
    """f(torch) and f(rg): the same value, or the same kind of exception."""
    try:
        ref = f(torch)
    except Exception as e:  # noqa: BLE001 - any of torch's exceptions is the reference
        with pytest.raises(type(e)):
            f(rg)
        return None
    out = f(rg)
    return out, ref


# ---- fake quantisation (torch.fake_quantize_per_tensor_affine / _per_channel_affine) ----

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_fake_quantize_per_tensor_values_and_ste_grad(dtype):
    rs = np.random.RandomState(0)
    for scale, zp, qmin, qmax in [(0.1, 0, -128, 127), (0.05, 10, 0, 255), (1 / 3, -3, -8, 7),
                                  (-0.1, 3, -20, 30), (0.3, 50, 22, 76)]:
        x = (rs.randn(40) * 4).astype(dtype)
        x[:6] = [0.05, 0.15, 0.25, -0.05, -0.0, 1e4]
        for lib_scale in ("number", "tensor"):
            def f(T, x=x, scale=scale, zp=zp, qmin=qmin, qmax=qmax, lib_scale=lib_scale):
                xt = T.tensor(x, requires_grad=True)
                s, z = (scale, zp) if lib_scale == "number" else (
                    T.tensor(scale, dtype=T.float32), T.tensor(zp, dtype=T.int32))
                y = T.fake_quantize_per_tensor_affine(xt, s, z, qmin, qmax)
                (y * T.arange(40.0, dtype=xt.dtype)).sum().backward()
                return y, xt.grad
            (y, g), (ty, tg) = _both(f)
            close(y, ty, f"values {scale} {zp}", tol=0)
            np.testing.assert_array_equal(np.signbit(y.detach().numpy()),
                                          np.signbit(ty.detach().numpy()))
            close(g, tg, "ste grad", tol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("zdtype", ["int32", "float32"])
def test_fake_quantize_per_channel_values_and_ste_grad(dtype, zdtype):
    rs = np.random.RandomState(1)
    x = (rs.randn(6, 4, 3) * 3).astype(dtype)
    sc = np.array([0.1, 0.05, 1 / 3, 0.3], np.float32)
    zp = (np.array([0, 1, -3, 2]) + (0.5 if zdtype == "float32" else 0)).astype(zdtype)

    def f(T):
        xt = T.tensor(x, requires_grad=True)
        y = T.fake_quantize_per_channel_affine(xt, T.tensor(sc), T.tensor(zp), 1, -8, 7)
        (y ** 2).sum().backward()
        return y, xt.grad
    (y, g), (ty, tg) = _both(f)
    close(y, ty, "values", tol=0)
    close(g, tg, "grad", tol=0)


def test_fake_quantize_nonfinite_and_huge():
    v = [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.26]
    for dtype in ("float32", "float64"):
        r = _both(lambda T, dtype=dtype: T.fake_quantize_per_tensor_affine(
            T.tensor(v, dtype=getattr(T, dtype)), 0.1, 0, -8, 7))
        close(*r, "per tensor", tol=0)
        r = _both(lambda T, dtype=dtype: T.fake_quantize_per_channel_affine(
            T.tensor([v], dtype=getattr(T, dtype)).T, T.tensor([0.1]),
            T.tensor([0], dtype=T.int32), 1, -8, 7))
        close(*r, "per channel", tol=0)


_X = np.random.RandomState(0).randn(4, 3).astype(np.float32)
_SC = np.array([0.1, 0.2, 0.3], np.float32)
_ZP = np.array([0, 1, 2], np.int32)


def _pc(x=None, sc=None, zp=None, axis=1, qmin=-8, qmax=7):
    def f(T):
        return T.fake_quantize_per_channel_affine(
            T.tensor(_X if x is None else x), T.tensor(_SC if sc is None else sc),
            T.tensor(_ZP if zp is None else zp), axis, qmin, qmax)
    return f


def _pt(scale=0.1, zp=0, qmin=-128, qmax=127, x=None):
    def f(T):
        s = scale(T) if callable(scale) else scale
        z = zp(T) if callable(zp) else zp
        return T.fake_quantize_per_tensor_affine(T.tensor(_X if x is None else x), s, z, qmin,
                                                 qmax)
    return f


@pytest.mark.parametrize("case", [
    _pc(zp=_ZP.astype(np.int64)), _pc(sc=_SC.astype(np.float64)), _pc(x=_X.astype(np.int64)),
    _pc(axis=-1), _pc(axis=0), _pc(axis=2), _pc(qmin=8), _pc(zp=np.array([0, 1, 20], np.int32)),
    _pc(sc=_SC[:2], zp=_ZP[:2]), _pc(zp=_ZP[:2]), _pc(sc=_SC.reshape(3, 1)), _pc(axis=1.0),
    _pc(zp=_ZP.astype(np.float16)), _pc(x=_X.astype(np.float64), zp=_ZP.astype(np.float32)),
    _pt(zp=200), _pt(qmin=5, qmax=3), _pt(lambda T: T.tensor([0.1, 0.2]), lambda T: T.tensor(0)),
    _pt(lambda T: T.tensor(0.1), lambda T: T.tensor(500)), _pt(x=_X.astype(np.int64)),
    _pt(lambda T: T.tensor(0.1, requires_grad=True), lambda T: T.tensor(0)),
    _pt(lambda T: T.tensor(0.1, dtype=T.float64), lambda T: T.tensor(1.7), qmax=2),
    _pt(zp=0.5), _pt(qmin=-128.0), _pt(lambda T: T.tensor(0.1), 1, qmax=2),
    _pt(0.1, lambda T: T.tensor(500), qmax=2), _pt(lambda T: T.tensor(0.1), 0.5),
    _pt(lambda T: T.tensor([0.1]), 1), _pt(0.0), _pt(-0.1, 3), _pt(1),
    _pt(0.1, 0, -2 ** 40, 2 ** 40), _pt(x=_X.astype(np.float16)),
])
def test_fake_quantize_arguments_and_errors(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = _both(case)
    if r is not None:
        close(*r, "value", tol=0)


def _per_row_grads(T, f, *args):
    """vmap(grad(f)) over the rows of args[-2:] (args[:-2] shared); torch's reference is a
    loop of autograd.grad (torch.func.grad's first call costs seconds of imports)."""
    if T is rg:
        in_dims = (None,) * (len(args) - 2) + (0, 0)
        return rg.func.vmap(rg.func.grad(f), in_dims=in_dims)(*args)
    shared, xs, ys = args[:-2], args[-2], args[-1]
    rows = []
    for x, y in zip(xs, ys):
        if shared:
            p = {k: v.detach().requires_grad_(True) for k, v in shared[0].items()}
            rows.append(dict(zip(p, torch.autograd.grad(f(p, x, y), list(p.values())))))
        else:
            x = x.detach().requires_grad_(True)
            rows.append(torch.autograd.grad(f(x, y), x)[0])
    if shared:
        return {k: torch.stack([r[k] for r in rows]) for k in rows[0]}
    return torch.stack(rows)


def test_fake_quantize_vmap_grad():
    def run(T):
        def f(x, y):
            return (T.fake_quantize_per_tensor_affine(x, 0.1, 0, -8, 7) * y).pow(2).sum()
        rs = np.random.RandomState(0)
        return _per_row_grads(T, f, T.tensor(rs.randn(3, 4)), T.tensor(rs.randn(3, 4)))
    close(*_both(run), "vmap(grad)", tol=0)


# ---- torch.nn.utils.prune ----

def _prune_lib(T):
    import importlib
    return importlib.import_module(f"{T.__name__}.nn.utils.prune")


def test_prune_failed_mask_rolls_back_to_the_plain_parameter():
    def run(T):
        prune = _prune_lib(T)
        m = T.nn.Linear(3, 4)
        with pytest.raises(IndexError):
            prune.ln_structured(m, "weight", amount=0.1, n=2, dim=5)
        out = [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()]
        prune.l1_unstructured(m, "weight", amount=0.5)  # usable again
        return out, [n for n, _ in m.named_parameters()], int(m.weight_mask.sum())
    ours, ref = _both(run)
    assert ours == ref


@pytest.mark.parametrize("case", ["custom_mask", "importance", "prune_method"])
def test_prune_shape_mismatches_raise_assertion_error(case):
    def run(T):
        prune = _prune_lib(T)
        m = T.nn.Linear(3, 4)
        if case == "custom_mask":
            prune.custom_from_mask(m, "bias", mask=T.ones(3))
        elif case == "importance":
            prune.l1_unstructured(m, "weight", amount=0.5, importance_scores=T.ones(3, 4))
        else:
            prune.L1Unstructured(amount=0.5).prune(m.weight.detach(),
                                                   importance_scores=T.ones(4))
    with pytest.raises(AssertionError):
        run(torch)
    with pytest.raises(AssertionError):
        run(rg)


# ---- torch.nn.utils.parametrize ----

def _parametrize_lib(T):
    import importlib
    return importlib.import_module(f"{T.__name__}.nn.utils.parametrize")


def test_transfer_parametrizations_and_params():
    w = np.random.RandomState(0).randn(4, 4)
    x = np.random.RandomState(2).randn(3, 4)

    def run(T):
        P = _parametrize_lib(T)

        class Sym(T.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

        class Sum(T.nn.Module):
            def forward(self, X, Y):
                return X + Y

            def right_inverse(self, Z):
                return Z, T.zeros_like(Z)

        a = T.nn.Linear(4, 4).double()
        with T.no_grad():
            a.weight.copy_(T.tensor(w))
            a.bias.zero_()
        P.register_parametrization(a, "weight", Sym())
        P.register_parametrization(a, "bias", Sum())
        b = T.nn.Linear(4, 4).double()
        assert P.transfer_parametrizations_and_params(a, b) is b
        assert b.parametrizations.weight.original is a.parametrizations.weight.original
        assert b.parametrizations.bias.original1 is a.parametrizations.bias.original1

        class Empty(T.nn.Module):
            pass
        e = P.transfer_parametrizations_and_params(a, Empty(), "weight")
        return ([n for n, _ in b.named_parameters()], [n for n, _ in e.named_parameters()],
                b(T.tensor(x)).detach().numpy(), e.weight.detach().numpy())
    ours, ref = _both(run)
    assert ours[:2] == ref[:2]
    close(ours[2], ref[2], "forward")
    close(ours[3], ref[3], "weight")


# ---- meta-learning ----

def test_module_registry_writes_reach_forward():
    """`m._parameters[k] = t` (learn2learn's clone_module / update_module) changes what
    forward uses, and a replaced registry dict is followed, as in torch."""
    w = np.random.RandomState(0).randn(2, 3)

    def run(T):
        m = T.nn.Sequential(T.nn.Linear(3, 2).double())
        with T.no_grad():
            m[0].weight.copy_(T.tensor(w))
            m[0].bias.zero_()
        x = T.tensor(np.ones((1, 3)))
        clone = m.__new__(type(m))
        clone.__dict__ = m.__dict__.copy()
        clone._modules = clone._modules.copy()
        inner = m[0].__new__(type(m[0]))
        inner.__dict__ = m[0].__dict__.copy()
        inner._parameters = inner._parameters.copy()
        inner._parameters["weight"] = m[0].weight * 2
        clone._modules["0"] = inner
        y = clone(x)
        y.sum().backward()
        del inner._parameters["bias"]
        return y, m[0].weight.grad, m(x), hasattr(inner, "bias"), hasattr(m[0], "bias")
    ours, ref = _both(run)
    for a, b, what in zip(ours[:3], ref[:3], ("clone", "grad", "original")):
        close(a, b, what)
    assert ours[3:] == ref[3:]


def _l2l_maml(T):
    """learn2learn's MAML: clone_module, then update_module writing `_parameters`."""
    F = T.nn.functional

    def clone_module(module, memo):
        clone = module.__new__(type(module))
        clone.__dict__ = module.__dict__.copy()
        clone._parameters = clone._parameters.copy()
        clone._buffers = clone._buffers.copy()
        clone._modules = clone._modules.copy()
        for k, p in module._parameters.items():
            if p is not None:
                clone._parameters[k] = memo.setdefault(id(p), p.clone())
        for k in clone._modules:
            clone._modules[k] = clone_module(module._modules[k], memo)
        return clone

    def update_module(module, updates):
        for k, p in module._parameters.items():
            if p is not None and id(p) in updates:
                module._parameters[k] = p + updates[id(p)]
        for k in module._modules:
            update_module(module._modules[k], updates)
        return module

    model = T.nn.Sequential(T.nn.Linear(2, 8), T.nn.Tanh(), T.nn.Linear(8, 1)).double()
    rs = np.random.RandomState(0)
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.tensor(rs.randn(*p.shape)))
    x, y = T.tensor(rs.randn(5, 2)), T.tensor(rs.randn(5, 1))
    opt = T.optim.Adam(model.parameters(), lr=0.01)
    out = []
    for _ in range(2):
        learner = clone_module(model, {})
        for _ in range(2):
            loss = F.mse_loss(learner(x), y)
            params = list(learner.parameters())
            grads = T.autograd.grad(loss, params, create_graph=True)
            learner = update_module(learner, {id(p): -0.1 * g for p, g in zip(params, grads)})
        eloss = F.mse_loss(learner(2 * x), y)
        opt.zero_grad()
        eloss.backward()
        opt.step()
        out.append([eloss] + [p.grad.clone() for p in model.parameters()])
    return out + [list(model.parameters())]


def test_learn2learn_style_maml_second_order():
    ours, ref = _both(_l2l_maml)
    for i, (a, b) in enumerate(zip(ours, ref)):
        for j, (u, v) in enumerate(zip(a, b)):
            close(u, v, f"step {i} item {j}")


def test_tensors_take_user_attributes():
    """learn2learn's update_module tags each (non-leaf, after one step) parameter with
    `p.update = g`; torch tensors take such attributes, and copies keep them."""
    import copy
    import pickle

    def run(T):
        x = T.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.update = -0.1 * y
        z = y + y.update
        leaf = T.tensor([3.0])
        leaf.tag = "kept"
        return (z, getattr(y, "update", None) is not None, copy.deepcopy(leaf).tag,
                pickle.loads(pickle.dumps(leaf)).tag)
    ours, ref = _both(run)
    close(ours[0], ref[0], "value")
    assert ours[1:] == ref[1:]


# ---- whole programs ----

def _init(m, T, seed=0, scale=0.5):
    rs = np.random.RandomState(seed)
    with T.no_grad():
        for p in m.parameters():
            p.copy_(T.tensor(rs.randn(*p.shape) * scale))
    return m


def _pruning_program(T):
    """The pruning tutorial: custom mask, iterative l1/ln pruning (a PruningContainer),
    global pruning, a few SGD steps through the masks, then remove."""
    prune = _prune_lib(T)
    nn, F = T.nn, T.nn.functional
    m = _init(nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(),
                            nn.Linear(3 * 4 * 4, 4)).double(), T)
    x = T.tensor(np.random.RandomState(1).randn(4, 1, 6, 6))
    prune.custom_from_mask(m[0], "weight", T.tensor(np.random.RandomState(2).rand(3, 1, 3, 3)
                                                    > 0.3))
    prune.ln_structured(m[0], "weight", amount=1, n=2, dim=0)
    prune.l1_unstructured(m[0], "bias", amount=1)
    prune.global_unstructured([(m[0], "weight"), (m[3], "weight")],
                              pruning_method=prune.L1Unstructured, amount=0.3)
    hook = next(h for h in m[0]._forward_pre_hooks.values() if h._tensor_name == "weight")
    kinds = [type(h).__name__ for h in hook]
    names = [n for n, _ in m.named_parameters()] + [n for n, _ in m.named_buffers()]
    opt = T.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), T.tensor([0, 1, 2, 3]))
        loss.backward()
        opt.step()
    grads = [p.grad for p in m.parameters()]
    for mod, name in [(m[0], "weight"), (m[0], "bias"), (m[3], "weight")]:
        prune.remove(mod, name)
    return kinds, names, [loss, *grads, m(x), *m.state_dict().values()]


def test_pruning_program():
    ours, ref = _both(_pruning_program)
    assert ours[:2] == ref[:2]
    for i, (a, b) in enumerate(zip(ours[2], ref[2])):
        close(a, b, f"value {i}")


def _maml_ensemble_program(T):
    """Second-order MAML with functional_call, then torch.func per-sample gradients and a
    stack_module_state + vmap ensemble of the adapted models."""
    nn, F, func = T.nn, T.nn.functional, T.func
    model = _init(nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1)).double(), T)
    rs = np.random.RandomState(3)
    tasks = [tuple(T.tensor(rs.uniform(-2, 2, (6, 1))) for _ in range(2)) for _ in range(2)]
    meta_opt = T.optim.Adam(model.parameters(), lr=1e-2)
    meta_opt.zero_grad()
    total = 0.0
    for xs, xq in tasks:
        params = dict(model.named_parameters())
        for _ in range(2):
            loss = F.mse_loss(func.functional_call(model, params, (xs,)), T.sin(xs))
            grads = T.autograd.grad(loss, list(params.values()), create_graph=True)
            params = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads)}
        total = total + F.mse_loss(func.functional_call(model, params, (xq,)), T.sin(xq))
    total.backward()
    meta_grads = [p.grad.clone() for p in model.parameters()]
    meta_opt.step()
    detached = {k: v.detach() for k, v in model.named_parameters()}

    def sample_loss(p, x, y):
        return F.mse_loss(func.functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))
    xs = tasks[0][0]
    per_sample = _per_row_grads(T, sample_loss, detached, xs, T.sin(xs))
    members = [_init(nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1)).double(), T, s)
               for s in (4, 5, 6)]
    params, buffers = func.stack_module_state(members)

    def fmodel(p, b, x):
        return func.functional_call(members[0], (p, b), (x,))
    ens = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, xs)
    return [total, *meta_grads, *model.parameters(), *per_sample.values(), ens]


def test_maml_per_sample_grads_and_ensemble_program():
    ours, ref = _both(_maml_ensemble_program)
    for i, (a, b) in enumerate(zip(ours, ref)):
        close(a, b, f"value {i}")


def _qat_distillation_program(T):
    """Quantisation-aware training of a student (per-channel weights, per-tensor
    activations, fake-quantised with straight-through gradients) distilled from a teacher:
    KL on temperature-softened logits (batchmean, times T^2) plus cross-entropy."""
    nn, F = T.nn, T.nn.functional

    class QLinear(nn.Linear):
        def forward(self, x):
            w = self.weight
            scale = (w.detach().abs().amax(1) / 7).float().clamp_min(1e-8)
            wq = T.fake_quantize_per_channel_affine(
                w, scale, T.zeros(w.shape[0], dtype=T.int32), 0, -8, 7)
            xq = T.fake_quantize_per_tensor_affine(x, 0.05, 0, -128, 127)
            return F.linear(xq, wq, self.bias)
    teacher = _init(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5)).double(), T, 7)
    student = _init(nn.Sequential(QLinear(6, 8), nn.ReLU(), QLinear(8, 5)).double(), T, 8)
    rs = np.random.RandomState(9)
    x, y = T.tensor(rs.randn(10, 6)), T.tensor(rs.randint(0, 5, 10))
    opt = T.optim.AdamW(student.parameters(), lr=1e-2)
    temp = 3.0
    for _ in range(3):
        with T.no_grad():
            t_logits = teacher(x)
        s_logits = student(x)
        soft = F.kl_div(F.log_softmax(s_logits / temp, dim=-1),
                        F.log_softmax(t_logits / temp, dim=-1), reduction="batchmean",
                        log_target=True) * temp * temp
        loss = 0.7 * soft + 0.3 * F.cross_entropy(s_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [loss, s_logits, *(p.grad for p in student.parameters()), *student.parameters()]


def test_qat_distillation_program():
    ours, ref = _both(_qat_distillation_program)
    for i, (a, b) in enumerate(zip(ours, ref)):
        close(a, b, f"value {i}", tol=1e-7)


def test_parametrized_module_refuses_pickle_but_deepcopies():
    import copy
    import pickle

    def run(T):
        P = _parametrize_lib(T)

        class Double(T.nn.Module):
            def forward(self, X):
                return X * 2
        m = T.nn.Sequential(T.nn.Linear(2, 2).double())
        P.register_parametrization(m[0], "weight", Double())
        with pytest.raises(RuntimeError):
            pickle.dumps(m)
        c = copy.deepcopy(m)
        with T.no_grad():
            c[0].parametrizations.weight.original.zero_()
        return (type(c[0]).__name__, float(c[0].weight.detach().abs().sum()),
                bool(m[0].weight.detach().abs().sum()))
    ours, ref = _both(run)
    assert ours == ref


def test_parameter_assigned_over_a_parametrized_tensor_is_refused():
    """fuse_conv_bn_eval of a weight-normed conv assigns `fused.weight = Parameter(...)`:
    torch refuses it (KeyError) instead of building a broken module."""
    def run(T):
        PZ = importlib.import_module(f"{T.__name__}.nn.utils.parametrizations")
        conv = T.nn.Conv2d(3, 4, 3).double()
        PZ.weight_norm(conv)
        conv.eval()
        bn = T.nn.BatchNorm2d(4).double().eval()
        T.nn.utils.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(KeyError):
        run(torch)
    with pytest.raises(KeyError):
        run(rg)
