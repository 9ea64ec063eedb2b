"""rg.nn.init (trunc_normal_, orthogonal_, eye_, dirac_, sparse_, deprecated spellings),
rg.nn.utils (vector conversion, BatchNorm fusion, skip_init, parametrize,
parametrizations, old weight/spectral norm hooks, stateless) and rg.func
(functional_call, stack_module_state, grad_and_value, linearize), against PyTorch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.nn import init
from retrograd.nn.utils import parametrizations, parametrize


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.detach().data) if isinstance(t, rg.Tensor) else np.asarray(t)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _load(rm, tm):
    """Give the retrograd module the torch module's state (same keys required)."""
    rm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})


def _pair_linear(i=3, o=4):
    torch.manual_seed(0)
    tm = torch.nn.Linear(i, o).double()
    rm = rg.nn.Linear(i, o, dtype=np.float64)
    _load(rm, tm)
    return rm, tm


# ---------------------------------------------------------------- nn.init

@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_matches_torch(shape):
    w = init.eye_(rg.empty(*shape))
    _close(w, torch.nn.init.eye_(torch.empty(*shape)))


@pytest.mark.parametrize("shape,groups", [((6, 2, 3), 2), ((4, 4, 3, 3), 1), ((4, 3, 2, 3, 3), 2),
                                          ((3, 5, 4), 1), ((4, 1, 5, 5), 4)])
def test_dirac_matches_torch(shape, groups):
    w = init.dirac_(rg.randn(*shape), groups)
    _close(w, torch.nn.init.dirac_(torch.randn(*shape), groups))


@pytest.mark.parametrize("call", [
    lambda m: m.nn.init.eye_(m.zeros(2, 2, 2)),
    lambda m: m.nn.init.dirac_(m.zeros(2, 2)),
    lambda m: m.nn.init.dirac_(m.zeros(3, 2, 3), groups=2),
    lambda m: m.nn.init.orthogonal_(m.zeros(3)),
    lambda m: m.nn.init.sparse_(m.zeros(3, 2, 2), 0.5),
    lambda m: m.nn.init.calculate_gain("softmax"),
    lambda m: m.nn.init.calculate_gain("leaky_relu", True),
])
def test_init_errors_as_torch(call):
    with pytest.raises(ValueError):
        call(torch)
    with pytest.raises(ValueError):
        call(rg)


def test_calculate_gain_all_nonlinearities():
    names = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]
    for n in names:
        assert init.calculate_gain(n) == pytest.approx(torch.nn.init.calculate_gain(n))
    for p in (0.2, 1, 3.0):
        assert init.calculate_gain("leaky_relu", p) == pytest.approx(
            torch.nn.init.calculate_gain("leaky_relu", p))


def test_trunc_normal_bounds_and_moments():
    from scipy.stats import truncnorm

    mean, std, a, b = 1.0, 2.0, -1.0, 2.5
    rg.manual_seed(0)
    w = init.trunc_normal_(rg.empty(40000, dtype=np.float64), mean, std, a, b)
    x = _np(w)
    assert x.min() >= a and x.max() <= b
    dist = truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std)
    assert abs(x.mean() - dist.mean()) < 0.02
    assert abs(x.std() - dist.std()) < 0.02
    # the default [-2, 2] window of a standard normal
    y = _np(init.trunc_normal_(rg.empty(200, 200)))
    assert y.min() >= -2 and y.max() <= 2 and abs(y.std() - truncnorm(-2, 2).std()) < 0.02


def test_trunc_normal_generator_and_warning():
    w1 = init.trunc_normal_(rg.empty(5), generator=np.random.default_rng(3))
    w2 = init.trunc_normal_(rg.empty(5), generator=np.random.default_rng(3))
    _close(w1, w2, 0)
    with pytest.warns(UserWarning, match="more than 2 std"):
        torch.nn.init.trunc_normal_(torch.empty(3), mean=10.0)
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(rg.empty(3), mean=10.0)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (5, 5), (4, 2, 3, 3), (20, 2, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape, gain):
    rg.manual_seed(1)
    w = _np(init.orthogonal_(rg.empty(*shape, dtype=np.float64), gain))
    flat = w.reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(gram.shape[0]), atol=1e-10)


def test_sparse_zeros_per_column():
    rg.manual_seed(2)
    w = _np(init.sparse_(rg.empty(200, 7, dtype=np.float64), 0.3, std=0.5))
    assert ((w == 0).sum(0) == math.ceil(0.3 * 200)).all()
    assert abs(w[w != 0].std() - 0.5) < 0.06


def test_init_is_no_grad_and_bumps_version():
    for mod in (torch, rg):
        p = mod.nn.Parameter(mod.ones(3, 3))
        y = (p * p).sum()
        out = mod.nn.init.orthogonal_(p)
        assert out is p and p.requires_grad and p.grad_fn is None
        with pytest.raises(RuntimeError):
            y.backward()


@pytest.mark.parametrize("old,args", [("uniform", (-1.0, 1.0)), ("normal", (0.0, 1.0)),
                                      ("constant", (0.3,)), ("xavier_uniform", ()),
                                      ("xavier_normal", ()), ("kaiming_uniform", ()),
                                      ("kaiming_normal", ()), ("orthogonal", ()),
                                      ("sparse", (0.5,)), ("eye", ())])
def test_deprecated_spellings_warn_and_work(old, args):
    with pytest.warns(FutureWarning, match=f"nn.init.{old}_"):
        getattr(torch.nn.init, old)(torch.empty(4, 6), *args)
    rg.manual_seed(5)
    with pytest.warns(FutureWarning, match=f"nn.init.{old}_"):
        a = getattr(init, old)(rg.empty(4, 6), *args)
    rg.manual_seed(5)
    b = getattr(init, old + "_")(rg.empty(4, 6), *args)
    _close(a, b, 0)
    if old == "constant":
        _close(a, torch.full((4, 6), 0.3, dtype=torch.float32), 1e-7)


# ---------------------------------------------------------------- nn.utils: simple ones

def test_parameters_to_vector_and_back():
    rm, tm = _pair_linear()
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    rv = rg.nn.utils.parameters_to_vector(rm.parameters())
    _close(rv, tv)
    rv.sum().backward()
    assert rm.weight.grad is not None
    new = np.arange(tv.numel(), dtype=np.float64)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tm.parameters())
    rg.nn.utils.vector_to_parameters(rg.tensor(new), rm.parameters())
    _close(rm.weight, tm.weight)
    _close(rm.bias, tm.bias)
    with pytest.raises(TypeError):
        torch.nn.utils.vector_to_parameters(new, tm.parameters())
    with pytest.raises(TypeError):
        rg.nn.utils.vector_to_parameters(new, rm.parameters())


def test_clip_grad_norm_deprecated_alias():
    rm, tm = _pair_linear()
    for m, mod in ((rm, rg), (tm, torch)):
        m(mod.ones(2, 3, dtype=mod.float64)).pow(2).sum().backward()
    with pytest.warns(FutureWarning):
        tn = torch.nn.utils.clip_grad_norm(tm.parameters(), 0.5)
    with pytest.warns(FutureWarning):
        rn = rg.nn.utils.clip_grad_norm(rm.parameters(), 0.5)
    _close(rn, tn)
    _close(rm.weight.grad, tm.weight.grad)


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    torch.manual_seed(0)
    tconv = (torch.nn.ConvTranspose2d if transpose else torch.nn.Conv2d)(2, 3, 3).double()
    rconv = (rg.nn.ConvTranspose2d if transpose else rg.nn.Conv2d)(2, 3, 3, dtype=np.float64)
    _load(rconv, tconv)
    tbn = torch.nn.BatchNorm2d(3).double()
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1)
        tbn.running_var.uniform_(0.5, 2)
        tbn.weight.uniform_(0.5, 2)
        tbn.bias.uniform_(-1, 1)
    rbn = rg.nn.BatchNorm2d(3, dtype=np.float64)
    _load(rbn, tbn)
    for m in (tconv, rconv, tbn, rbn):
        m.eval()
    tf = torch.nn.utils.fuse_conv_bn_eval(tconv, tbn, transpose)
    rf = rg.nn.utils.fuse_conv_bn_eval(rconv, rbn, transpose)
    _close(rf.weight, tf.weight)
    _close(rf.bias, tf.bias)
    x = np.random.default_rng(0).normal(size=(2, 2, 5, 5))
    _close(rf(rg.tensor(x)), tbn(tconv(torch.tensor(x))))
    assert isinstance(rf.weight, rg.nn.Parameter) and rf.weight.requires_grad
    rconv.train()
    with pytest.raises(AssertionError):
        rg.nn.utils.fuse_conv_bn_eval(rconv, rbn)


def test_fuse_linear_bn_eval_and_weights():
    rm, tm = _pair_linear(3, 4)
    tbn = torch.nn.BatchNorm1d(4).double()
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1)
        tbn.running_var.uniform_(0.5, 2)
        tbn.weight.uniform_(0.5, 2)
    rbn = rg.nn.BatchNorm1d(4, dtype=np.float64)
    _load(rbn, tbn)
    for m in (tm, rm, tbn, rbn):
        m.eval()
    tf = torch.nn.utils.fuse_linear_bn_eval(tm, tbn)
    rf = rg.nn.utils.fuse_linear_bn_eval(rm, rbn)
    x = np.random.default_rng(1).normal(size=(5, 3))
    _close(rf(rg.tensor(x)), tbn(tm(torch.tensor(x))))
    _close(rf(rg.tensor(x)), tf(torch.tensor(x)))
    w, b = rg.nn.utils.fuse_linear_bn_weights(rm.weight, None, rbn.running_mean, rbn.running_var,
                                              1e-5, rbn.weight, rbn.bias)
    tw, tb = torch.nn.utils.fuse_linear_bn_weights(tm.weight, None, tbn.running_mean,
                                                   tbn.running_var, 1e-5, tbn.weight, tbn.bias)
    _close(w, tw)
    _close(b, tb)
    with pytest.raises(AssertionError):
        rg.nn.utils.fuse_linear_bn_eval(rm, rg.nn.BatchNorm1d(3).eval())


def test_skip_init_uses_no_random_numbers():
    rg.manual_seed(0)
    m = rg.nn.utils.skip_init(rg.nn.Linear, 3, 4)
    after = _np(rg.rand(3))
    rg.manual_seed(0)
    _close(after, rg.rand(3), 0)
    assert type(m) is rg.nn.Linear and m.weight.shape == (4, 3)
    with pytest.raises(TypeError):
        torch.nn.utils.skip_init(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError):
        rg.nn.utils.skip_init(rg.nn.Linear(2, 2))
    with pytest.raises(RuntimeError):
        torch.nn.utils.skip_init(int)
    with pytest.raises(RuntimeError):
        rg.nn.utils.skip_init(int)


# ---------------------------------------------------------------- parametrize

def _symmetric(mod):
    class Symmetric(mod.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def _scale(mod):
    class Scale(mod.nn.Module):
        def forward(self, x):
            return 2 * x

    return Scale()


def test_register_parametrization_values_grads_and_keys():
    rm, tm = _pair_linear(4, 4)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", _symmetric(torch))
    parametrize.register_parametrization(rm, "weight", _symmetric(rg))
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in rm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert type(rm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert parametrize.is_parametrized(rm) and parametrize.is_parametrized(rm, "weight")
    assert not parametrize.is_parametrized(rm, "bias")
    _close(rm.parametrizations.weight.original, tm.parametrizations.weight.original)
    _close(rm.weight, tm.weight)
    x = np.random.default_rng(0).normal(size=(3, 4))
    tm(torch.tensor(x)).pow(2).sum().backward()
    rm(rg.tensor(x)).pow(2).sum().backward()
    _close(rm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)
    # a second parametrization chains after the first
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", _scale(torch))
    parametrize.register_parametrization(rm, "weight", _scale(rg))
    _close(rm.weight, tm.weight)
    assert list(rm.state_dict()) == list(tm.state_dict())


def test_parametrization_assignment_cache_and_remove():
    rm, tm = _pair_linear(4, 4)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", _symmetric(torch))
    parametrize.register_parametrization(rm, "weight", _symmetric(rg))
    a = np.random.default_rng(2).normal(size=(4, 4))
    with torch.no_grad():
        tm.weight = torch.tensor(a)
    rm.weight = rg.tensor(a)
    _close(rm.parametrizations.weight.original, tm.parametrizations.weight.original)
    with parametrize.cached():
        assert rm.weight is rm.weight
    assert rm.weight is not rm.weight
    orig = rm.parametrizations.weight.original
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    parametrize.remove_parametrizations(rm, "weight")
    assert type(rm) is rg.nn.Linear and not parametrize.is_parametrized(rm)
    assert rm.weight is orig and isinstance(rm.weight, rg.nn.Parameter)
    _close(rm.weight, tm.weight)
    assert list(rm.state_dict()) == list(tm.state_dict())
    # leave_parametrized=False keeps the original values
    for mod, P in ((torch, torch.nn.utils.parametrize), (rg, parametrize)):
        m = mod.nn.Linear(3, 3)
        before = _np(m.weight).copy()
        P.register_parametrization(m, "weight", _scale(mod))
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
        _close(m.weight, before, 0)
    with pytest.raises(ValueError):
        torch.nn.utils.parametrize.register_parametrization(tm, "nope", _scale(torch))
    with pytest.raises(ValueError):
        parametrize.register_parametrization(rm, "nope", _scale(rg))
    with pytest.raises(ValueError):
        parametrize.remove_parametrizations(rm, "weight")


def test_parametrizations_weight_norm_vs_torch():
    rm, tm = _pair_linear(3, 4)
    torch.nn.utils.parametrizations.weight_norm(tm)
    parametrizations.weight_norm(rm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    _close(rm.parametrizations.weight.original0, tm.parametrizations.weight.original0)
    _close(rm.weight, tm.weight)
    x = np.random.default_rng(0).normal(size=(2, 3))
    tm(torch.tensor(x)).pow(3).sum().backward()
    rm(rg.tensor(x)).pow(3).sum().backward()
    for k in ("original0", "original1"):
        _close(getattr(rm.parametrizations.weight, k).grad,
               getattr(tm.parametrizations.weight, k).grad)
    # dim=1 and dim=None
    for dim in (1, None):
        r2, t2 = _pair_linear(3, 4)
        torch.nn.utils.parametrizations.weight_norm(t2, dim=dim)
        parametrizations.weight_norm(r2, dim=dim)
        _close(r2.parametrizations.weight.original0, t2.parametrizations.weight.original0)
        _close(r2.weight, t2.weight)


def test_parametrizations_spectral_norm_vs_torch():
    torch.manual_seed(0)
    tm = torch.nn.Conv2d(2, 3, 2).double()
    torch.nn.utils.parametrizations.spectral_norm(tm)
    rm = rg.nn.Conv2d(2, 3, 2, dtype=np.float64)
    parametrizations.spectral_norm(rm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    _load(rm, tm)
    x = np.random.default_rng(0).normal(size=(1, 2, 4, 4))
    for train in (True, False):
        tm.train(train)
        rm.train(train)
        to = tm(torch.tensor(x))
        ro = rm(rg.tensor(x))
        _close(ro, to, 1e-9)
        _close(rm.parametrizations.weight[0]._u, tm.parametrizations.weight[0]._u, 1e-9)
        _close(rm.parametrizations.weight[0]._v, tm.parametrizations.weight[0]._v, 1e-9)
    to.sum().backward()
    ro.sum().backward()
    _close(rm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
           1e-9)
    s = np.linalg.svd(_np(rm.weight).reshape(3, -1), compute_uv=False)
    assert abs(s[0] - 1) < 1e-6
    with pytest.raises(IndexError):
        torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 2), dim=2)
    with pytest.raises(IndexError):
        parametrizations.spectral_norm(rg.nn.Linear(2, 2), dim=2)


@pytest.mark.parametrize("shape,orth_map,triv", [
    ((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True), ((4, 4), "cayley", True),
    ((5, 3), "matrix_exp", True), ((3, 5), "householder", True), ((5, 3), "householder", False),
    ((3, 5), "householder", False)])
def test_parametrizations_orthogonal_vs_torch(shape, orth_map, triv):
    rm, tm = _pair_linear(shape[1], shape[0])
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orth_map,
                                               use_trivialization=triv)
    parametrizations.orthogonal(rm, orthogonal_map=orth_map, use_trivialization=triv)
    assert list(rm.state_dict()) == list(tm.state_dict())
    if not triv:  # the original is computed from the weight, deterministically
        _close(rm.parametrizations.weight.original, tm.parametrizations.weight.original, 1e-9)
    _load(rm, tm)
    _close(rm.weight, tm.weight, 1e-9)
    w = _np(rm.weight)
    q = w if w.shape[0] >= w.shape[1] else w.T
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-10)
    x = np.random.default_rng(0).normal(size=(2, shape[1]))
    tm(torch.tensor(x)).pow(2).sum().backward()
    rm(rg.tensor(x)).pow(2).sum().backward()
    _close(rm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
           1e-8)


def test_parametrizations_orthogonal_errors():
    for mod, P in ((torch, torch.nn.utils.parametrizations), (rg, parametrizations)):
        with pytest.raises(ValueError):
            P.orthogonal(mod.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError):
            P.orthogonal(mod.nn.Linear(3, 3), name="bias")


def test_old_weight_norm_hooks_vs_torch():
    rm, tm = _pair_linear(3, 4)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm)
    with pytest.warns(FutureWarning):
        rg.nn.utils.weight_norm(rm)
    assert list(rm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    _close(rm.weight_g, tm.weight_g)
    x = np.random.default_rng(0).normal(size=(2, 3))
    with torch.no_grad():
        tm.weight_g.mul_(3)
    _load(rm, tm)
    to, ro = tm(torch.tensor(x)), rm(rg.tensor(x))
    _close(ro, to)
    to.pow(2).sum().backward()
    ro.pow(2).sum().backward()
    _close(rm.weight_g.grad, tm.weight_g.grad)
    _close(rm.weight_v.grad, tm.weight_v.grad)
    with pytest.raises(RuntimeError), pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm)
    with pytest.raises(RuntimeError), pytest.warns(FutureWarning):
        rg.nn.utils.weight_norm(rm)
    torch.nn.utils.remove_weight_norm(tm)
    rg.nn.utils.remove_weight_norm(rm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert type(rm) is rg.nn.Linear
    _close(rm.weight, tm.weight)
    with pytest.raises(ValueError):
        rg.nn.utils.remove_weight_norm(rm)


def test_old_spectral_norm_hooks_vs_torch():
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose1d(2, 3, 2).double()
    rm = rg.nn.ConvTranspose1d(2, 3, 2, dtype=np.float64)
    torch.nn.utils.spectral_norm(tm)
    rg.nn.utils.spectral_norm(rm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert rm.weight_u.shape == tuple(tm.weight_u.shape)  # dim=1 for a transposed conv
    _load(rm, tm)
    x = np.random.default_rng(0).normal(size=(1, 2, 5))
    for train in (True, True, False):
        tm.train(train)
        rm.train(train)
        to, ro = tm(torch.tensor(x)), rm(rg.tensor(x))
        _close(ro, to, 1e-9)
        _close(rm.weight_u, tm.weight_u, 1e-9)
        _close(rm.weight_v, tm.weight_v, 1e-9)
    to.sum().backward()
    ro.sum().backward()
    _close(rm.weight_orig.grad, tm.weight_orig.grad, 1e-9)
    torch.nn.utils.remove_spectral_norm(tm)
    rg.nn.utils.remove_spectral_norm(rm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    _close(rm.weight, tm.weight, 1e-9)
    with pytest.raises(ValueError):
        rg.nn.utils.remove_spectral_norm(rm)


# ---------------------------------------------------------------- functional_call and rg.func

class _TNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4, dtype=torch.float64)
        self.fc2 = torch.nn.Linear(4, 2, dtype=torch.float64)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class _RNet(rg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = rg.nn.Linear(3, 4, dtype=np.float64)
        self.fc2 = rg.nn.Linear(4, 2, dtype=np.float64)

    def forward(self, x):
        return self.fc2(rg.tanh(self.fc1(x)))


def _nets():
    torch.manual_seed(0)
    tm, rm = _TNet(), _RNet()
    _load(rm, tm)
    return rm, tm


def test_functional_call_values_and_module_unchanged():
    rm, tm = _nets()
    rng = np.random.default_rng(0)
    new = {k: rng.normal(size=tuple(v.shape)) for k, v in tm.state_dict().items()}
    x = rng.normal(size=(5, 3))
    to = torch.func.functional_call(tm, {k: torch.tensor(v) for k, v in new.items()},
                                    (torch.tensor(x),))
    before = _np(rm.fc1.weight).copy()
    ro = rg.func.functional_call(rm, {k: rg.tensor(v) for k, v in new.items()}, rg.tensor(x))
    _close(ro, to)
    _close(rm.fc1.weight, before, 0)
    assert isinstance(rm.fc1.weight, rg.nn.Parameter)
    # a tuple of dicts; only some names given
    part = ({"fc1.weight": rg.tensor(new["fc1.weight"])}, {"fc2.bias": rg.tensor(new["fc2.bias"])})
    tpart = tuple({k: torch.tensor(_np(v)) for k, v in d.items()} for d in part)
    _close(rg.func.functional_call(rm, part, (rg.tensor(x),)),
           torch.func.functional_call(tm, tpart, (torch.tensor(x),)))
    with pytest.raises(ValueError):
        torch.func.functional_call(tm, (tpart[0], tpart[0]), (torch.tensor(x),))
    with pytest.raises(ValueError):
        rg.func.functional_call(rm, (part[0], part[0]), (rg.tensor(x),))
    with pytest.raises(RuntimeError):
        torch.func.functional_call(tm, tpart[0], (torch.tensor(x),), strict=True)
    with pytest.raises(RuntimeError):
        rg.func.functional_call(rm, part[0], (rg.tensor(x),), strict=True)
    with pytest.warns(FutureWarning):
        rg.nn.utils.stateless.functional_call(rm, part[0], (rg.tensor(x),))


def test_functional_call_tied_weights():
    for mod in (torch, rg):
        m = mod.nn.Sequential(mod.nn.Linear(2, 2, bias=False), mod.nn.Linear(2, 2, bias=False))
        m[1].weight = m[0].weight
        w = mod.ones(2, 2, dtype=m[0].weight.dtype)
        x = mod.ones(1, 2, dtype=m[0].weight.dtype)
        tied = mod.func.functional_call(m, {"0.weight": w}, (x,))
        untied = mod.func.functional_call(m, {"0.weight": w}, (x,), tie_weights=False)
        assert _np(tied).tolist() == [[4.0, 4.0]]
        assert not np.allclose(_np(untied), _np(tied))
        with pytest.raises(ValueError):
            mod.func.functional_call(m, {"0.weight": w, "1.weight": w * 2}, (x,))


def test_per_sample_gradients_like_torch_func():
    rm, tm = _nets()
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(6, 3)), rng.normal(size=(6, 2))

    def make_loss(mod, model):
        def loss(params, buffers, sample, target):
            out = mod.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return ((out - target.unsqueeze(0)) ** 2).mean()
        return loss

    tp = {k: v.detach() for k, v in tm.named_parameters()}
    rp = {k: v.detach() for k, v in rm.named_parameters()}
    tg = torch.func.vmap(torch.func.grad(make_loss(torch, tm)), in_dims=(None, None, 0, 0))(
        tp, {}, torch.tensor(x), torch.tensor(y))
    rgr = rg.func.vmap(rg.func.grad(make_loss(rg, rm)), in_dims=(None, None, 0, 0))(
        rp, {}, rg.tensor(x), rg.tensor(y))
    assert set(rgr) == set(tg)
    for k in tg:
        _close(rgr[k], tg[k])


def test_stack_module_state_ensemble():
    torch.manual_seed(0)
    tms = [_TNet() for _ in range(3)]
    rms = [_RNet() for _ in range(3)]
    for r, t in zip(rms, tms):
        _load(r, t)
    tp, tb = torch.func.stack_module_state(tms)
    rp, rb = rg.func.stack_module_state(rms)
    assert list(rp) == list(tp) and rb == tb == {}
    for k in tp:
        _close(rp[k], tp[k])
        assert rp[k].requires_grad and rp[k].grad_fn is None
    x = np.random.default_rng(2).normal(size=(4, 3))
    base_t, base_r = _TNet(), _RNet()

    def tf(p, b, xx):
        return torch.func.functional_call(base_t, (p, b), (xx,))

    def rf(p, b, xx):
        return rg.func.functional_call(base_r, (p, b), (xx,))

    to = torch.func.vmap(tf, in_dims=(0, 0, None))(tp, tb, torch.tensor(x))
    ro = rg.func.vmap(rf, in_dims=(0, 0, None))(rp, rb, rg.tensor(x))
    _close(ro, to)
    with pytest.raises(RuntimeError):
        rg.func.stack_module_state([])
    with pytest.raises(RuntimeError):
        rg.func.stack_module_state([rms[0], rg.nn.Linear(3, 4)])


def test_grad_and_value_and_linearize():
    x = np.array([0.3, -1.2, 2.0])

    def f(mod):
        def fn(a):
            return (mod.sin(a) * a).sum(), a.exp()
        return fn

    tg, (tv, taux) = torch.func.grad_and_value(f(torch), has_aux=True)(torch.tensor(x))
    rgr, (rv, raux) = rg.func.grad_and_value(f(rg), has_aux=True)(rg.tensor(x))
    _close(rgr, tg)
    _close(rv, tv)
    _close(raux, taux)
    g1, v1 = rg.func.grad_and_value(lambda a: (a * a).sum())(rg.tensor(x))
    _close(g1, 2 * x)
    _close(v1, (x * x).sum())

    def h(mod):
        return lambda a: mod.sin(a) * a.sum()

    t = np.array([1.0, 0.5, -2.0])
    to, tjvp = torch.func.linearize(h(torch), torch.tensor(x))
    ro, rjvp = rg.func.linearize(h(rg), rg.tensor(x))
    _close(ro, to)
    _close(rjvp(rg.tensor(t)), tjvp(torch.tensor(t)))
    _close(rjvp(rg.tensor(2 * t)), tjvp(torch.tensor(2 * t)))


def test_replace_all_batch_norm_modules_():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).double()
    rm = rg.nn.Sequential(rg.nn.Linear(3, 4, dtype=np.float64),
                          rg.nn.BatchNorm1d(4, dtype=np.float64))
    _load(rm, tm)
    assert torch.func.replace_all_batch_norm_modules_(tm) is tm
    assert rg.func.replace_all_batch_norm_modules_(rm) is rm
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert rm[1].running_mean is None and not rm[1].track_running_stats
    x = np.random.default_rng(0).normal(size=(5, 3))
    tm.eval()
    rm.eval()
    _close(rm(rg.tensor(x)), tm(torch.tensor(x)))


def test_gradcheck_through_parametrizations():
    for register in (parametrizations.weight_norm, parametrizations.orthogonal):
        m = rg.nn.Linear(3, 3, dtype=np.float64)
        register(m)
        originals = [p for n, p in m.named_parameters() if "original" in n]
        x = rg.randn(2, 3, dtype=np.float64)

        names = [n for n, _ in m.named_parameters() if "original" in n]

        def f(*ps, m=m, names=names, x=x):
            return rg.func.functional_call(m, dict(zip(names, ps)), (x,))

        assert rg.gradcheck(f, tuple(p.detach().requires_grad_(True) for p in originals))


def test_grad_dict_argument_matches_torch():
    x = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}

    def f(d):
        return (d["a"] ** 2).sum() * d["b"]

    tg = torch.func.grad(f)({k: torch.tensor(v) for k, v in x.items()})
    rgr = rg.func.grad(f)({k: rg.tensor(v) for k, v in x.items()})
    for k in x:
        _close(rgr[k], tg[k])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(rg.func.grad(lambda v: (v * v).sum())([1.0, 2.0]), np.array([2.0, 4.0]))
