"""Gaps found by running PyTorch's OpInfo samples through torch.func.vmap and rg.func.vmap
(batches of perturbed copies, in_dims 0, -1 and None), each compared with torch computed
here: batched index tensors out of range, empty gather/scatter indices, in-place writes
into integer and bool tensors inside vmap; and small vmap programs that guard the port end
to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import same as _same

import retrograd as rg


def _np(t):
    """A tensor of either library as a NumPy array."""
    return np.asarray(t.detach().numpy())


def _rg(t: torch.Tensor) -> rg.Tensor:
    return rg.tensor(t.detach().numpy().copy())


# ------------------------------------------------------------------ batched index tensors

@pytest.mark.parametrize("idx", [[[0, 1], [2, 4], [1, 1]], [[0, 1], [2, -4], [1, 1]]])
def test_vmap_getitem_batched_index_out_of_range_raises(idx):
    """x[i] with i batched: an entry out of range in any batch element is torch's
    IndexError (take_along_dim, which gathers, would wrap it to a wrong row)."""
    A = torch.randn(3, 5, dtype=torch.float64)
    i = torch.tensor(idx)
    with pytest.raises(IndexError):
        torch.func.vmap(lambda j: A[j])(i)
    with pytest.raises(IndexError):
        rg.func.vmap(lambda j: _rg(A)[j])(_rg(i))


def test_vmap_getitem_batched_index_in_range_matches():
    A = torch.randn(3, 5, dtype=torch.float64)
    i = torch.tensor([[0, 1], [2, -3], [1, -1]])
    _same(torch.func.vmap(lambda j: A[j])(i), rg.func.vmap(lambda j: _rg(A)[j])(_rg(i)))
    _same(torch.func.vmap(lambda j: A[:, j])(i), rg.func.vmap(lambda j: _rg(A)[:, j])(_rg(i)))


# ------------------------------------------------------------------ empty indices

_EMPTY = [((5,), (2, 0), 0), ((5, 3), (2, 0, 4), 0), ((5, 3), (0,), 1), ((), (2, 0), 0),
          ((5, 3), (0, 7), 1)]


@pytest.mark.parametrize("fn", ["gather", "scatter", "scatter_value", "scatter_add",
                                "scatter_reduce", "scatter_"])
@pytest.mark.parametrize("xs,isz,dim", _EMPTY)
def test_empty_index_of_other_rank(fn, xs, isz, dim):
    """An empty index whose rank differs from the input's: PyTorch checks no shapes
    (gather gives the index's empty shape, the scatters a copy of the input)."""
    calls = {"gather": lambda lib, x, i, s: lib.gather(x, dim, i),
             "scatter": lambda lib, x, i, s: x.scatter(dim, i, s),
             "scatter_value": lambda lib, x, i, s: x.scatter(dim, i, 2.0),
             "scatter_add": lambda lib, x, i, s: x.scatter_add(dim, i, s),
             "scatter_reduce": lambda lib, x, i, s: x.scatter_reduce(dim, i, s, "amax"),
             "scatter_": lambda lib, x, i, s: (x * 1).scatter_(dim, i, s)}
    out = []
    for lib in (torch, rg):
        x = lib.ones(xs, dtype=lib.float64, requires_grad=True)
        r = calls[fn](lib, x, lib.zeros(isz, dtype=lib.int64), lib.zeros(isz, dtype=lib.float64))
        out.append((r, lib.autograd.grad(r.sum(), x)[0]))
    for a, b in zip(*out):
        _same(a, b, fn)
    assert out[1][0].requires_grad


def test_empty_index_wrong_dim_still_raises():
    for lib in (torch, rg):
        with pytest.raises(IndexError):
            lib.gather(lib.ones(5, 3), 5, lib.zeros((2, 0, 4), dtype=lib.int64))


# ------------------------------------------------------------------ in-place ints in vmap

_INPLACE = {
    "add_": lambda v: v.clone().add_(1),
    "zero_": lambda v: v.clone().zero_(),
    "mul_": lambda v: v.clone().mul_(v),
    "setitem": lambda v: (lambda c: (c.__setitem__(0, v[1]), c)[1])(v.clone()),
    "view_mul_": lambda v: (lambda c: (c[1:].mul_(v[0]), c)[1])(v.clone()),
    "masked_fill_": lambda v: v.clone().masked_fill_(v > 3, 0),
    "clamp_": lambda v: v.clone().clamp_(2, 4),
}


@pytest.mark.parametrize("name", list(_INPLACE))
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_vmap_inplace_on_integer_and_bool_tensors(name, dtype):
    """In-place ops on batched integer/bool tensors inside vmap (torch.func.vmap runs
    them; they were refused as if they carried tangents)."""
    y = torch.tensor([[1, 2], [3, 4], [5, 6]])
    if dtype == "bool":
        y = y > 2
    f = _INPLACE[name]
    if dtype == "bool" and name in ("add_", "clamp_"):  # torch refuses these for bool
        with pytest.raises(RuntimeError):
            torch.func.vmap(f)(y)
        with pytest.raises(RuntimeError):
            rg.func.vmap(f)(_rg(y))
        return
    _same(torch.func.vmap(f)(y), rg.func.vmap(f)(_rg(y)), name)


# ------------------------------------------------------------------ NumPy-computed ops in vmap

def _both(tf, rf, *args, in_dims=0):
    """torch.func.vmap(tf) and rg.func.vmap(rf) on the same inputs, compared output by
    output."""
    e = torch.func.vmap(tf, in_dims=in_dims)(*args)
    a = rg.func.vmap(rf, in_dims=in_dims)(*[_rg(x) for x in args])
    e, a = (e, a) if isinstance(e, tuple) else ((e,), (a,))
    assert len(e) == len(a)
    for x, y in zip(e, a):
        _same(x, y)


def _sym(n=5):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(3, n, n, dtype=torch.float64, generator=g)
    return A, A + A.mT, torch.randn(3, n, 2, dtype=torch.float64, generator=g)


def test_vmap_geqrf_and_ldl_per_element():
    """geqrf, ldl_factor(_ex) and ldl_solve read their inputs' values in NumPy: inside
    vmap each batch element's (torch.func.vmap's fallback loop), not a refusal."""
    A, S, B = _sym()
    _both(torch.geqrf, rg.geqrf, A)
    _both(torch.geqrf, rg.geqrf, A, in_dims=-1)
    _both(torch.linalg.ldl_factor, rg.linalg.ldl_factor, S)
    _both(torch.linalg.ldl_factor_ex, rg.linalg.ldl_factor_ex, S)
    LD, piv = torch.linalg.ldl_factor(S)
    _both(torch.linalg.ldl_solve, rg.linalg.ldl_solve, LD, piv, B)
    _both(lambda b: torch.linalg.ldl_solve(LD[0], piv[0], b),
          lambda b: rg.linalg.ldl_solve(_rg(LD[0]), _rg(piv[0]), b), B)


def test_vmap_nonzero_static_and_bincount_per_element():
    v = torch.tensor([[1, 2, 3], [0, 0, 1], [4, 4, 4]])
    w = torch.rand(3, 3, dtype=torch.float64)
    _both(lambda x: torch.nonzero_static(x, size=4), lambda x: rg.nonzero_static(x, size=4), v)
    _both(lambda x: torch.bincount(x, minlength=6), lambda x: rg.bincount(x, minlength=6), v)
    _both(lambda x, y: torch.bincount(x, y, minlength=6),
          lambda x, y: rg.bincount(x, y, minlength=6), v, w)
    # lengths that differ per element: torch's fallback cannot stack them, nor can we
    with pytest.raises(RuntimeError):
        torch.func.vmap(torch.bincount)(v)
    with pytest.raises(RuntimeError):
        rg.func.vmap(rg.bincount)(_rg(v))


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_vmap_linspace_logspace_batched_tensor_ends(fn, dtype):
    """linspace/logspace with 0-d tensor ends batched by vmap (they read them with item()):
    each element's values, as torch's own loop gives them (torch.func.vmap's decomposition
    differs from its kernel in the last bit, and does not truncate int ends first)."""
    s = torch.tensor([0.0, 1.0, 2.5], dtype=torch.float64)
    e = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    tdt, rdt = getattr(torch, dtype), getattr(rg, dtype)
    tf, rf = getattr(torch, fn), getattr(rg, fn)
    loop = torch.stack([tf(a, b, 7, dtype=tdt) for a, b in zip(s, e)])
    got = rg.func.vmap(lambda a, b: rf(a, b, 7, dtype=rdt))(_rg(s), _rg(e))
    _same(loop, got)
    if dtype != "int64":
        batched = torch.func.vmap(lambda a, b: tf(a, b, 7, dtype=tdt))(s, e)
        np.testing.assert_allclose(_np(got), _np(batched), rtol=1e-6)
    got = rg.func.vmap(lambda a: rf(a, 3.0, 4, dtype=rdt))(_rg(s))
    _same(torch.stack([tf(a, 3.0, 4, dtype=tdt) for a in s]), got)


def _lstsq_grad_loop(A, B, driver):
    """torch's per-problem gradients of lstsq's residuals, by a loop (torch.func's lstsq
    backward imports torch._dynamo: seconds on first use)."""
    rows = []
    for a, b in zip(A, B):
        a = a.clone().requires_grad_()
        rows.append(torch.autograd.grad(torch.linalg.lstsq(a, b, driver=driver)
                                        .residuals.sum(), a)[0])
    return torch.stack(rows)


@pytest.mark.parametrize("driver", ["gelss", "gelsd"])
@pytest.mark.parametrize("deficient", [False, True])
def test_vmap_lstsq_residuals_at_full_rank(driver, deficient):
    """lstsq(driver='gelss'/'gelsd') inside vmap gives residuals where every batch
    element has full rank (it read one element's rank in Python and refused), and
    per-sample gradients through them."""
    g = torch.Generator().manual_seed(1)
    A = torch.randn(3, 4, 3, dtype=torch.float64, generator=g)
    B = torch.randn(3, 4, 2, dtype=torch.float64, generator=g)
    if deficient:
        A[1, :, 2] = A[1, :, 1]
    _both(lambda a, b: torch.linalg.lstsq(a, b, driver=driver),
          lambda a, b: rg.linalg.lstsq(a, b, driver=driver), A, B)
    if not deficient:
        e = _lstsq_grad_loop(A, B, driver)
        r = rg.func.vmap(rg.func.grad(
            lambda a, b: rg.linalg.lstsq(a, b, driver=driver).residuals.sum()))(_rg(A), _rg(B))
        np.testing.assert_allclose(_np(r), _np(e), rtol=1e-9, atol=1e-11)


def test_vmap_argwhere_per_element():
    """argwhere inside vmap: each element's rows where the counts agree (torch's fallback
    loop), torch's RuntimeError where they differ; nonzero refuses in both."""
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0], [5.0, 0.0, 6.0]])
    _both(torch.argwhere, rg.argwhere, x)
    y = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    for lib, t in ((torch, y), (rg, _rg(y))):
        with pytest.raises(RuntimeError):
            lib.func.vmap(lib.argwhere)(t)
        with pytest.raises(RuntimeError):
            lib.func.vmap(lib.nonzero)(t)


_LIST_INDEX = {
    "lists+tensor": lambda a, j: a[[0, 2, 3], [1, 3, 3], j],
    "slice,list,tensor": lambda a, j: a[:, [0, 1, 4], j],
    "nested list,tensor": lambda a, j: a[[[0], [2]], j],
    "list,slice,tensor": lambda a, j: a[[1, 2, 0], :, j],
}


@pytest.mark.parametrize("name", list(_LIST_INDEX))
@pytest.mark.parametrize("in_dims", [(0, 0), (None, 0)])
def test_vmap_getitem_lists_with_batched_index_tensor(name, in_dims):
    """Integer lists next to a batched index tensor are index tensors too (they were
    refused as unbatchable)."""
    g = torch.Generator().manual_seed(2)
    A = torch.randn(3, 5, 5, 5, dtype=torch.float64, generator=g)
    i = torch.randint(0, 5, (3, 3), generator=g)
    A = A if in_dims[0] == 0 else A[0]
    f = _LIST_INDEX[name]
    _same(torch.func.vmap(f, in_dims=in_dims)(A, i),
          rg.func.vmap(f, in_dims=in_dims)(_rg(A), _rg(i)))


# ------------------------------------------------------------------ whole programs

def _mlp_twins():
    """A seeded torch MLP and its retrograd copy (same weights)."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))
    tm = tm.double()
    rm = rg.nn.Sequential(rg.nn.Linear(6, 8), rg.nn.Tanh(), rg.nn.Linear(8, 4)).double()
    rm.load_state_dict({k: _rg(v) for k, v in tm.state_dict().items()})
    return tm, rm


def _loss(lib, model):
    """A loss that picks the gold logit with a (batched) index, adds a transition score
    indexed by integer lists beside a (batched) tag tensor, and counts the hits with an
    in-place integer update."""
    trans = lib.arange(16, dtype=lib.float64).reshape(4, 4) / 10

    def loss(p, xi, yi, ti):
        logits = lib.func.functional_call(model, p, (xi[None],))[0]
        logp = lib.log_softmax(logits, -1)
        gold = logp[yi[None]].sum() + trans[[0, 1, 2], ti].sum()
        count = lib.zeros_like(yi)
        count.add_((logits.argmax() == yi).long())
        return -gold + 0.0 * count

    return loss


def _per_sample_rg(model, x, y, tags):
    """Per-sample losses and gradients: functional_call + vmap(grad)."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = _loss(rg, model)
    grads = rg.func.vmap(rg.func.grad(loss), in_dims=(None, 0, 0, 0))(params, x, y, tags)
    return rg.func.vmap(loss, in_dims=(None, 0, 0, 0))(params, x, y, tags), grads


def _per_sample_torch(model, x, y, tags):
    """The same with torch: vmap for the losses, a loop for the gradients (torch.func.grad
    imports torch._dynamo on first use, seconds)."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = _loss(torch, model)
    losses = torch.func.vmap(loss, in_dims=(None, 0, 0, 0))(params, x, y, tags)
    grads = {k: [] for k in params}
    for i in range(len(x)):
        p = {k: v.clone().requires_grad_() for k, v in params.items()}
        g = torch.autograd.grad(loss(p, x[i], y[i], tags[i]), list(p.values()))
        for k, gk in zip(p, g):
            grads[k].append(gk)
    return losses, {k: torch.stack(v) for k, v in grads.items()}


def test_program_per_sample_gradients_with_batched_indices():
    tm, rm = _mlp_twins()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 6, dtype=torch.float64, generator=g)
    y = torch.randint(0, 4, (5,), generator=g)
    tags = torch.randint(0, 4, (5, 3), generator=g)
    le, ge = _per_sample_torch(tm, x, y, tags)
    la, ga = _per_sample_rg(rm, _rg(x), _rg(y), _rg(tags))
    _same(le, la, "losses")
    assert set(ge) == set(ga)
    for k in ge:
        np.testing.assert_allclose(_np(ga[k]), _np(ge[k]), rtol=1e-10, atol=1e-12, err_msg=k)
    bad = tags.clone()
    bad[2, 1] = 4  # out of range in one batch element only
    with pytest.raises(IndexError):
        _per_sample_torch(tm, x, y, bad)
    with pytest.raises(IndexError):
        _per_sample_rg(rm, _rg(x), _rg(y), _rg(bad))


def test_program_vmapped_least_squares_and_histograms():
    """A batch of small regression problems solved under vmap (gelsd residuals, their
    per-problem gradients), bucket counts per problem with bincount, and the pivot-free
    LDL solve of each normal equation."""
    g = torch.Generator().manual_seed(4)
    A = torch.randn(4, 6, 3, dtype=torch.float64, generator=g)
    b = torch.randn(4, 6, 1, dtype=torch.float64, generator=g)
    out = []
    for lib, AA, bb in ((torch, A, b), (rg, _rg(A), _rg(b))):
        def fit(a, y, lib=lib):
            sol = lib.linalg.lstsq(a, y, driver="gelsd")
            n = a.mT @ a
            ld, piv = lib.linalg.ldl_factor(n.detach())
            x2 = lib.linalg.ldl_solve(ld, piv, (a.mT @ y).detach())
            buckets = lib.bucketize(y[:, 0].detach(), lib.tensor([-1.0, 0.0, 1.0],
                                                                 dtype=lib.float64))
            counts = lib.bincount(buckets, minlength=4)
            return sol.solution, sol.residuals, x2, counts

        res = lib.func.vmap(fit)(AA, bb)
        out.append(list(res))
    # per-problem gradients of the residuals: vmap(grad) here, torch's own loop there
    out[0].append(_lstsq_grad_loop(A, b, "gelsd"))
    out[1].append(rg.func.vmap(rg.func.grad(lambda a, y: rg.linalg.lstsq(
        a, y, driver="gelsd").residuals.sum()))(_rg(A), _rg(b)))
    for k, (e, a) in enumerate(zip(*out)):
        np.testing.assert_allclose(_np(a), _np(e), rtol=1e-9, atol=1e-11, err_msg=str(k))
        assert _np(a).dtype == _np(e).dtype and _np(a).shape == _np(e).shape


_LIKE = {
    "zeros_like += ": lambda lib, v: (lambda a: (a.add_(v * 2), a)[1])(lib.zeros_like(v)),
    "ones_like setitem": lambda lib, v: (lambda a: (a.__setitem__(0, v.sum()), a)[1])(
        lib.ones_like(v)),
    "full_like mul_": lambda lib, v: lib.full_like(v, 3.0).mul_(v),
    "empty_like copy_": lambda lib, v: lib.empty_like(v).copy_(v.exp()),
    "zeros_like int count": lambda lib, v: (lambda c: (c.add_((v > 0).long()), c)[1])(
        lib.zeros_like(v, dtype=lib.int64)),
    "new_zeros +=": lambda lib, v: (lambda a: (a.add_(v[:2]), a)[1])(v.new_zeros(2)),
    "new_ones setitem": lambda lib, v: (lambda a: (a.__setitem__(1, v.sum()), a)[1])(
        v.new_ones(3)),
    "new_full mul_": lambda lib, v: v.new_full((4,), 2.0).mul_(v),
    "new_empty copy_": lambda lib, v: v.new_empty(4).copy_(v.sin()),
}


@pytest.mark.parametrize("name", list(_LIKE))
def test_vmap_like_tensors_take_batched_writes(name):
    """zeros_like/ones_like/full_like/empty_like of a batched tensor (and its new_zeros,
    new_ones, new_full, new_empty) are batched inside
    vmap (as torch's), so in-place writes of batched values into them batch (they were
    refused as writes of batched values into an unbatched tensor)."""
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    f = _LIKE[name]
    _same(torch.func.vmap(lambda v: f(torch, v))(x), rg.func.vmap(lambda v: f(rg, v))(_rg(x)))


@pytest.mark.parametrize("shape", [(3, 5, 3), (3, 3, 5)])
def test_vmap_svd_full_matrices_non_square(shape):
    """svd(full_matrices=True) of non-square matrices inside vmap: the completing columns
    per batch element (refused before); torch's shapes and singular values, orthonormal
    factors that rebuild A, the same factors as the unbatched call, per-sample gradients."""
    A = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    e = torch.func.vmap(lambda a: torch.linalg.svd(a, full_matrices=True))(A)
    r = rg.func.vmap(lambda a: rg.linalg.svd(a, full_matrices=True))(_rg(A))
    for x, y in zip(rg.linalg.svd(_rg(A), full_matrices=True), r):
        _same(x, y)
    assert [tuple(x.shape) for x in e] == [tuple(y.shape) for y in r]
    np.testing.assert_allclose(_np(r.S), _np(e.S), rtol=1e-12)
    U, S, Vh = (_np(t) for t in r)
    k = S.shape[-1]
    np.testing.assert_allclose(U[..., :k] * S[:, None, :] @ Vh[..., :k, :], A.numpy(), atol=1e-12)
    for Q in (U, Vh):
        np.testing.assert_allclose(Q @ np.swapaxes(Q, -1, -2), np.broadcast_to(
            np.eye(Q.shape[-1]), Q.shape), atol=1e-12)
    g = rg.func.vmap(rg.func.grad(lambda a: rg.linalg.svd(a, full_matrices=True).S.sum()))
    loop = [torch.autograd.grad(torch.linalg.svd(a, full_matrices=True).S.sum(), a)[0]
            for a in A.clone().requires_grad_()]
    np.testing.assert_allclose(_np(g(_rg(A))), np.stack([_np(t) for t in loop]), atol=1e-12)


def test_vmap_qr_complete_tall():
    """qr(mode='complete') of tall matrices inside vmap: each batch element's factors
    (refused before); still refused for an input that requires grad."""
    A = torch.randn(3, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    e = torch.func.vmap(lambda a: torch.linalg.qr(a, mode="complete"))(A)
    r = rg.func.vmap(lambda a: rg.linalg.qr(a, mode="complete"))(_rg(A))
    for x, y in zip(e, r):
        np.testing.assert_allclose(_np(y), _np(x), atol=1e-12)
        assert _np(y).shape == _np(x).shape
