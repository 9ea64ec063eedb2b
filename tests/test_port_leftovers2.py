"""Loose ends of earlier porting rounds, each compared with torch computed here: the
global module hooks of `torch.nn.modules.module`, and small edge cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

tm = pytest.importorskip("torch.nn.modules.module")


def _shape(x):
    if hasattr(x, "shape"):
        return tuple(x.shape)
    if isinstance(x, tuple):
        return tuple(_shape(a) for a in x)
    return x


def _global_hook_log(lib, nn, M) -> list:
    log = []
    handles = [
        M.register_module_forward_pre_hook(lambda m, a: log.append(("gpre", type(m).__name__))),
        M.register_module_forward_hook(
            lambda m, a, o: log.append(("gfwd", type(m).__name__, _shape(o)))),
        M.register_module_full_backward_pre_hook(
            lambda m, go: log.append(("gbpre", type(m).__name__, _shape(go)))),
        M.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("gbw", type(m).__name__, _shape(gi), _shape(go)))),
    ]
    try:
        net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
        net[0].register_forward_pre_hook(lambda m, a: log.append(("lpre",)))
        net[0].register_forward_hook(lambda m, a, o: log.append(("lfwd",)))
        net[2].register_full_backward_hook(lambda m, gi, go: log.append(("lbw",)))
        net[2].register_full_backward_pre_hook(lambda m, go: log.append(("lbpre",)))
        x = lib.ones(5, 3, dtype=lib.float64, requires_grad=True)
        net(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    log.append("removed")
    net(x).sum().backward()
    return log


def test_global_call_hooks_run_in_torchs_order_and_go_away_on_remove():
    from retrograd.nn.modules import module as rm

    assert _global_hook_log(rg, rg.nn, rm) == _global_hook_log(torch, torch.nn, tm)


def _hook_kinds_log(lib, nn, M) -> list:
    log = []

    class Boom(nn.Module):
        def forward(self, x, scale=1.0):
            if scale < 0:
                raise ValueError("neg")
            return x * scale

    b, x = Boom(), lib.ones(2, dtype=lib.float64)
    h = M.register_module_forward_hook(lambda m, a, k, o: log.append(sorted(k)),
                                       with_kwargs=True)
    b(x, scale=2.0)
    h.remove()
    h = M.register_module_forward_hook(lambda m, a, o: log.append(("always", o)),
                                       always_call=True)
    with pytest.raises(ValueError):
        b(x, scale=-1.0)
    h.remove()
    h1 = M.register_module_forward_hook(lambda m, a, o: o * 2 if isinstance(m, nn.Tanh) else None)
    h2 = M.register_module_forward_pre_hook(
        lambda m, a: (a[0] + 1,) if isinstance(m, nn.Tanh) else None)
    log.append(nn.Tanh()(lib.zeros(2, dtype=lib.float64)).tolist())
    h1.remove()
    h2.remove()
    hs = [M.register_module_buffer_registration_hook(
              lambda m, n, t: log.append(("buf", n, None if t is None else _shape(t)))),
          M.register_module_module_registration_hook(
              lambda m, n, s: log.append(("mod", n, type(s).__name__))),
          M.register_module_parameter_registration_hook(
              lambda m, n, p: log.append(("par", n, _shape(p))))]
    nn.BatchNorm1d(3)
    seq = nn.Sequential(nn.Linear(2, 2))
    seq.add_module("x", nn.ReLU())
    seq.x = None

    class C(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(lib.zeros(2))
            self.register_buffer("b", lib.zeros(3))
            self.b = lib.ones(3)
            self.register_buffer("nb", None)
            self.register_parameter("q", None)

    C()
    hs.append(M.register_module_parameter_registration_hook(
        lambda m, n, p: nn.Parameter(lib.ones(7, 2)) if n == "weight" else None))
    log.append(("replaced", _shape(nn.Linear(2, 3).weight)))
    for h in hs:
        h.remove()
    M.register_module_full_backward_hook(lambda *a: None).remove()  # fixes the kind
    with pytest.raises(RuntimeError):
        M.register_module_backward_hook(lambda *a: None)
    return log


def test_global_hook_kinds_and_registration_hooks_match_torch():
    from retrograd.nn.modules import module as rm

    assert _hook_kinds_log(rg, rg.nn, rm) == _hook_kinds_log(torch, torch.nn, tm)


def _same_error(fn):
    """fn(torch) and fn(rg) both raise, the retrograd error an instance of torch's type."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)):
        fn(rg)


@pytest.mark.parametrize("case", [
    lambda L: L.tensor(3.0).unbind(),
    lambda L: L.diag_embed(L.tensor(3.0)),
    lambda L: L.linalg.cross(L.tensor(3.0), L.tensor(3.0)),
    lambda L: L.repeat_interleave(L.tensor(3.0), 2, dim=0),
    lambda L: L.repeat_interleave(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0])),
    lambda L: L.tensor([1, 2]).sub_(True, alpha=2),
    lambda L: L.tensor([1 + 1j]).abs_(),
    lambda L: L.zeros(3, dtype=L.int32).__setitem__(L.tensor([True, False, True]),
                                                     L.tensor(-float("inf"))),
], ids=["unbind0d", "diag_embed0d", "linalg_cross0d", "repeat_interleave0d",
        "repeat_interleave_float", "sub_bool_alpha", "abs_complex", "mask_inf_into_int"])
def test_edge_errors_match_torch(case):
    _same_error(case)


def test_index_put_accumulate_into_zero_width_rows():
    for acc in (True, False):
        outs = []
        for L in (torch, rg):
            z = L.zeros(2, 0)
            z.index_put_((L.tensor([0, 1]),), L.zeros(2, 0), accumulate=acc)
            outs.append(tuple(z.shape))
        assert outs[0] == outs[1]


@pytest.mark.parametrize("method,args", [
    ("normal_", ()), ("exponential_", ()), ("geometric_", (0.5,)), ("log_normal_", ()),
    ("random_", ()), ("bernoulli_", ())])
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "uint8", "complex64"])
def test_sampling_into_an_empty_tensor_of_any_dtype(method, args, dtype):
    res = []
    for L in (torch, rg):
        x = L.empty(0, 3, dtype=getattr(L, dtype))
        v = x._version
        try:
            y = getattr(x, method)(*args)
            res.append((y is x, tuple(y.shape), str(y.dtype).split(".")[-1], x._version - v))
        except Exception as e:  # noqa: BLE001 - compared below
            res.append(type(e).__name__)
    if isinstance(res[0], str):  # torch raises: so must we (and the dtype stays refused)
        assert isinstance(res[1], str)
    else:
        assert res[0] == res[1]


def test_numpy_comparison_ufunc_of_a_tensor_gives_uint8_as_torch():
    for f in (np.greater, np.less_equal, np.equal):
        t = f(torch.tensor([1.0, -1.0, 0.0]), 0)
        r = f(rg.tensor([1.0, -1.0, 0.0]), 0)
        assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(r.numpy(), t.numpy())
    assert (rg.tensor([1.0]) > 0).dtype == rg.bool  # the operator keeps bool


@pytest.mark.parametrize("p", [float("inf"), 0.0, 1.0, 2.0])
def test_cdist_with_nan_coordinates_as_torch(p):
    a = np.array([[0.0, np.nan, 3.0], [1.0, 2.0, -1.0]])
    b = np.array([[1.0, 1.0, 0.0], [np.nan, 0.0, 0.5], [1.0, 2.0, -1.0], [np.nan, np.nan, 0.0]])
    r = rg.cdist(rg.tensor(a), rg.tensor(b), p=p).numpy()
    t = torch.cdist(torch.tensor(a), torch.tensor(b), p=p).numpy()
    np.testing.assert_array_equal(r, t)


def test_pow_with_a_one_element_tensor_exponent_at_negative_inf_and_zero():
    xs = [-float("inf"), -0.0, 0.0, float("inf"), -1.0, 4.0, 2.5]
    for dt in ("float32", "float64"):
        for e in (0.5, -0.5, 1.5):
            for shape in ((), (1,)):
                r = rg.tensor(xs, dtype=getattr(rg, dt)) ** rg.full(shape, e,
                                                                    dtype=getattr(rg, dt))
                t = torch.tensor(xs, dtype=getattr(torch, dt)) ** torch.full(
                    shape, e, dtype=getattr(torch, dt))
                np.testing.assert_array_equal(r.numpy(), t.numpy())
                np.testing.assert_array_equal(np.signbit(r.numpy()), np.signbit(t.numpy()))
        x = rg.tensor(xs[:2], dtype=getattr(rg, dt)).pow_(rg.tensor(0.5, dtype=getattr(rg, dt)))
        np.testing.assert_array_equal(x.numpy(), [np.inf, 0.0])
        assert not np.signbit(x.numpy()[1])


@pytest.mark.parametrize("data", [[1, [2]], [[1, 2], 3], [[1], [2, 3]], [1.0, [2.0]],
                                  [[1.0], 2.0], [[[1]], [2]], [[True], [False, True]]])
def test_ragged_nested_lists_raise_torchs_error_type(data):
    _same_error(lambda L: L.tensor(data))


def test_sinc_of_complex_input_values_and_gradient():
    z = np.array([0j, 1 + 1j, 0.5 - 0.2j, 2 + 0j, -1.5 + 3j])
    for name in ("sinc", "special.sinc", "method", "inplace"):
        out = []
        for L in (torch, rg):
            x = L.tensor(z, requires_grad=True)
            f = {"sinc": L.sinc, "special.sinc": L.special.sinc, "method": lambda t: t.sinc(),
                 "inplace": lambda t: t.clone().sinc_()}[name]
            y = f(x)
            (y.abs() ** 2).sum().backward()
            out.append((y.detach().numpy(), x.grad.numpy()))
        np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-10, atol=1e-10)
    assert rg.sinc(rg.tensor([1j], dtype=rg.complex64)).dtype == rg.complex64


@pytest.mark.parametrize("args", [(-1, 10, 3), (-255, 10, 3), (3, -5, 4), (-1, -10, 4),
                                  (255, 0, 3), (-256, 10, 3), (-1.0, 10, 3), (-0.5, 3, 3)])
def test_linspace_uint8_wraps_negative_ints_as_torch(args):
    try:
        t = torch.linspace(*args, dtype=torch.uint8)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            rg.linspace(*args, dtype=rg.uint8)
        return
    np.testing.assert_array_equal(rg.linspace(*args, dtype=rg.uint8).numpy(), t.numpy())


@pytest.mark.parametrize("call", [
    lambda L, b, c: L.clamp(b, c), lambda L, b, c: L.clamp(b, max=c),
    lambda L, b, c: L.clamp(b, c, c), lambda L, b, c: L.clamp_min(b, c),
    lambda L, b, c: L.clamp_max(b, c), lambda L, b, c: L.clamp(b, True),
    lambda L, b, c: b.clone().clamp_(c), lambda L, b, c: b.clone().clamp_max_(c),
    lambda L, b, c: b.clone().clip_(max=c), lambda L, b, c: b.clone().clamp_min_(c)])
def test_clamp_of_bool_tensors_with_one_tensor_bound(call):
    res = []
    for L in (torch, rg):
        b, c = L.tensor([True, False, True]), L.tensor([False, True, True])
        try:
            r = call(L, b, c)
            res.append((str(r.dtype).split(".")[-1], r.tolist()))
        except Exception as e:  # noqa: BLE001 - compared below
            res.append(e)
    if isinstance(res[0], Exception):
        assert isinstance(res[1], type(res[0]))
    else:
        assert res[0] == res[1]


def test_remainder_zero_takes_the_dividends_sign():
    a = np.array([-2.0, 0.0, -0.0, 2.0, 3.0, -3.0, 1.0, -7.25])
    b = np.array([1.0, -1.5, 1.0, -1.0, 1.5, -1.5, np.inf, 2.0])
    for dt in ("float32", "float64"):
        outs = []
        for L in (torch, rg):
            x, y = L.tensor(a, dtype=getattr(L, dt)), L.tensor(b, dtype=getattr(L, dt))
            outs.append([o.numpy() for o in (L.remainder(x, y), x % 2.0, L.remainder(x, -1.0),
                                              x.clone().remainder_(y))])
        for r, t in zip(outs[1], outs[0]):
            np.testing.assert_array_equal(r, t)
            np.testing.assert_array_equal(np.signbit(r), np.signbit(t))


@pytest.mark.parametrize("case", [
    lambda L: L.tensor([1, 2]).round_(decimals=1),
    lambda L: L.tensor([True]).scatter_reduce_(0, L.tensor([0]), L.tensor([True]), "mean"),
], ids=["round_decimals_int", "scatter_reduce_mean_bool"])
def test_inplace_sweep_errors_match_torch(case):
    _same_error(case)


def _profiled_training(L, M, weights: dict, x, y) -> tuple:
    """A small MLP trained three SGD steps while global hooks record each layer's mean
    activation and output-gradient norm (a debugging/profiling use of the global hooks)."""
    nn = L.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).double()
    model.load_state_dict({k: L.tensor(v) for k, v in weights.items()})
    acts, grads = [], []
    hs = [M.register_module_forward_hook(
              lambda m, a, o: acts.append((type(m).__name__, round(float(o.mean()), 10)))),
          M.register_module_full_backward_pre_hook(
              lambda m, go: grads.append((type(m).__name__, round(float(go[0].norm()), 10))))]
    losses = []  # plain SGD steps (torch.optim's first step imports dynamo: seconds)
    try:
        for _ in range(3):
            model.zero_grad()
            loss = nn.functional.cross_entropy(model(L.tensor(x)), L.tensor(y))
            loss.backward()
            with L.no_grad():
                for q in model.parameters():
                    q.sub_(0.1 * q.grad)
            losses.append(loss.item())
    finally:
        for h in hs:
            h.remove()
    params = [p.detach().numpy().copy() for p in model.parameters()]
    return losses, acts, grads, params


def test_training_with_global_profiling_hooks_matches_torch():
    from retrograd.nn.modules import module as rm

    rng = np.random.default_rng(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                 torch.nn.Linear(8, 3)).double()
    weights = {k: v.detach().numpy().copy() for k, v in tmodel.state_dict().items()}
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 3, 6)
    t = _profiled_training(torch, tm, weights, x, y)
    r = _profiled_training(rg, rm, weights, x, y)
    np.testing.assert_allclose(r[0], t[0], rtol=1e-12)
    assert [a[0] for a in r[1]] == [a[0] for a in t[1]]
    np.testing.assert_allclose([a[1] for a in r[1]], [a[1] for a in t[1]], atol=1e-9)
    assert [g[0] for g in r[2]] == [g[0] for g in t[2]]
    np.testing.assert_allclose([g[1] for g in r[2]], [g[1] for g in t[2]], atol=1e-9)
    for a, b in zip(r[3], t[3]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
