"""Training-infrastructure and functional-API cases found different from torch by porting
tutorial programs (torch.func ensembling and per-sample gradients, MAML, checkpointing,
autocast/GradScaler no-op loops, pruning, parametrizations, schedulers, samplers):
jacfwd's `randomness=`, `get_autocast_dtype`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


# ------------------------------------------------------------------ jacfwd(randomness=)

@pytest.mark.parametrize("randomness", ["same", "different"])
def test_jacfwd_randomness_allows_random_draws(randomness):
    x = np.random.default_rng(0).standard_normal(3)
    out = []
    for L in (torch, rg):
        def f(a, L=L):
            return a.sin() + L.rand(3, dtype=L.float64) * 0
        out.append(_np(L.func.jacfwd(f, randomness=randomness)(L.tensor(x))))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


def test_jacfwd_randomness_error_refuses_random_draws_and_bad_values():
    for L in (torch, rg):
        x = L.ones(3, dtype=L.float64)
        with pytest.raises(RuntimeError):
            L.func.jacfwd(lambda a, L=L: a * L.rand(3, dtype=L.float64))(x)
        with pytest.raises(RuntimeError, match="randomness"):
            L.func.jacfwd(lambda a: a.sin(), randomness="bad")(x)
        # a plain jvp still draws freely
        L.func.jvp(lambda a, L=L: a * L.rand(3, dtype=L.float64), (x,), (x,))


def test_jacfwd_randomness_over_a_dict_of_params():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((2, 3)), rng.standard_normal(3)
    out = []
    for L in (torch, rg):
        def f(p, L=L):
            return (p["w"] @ L.tensor(x)).tanh() + L.randn(2, dtype=L.float64) * 0
        j = L.func.jacfwd(f, randomness="same")({"w": L.tensor(w)})
        out.append(_np(j["w"]))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


# ------------------------------------------------------------------ get_autocast_dtype

def test_get_autocast_dtype_defaults_blocks_and_errors():
    warnings.simplefilter("ignore")
    res = []
    for L in (torch, rg):
        r = [L.get_autocast_dtype("cpu") is L.bfloat16, L.get_autocast_dtype("cuda") is L.float16]
        with L.autocast("cpu", dtype=L.float16, enabled=False):
            r.append(L.get_autocast_dtype("cpu") is L.float16)
            with L.autocast("cpu", dtype=L.bfloat16, enabled=False):
                r.append(L.get_autocast_dtype("cpu") is L.bfloat16)
            r.append(L.get_autocast_dtype("cpu") is L.float16)
        r.append(L.get_autocast_dtype("cpu") is L.bfloat16)
        for bad in ("xyz", 3):
            try:
                L.get_autocast_dtype(bad)
                r.append("ok")
            except Exception as e:  # noqa: BLE001  (the type is what is compared)
                r.append(type(e).__name__)
        res.append(r)
    assert res[1] == res[0]


# ------------------------------------------------------------------ Function.vmap staticmethod

def _functions(L):
    class MyExp(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def vmap(info, in_dims, x):
            return MyExp.apply(x), in_dims[0]

    class Twice(L.autograd.Function):
        @staticmethod
        def forward(x):
            return 2 * x, 3 * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, a, b):
            return 2 * a + 3 * b

        @staticmethod
        def vmap(info, in_dims, x):
            a, b = Twice.apply(x.movedim(in_dims[0], 0))
            return (a.movedim(0, 1), b), (1, 0)

    class Mul(L.autograd.Function):  # an unbatched argument: in_dims None
        @staticmethod
        def forward(x, w):
            return x * w

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, g * x

        @staticmethod
        def vmap(info, in_dims, x, w):
            assert in_dims == (0, None) and info.batch_size == x.shape[0]
            return Mul.apply(x, w), 0

    return MyExp, Twice, Mul


def test_function_vmap_staticmethod_forward_and_grad_over_vmap():
    x = np.random.default_rng(2).standard_normal((3, 4))
    w = np.random.default_rng(3).standard_normal(4)
    res = []
    for L in (torch, rg):
        MyExp, Twice, Mul = _functions(L)
        xt, vm = L.tensor(x), L.func.vmap
        r = [vm(MyExp.apply)(xt), vm(MyExp.apply, in_dims=1)(xt), vm(vm(MyExp.apply))(xt),
             *vm(Twice.apply)(xt), vm(Mul.apply, in_dims=(0, None))(xt, L.tensor(w)),
             L.func.grad(lambda a, M=MyExp, vm=vm: vm(M.apply)(a).sin().sum())(xt),
             L.func.jacrev(vm(MyExp.apply))(xt[:2, :3])]
        xr, wr = L.tensor(x, requires_grad=True), L.tensor(w, requires_grad=True)
        (vm(Mul.apply, in_dims=(0, None))(xr, wr) ** 2).sum().backward()
        r += [xr.grad, wr.grad]
        res.append([_np(t) for t in r])
    for a, b in zip(*res):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_function_vmap_staticmethod_per_sample_gradients():
    x = np.random.default_rng(5).standard_normal((2, 3, 4))
    w = np.random.default_rng(6).standard_normal(4)
    res = []
    for L in (torch, rg):
        MyExp, Twice, Mul = _functions(L)
        xt, wt, vm, gr = L.tensor(x), L.tensor(w), L.func.vmap, L.func.grad

        def f_exp(a, M=MyExp):
            return M.apply(a).sin().sum()

        def f_mul(w, a, M=Mul):
            return (M.apply(a, w) ** 3).sum()

        def f_twice(a, T=Twice):
            return (T.apply(a)[0] * T.apply(a)[1].cos()).sum()

        r = [vm(gr(f_exp))(xt[0]), vm(vm(gr(f_exp)))(xt), vm(gr(f_twice))(xt[0]),
             vm(gr(f_mul), in_dims=(None, 0))(wt, xt[0]),
             *vm(gr(f_mul, argnums=(0, 1)), in_dims=(None, 0))(wt, xt[0]),
             gr(lambda w, a, vm=vm, gr=gr: vm(gr(f_mul), in_dims=(None, 0))(w, a).sin().sum())(
                 wt, xt[0]),
             gr(lambda a, vm=vm, gr=gr: vm(gr(f_exp))(a).sum())(xt[0])]
        res.append([_np(t) for t in r])
    for a, b in zip(*res):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def test_function_without_vmap_rule_or_with_grad_inside_vmap_refuses():
    x = rg.ones(3, 2, dtype=rg.float64)
    MyExp, _, _ = _functions(rg)

    class NoRule(rg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(RuntimeError, match="vmap"):
        rg.func.vmap(NoRule.apply)(x)
    # second derivatives and batched backwards inside the vmap through the Function:
    # refused, never a wrong number
    with pytest.raises(RuntimeError, match="vmap"):
        rg.func.vmap(rg.func.grad(rg.func.grad(lambda a: MyExp.apply(a).sum())))(x[:, 0])
    with pytest.raises(RuntimeError, match="vmap"):
        rg.func.vmap(rg.func.jacrev(MyExp.apply))(x)
    with pytest.raises(NotImplementedError):
        rg.autograd.Function.vmap(None, (0,), x)
    assert rg.autograd.Function.generate_vmap_rule is torch.autograd.Function.generate_vmap_rule


@pytest.mark.parametrize("gshape, wshape", [((3, 4), (4,)), ((1, 3), (3,)), ((2, 3), (1, 3)),
                                            ((3,), ())])
def test_function_backward_gradient_the_input_expands_to_is_summed(gshape, wshape):
    g = np.random.default_rng(4).standard_normal(gshape)
    res = []
    for L in (torch, rg):
        class Op(L.autograd.Function):
            @staticmethod
            def forward(ctx, w):
                return w * 2

            @staticmethod
            def backward(ctx, grad, L=L):
                return L.tensor(g)

        w = L.ones(wshape, dtype=L.float64, requires_grad=True)
        Op.apply(w).sum().backward()
        res.append(_np(w.grad))
    assert res[1].shape == res[0].shape
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12)


def test_function_backward_gradient_of_an_unrelated_shape_raises():
    for L in (torch, rg):
        class Op(L.autograd.Function):
            @staticmethod
            def forward(ctx, w):
                return w * 2

            @staticmethod
            def backward(ctx, grad, L=L):
                return L.ones(3, 2, dtype=L.float64)

        with pytest.raises(RuntimeError):
            Op.apply(L.ones(3, dtype=L.float64, requires_grad=True)).sum().backward()


# ---------------------------------------------------- Subset/StackDataset.__getitems__

def test_subset_and_stack_dataset_fetch_batch_wise_as_torch():
    res = []
    for L in (torch, rg):
        D = L.utils.data

        class Batched(D.Dataset):
            def __len__(self):
                return 6

            def __getitem__(self, i):
                return ("single", i)

            def __getitems__(self, idx):
                return [("batch", i) for i in idx]

        def load(ds, bs, D=D):
            return list(D.DataLoader(ds, batch_size=bs, collate_fn=lambda b: b))

        res.append([load(D.Subset(Batched(), [5, 1, 3]), 2),
                    load(D.StackDataset(Batched(), list(range(6))), 4),
                    load(D.StackDataset(a=Batched(), b=list(range(6))), 4),
                    D.Subset(list(range(10)), [3, 4]).__getitems__([1, 0])])
    assert res[1] == res[0]


# ------------------------------------------------------------------ vmap's non-tensor output

@pytest.mark.parametrize("f", [lambda a: (a, "x"), lambda a: None, lambda a: [a, 2.0],
                               lambda a: {"k": 1}])
def test_vmap_non_tensor_output_raises_value_error_as_torch(f):
    for L in (torch, rg):
        with pytest.raises(ValueError):
            L.func.vmap(f)(L.ones(3))
        with pytest.raises(ValueError):
            L.func.vmap(f, randomness="different")(L.ones(3))


# ------------------------------------------------------------------ grad_fn.register_hook/prehook

def test_node_hooks_get_grad_inputs_and_outputs_as_torch():
    x0, y0 = np.random.default_rng(7).standard_normal((2, 3))
    res = []
    for L in (torch, rg):
        x, y = L.tensor(x0, requires_grad=True), L.tensor(y0, requires_grad=True)
        log = []

        def post(gi, go, log=log):
            log.append(("mul", [g is not None for g in gi], tuple(go[0].shape)))
            return gi[0] * 10, gi[1]

        def pre(go, log=log):
            log.append(("pre", go[0].item()))
            return (go[0] * 3,)

        m = x * y
        c = (m.exp() * 2).sum()
        h1, h2 = m.grad_fn.register_hook(post), c.grad_fn.register_prehook(pre)
        c.backward(retain_graph=True)
        out = [x.grad.clone(), y.grad.clone()]
        h1.remove()
        h2.remove()
        x.grad = y.grad = None
        c.backward()
        out += [x.grad.clone(), y.grad.clone()]
        z = (x.sin() * y).sum()
        z.grad_fn.register_hook(lambda gi, go, log=log: log.append(("sum", len(gi))))
        g, = L.autograd.grad(z, x, create_graph=True)
        out += [g, L.autograd.grad(g.sum(), x)[0]]
        q = x * L.tensor(y0)  # one input without a gradient: None in grad_inputs
        q.grad_fn.register_hook(lambda gi, go, log=log: log.append(("q", [a is None for a in gi])))
        q.sum().backward()
        res.append((log, [_np(t) for t in out]))
    assert res[1][0] == res[0][0]
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-12)


# ------------------------------------------------------------------ deepcopy of a non-leaf

def test_deepcopy_of_a_non_leaf_is_refused_as_torch():
    import copy
    import importlib

    for L in (torch, rg):
        x = L.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaves"):
            copy.deepcopy(x * 2)
        copy.deepcopy(x)
        copy.deepcopy((x * 2).detach())
        prune = importlib.import_module(f"{L.__name__}.nn.utils.prune")
        m = L.nn.Linear(3, 2)
        prune.l1_unstructured(m, "weight", 0.3)  # m.weight: weight_orig * mask, recorded
        with pytest.raises(RuntimeError, match="leaves"):
            copy.deepcopy(m)
        with L.no_grad():
            m = L.nn.Linear(3, 2)
            prune.l1_unstructured(m, "weight", 0.3)
        copy.deepcopy(m)


# ------------------------------------------------------------------ whole programs

def _init(model, L, seed: int):
    """The same weights in both libraries: float64 normals by shape, in state_dict order."""
    r = np.random.default_rng(seed)
    sd = model.state_dict()
    model.load_state_dict({k: v if "num_batches" in k else
                           L.tensor(r.standard_normal(tuple(v.shape)) * 0.5)
                           for k, v in sd.items()})
    return model


def _data(L, seed: int, *shape):
    return L.tensor(np.random.default_rng(seed).standard_normal(shape))


def _compare(prog, rtol=1e-9):
    ref, got = prog(torch), prog(rg)

    def walk(a, b, where):
        if isinstance(a, dict):
            assert sorted(a) == sorted(b), where
            for k in a:
                walk(a[k], b[k], f"{where}[{k!r}]")
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b), where
            for k, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{where}[{k}]")
        elif isinstance(a, torch.Tensor):
            x, y = _np(a), _np(b)
            assert x.shape == y.shape and str(x.dtype) == str(y.dtype), where
            np.testing.assert_allclose(y, x, rtol=rtol, atol=1e-12, err_msg=where)
        elif isinstance(a, float):
            assert b == pytest.approx(a, rel=rtol, abs=1e-12), where
        else:
            assert a == b, where

    walk(ref, got, "out")


def _ensemble_and_per_sample(L):
    """The torch.func tutorials: model ensembling and per-sample gradients."""
    import copy

    nn, F, func = L.nn, L.nn.functional, L.func

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(8, 6), nn.Linear(6, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    models = [_init(MLP().double(), L, i) for i in range(3)]
    data = _data(L, 10, 5, 2, 4)
    params, buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(p, b, x):
        return func.functional_call(base, (p, b), (x,))

    same = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data)
    each = func.vmap(fmodel)(params, buffers, data.unsqueeze(0).expand(3, -1, -1, -1))
    model = models[1]
    ps = {k: v.detach() for k, v in model.named_parameters()}
    targets = L.tensor([0, 1, 2, 0, 1])

    def loss(p, x, t):
        return F.cross_entropy(func.functional_call(model, p, (x.unsqueeze(0),)), t.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(ps, data, targets)
    jac = func.jacfwd(lambda x: model(x), randomness="same")(data[:1])
    return [same, each, per_sample, jac, [m(data) for m in models]]


def _maml(L):
    """MAML: inner steps by autograd.grad(create_graph=True), an Adam meta step."""
    nn, F, func = L.nn, L.nn.functional, L.func
    model = _init(nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1)).double(), L, 5)
    meta = L.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for it in range(2):
        meta.zero_grad()
        for task in range(2):
            xs, xq = _data(L, 10 + 2 * it + task, 5, 1), _data(L, 20 + 2 * it + task, 5, 1)
            ys, yq = L.sin(xs * (task + 1)), L.sin(xq * (task + 1))
            p = dict(model.named_parameters())
            for _ in range(2):
                g = L.autograd.grad(F.mse_loss(func.functional_call(model, p, (xs,)), ys),
                                    list(p.values()), create_graph=True)
                p = {n: w - 0.1 * gw for (n, w), gw in zip(p.items(), g)}
            q = F.mse_loss(func.functional_call(model, p, (xq,)), yq)
            q.backward()
            losses.append(q.detach())
        meta.step()
    return [losses, [w.detach() for w in model.parameters()]]


def _training_infra(L):
    """Pruning, a weight-norm parametrization, activation checkpointing, gradient
    accumulation with clipping, OneCycleLR, SWA and an optimizer state reloaded
    mid-run."""
    import copy
    import importlib

    nn, F = L.nn, L.nn.functional
    prune, pz, cp, swa = (importlib.import_module(f"{L.__name__}.{m}") for m in (
        "nn.utils.prune", "nn.utils.parametrizations", "utils.checkpoint", "optim.swa_utils"))
    model = _init(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)).double(), L, 3)
    with L.no_grad():  # else the pruned weight is a non-leaf, which deepcopy refuses
        prune.l1_unstructured(model[0], "weight", amount=0.3)
    pz.weight_norm(model[2])
    opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = L.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=6)
    avg = swa.AveragedModel(model)
    out = []
    for step in range(8):
        x, y = _data(L, step, 3, 4), _data(L, 50 + step, 3, 2)
        h = cp.checkpoint(model[0], x, use_reentrant=False)
        loss = F.mse_loss(model[2](F.relu(h)), y) / 2
        loss.backward()
        if step % 2:
            gn = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()
            sched.step()
            avg.update_parameters(model)
            out.append([loss.detach(), gn, sched.get_last_lr()[0]])
        if step == 3:
            state = copy.deepcopy(opt.state_dict())
            opt = L.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            opt.load_state_dict(state)
            sched.optimizer = opt
    return [out, model.state_dict(), avg(_data(L, 99, 2, 4))]


@pytest.mark.parametrize("prog", [_ensemble_and_per_sample, _maml, _training_infra])
def test_whole_program_matches_torch(prog):
    _compare(prog)
