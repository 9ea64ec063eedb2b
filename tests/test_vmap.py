"""rg.func.vmap against torch.func.vmap and a Python loop: in_dims/out_dims, nesting,
composition with grad/jacrev/jacfwd, ops with and without batching rules, and refusals
where a batched value would be read in Python."""

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.func as F
from retrograd import batching

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3))
W = RNG.standard_normal((4, 3))
M = RNG.standard_normal((5, 2, 3))
N = RNG.standard_normal((5, 3, 4))


def _np(a):
    if isinstance(a, torch.Tensor):
        return a.detach().numpy()
    return a.numpy() if isinstance(a, rg.Tensor) else np.asarray(a)


def _same(a, b, atol=1e-10):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, atol=atol, rtol=1e-9)


def _both(fn_rg, fn_t, *arrays, **kw):
    got = F.vmap(fn_rg, **kw)(*[rg.tensor(a) if isinstance(a, np.ndarray) else a
                                for a in arrays])
    ref = torch.func.vmap(fn_t, **kw)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                        for a in arrays])
    if isinstance(ref, tuple):
        assert isinstance(got, tuple) and len(got) == len(ref)
        for g, r in zip(got, ref):
            _same(g, r)
    else:
        _same(got, ref)
    return got


W_RG, W_T = rg.tensor(W), torch.tensor(W)

CASES = {
    "sin": (rg.sin, torch.sin),
    "tanh-affine": (lambda v: rg.tanh(W_RG @ v + 1.0), lambda v: torch.tanh(W_T @ v + 1.0)),
    "sum": (lambda v: v.sum(), lambda v: v.sum()),
    "mean-dim": (lambda v: (v * v).sum(0, keepdim=True), lambda v: (v * v).sum(0, keepdim=True)),
    "max": (lambda v: v.max(), lambda v: v.max()),
    "softmax": (lambda v: rg.softmax(v, -1), lambda v: torch.softmax(v, -1)),
    "logsumexp": (lambda v: rg.logsumexp(v, 0), lambda v: torch.logsumexp(v, 0)),
    "index": (lambda v: v[1:] * v[0], lambda v: v[1:] * v[0]),
    "fancy-index": (lambda v: v[[2, 0, 2]], lambda v: v[[2, 0, 2]]),
    "reshape": (lambda v: v.reshape(3, 1) * v, lambda v: v.reshape(3, 1) * v),
    "outer-broadcast": (lambda v: v[:, None] - W_RG.T, lambda v: v[:, None] - W_T.T),
    "where": (lambda v: rg.where(v > 0, v, -2 * v), lambda v: torch.where(v > 0, v, -2 * v)),
    "argmax": (lambda v: rg.argmax(v), lambda v: torch.argmax(v)),
    "mask-logic": (lambda v: ((v > 0) & (v < 1)) | ~(v > -1),
                   lambda v: ((v > 0) & (v < 1)) | ~(v > -1)),
    "stack-cat": (lambda v: rg.cat([v, W_RG[0]]), lambda v: torch.cat([v, W_T[0]])),
    "dot": (lambda v: v @ v, lambda v: v @ v),
    "transpose": (lambda v: (W_RG * v).T, lambda v: (W_T * v).T),
    "clamp-pow": (lambda v: rg.clamp(v, -0.5, 0.5) ** 2, lambda v: torch.clamp(v, -0.5, 0.5) ** 2),
    "cumsum": (lambda v: rg.cumsum(v * v, 0), lambda v: torch.cumsum(v * v, 0)),
    "argsort-all": (lambda v: rg.argsort(v) * (v > 0).all(),
                    lambda v: torch.argsort(v) * (v > 0).all()),
    "index_select": (lambda v: rg.index_select(v, 0, rg.tensor([2, 0])),
                     lambda v: torch.index_select(v, 0, torch.tensor([2, 0]))),
    "logical-isnan": (lambda v: rg.logical_and(v > 0, ~rg.isnan(v)),
                      lambda v: torch.logical_and(v > 0, ~torch.isnan(v))),
}


@pytest.mark.parametrize("name", CASES)
def test_vmap_matches_torch_and_a_loop(name):
    f, tf = CASES[name]
    got = _both(f, tf, X)
    loop = np.stack([_np(f(rg.tensor(x))) for x in X])
    _same(got, loop)


def test_vmap_matmul_every_pairing_of_batched_operands_matches_torch():
    A3, B3 = RNG.standard_normal((5, 2, 3)), RNG.standard_normal((5, 3, 4))
    v3 = RNG.standard_normal((5, 3))
    a, b, v = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    mm = (lambda p, q: p @ q)
    for args, dims in [((A3, B3), 0), ((A3, b), (0, None)), ((a, B3), (None, 0)),
                       ((v3, B3), 0), ((A3, v3), 0), ((v, B3), (None, 0)), ((A3, v), (0, None)),
                       ((v3, b), (0, None)), ((a, v3), (None, 0)), ((v3, v3), 0),
                       ((RNG.standard_normal((5, 6, 2, 3)), b), (0, None)),
                       ((RNG.standard_normal((6, 2, 3)), B3), (None, 0)),
                       ((v3, RNG.standard_normal((6, 3, 4))), (0, None))]:
        _both(mm, mm, *args, in_dims=dims)


def test_vmap_in_dims_none_and_nonzero_and_out_dims():
    _both(lambda v, m: m @ v, lambda v, m: m @ v, X, W, in_dims=(0, None))
    _both(lambda v: (v * 2).sum(0), lambda v: (v * 2).sum(0), X, in_dims=1)
    _both(lambda v: rg.stack([v, v * 2]), lambda v: torch.stack([v, v * 2]), X, out_dims=1)
    _both(lambda v: (v * 2, v.sum()), lambda v: (v * 2, v.sum()), X, out_dims=(1, 0))
    _both(lambda a, b: a * b, lambda a, b: a * b, X, X.T.copy(), in_dims=(0, 1))
    # an output that does not depend on the batch is broadcast, as in torch.func
    _both(lambda v: W_RG.sum() * 1.0, lambda v: W_T.sum() * 1.0, X)
    out = F.vmap(lambda v: (v * 2, W_RG), out_dims=(0, None))(rg.tensor(X))
    assert out[1] is W_RG


def test_vmap_nested_inputs_with_matching_in_dims():
    def f(pair, d):
        a, b = pair
        return a * d["s"] + b

    got = F.vmap(f, in_dims=((0, None), {"s": 0}))((rg.tensor(X), rg.tensor(W[0])),
                                                     {"s": rg.tensor(X[:, 0])})
    _same(got, X * X[:, :1] + W[0])


def test_vmap_nested_matches_torch():
    _both(F.vmap(lambda a: a * a.sum()), torch.func.vmap(lambda a: a * a.sum()), X)
    inner = (lambda a, b: a * b - a.sum())
    _both(F.vmap(inner, in_dims=(0, None)), torch.func.vmap(inner, in_dims=(0, None)), X, W,
          in_dims=(None, 0))
    got = F.vmap(F.vmap(lambda a, b: a @ b, in_dims=(0, None)))(rg.tensor(M), rg.tensor(N))
    ref = torch.func.vmap(torch.func.vmap(lambda a, b: a @ b, in_dims=(0, None)))(
        torch.tensor(M), torch.tensor(N))
    _same(got, ref)


def test_vmap_composes_with_grad_jacrev_jacfwd():
    def loss(v, w):
        return (rg.tanh(w @ v) ** 2).sum()

    def tloss(v, w):
        return (torch.tanh(w @ v) ** 2).sum()

    _both(F.grad(loss), torch.func.grad(tloss), X, W, in_dims=(0, None))
    _both(F.grad(loss, argnums=1), torch.func.grad(tloss, argnums=1), X, W, in_dims=(0, None))
    _both(F.jacrev(lambda v: rg.sin(W_RG @ v)), torch.func.jacrev(lambda v: torch.sin(W_T @ v)),
          X)
    _both(F.jacfwd(lambda v: rg.sin(W_RG @ v)), torch.func.jacfwd(lambda v: torch.sin(W_T @ v)),
          X)
    _both(F.hessian(lambda v: rg.sin(v).prod()), torch.func.hessian(lambda v: torch.sin(v).prod()),
          X)
    got = F.jacrev(F.vmap(lambda v: rg.sin(v).sum()))(rg.tensor(X))
    ref = torch.func.jacrev(torch.func.vmap(lambda v: torch.sin(v).sum()))(torch.tensor(X))
    _same(got, ref)
    got = F.jacfwd(F.vmap(lambda v: rg.exp(v) * v))(rg.tensor(X[:2]))
    ref = torch.func.jacfwd(torch.func.vmap(lambda v: torch.exp(v) * v))(torch.tensor(X[:2]))
    _same(got, ref)
    got = F.grad(lambda w: F.vmap(lambda v: loss(v, w))(rg.tensor(X)).sum())(rg.tensor(W))
    ref = torch.func.grad(lambda w: torch.func.vmap(lambda v: tloss(v, w))(
        torch.tensor(X)).sum())(torch.tensor(W))
    _same(got, ref)


def test_vmap_of_per_example_gradients_equals_a_loop():
    w = rg.tensor(W)
    per = F.vmap(F.grad(lambda w, x: rg.tanh(w @ x).sum()), in_dims=(None, 0))(w, rg.tensor(X))
    loop = np.stack([_np(F.grad(lambda w, x=x: rg.tanh(w @ rg.tensor(x)).sum())(w)) for x in X])
    _same(per, loop)


def test_ops_without_a_batching_rule_fall_back_to_a_correct_loop(monkeypatch):
    calls = []
    real = batching._loop

    def spy(*a, **k):
        calls.append(a[1].name)
        return real(*a, **k)

    monkeypatch.setattr(batching, "_loop", spy)
    imgs = RNG.standard_normal((3, 1, 1, 4, 4))
    got = F.vmap(lambda im: rg.nn.functional.max_pool2d(im, 2))(rg.tensor(imgs))
    ref = torch.func.vmap(lambda im: torch.nn.functional.max_pool2d(im, 2))(torch.tensor(imgs))
    _same(got, ref)
    assert any("pool" in c for c in calls)
    calls.clear()
    F.vmap(rg.sin)(rg.tensor(X))
    assert calls == []  # element-wise ops never loop


def test_vmap_batches_in_one_op_not_a_loop(monkeypatch):
    from retrograd.primitive import NUMPY, OPS

    seen = []
    real = np.sin
    spy = (lambda x: seen.append(x.shape) or real(x))
    monkeypatch.setattr(OPS["sin"], "forward", spy)
    monkeypatch.setattr(NUMPY, "sin", spy)
    _same(F.vmap(rg.sin)(rg.tensor(X)), np.sin(X))
    assert (5, 3) in seen and len(seen) <= 2  # the sample, and the whole batch once


@pytest.mark.parametrize("fn,match", [
    (lambda v: v.sum().item(), "item"),
    (lambda v: v * 2 if v.sum() > 0 else v, "bool"),
    (lambda v: rg.tensor(v.numpy() * 2), "numpy"),
    (lambda v: v[rg.argmax(v)], "indexing"),
    (lambda v: v + rg.randn(3), "random"),
    (lambda v: rg.zeros(3).add_(v), "in-place"),  # a batch written into an unbatched tensor
    (lambda v: (v * rg.ones(3, requires_grad=True)).sum().backward(), "backward"),
])
def test_vmap_refuses_reading_batched_values_in_python(fn, match):
    with pytest.raises(RuntimeError, match=match):
        F.vmap(fn)(rg.tensor(X))


def test_vmap_argument_errors_name_the_problem():
    with pytest.raises(ValueError, match="same size"):
        F.vmap(lambda a, b: a + b)(rg.tensor(X), rg.tensor(W))
    with pytest.raises(ValueError, match="no input is batched"):
        F.vmap(lambda a: a, in_dims=None)(rg.tensor(X))
    with pytest.raises(ValueError, match="out of range"):
        F.vmap(lambda a: a, in_dims=2)(rg.tensor(X))
    with pytest.raises(ValueError, match="in_dims has 1 entries"):
        F.vmap(lambda a, b: a, in_dims=(0,))(rg.tensor(X), rg.tensor(X))
    with pytest.raises(ValueError, match="batched but out_dims is None"):
        F.vmap(lambda a: a, out_dims=None)(rg.tensor(X))


def test_vmap_detach_keeps_the_batch():
    _both(lambda v: v.detach() * v, lambda v: v.detach() * v, X)


def test_vmap_same_tensor_twice_with_different_in_dims():
    sq = RNG.standard_normal((3, 3))
    _both(lambda p, q: p - 2 * q, lambda p, q: p - 2 * q, sq, sq, in_dims=(0, 1))
    x = rg.tensor(sq)
    got = F.vmap(lambda p, q: p - 2 * q, in_dims=(0, 1))(x, x)
    _same(got, sq - 2 * sq.T)
