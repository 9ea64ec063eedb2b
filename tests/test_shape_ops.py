"""Indexing, rearranging, cumulative and sorting functions against PyTorch.

The ops with rows of their own (gather, the scatters, index_select/index_add,
diagonal, cumsum, cumprod, logcumsumexp) are also covered by the generated
tests; here every public function, the compositions included, is compared with
torch: values, dtypes, shapes, gradients, a few forward-mode derivatives, the
argument errors, and `rg.jit` replays on new indices.
"""

import numpy as np
import pytest
import torch

import retrograd as rg
import retrograd.nn.functional as F
from retrograd.jit import JitError

rng = np.random.default_rng(0)


def _rg(a):
    a = np.asarray(a)
    return rg.tensor(a, requires_grad=a.dtype.kind == "f")


def _th(a):
    a = np.asarray(a)
    t = torch.tensor(a)
    return t.requires_grad_(True) if a.dtype.kind == "f" else t


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(ours_fn, torch_fn, *arrays, grad=True, atol=1e-12):
    """Same values, dtypes and shapes; then the same gradients of a random weighted sum."""
    ours_in = [_rg(a) if isinstance(a, np.ndarray) else a for a in arrays]
    th_in = [_th(a) if isinstance(a, np.ndarray) else a for a in arrays]
    ours, theirs = _flat(ours_fn(*ours_in)), _flat(torch_fn(*th_in))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape), (o.shape, t.shape)
        assert o.dtype == np.dtype(str(t.dtype).replace("torch.", "")), (o.dtype, t.dtype)
        np.testing.assert_allclose(o.data, t.detach().numpy(), rtol=1e-12, atol=atol)
    if not grad:
        return ours
    pairs = [(o, t) for o, t in zip(ours, theirs) if o.dtype.kind == "f" and o.requires_grad]
    if not pairs:
        return ours
    ws = [rng.standard_normal(o.shape) for o, _ in pairs]
    loss = sum((o * rg.tensor(w)).sum() for (o, _), w in zip(pairs, ws))
    tloss = sum((t * torch.tensor(w)).sum() for (_, t), w in zip(pairs, ws))
    loss.backward()
    tloss.backward()
    for o, t in zip(ours_in, th_in):
        if isinstance(o, rg.Tensor) and o.requires_grad:
            want = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
            np.testing.assert_allclose(o.grad.data, want, rtol=1e-10, atol=atol)
    return ours


def randn(*shape):
    return rng.standard_normal(shape)


def ints(hi, *shape):
    return rng.integers(0, hi, shape)


# ----------------------------------------------------------------- gather / scatter


def test_gather_and_take_along_dim():
    x, i = randn(3, 4), ints(4, 3, 5)
    compare(lambda x, i: rg.gather(x, 1, i), lambda x, i: torch.gather(x, 1, i), x, i)
    compare(lambda x, i: x.gather(0, i), lambda x, i: x.gather(0, i), x, ints(3, 2, 4))
    compare(lambda x, i: rg.take_along_dim(x, i, 1), lambda x, i: torch.take_along_dim(x, i, 1),
            x, ints(4, 1, 2))
    compare(lambda x, i: rg.take_along_dim(x, i), lambda x, i: torch.take_along_dim(x, i),
            x, ints(12, 5))
    compare(lambda x, i: x.take_along_dim(i, -1), lambda x, i: x.take_along_dim(i, -1),
            randn(2, 1, 4), ints(4, 1, 3, 2))


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_scatters_match_torch():
    x = randn(3, 5)
    i = np.stack([rng.permutation(5)[:3] for _ in range(2)])
    compare(lambda x, i, s: rg.scatter(x, 1, i, s), lambda x, i, s: torch.scatter(x, 1, i, s),
            x, i, randn(2, 3))
    compare(lambda x, i: x.scatter(1, i, value=2.5), lambda x, i: x.scatter(1, i, value=2.5),
            x, i)
    dup = ints(5, 3, 6)
    compare(lambda x, i, s: rg.scatter_add(x, 1, i, s),
            lambda x, i, s: torch.scatter_add(x, 1, i, s), x, dup, randn(3, 6))
    compare(lambda x, i, s: rg.scatter(x, 1, i, s, reduce="add"),
            lambda x, i, s: torch.scatter(x, 1, i, s, reduce="add"), x, dup, randn(3, 6),
            grad=False)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            compare(lambda x, i, s, r=reduce, inc=inc: x.scatter_reduce(0, i, s, r,
                                                                          include_self=inc),
                    lambda x, i, s, r=reduce, inc=inc: x.scatter_reduce(0, i, s, r,
                                                                          include_self=inc),
                    x, ints(3, 4, 5), randn(4, 5))


def test_scatter_reduce_prod_gradient_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0])
    s = np.array([0.0, 4.0, 5.0, 0.5, 0.0, 2.0])
    i = np.array([0, 0, 1, 1, 3, 3])
    for inc in (True, False):
        compare(lambda x, i, s, inc=inc: rg.scatter_reduce(x, 0, i, s, "prod", include_self=inc),
                lambda x, i, s, inc=inc: torch.scatter_reduce(x, 0, i, s, "prod",
                                                              include_self=inc), x, i, s)


def test_scatter_reduce_integers_and_ties():
    x = np.array([[1, 7, 3]])
    i, s = np.array([[0, 0, 2, 2]]), np.array([[4, 9, 3, 3]])
    for r in ("sum", "prod", "mean", "amax", "amin"):
        compare(lambda x, i, s, r=r: rg.scatter_reduce(x, 1, i, s, r),
                lambda x, i, s, r=r: torch.scatter_reduce(x, 1, i, s, r), x, i, s)
    # amax shares the gradient among ties, as torch does
    compare(lambda x, i, s: rg.scatter_reduce(x, 1, i, s, "amax"),
            lambda x, i, s: torch.scatter_reduce(x, 1, i, s, "amax"),
            np.array([[1.0, 3.0, 3.0]]), i, np.array([[1.0, 0.5, 3.0, 3.0]]))


def test_index_select_and_index_add():
    x = randn(4, 3)
    compare(lambda x, i: rg.index_select(x, 0, i), lambda x, i: torch.index_select(x, 0, i),
            x, np.array([3, 0, 3]))
    compare(lambda x, i: x.index_select(1, i), lambda x, i: x.index_select(1, i), x,
            np.array(2))
    compare(lambda x, i, s: rg.index_add(x, 0, i, s, alpha=2.0),
            lambda x, i, s: torch.index_add(x, 0, i, s, alpha=2.0), x, np.array([1, 1, 3]),
            randn(3, 3))


def test_masks_and_nonzero():
    x = randn(3, 4)
    m = rng.random((3, 4)) > 0.5
    compare(lambda x: x.masked_fill(rg.tensor(m), -1.0),
            lambda x: x.masked_fill(torch.tensor(m), -1.0), x)
    compare(lambda x, v: rg.masked_fill(x, rg.tensor(m[:1]), v),
            lambda x, v: torch.masked_fill(x, torch.tensor(m[:1]), v), x, np.array(0.5))
    compare(lambda x: rg.masked_select(x, rg.tensor(m[0])),
            lambda x: torch.masked_select(x, torch.tensor(m[0])), x)
    compare(lambda x: rg.masked_fill(x, rg.tensor(m), 2.7),
            lambda x: torch.masked_fill(x, torch.tensor(m), 2.7), ints(5, 3, 4))
    z = np.where(m, x, 0.0)
    compare(lambda z: rg.nonzero(z), lambda z: torch.nonzero(z), z, grad=False)
    compare(lambda z: z.nonzero(as_tuple=True), lambda z: z.nonzero(as_tuple=True), z,
            grad=False)


# ----------------------------------------------------------------- diagonals, triangles


def test_diagonals_and_triangles():
    for off in (0, 1, -2):
        compare(lambda x, o=off: rg.diag(x, o), lambda x, o=off: torch.diag(x, o), randn(4))
        compare(lambda x, o=off: x.diag(o), lambda x, o=off: x.diag(o), randn(3, 5))
        compare(lambda x, o=off: rg.diagonal(x, o, 2, 0), lambda x, o=off: x.diagonal(o, 2, 0),
                randn(3, 2, 4))
        compare(lambda x, o=off: rg.diag_embed(x, o, 0, 2),
                lambda x, o=off: torch.diag_embed(x, o, 0, 2), randn(2, 3))
        compare(lambda x, o=off: rg.tril(x, o), lambda x, o=off: torch.tril(x, o), randn(2, 3, 4))
        compare(lambda x, o=off: x.triu(o), lambda x, o=off: x.triu(o), randn(4, 3))
    compare(lambda x: x.diag_embed(), lambda x: x.diag_embed(), randn(2, 3))
    compare(lambda x: rg.triu(x), lambda x: torch.triu(x), ints(9, 3, 3))


# ----------------------------------------------------------------- rearranging


def test_flip_roll_repeat_tile():
    x = randn(2, 3, 4)
    compare(lambda x: rg.flip(x, (0, 2)), lambda x: torch.flip(x, (0, 2)), x)
    compare(lambda x: x.fliplr(), lambda x: x.fliplr(), x)
    compare(lambda x: x.flipud(), lambda x: x.flipud(), x)
    compare(lambda x: rg.roll(x, 5), lambda x: torch.roll(x, 5), x)
    compare(lambda x: x.roll((1, -5), (2, 1)), lambda x: x.roll((1, -5), (2, 1)), x)
    compare(lambda x: x.repeat(2, 1, 1, 3), lambda x: x.repeat(2, 1, 1, 3), x)
    compare(lambda x: x.repeat(1, 1, 1), lambda x: x.repeat(1, 1, 1), x)
    compare(lambda x: rg.tile(x, (2,)), lambda x: torch.tile(x, (2,)), x)
    compare(lambda x: x.tile((2, 1, 1, 2)), lambda x: x.tile((2, 1, 1, 2)), x)


def test_rearranged_results_are_copies_where_torch_copies():
    for fn in (lambda t: t.flip(0), lambda t: t.roll(0, 0), lambda t: t.repeat(1, 1),
               lambda t: t.tile((1,)), lambda t: rg.tril(t)):
        x = rg.tensor(np.arange(6.0).reshape(2, 3))
        y = fn(x)
        y += 1
        np.testing.assert_array_equal(x.data, np.arange(6.0).reshape(2, 3))


def test_repeat_interleave():
    x = randn(3, 2)
    compare(lambda x: x.repeat_interleave(2), lambda x: x.repeat_interleave(2), x)
    compare(lambda x: x.repeat_interleave(3, dim=1), lambda x: x.repeat_interleave(3, dim=1), x)
    compare(lambda x, r: rg.repeat_interleave(x, r, 0),
            lambda x, r: torch.repeat_interleave(x, r, 0), x, np.array([2, 0, 1]))
    compare(lambda r: rg.repeat_interleave(r), lambda r: torch.repeat_interleave(r),
            np.array([2, 0, 3]), grad=False)


def test_unflatten_movedim_narrow_chunk_unbind():
    x = randn(2, 12, 3)
    compare(lambda x: x.unflatten(1, (3, -1)), lambda x: x.unflatten(1, (3, -1)), x)
    compare(lambda x: rg.movedim(x, 0, -1), lambda x: torch.movedim(x, 0, -1), x)
    compare(lambda x: x.movedim((0, 2), (2, 0)), lambda x: x.movedim((0, 2), (2, 0)), x)
    compare(lambda x: rg.moveaxis(x, (1, 0), (0, 2)), lambda x: torch.moveaxis(x, (1, 0), (0, 2)),
            x)
    compare(lambda x: x.narrow(1, -5, 4), lambda x: x.narrow(1, -5, 4), x)
    compare(lambda x: rg.chunk(x, 5, 1), lambda x: torch.chunk(x, 5, 1), x)
    compare(lambda x: x.chunk(4, -1), lambda x: x.chunk(4, -1), x)
    compare(lambda x: rg.unbind(x, 2), lambda x: torch.unbind(x, 2), x)


def test_meshgrid():
    a, b, c = randn(3), randn(4), randn(2)
    for ix in ("ij", "xy"):
        compare(lambda a, b, c, ix=ix: rg.meshgrid(a, b, c, indexing=ix),
                lambda a, b, c, ix=ix: torch.meshgrid(a, b, c, indexing=ix), a, b, c)


def test_tensor_unfold_windows():
    x = randn(2, 7, 3)
    for size, step in ((3, 1), (2, 3), (7, 2), (0, 1)):
        compare(lambda x, s=size, k=step: x.unfold(1, s, k),
                lambda x, s=size, k=step: x.unfold(1, s, k), x)
    compare(lambda x: x.unfold(-1, 2, 1), lambda x: x.unfold(-1, 2, 1), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(2, 1)),
                                dict(kernel_size=3, dilation=2, padding=1, stride=2),
                                dict(kernel_size=(1, 2), padding=(2, 0))])
def test_im2col_and_col2im(kw):
    x = randn(2, 3, 7, 6)
    compare(lambda x: F.unfold(x, **kw), lambda x: torch.nn.functional.unfold(x, **kw), x)
    compare(lambda x: F.unfold(x, **kw), lambda x: torch.nn.functional.unfold(x, **kw), x[0])
    cols = torch.nn.functional.unfold(torch.tensor(x), **kw)
    compare(lambda c: F.fold(c, (7, 6), **kw),
            lambda c: torch.nn.functional.fold(c, (7, 6), **kw), randn(*cols.shape))
    compare(lambda c: F.fold(c, (7, 6), **kw),
            lambda c: torch.nn.functional.fold(c, (7, 6), **kw), randn(*cols.shape[1:]))


# ----------------------------------------------------------------- cumulative


def test_cumulative():
    x = randn(3, 5)
    compare(lambda x: rg.cumsum(x, 1), lambda x: torch.cumsum(x, 1), x)
    compare(lambda x: x.cumsum(0), lambda x: x.cumsum(0), x)
    compare(lambda x: x.cumprod(-1), lambda x: x.cumprod(-1), x)
    compare(lambda x: rg.logcumsumexp(x, 0), lambda x: torch.logcumsumexp(x, 0), x)
    compare(lambda x: x.logcumsumexp(1), lambda x: x.logcumsumexp(1), 300 * x)
    compare(lambda x: rg.cumsum(x, 0), lambda x: torch.cumsum(x, 0), np.array(2.5))
    # integers and bools accumulate in int64, as in torch
    for a in (ints(5, 4).astype(np.int32), rng.random(4) > 0.5):
        compare(lambda a: rg.cumsum(a, 0), lambda a: torch.cumsum(a, 0), a)
        compare(lambda a: a.cumprod(0), lambda a: a.cumprod(0), a)
    compare(lambda x: rg.cumsum(x, 1, dtype=rg.float32), lambda x: torch.cumsum(
        x, 1, dtype=torch.float32), x, atol=1e-6)


def test_cumprod_gradients_with_zeros():
    x = np.array([[1.5, 0.0, -2.0, 0.0, 0.7], [0.0, 0.0, 2.0, 1.0, 3.0]])
    compare(lambda x: rg.cumprod(x, 1), lambda x: torch.cumprod(x, 1), x)
    # second derivatives through the zeros, against torch
    xs = rg.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    w = rng.standard_normal(x.shape)
    (g,) = rg.autograd.grad((rg.cumprod(xs, 1) * rg.tensor(w)).sum(), [xs], create_graph=True)
    (gt,) = torch.autograd.grad((torch.cumprod(xt, 1) * torch.tensor(w)).sum(), [xt],
                                create_graph=True)
    v = rng.standard_normal(x.shape)
    (h,) = rg.autograd.grad((g * rg.tensor(v)).sum(), [xs])
    (ht,) = torch.autograd.grad((gt * torch.tensor(v)).sum(), [xt])
    np.testing.assert_allclose(h.data, ht.numpy(), rtol=1e-10, atol=1e-12)


def test_cummax_cummin_latest_index_on_ties():
    x = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0], [2.0, 2.0, 1.0, 1.0, 4.0, 1.0]])
    for name in ("cummax", "cummin"):
        out = compare(lambda x, n=name: getattr(rg, n)(x, 1),
                      lambda x, n=name: getattr(torch, n)(x, 1), x)
        assert out[0] is not None
    r = rg.cummax(rg.tensor(x), dim=1)
    assert r.values is r[0] and r.indices.dtype == np.int64


# ----------------------------------------------------------------- sorting


def test_sort_and_argsort_stable_with_ties():
    x = rng.integers(0, 3, (4, 7)).astype(np.float64)
    for desc in (False, True):
        compare(lambda x, d=desc: rg.sort(x, 1, descending=d, stable=True),
                lambda x, d=desc: torch.sort(x, dim=1, descending=d, stable=True), x)
        compare(lambda x, d=desc: x.sort(dim=0, descending=d, stable=True),
                lambda x, d=desc: x.sort(dim=0, descending=d, stable=True), x)
        compare(lambda x, d=desc: x.argsort(dim=-1, descending=d, stable=True),
                lambda x, d=desc: x.argsort(dim=-1, descending=d, stable=True), x, grad=False)
    x = np.array([1.0, np.nan, -2.0, np.inf])
    for desc in (False, True):
        compare(lambda x, d=desc: rg.sort(x, descending=d, stable=True),
                lambda x, d=desc: torch.sort(x, descending=d, stable=True), x, grad=False)
    compare(lambda a: a.sort(stable=True), lambda a: a.sort(stable=True), ints(3, 9))
    compare(lambda x: rg.msort(x), lambda x: torch.msort(x), randn(4, 3))


def test_topk_kthvalue_median_mode():
    x = randn(3, 6)
    for largest in (True, False):
        compare(lambda x, lg=largest: rg.topk(x, 3, largest=lg),
                lambda x, lg=largest: torch.topk(x, 3, largest=lg), x)
    compare(lambda x: x.topk(2, dim=0), lambda x: x.topk(2, dim=0), x)
    for k in (1, 4, 6):
        compare(lambda x, k=k: rg.kthvalue(x, k), lambda x, k=k: torch.kthvalue(x, k), x)
    compare(lambda x: x.kthvalue(2, 0, keepdim=True), lambda x: x.kthvalue(2, 0, keepdim=True),
            x)
    compare(lambda x: rg.median(x), lambda x: torch.median(x), x)
    compare(lambda x: x.median(1), lambda x: x.median(1), x)
    compare(lambda x: x.median(0, keepdim=True), lambda x: x.median(0, keepdim=True), randn(5, 2))
    # lower median and its index, with repeats; NaN propagates with its index
    compare(lambda x: rg.median(x, 0), lambda x: torch.median(x, 0),
            np.array([2.0, 1.0, 2.0, 1.0, 3.0, 1.0]))
    compare(lambda x: rg.median(x, 0), lambda x: torch.median(x, 0),
            np.array([1.0, np.nan, 2.0, np.nan]), grad=False)
    m = np.array([[3.0, 1.0, 3.0, 1.0, 2.0], [5.0, 5.0, 4.0, 4.0, 4.0], [1.0, 2.0, 3.0, 4.0, 0.0]])
    compare(lambda m: rg.mode(m), lambda m: torch.mode(m), m)
    compare(lambda m: m.mode(0, keepdim=True), lambda m: m.mode(0, keepdim=True),
            rng.integers(0, 2, (5, 3)).astype(np.float64))


def test_sort_gradient_goes_to_the_selected_positions():
    x = rg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    x.sort(descending=True).values.backward(rg.tensor([10.0, 20.0, 30.0]))
    np.testing.assert_array_equal(x.grad.data, [10.0, 30.0, 20.0])


# ----------------------------------------------------------------- forward mode


@pytest.mark.parametrize("case", [
    (lambda x: x.roll(2, 1), (3, 4)), (lambda x: x.flip(0), (3, 4)),
    (lambda x: x.sort(1).values, (3, 4)), (lambda x: x.cumprod(1), "zeros"),
    (lambda x: x.topk(2).values, (3, 4)), (lambda x: x.repeat_interleave(2, dim=0), (2, 3)),
    (lambda x: x.unfold(1, 2, 1), (3, 4)), (lambda x: x.tril(1), (3, 4)),
    (lambda x: x.diag_embed(), (2, 3)), (lambda x: x.logcumsumexp(0), (3, 4)),
    (lambda x: x.cummax(1).values, (3, 4)), (lambda x: x.median(0).values, (3, 4))])
def test_jvp_matches_torch_func_jvp(case):
    fn, shape = case
    x = np.array([[1.5, 0.0, -2.0, 0.0], [0.0, 0.0, 2.0, 1.0]]) if shape == "zeros" \
        else randn(*shape)
    t = randn(*x.shape)
    ours = rg.func.jvp(fn, (rg.tensor(x),), (rg.tensor(t),))[1]
    theirs = torch.func.jvp(fn, (torch.tensor(x),), (torch.tensor(t),))[1]
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_im2col_jvp_matches_torch():
    x, t = randn(1, 2, 5, 5), randn(1, 2, 5, 5)
    ours = rg.func.jvp(lambda a: F.unfold(a, 3, padding=1, stride=2), (rg.tensor(x),),
                       (rg.tensor(t),))[1]
    theirs = torch.func.jvp(lambda a: torch.nn.functional.unfold(a, 3, padding=1, stride=2),
                            (torch.tensor(x),), (torch.tensor(t),))[1]
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-12)


# ----------------------------------------------------------------- errors


@pytest.mark.parametrize("call, err, words", [
    (lambda: rg.gather(rg.randn(3, 4), 1, rg.tensor([[0, 4]])), IndexError,
     ["index 4", "dimension 1", "size 4"]),
    (lambda: rg.gather(rg.randn(3, 4), 1, rg.tensor([[-1]])), IndexError, ["-1", "size 4"]),
    (lambda: rg.gather(rg.randn(3, 4), 1, rg.tensor([[0.0]])), TypeError, ["index", "float"]),
    (lambda: rg.gather(rg.randn(3, 4), 1, rg.tensor([0, 1])), ValueError, ["(2,)", "(3, 4)"]),
    (lambda: rg.gather(rg.randn(3, 4), 1, rg.zeros(4, 1, dtype=rg.int64)), ValueError,
     ["(4, 1)", "dimension 0"]),
    (lambda: rg.gather(rg.randn(3, 4), 2, rg.tensor([[0]])), IndexError, ["dim 2"]),
    (lambda: rg.take_along_dim(rg.randn(3, 4), rg.tensor([[0], [1]]), 1), ValueError,
     ["(3, 4)", "(2, 1)"]),
    (lambda: rg.scatter(rg.randn(3), 0, rg.tensor([0]), rg.tensor([1])), TypeError,
     ["src", "dtype"]),
    (lambda: rg.scatter(rg.randn(3), 0, rg.tensor([3]), rg.randn(1)), IndexError,
     ["index 3", "size 3"]),
    (lambda: rg.scatter_add(rg.randn(3), 0, rg.tensor([0, 1]), rg.randn(1)), ValueError,
     ["src of shape (1,)"]),
    (lambda: rg.scatter_reduce(rg.randn(3), 0, rg.tensor([0]), rg.randn(1), "add"),
     ValueError, ["reduce", "'add'"]),  # ('max'/'min': torch's forward takes them)
    (lambda: rg.index_select(rg.randn(3), 0, rg.tensor([[0]])), ValueError, ["vector"]),
    (lambda: rg.index_select(rg.randn(3, 2), 1, rg.tensor([2])), IndexError,
     ["index 2", "dimension 1", "size 2"]),
    (lambda: rg.index_add(rg.randn(3, 2), 0, rg.tensor([0]), rg.randn(2, 2)), ValueError,
     ["(2, 2)", "(1, 2)"]),
    (lambda: rg.masked_fill(rg.randn(3, 2), rg.tensor([True, False, True]), 0.0), ValueError,
     ["mask of shape (3,)", "(3, 2)"]),
    (lambda: rg.masked_fill(rg.randn(3), rg.tensor([1, 0, 1]), 0.0), TypeError, ["bool"]),
    (lambda: rg.masked_select(rg.randn(3, 2), rg.tensor([True, False, True])), ValueError,
     ["(3,)", "(3, 2)"]),
    (lambda: rg.cumsum(rg.randn(3, 2), 2), IndexError, ["dim 2"]),
    (lambda: rg.cumsum(rg.randn(3, 2)), TypeError, ["dim"]),
    (lambda: rg.logcumsumexp(rg.tensor([1, 2]), 0), TypeError, ["floating"]),
    (lambda: rg.chunk(rg.randn(3), 0), ValueError, ["chunks"]),
    (lambda: rg.topk(rg.randn(3), 4), ValueError, ["k (4)", "[0, 3]"]),
    (lambda: rg.kthvalue(rg.randn(3), 0), ValueError, ["k (0)", "[1, 3]"]),
    (lambda: rg.narrow(rg.randn(3, 4), 1, 2, 3), ValueError, ["length 3", "size 4"]),
    (lambda: rg.flip(rg.randn(3, 4), (0, 0)), ValueError, ["repeat"]),
    (lambda: rg.roll(rg.randn(3, 4), (1, 2), 0), ValueError, ["shifts", "dims"]),
    (lambda: rg.randn(3, 4).repeat(2), ValueError, ["(3, 4)"]),
    (lambda: rg.movedim(rg.randn(3, 4), (0, 1), 0), ValueError, ["same length"]),
    (lambda: rg.unflatten(rg.randn(3, 4), 1, (3, -1)), ValueError, ["(3, 4)", "4"]),
    (lambda: rg.meshgrid(rg.randn(3), indexing="xz"), ValueError, ["indexing"]),
    (lambda: rg.diagonal(rg.randn(3), 0), ValueError, ["2 dimensions"]),
    (lambda: rg.tril(rg.randn(3)), ValueError, ["2 dimensions", "(3,)"]),
    (lambda: rg.randn(3, 4).unfold(1, 5, 1), ValueError, ["size 5", "(3, 4)"]),
    (lambda: rg.randn(3, 4).unfold(1, 2, 0), ValueError, ["step"]),
    (lambda: F.unfold(rg.randn(1, 1, 3, 3), 4), ValueError, ["kernel_size (4, 4)", "(1, 1, 3, 3)"]),
    (lambda: F.unfold(rg.randn(3, 3), 2), ValueError, ["(3, 3)"]),
    (lambda: F.fold(rg.randn(1, 4, 5), (3, 3), 2), ValueError, ["5 blocks", "2*2"]),
    (lambda: F.fold(rg.randn(1, 5, 4), (3, 3), 2), ValueError, ["divisible"]),
])
def test_bad_arguments_are_named(call, err, words):
    with pytest.raises(err) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# ----------------------------------------------------------------- rg.jit


def test_jit_reads_each_calls_indices():
    def f(x, i, j, k):
        a = rg.gather(x, 1, i)
        b = rg.scatter_add(rg.zeros_like(x), 1, i, a * 2)
        c = rg.index_select(x, 0, j)
        d = rg.scatter_reduce(x, 1, k, x[:, :2], "amax")
        return (a.sum() + (b * b).sum() + c.sum() + d.sum()) * 1.0

    g = rg.func.value_and_grad(f)
    fast = rg.jit(g)
    x = rg.tensor(randn(3, 4))
    fast(x, rg.tensor(ints(4, 3, 2)), rg.tensor([0, 2]), rg.tensor(ints(4, 3, 2)))
    for _ in range(2):
        args = (x, rg.tensor(ints(4, 3, 2)), rg.tensor(ints(3, 2)), rg.tensor(ints(4, 3, 2)))
        (v, gx), (rv, rgx) = fast(*args), g(*args)
        np.testing.assert_allclose(v.data, rv.data, rtol=1e-12)
        np.testing.assert_allclose(gx.data, rgx.data, rtol=1e-12)
    assert fast.trace_count == 1


def test_jit_replay_refuses_out_of_range_indices():
    fast = rg.jit(lambda x, i: rg.gather(x, 1, i).sum() + rg.index_select(x, 1, i[0]).sum())
    x = rg.tensor(randn(2, 3))
    fast(x, rg.tensor([[0, 1], [2, 2]]))
    for bad in ([[0, -1], [2, 2]], [[0, 3], [2, 2]]):
        with pytest.raises(IndexError):
            fast(x, rg.tensor(bad))


def test_jit_of_windows_and_repeats():
    def f(x):
        return (x.unfold(1, 3, 2) ** 2).sum() + x.repeat_interleave(2, dim=0).sum() \
            + F.unfold(x.reshape(1, 1, 3, 5), 2).sum()

    fast = rg.jit(rg.func.grad(f))
    fast(rg.tensor(randn(3, 5)))
    x = rg.tensor(randn(3, 5))
    np.testing.assert_allclose(fast(x).data, rg.func.grad(f)(x).data, rtol=1e-12)


def test_in_place_forms():
    x, m = randn(3, 4), rng.random((3, 4)) > 0.5
    a, t = rg.tensor(x), torch.tensor(x)
    a.masked_fill_(rg.tensor(m), 0.5).tril_(1)
    t.masked_fill_(torch.tensor(m), 0.5).tril_(1)
    i, s, src = ints(4, 3, 2), randn(3, 2), randn(2, 4)
    a.scatter_add_(1, rg.tensor(i), rg.tensor(s)).index_add_(0, rg.tensor([2, 0]),
                                                                rg.tensor(src))
    t.scatter_add_(1, torch.tensor(i), torch.tensor(s)).index_add_(0, torch.tensor([2, 0]),
                                                                   torch.tensor(src))
    np.testing.assert_allclose(a.data, t.numpy(), rtol=1e-12)


def test_jit_replays_sorting_on_new_values():
    def f(x):
        return x.sort(1).values[:, 0].sum() + x.topk(2).values.sum() + x.cummax(1).values.sum()

    fast = rg.jit(rg.func.grad(f))
    fast(rg.tensor(randn(3, 5)))
    x = rg.tensor(randn(3, 5))
    np.testing.assert_allclose(fast(x).data, rg.func.grad(f)(x).data, rtol=1e-12)
    assert fast.trace_count == 1


def test_jit_refuses_a_traced_mask_for_masked_select():
    fast = rg.jit(lambda x: rg.masked_select(x, x > 0).sum())
    with pytest.raises(JitError, match="index"):
        fast(rg.tensor(randn(4)))
