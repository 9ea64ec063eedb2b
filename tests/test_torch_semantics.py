"""Where PyTorch is the reference: values, dtypes, shapes and gradients against torch.

Each family is checked over its neighbours, not just one example: cross-entropy's
ignore_index with weights, smoothing, every reduction and N-d inputs; probability
targets unbatched; pow at 0 in the vjp, the jvp and second order; mixed indexing;
linspace with integer dtypes; reductions over 0-d tensors; einsum diagonals;
max/min's (values, indices); clamp with min > max; convolution argument errors.
"""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import retrograd as rg
import retrograd.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(autouse=True)
def _torch_default_float32():
    """Both libraries with float32 as the default float dtype (another test module may have
    changed torch's)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(old)

DTYPES = [(np.float32, torch.float32), (np.float64, torch.float64)]


def _close(a, b, dtype=np.float64):
    tol = 1e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=tol, atol=tol, equal_nan=True)


def _pair(arr, np_dtype, torch_dtype, grad=True):
    return (rg.tensor(arr.astype(np_dtype), requires_grad=grad),
            torch.tensor(arr, dtype=torch_dtype, requires_grad=grad))


# ---------------------------------------------------------------- cross-entropy, nll


def _targets(rng, shape, classes, ignore, frac):
    y = rng.integers(0, classes, shape)
    y[rng.random(shape) < frac] = ignore
    return y


CE_SHAPES = [(5, 4), (3, 4, 2), (2, 3, 2, 2), (4,)]


@pytest.mark.parametrize("shape,np_dtype,torch_dtype", [
    (s, *d) for s in CE_SHAPES for d in DTYPES if d[0] == np.float64 or s in ((5, 4), (4,))])
@pytest.mark.parametrize("ignore", [-100, 1])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll_class_targets_match_torch(np_dtype, torch_dtype, shape, ignore,
                                                         weighted, smoothing, reduction):
    rng = np.random.default_rng(hash((shape, ignore, weighted)) % 2 ** 32)
    classes = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    y = _targets(rng, tshape, classes, ignore, 0.4)
    x, tx = _pair(rng.standard_normal(shape), np_dtype, torch_dtype)
    w = rng.uniform(0.5, 2.0, classes) if weighted else None
    kw = dict(ignore_index=ignore, reduction=reduction)
    ours = F.cross_entropy(x, rg.tensor(y), None if w is None else rg.tensor(w.astype(np_dtype)),
                           label_smoothing=smoothing, **kw)
    theirs = TF.cross_entropy(tx, torch.tensor(y), None if w is None else torch.tensor(
        w, dtype=torch_dtype), label_smoothing=smoothing, **kw)
    assert ours.dtype == np_dtype and ours.shape == tuple(theirs.shape)
    _close(ours.data, theirs.detach().numpy(), np_dtype)
    gw = rng.standard_normal(theirs.shape)
    ours.backward(rg.tensor(gw.astype(np_dtype)))
    theirs.backward(torch.tensor(gw, dtype=torch_dtype))
    _close(x.grad.data, tx.grad.numpy(), np_dtype)
    # nll_loss on log-probabilities: the same family
    x2, tx2 = _pair(rng.standard_normal(shape), np_dtype, torch_dtype)
    ours = F.nll_loss(F.log_softmax(x2, 1 if len(shape) > 1 else 0), rg.tensor(y),
                      None if w is None else rg.tensor(w.astype(np_dtype)), **kw)
    theirs = TF.nll_loss(TF.log_softmax(tx2, 1 if len(shape) > 1 else 0), torch.tensor(y),
                         None if w is None else torch.tensor(w, dtype=torch_dtype), **kw)
    _close(ours.data, theirs.detach().numpy(), np_dtype)
    (ours * 2).sum().backward()
    (theirs * 2).sum().backward()
    _close(x2.grad.data, tx2.grad.numpy(), np_dtype)


def test_cross_entropy_ignore_index_example_from_the_report():
    x = rg.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]])
    tx = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]])
    for reduction in ("mean", "sum", "none"):
        ours = F.cross_entropy(x, rg.tensor([0, 1]), ignore_index=1, reduction=reduction)
        theirs = TF.cross_entropy(tx, torch.tensor([0, 1]), ignore_index=1, reduction=reduction)
        _close(ours.data, theirs.numpy(), np.float32)


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_target_ignored_gives_nan_mean_and_zero_sum(fn, weighted):
    x, tx = _pair(np.random.default_rng(0).standard_normal((3, 4)), np.float64, torch.float64)
    y = np.full(3, 2)
    w = np.array([1.0, 2.0, 3.0, 4.0]) if weighted else None
    for reduction in ("mean", "sum", "none"):
        ours = getattr(F, fn)(x, rg.tensor(y), None if w is None else rg.tensor(w),
                              ignore_index=2, reduction=reduction)
        theirs = getattr(TF, fn)(tx, torch.tensor(y), None if w is None else torch.tensor(w),
                                 ignore_index=2, reduction=reduction)
        _close(ours.data, theirs.detach().numpy())


def test_cross_entropy_with_ignore_index_replays_under_jit():
    def loss(x, y):
        return F.cross_entropy(x, y, ignore_index=1, label_smoothing=0.1)

    jl = rg.jit(loss)
    rng = np.random.default_rng(1)
    x = rg.tensor(rng.standard_normal((6, 4)))
    for y in ([0, 2, 3, 0, 2, 3], [1, 1, 0, 2, 1, 3], [1, 1, 1, 1, 1, 1]):
        want = TF.cross_entropy(torch.tensor(x.data), torch.tensor(y), ignore_index=1,
                                label_smoothing=0.1)
        _close(jl(x, rg.tensor(y)).data, want.numpy(), np.float32)


@pytest.mark.parametrize("np_dtype,torch_dtype", DTYPES)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 4, 3)])
def test_probability_targets_keep_the_target_gradient(np_dtype, torch_dtype, smoothing,
                                                      weighted, shape):
    rng = np.random.default_rng(2)
    x, tx = _pair(rng.standard_normal(shape), np_dtype, torch_dtype)
    p = rng.random(shape)
    axis = 0 if len(shape) == 1 else 1
    p /= p.sum(axis=axis, keepdims=True)
    y, ty = _pair(p, np_dtype, torch_dtype)
    classes = shape[axis]
    w = rng.uniform(0.5, 2, classes) if weighted else None
    for reduction in ("mean", "sum", "none"):
        ours = F.cross_entropy(x, y, None if w is None else rg.tensor(w.astype(np_dtype)),
                               reduction=reduction, label_smoothing=smoothing)
        theirs = TF.cross_entropy(tx, ty, None if w is None else torch.tensor(
            w, dtype=torch_dtype), reduction=reduction, label_smoothing=smoothing)
        _close(ours.data, theirs.detach().numpy(), np_dtype)
        ours.sum().backward()
        theirs.sum().backward()
        assert y.grad is not None
        _close(y.grad.data, ty.grad.numpy(), np_dtype)
        _close(x.grad.data, tx.grad.numpy(), np_dtype)


# ---------------------------------------------------------------- pow at 0

POW_POINTS = [(0.0, 0.0), (0.0, 2.0), (0.0, -1.0), (0.0, 0.5), (0.0, 1.0), (0.0, 3.0),
              (2.0, 0.0), (-1.0, 2.0), (1.5, -2.0)]


def _grads(lib, xv, yv, tensor_y, dtype):
    """First and second derivatives of sum(x ** y) by reverse mode."""
    if lib == "rg":
        x = rg.tensor(np.array([xv], dtype=dtype[0]), requires_grad=True)
        y = rg.tensor(np.array([yv], dtype=dtype[0]), requires_grad=True) if tensor_y else yv
        grad = rg.autograd.grad
    else:
        x = torch.tensor([xv], dtype=dtype[1], requires_grad=True)
        y = torch.tensor([yv], dtype=dtype[1], requires_grad=True) if tensor_y else yv
        grad = torch.autograd.grad
    ins = [x, y] if tensor_y else [x]
    first = grad((x ** y).sum(), ins, create_graph=True)
    out = [g.detach().numpy() if lib == "torch" else g.data for g in first]
    for g in first:
        if not g.requires_grad:
            out.append(None)
            continue
        second = grad(g.sum(), ins, retain_graph=True, allow_unused=True)
        out += [None if s is None else (s.numpy() if lib == "torch" else s.data)
                for s in second]
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("xv,yv", POW_POINTS)
@pytest.mark.parametrize("tensor_y", [False, True])
def test_pow_derivatives_at_zero_match_torch_to_second_order(dtype, xv, yv, tensor_y):
    ours = _grads("rg", xv, yv, tensor_y, dtype)
    theirs = _grads("torch", xv, yv, tensor_y, dtype)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None)
        if a is not None:
            _close(a, b, dtype[0])


@pytest.mark.parametrize("xv,yv", POW_POINTS)
def test_pow_jvp_at_zero_matches_torch(xv, yv):
    x, y = np.array([xv]), np.array([yv])
    for tx_, ty_ in ((1.0, 0.0), (0.0, 1.0), (0.5, -2.0)):
        _, ours = rg.func.jvp(lambda a, b: a ** b, (rg.tensor(x), rg.tensor(y)),
                              (rg.tensor([tx_]), rg.tensor([ty_])))
        _, theirs = torch.func.jvp(lambda a, b: a ** b, (torch.tensor(x), torch.tensor(y)),
                                   (torch.tensor([tx_]), torch.tensor([ty_])))
        _close(ours.data, theirs.numpy())
    _, ours = rg.func.jvp(lambda a: a ** yv, (rg.tensor(x),), (rg.tensor([1.0]),))
    _, theirs = torch.func.jvp(lambda a: a ** yv, (torch.tensor(x),), (torch.tensor([1.0]),))
    _close(ours.data, theirs.numpy())


# ---------------------------------------------------------------- indexing

def _index_cases():
    idx = np.array([0, 2, 1])
    idx2 = np.array([[1, 0], [2, 2]])
    mask = np.array([True, False, True, True, False])
    items = [1, -1, slice(None), slice(1, 4), None, Ellipsis, idx, idx2, mask]
    cases = [(1, slice(None), idx), (slice(None), 1, idx), (idx, 1), (1, idx),
             (idx, slice(None), 1), (1, slice(None), idx, slice(None)),
             (None, 1, slice(None), idx), (Ellipsis, 1, idx), (1, Ellipsis, idx),
             (idx, slice(None), idx), (1, idx, idx), (idx2, 1, slice(None), idx),
             (1, slice(None), slice(None), mask), (mask, 1), (0, None, idx, None),
             (slice(None), idx2, 1, slice(None)), (1, 1, idx), (idx, None, 1)]
    for a, b, c in itertools.product(items, repeat=3):  # a generated family on top
        cases.append((a, b, c))
    return cases


def _fits(idx, shape):
    if sum(i is Ellipsis for i in idx) > 1:  # PyTorch accepts several; NumPy and we do not
        return False
    try:
        torch.zeros(shape)[_torch_index(idx)]
    except (IndexError, RuntimeError, TypeError, ValueError):
        return False
    return True


def _torch_index(idx):
    return tuple(torch.as_tensor(i) if isinstance(i, np.ndarray) else i for i in idx)


@pytest.mark.parametrize("np_dtype,torch_dtype", DTYPES)
def test_mixed_indexing_matches_torch_forward_and_gradient(np_dtype, torch_dtype):
    shape = (2, 5, 6, 5)
    base = np.random.default_rng(3).standard_normal(shape)
    checked = 0
    for idx in _index_cases():
        if not _fits(idx, shape):
            continue
        x, tx = _pair(base, np_dtype, torch_dtype)
        got = x[idx]
        want = tx[_torch_index(idx)]
        assert got.shape == tuple(want.shape), (idx, got.shape, want.shape)
        _close(got.data, want.detach().numpy(), np_dtype)
        gw = np.random.default_rng(4).standard_normal(want.shape)
        got.backward(rg.tensor(gw.astype(np_dtype)))
        want.backward(torch.tensor(gw, dtype=torch_dtype))
        _close(x.grad.data, tx.grad.numpy(), np_dtype)
        checked += 1
    assert checked > 200


def test_mixed_indexing_of_the_report_and_setitem():
    x = rg.zeros(2, 5, 6, 5)
    idx = rg.tensor([0, 2, 1])
    assert x[1, :, idx].shape == (5, 3, 5)
    tx = torch.zeros(2, 5, 6, 5)
    v = np.arange(75.0).reshape(5, 3, 5)
    x[1, :, idx] = rg.tensor(v.astype(np.float32))
    tx[1, :, torch.tensor([0, 2, 1])] = torch.tensor(v, dtype=torch.float32)
    np.testing.assert_array_equal(x.data, tx.numpy())


def test_mixed_indexing_jvp_matches_torch():
    rng = np.random.default_rng(5)
    x, t = rng.standard_normal((3, 5, 6, 5)), rng.standard_normal((3, 5, 6, 5))
    idx = np.array([0, 2, 1])
    for sel in [(1, slice(None), idx), (slice(None), 1, idx), (idx, slice(None), 1)]:
        _, ours = rg.func.jvp(lambda a, sel=sel: a[sel] * 2, (rg.tensor(x),), (rg.tensor(t),))
        tsel = _torch_index(sel)
        _, theirs = torch.func.jvp(lambda a, tsel=tsel: a[tsel] * 2, (torch.tensor(x),),
                                   (torch.tensor(t),))
        assert ours.shape == tuple(theirs.shape)
        _close(ours.data, theirs.numpy())


# ---------------------------------------------------------------- creation, reductions


@pytest.mark.parametrize("dtype", [(np.int32, torch.int32), (np.int64, torch.int64),
                                   (np.int8, torch.int8)])
@pytest.mark.parametrize("args", [(5, -5, 20), (-5.5, 5.5, 5), (0, 10, 7), (3, 3, 4),
                                  (-7.9, 2.2, 13), (0, 1, 1), (10, -3, 2), (0, 100, 0),
                                  (-100, 100, 33), (2.7, -2.7, 6)])
def test_linspace_with_integer_dtype_truncates_like_torch(dtype, args):
    got = rg.linspace(*args, dtype=dtype[0])
    want = torch.linspace(*args, dtype=dtype[1])
    assert got.dtype == dtype[0]
    np.testing.assert_array_equal(got.data, want.numpy())


def test_linspace_float_and_bool():
    for args in [(0, 1, 5), (5, -5, 20), (-2.5, 3.5, 7)]:
        for dt, tdt in DTYPES:
            _close(rg.linspace(*args, dtype=dt).data, torch.linspace(*args, dtype=tdt).numpy(),
                   np.float32)
    assert rg.linspace(0, 1, 3).dtype == np.float32
    with pytest.raises(TypeError, match="bool"):
        rg.linspace(0, 1, 3, dtype=rg.bool_)


REDUCTIONS = ["sum", "prod", "mean", "logsumexp", "amax"]


@pytest.mark.parametrize("np_dtype,torch_dtype", DTYPES)
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "logsumexp", "max", "min", "softmax",
                                  "log_softmax"])
@pytest.mark.parametrize("value", [2.0, 0.0, -1.5])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_a_0d_tensor_match_torch(np_dtype, torch_dtype, name, value, dim,
                                                  keepdim):
    x, tx = _pair(np.array(value), np_dtype, torch_dtype)
    if name in ("softmax", "log_softmax"):
        ours, theirs = getattr(x, name)(dim), getattr(tx, name)(dim)
    else:
        ours, theirs = getattr(x, name)(dim, keepdim=keepdim), getattr(tx, name)(dim,
                                                                               keepdim=keepdim)
    if name in ("max", "min"):
        assert ours.indices.shape == tuple(theirs.indices.shape)
        np.testing.assert_array_equal(ours.indices.data, theirs.indices.numpy())
        ours, theirs = ours.values, theirs.values
    assert ours.shape == tuple(theirs.shape)
    _close(ours.data, theirs.detach().numpy(), np_dtype)
    (g,) = rg.autograd.grad(ours * 3, [x], create_graph=True)
    (tg,) = torch.autograd.grad(theirs * 3, [tx], create_graph=True)
    _close(g.data, tg.detach().numpy(), np_dtype)


# ---------------------------------------------------------------- einsum diagonals

EINSUM_DIAG = [("ii->i", [(3, 3)]), ("ii->", [(3, 3)]), ("ii", [(3, 3)]),
               ("bii->bi", [(2, 3, 3)]), ("iij->j", [(3, 3, 4)]), ("iii->i", [(3, 3, 3)]),
               ("iijj->ij", [(2, 2, 3, 3)]), ("ij,jj->i", [(3, 4), (4, 4)]),
               ("ii,i->i", [(3, 3), (3,)]), ("jii->ij", [(2, 3, 3)]),
               ("...ii->...i", [(2, 3, 3)]), ("iji->j", [(3, 4, 3)]),
               ("bii,bi->b", [(2, 3, 3), (2, 3)]), ("ii,jj->ij", [(3, 3), (2, 2)]),
               ("iij,jk->ik", [(2, 2, 3), (3, 4)])]


@pytest.mark.parametrize("np_dtype,torch_dtype", DTYPES)
@pytest.mark.parametrize("spec,shapes", EINSUM_DIAG, ids=[c[0] for c in EINSUM_DIAG])
def test_einsum_repeated_index_vjp_jvp_second_order(np_dtype, torch_dtype, spec, shapes):
    rng = np.random.default_rng(6)
    arrs = [rng.standard_normal(s) for s in shapes]
    pairs = [_pair(a, np_dtype, torch_dtype) for a in arrs]
    xs, ts = [p[0] for p in pairs], [p[1] for p in pairs]
    y, ty = rg.einsum(spec, *xs), torch.einsum(spec, *ts)
    assert y.shape == tuple(ty.shape)
    _close(y.data, ty.detach().numpy(), np_dtype)
    w = rng.standard_normal(ty.shape)
    g = rg.autograd.grad((y * rg.tensor(w.astype(np_dtype))).sum(), xs, create_graph=True)
    tg = torch.autograd.grad((ty * torch.tensor(w, dtype=torch_dtype)).sum(), ts,
                             create_graph=True)
    for a, b in zip(g, tg):
        _close(a.data, b.detach().numpy(), np_dtype)
    s2 = sum((gi * gi * gi).sum() for gi in g)
    ts2 = sum((gi * gi * gi).sum() for gi in tg)
    if ts2.requires_grad:  # with one operand the gradient is constant: no second order
        g2 = rg.autograd.grad(s2, xs, allow_unused=True)
        tg2 = torch.autograd.grad(ts2, ts, allow_unused=True)
        for a, b in zip(g2, tg2):
            if b is None:
                assert a is None or not np.any(a.data)
            else:
                _close(a.data, b.numpy(), np_dtype)
    tans = [rng.standard_normal(s) for s in shapes]
    _, jt = rg.func.jvp(lambda *a: rg.einsum(spec, *a),
                        tuple(rg.tensor(a.astype(np_dtype)) for a in arrs),
                        tuple(rg.tensor(t.astype(np_dtype)) for t in tans))
    _, tjt = torch.func.jvp(lambda *a: torch.einsum(spec, *a),
                            tuple(torch.tensor(a, dtype=torch_dtype) for a in arrs),
                            tuple(torch.tensor(t, dtype=torch_dtype) for t in tans))
    _close(jt.data, tjt.numpy(), np_dtype)
    h = rg.func.hessian(lambda a: (rg.einsum(spec, a, *xs[1:]) ** 2).sum())(
        rg.tensor(arrs[0].astype(np_dtype)))
    th = torch.func.hessian(lambda a: (torch.einsum(spec, a, *[t.detach() for t in ts[1:]])
                                       ** 2).sum())(torch.tensor(arrs[0], dtype=torch_dtype))
    _close(h.data, th.numpy(), np_dtype)


# ---------------------------------------------------------------- max / min with a dim


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim_return_values_and_indices(name, dim, keepdim):
    a = np.random.default_rng(7).standard_normal((3, 4))
    x, tx = _pair(a, np.float64, torch.float64)
    for ours, theirs in ((getattr(x, name)(dim, keepdim), getattr(tx, name)(dim, keepdim)),
                         (getattr(rg, name)(x, dim, keepdim=keepdim),
                          getattr(torch, name)(tx, dim, keepdim=keepdim)),
                         (getattr(x, name)(dim=dim, keepdim=keepdim),
                          getattr(tx, name)(dim=dim, keepdim=keepdim))):
        values, indices = ours
        assert ours.values is values and ours.indices is indices and ours[1] is indices
        assert indices.dtype == np.int64 and values.shape == tuple(theirs.values.shape)
        np.testing.assert_array_equal(indices.data, theirs.indices.numpy())
        _close(values.data, theirs.values.detach().numpy())
        (values * 2).sum().backward()
        (theirs.values * 2).sum().backward()
        _close(x.grad.data, tx.grad.numpy())
    whole = getattr(x, name)()
    assert isinstance(whole, rg.Tensor) and whole.shape == ()
    other = rg.tensor(a[::-1].copy())
    _close(getattr(rg, name)(x, other).data,
           getattr(torch, name)(tx, torch.tensor(a[::-1].copy())).detach().numpy())


def test_max_dim_argmax_idiom_and_jit():
    logits = rg.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 1.0]])
    np.testing.assert_array_equal(logits.max(1)[1].data, [1, 0])

    @rg.jit
    def f(z):
        return z.max(1)

    out = f(logits)
    np.testing.assert_array_equal(out.indices.data, [1, 0])
    np.testing.assert_allclose(out.values.data, [2.0, 3.0])


# ---------------------------------------------------------------- clamp, conv args, ints


@pytest.mark.parametrize("np_dtype,torch_dtype", DTYPES)
@pytest.mark.parametrize("lo,hi", [(1.0, -1.0), (0.5, 0.5), (-0.5, 0.5), (None, 0.0),
                                   (0.0, None), (2.0, 1.0)])
def test_clamp_values_and_gradients_match_torch(np_dtype, torch_dtype, lo, hi):
    a = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0])
    x, tx = _pair(a, np_dtype, torch_dtype)
    ours, theirs = x.clamp(lo, hi), tx.clamp(lo, hi)
    _close(ours.data, theirs.detach().numpy(), np_dtype)
    (ours * rg.tensor(np.arange(8.0).astype(np_dtype))).sum().backward()
    (theirs * torch.arange(8.0, dtype=torch_dtype)).sum().backward()
    _close(x.grad.data, tx.grad.numpy(), np_dtype)


@pytest.mark.parametrize("kwargs,word", [
    (dict(padding=-1), "padding"), (dict(stride=0), "stride"), (dict(stride=-2), "stride"),
    (dict(dilation=0), "dilation"), (dict(groups=0), "groups"), (dict(padding=(1, -1)),
                                                               "padding"),
    (dict(padding=1.5), "padding"), (dict(stride=(1, 2, 3)), "stride")])
def test_conv2d_bad_arguments_raise_naming_them(kwargs, word):
    x, w = rg.ones(1, 2, 5, 5), rg.ones(3, 2, 3, 3)
    with pytest.raises((ValueError, TypeError), match=word):
        F.conv2d(x, w, **kwargs)
    with pytest.raises((ValueError, TypeError, RuntimeError)):
        TF.conv2d(torch.ones(1, 2, 5, 5), torch.ones(3, 2, 3, 3), **kwargs)


@pytest.mark.parametrize("start, end, dtype", [(0, 300, "uint8"), (0, 2**31, "int32"),
                                               (-200, 0, "int8")])
def test_linspace_refuses_bounds_its_integer_dtype_cannot_hold_like_torch(start, end, dtype):
    import torch
    with pytest.raises(RuntimeError):
        torch.linspace(start, end, 7, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError, match="overflow"):
        rg.linspace(start, end, 7, dtype=np.dtype(dtype))


def test_linspace_wraps_a_negative_int_start_for_uint8_as_torch():
    # torch's check lets a negative int wrap (-1 is 255), as setitem's -1 into uint8 does
    import torch
    np.testing.assert_array_equal(rg.linspace(-1, 5, 7, dtype=np.uint8).numpy(),
                                  torch.linspace(-1, 5, 7, dtype=torch.uint8).numpy())
    with pytest.raises(RuntimeError, match="overflow"):  # a float is checked strictly
        rg.linspace(-1.0, 5, 7, dtype=np.uint8)
