"""Differential value fuzzing against torch (round 8c): values, dtypes and shapes of
creation functions, reductions with dtype=, out= arguments and edge cases, each
compared with torch computed here."""
import warnings

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")


def _np(x):
    return x.detach().resolve_conj().numpy() if isinstance(x, torch.Tensor) else x.numpy()


def _same(r, t):
    """retrograd's `r` equals torch's `t`: dtype, shape, values (exact for integers)."""
    assert str(np.dtype(r.dtype)) == str(t.dtype).replace("torch.", ""), (r.dtype, t.dtype)
    assert tuple(r.shape) == tuple(t.shape)
    a, b = _np(r), _np(t)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)


def _both(fn, *arrays):
    """fn run on torch and on retrograd with copies of the same NumPy arrays."""
    return (fn(rg, *[rg.tensor(a.copy()) for a in arrays]),
            fn(torch, *[torch.tensor(a.copy()) for a in arrays]))


def _raises_like_torch(fn, *arrays):
    with pytest.raises(Exception) as et:
        fn(torch, *[torch.tensor(a.copy()) for a in arrays])
    base = next(c for c in type(et.value).__mro__ if c.__module__ == "builtins")
    with pytest.raises(base):
        fn(rg, *[rg.tensor(a.copy()) for a in arrays])


def _like_torch(fn, *arrays):
    """fn(library, *tensors of `arrays`) in both: the same kind of exception where torch
    raises, else the same result."""
    try:
        t = fn(torch, *[torch.tensor(a.copy()) for a in arrays])
    except Exception:
        _raises_like_torch(fn, *arrays)
        return
    _same(fn(rg, *[rg.tensor(a.copy()) for a in arrays]), t)


# ------------------------------------------------------------------ creation

@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8"])
def test_arange_with_float_bounds_and_an_integer_dtype(dtype):
    for args in [(2.5, 7.5, 0.5), (0.5, -1, -1), (0, 5.5, 1), (0.3, 4, 1), (-1.5, 2, 1.5),
                 (10, 0, -3), (0.9, 3), (5.7,)]:
        try:
            t = torch.arange(*args, dtype=getattr(torch, dtype))
        except Exception:
            _raises_like_torch(lambda L, a=args: L.arange(*a, dtype=getattr(L, dtype)))
            continue
        _same(rg.arange(*args, dtype=getattr(rg, dtype)), t)


@pytest.mark.parametrize("dtype", ["int64", "int8", "float32", "float64"])
def test_logspace_with_an_integer_dtype_truncates_the_bounds_first(dtype):
    for s, e, n, b in [(0.5, 1, 5, 10), (0.5, 2.5, 5, 2.0), (0, 3, 4, 10), (-1, 2, 4, 2),
                       (1.7, 3.2, 6, 3), (0.5, 1, 1, 10)]:
        _same(rg.logspace(s, e, n, base=b, dtype=getattr(rg, dtype)),
              torch.logspace(s, e, n, base=b, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("make", ["full", "full_like", "tensor"])
def test_floats_into_an_integer_dtype_must_fit_ints_wrap(make):
    for value in [-1, -1.5, 255.5, 256.0, -0.5, 2.7, 1e10, -128.7, float("nan"), -0.0, 300]:
        for dtype in ["uint8", "int8", "int32"]:
            def fn(L, value=value, dtype=dtype):
                d = getattr(L, dtype)
                if make == "full":
                    return L.full((2,), value, dtype=d)
                if make == "full_like":
                    return L.full_like(L.zeros(2, dtype=d), value)
                return L.tensor([[value, True], [1, 2]], dtype=d)
            _like_torch(fn)


# ------------------------------------------------------------------ reductions with dtype=

@pytest.mark.parametrize("src", ["uint8", "int32", "float64", "bool"])
@pytest.mark.parametrize("call", [
    lambda L, x: x.sum(dtype=L.bool), lambda L, x: x.sum(0, dtype=L.bool),
    lambda L, x: x.sum((0, 1), keepdim=True, dtype=L.bool), lambda L, x: x.prod(1, dtype=L.bool),
    lambda L, x: L.nansum(x, -1, dtype=L.int32), lambda L, x: L.nansum(x, dtype=L.float32),
    lambda L, x: L.nansum(x, 0, dtype=L.int16),
    lambda L, x: L.nanmean(x, dtype=L.float64)])
def test_reduction_dtype_argument(src, call):
    x = np.array([[5, 0, 3], [0, 0, 0]]).astype(src)
    _like_torch(call, x)


# ------------------------------------------------------------------ index writes, lerp, bincount

def test_index_fill_with_an_empty_index_is_a_copy():
    x = np.array([[4, 6, 3], [2, 1, 6]], np.uint8)
    i = np.zeros(0, np.int64)
    for dim in (0, 1, -1):
        _same(*_both(lambda L, a, b, d=dim: a.index_fill(d, b, True), x, i))
        _same(*_both(lambda L, a, b, d=dim: a.double().index_fill(d, b, 2.5), x, i))


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8", "float32"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_mean_keeps_an_integer_dtype(dtype, include_self):
    x = np.array([[4, 6, 3], [2, 1, 6]], dtype)
    i = np.array([1, 1, 0])
    s = np.array([[1, 4, 6], [1, 2, 6]], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: index_reduce is in beta
        _same(*_both(lambda L, a, b, c: a.index_reduce(1, b, c, "mean",
                                                       include_self=include_self), x, i, s))


@pytest.mark.parametrize("weight", ["tensor", 0.7, 0.2])
def test_lerp_of_complex_tensors_values_and_gradients(weight):
    rs = np.random.RandomState(0)
    a, b = (rs.randn(2, 3) + 1j * rs.randn(2, 3) for _ in range(2))
    w = rs.rand(3) + 1j * rs.rand(3)
    res = []
    for L in (rg, torch):
        A, B = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        W = L.tensor(w, requires_grad=True) if weight == "tensor" else weight
        o = L.lerp(A, B, W)
        (o.abs() ** 2).sum().backward()
        res.append([o, A.grad, B.grad] + ([W.grad] if weight == "tensor" else []))
    for r, t in zip(*res):
        _same(r, t)
    _same(*_both(lambda L, x, y: L.lerp(x, y, 0.5), a.astype(np.complex64),
                  b.astype(np.complex64)))


@pytest.mark.parametrize("wdtype", [None, "int64", "float32", "float64"])
@pytest.mark.parametrize("minlength", [0, 3])
def test_bincount_of_an_empty_input_is_int64(wdtype, minlength):
    x = np.zeros(0, np.int64)
    if wdtype is None:
        _same(*_both(lambda L, a: L.bincount(a, minlength=minlength), x))
    else:
        w = np.zeros(0, wdtype)
        _same(*_both(lambda L, a, b: L.bincount(a, weights=b, minlength=minlength), x, w))
    _same(*_both(lambda L, a, b: L.bincount(a, weights=b), np.array([1, 1, 3]),
                 np.array([1, 2, 5])))


# ------------------------------------------------------------------ out=

_X = {"f32": np.array([0.5, -1.5, 2.0], np.float32), "i32": np.array([1, -2, 3], np.int32),
      "f64": np.array([0.5, -1.5, 2.0])}


@pytest.mark.parametrize("name", ["abs", "neg", "sign", "floor", "round", "trunc", "nan_to_num",
                                  "amax", "isposinf", "signbit", "nonzero", "matmul", "where",
                                  "add", "mul", "exp", "eq", "logical_and", "maximum", "any"])
def test_out_dtype_rules(name):
    """Some kernels write only into an out of their result's dtype, others cast to it."""
    for x in ["f32", "i32", "f64"]:
        for odt in ["float64", "float32", "int64", "bool", "complex64"]:
            _out_dtype_case(name, x, odt)


def _out_dtype_case(name, x, odt):
    def fn(L, a):
        f = getattr(L, name)
        if name == "matmul":
            a = a[:, None] * a
        call = {"where": lambda **k: f(a > 0, a, a, **k), "amax": lambda **k: f(a, 0, **k)}.get(
            name, (lambda **k: f(a, a, **k)) if name in ("add", "mul", "eq", "logical_and",
                                                         "maximum", "matmul")
            else (lambda **k: f(a, **k)))
        shape = tuple(call().shape)
        o = L.zeros(shape, dtype=getattr(L, odt))
        return call(out=o), o
    try:
        t, to = fn(torch, torch.tensor(_X[x]))
    except Exception:
        _raises_like_torch(fn, _X[x])
        return
    r, ro = fn(rg, rg.tensor(_X[x]))
    assert r is ro
    _same(ro, to)


@pytest.mark.parametrize("call", [
    lambda L, a, o: L.add(a, a, out=o), lambda L, a, o: L.exp(a, out=o),
    lambda L, a, o: L.cumsum(a, 0, out=o), lambda L, a, o: L.eq(a, 1, out=o),
    lambda L, a, o: L.cat([a, a], out=o), lambda L, a, o: L.sum(a, 0, out=o)])
@pytest.mark.parametrize("osize", [0, 1, 7])
def test_out_of_another_size_is_resized_with_torch_warning(call, osize):
    x = np.array([0.5, -1.5, 2.0], np.float32)
    res = []
    for L in (rg, torch):
        o = L.zeros(osize)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = call(L, L.tensor(x), o)
        assert r is o
        res.append((o, [str(m.message)[:40] for m in w if m.category is UserWarning]))
    _same(res[0][0], res[1][0])
    assert res[0][1] == res[1][1]


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "std", "var", "nansum", "norm",
                                  "cumsum", "cumprod"])
def test_reductions_take_out_and_compute_in_its_dtype(name):
    for odt in ["float64", "float32", "int64"]:
        _reduction_out_case(name, odt)


def _reduction_out_case(name, odt):
    x = np.array([[0.5, -1.5, 2.0], [3.25, 1.0, -0.5]], np.float32)

    def fn(L, a):
        o = L.zeros(3, dtype=getattr(L, odt))
        r = getattr(L, name)(a, 0, out=o) if name != "norm" else L.norm(a, dim=0, out=o)
        return r, o
    try:
        t, to = fn(torch, torch.tensor(x))
    except NotImplementedError:  # a kernel torch lacks (nansum into int64)
        return
    except Exception:
        _raises_like_torch(fn, x)
        return
    r, ro = fn(rg, rg.tensor(x))
    assert r is ro
    _same(ro, to)


# ------------------------------------------------------------------ 0-d tensors

def test_splitting_and_joining_a_0d_tensor_raise_as_torch():
    x = np.array(1.5)
    for fn in [lambda L, a: a.split(1), lambda L, a: L.split(a, [1]), lambda L, a: a.chunk(1),
               lambda L, a: L.tensor_split(a, 2), lambda L, a: a.tensor_split([1]),
               lambda L, a: a.narrow(0, 0, 0), lambda L, a: L.cat([a, a]),
               lambda L, a: L.cat([a.reshape(1), a]), lambda L, a: a.unflatten(0, (1,)),
               lambda L, a: L.roll(a, 1, 0), lambda L, a: L.roll(a, -3, -1)]:
        _raises_like_torch(fn, x)
    for fn in [lambda L, a: L.roll(a, 2), lambda L, a: L.hstack([a, a]),
               lambda L, a: L.stack([a, a]), lambda L, a: L.cat([a.reshape(1), L.zeros(0)])]:
        _same(*_both(fn, x))


@pytest.mark.parametrize("dtype", ["int16", "uint8", "int32", "int64", "float32"])
def test_scatter_reduce_mean_keeps_an_integer_dtype(dtype):
    x = np.array([-4, 5, 7, 2]).astype(dtype)
    v = np.array([-1, 2, 2, 1, 9]).astype(dtype)
    i = np.array([0, 0, 2, 2, 3])
    for include_self in (True, False):
        _same(*_both(lambda L, a, b, c, s=include_self: a.scatter_reduce(0, b, c, "mean",
                                                                          include_self=s),
                     x, i, v))


def test_var_std_of_complex_data_stay_real_when_the_degrees_of_freedom_run_out():
    z = np.array([[1 + 2j, 3 - 1j], [0.5j, 2]], np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: degrees of freedom <= 0
        for corr in (0, 1, 2, 3):
            _same(*_both(lambda L, a, c=corr: a.var(0, correction=c), z))
            _same(*_both(lambda L, a, c=corr: a.std(0, correction=c), z))
            _same(*_both(lambda L, a, c=corr: L.var(a, correction=c), z.astype(np.complex128)))


# ------------------------------------------------------------------ whole programs

def _metrics_program(L, logits, labels):
    """Evaluation code as written in training repos: confusion matrix by bincount, per-class
    accuracy, top-k hits, a calibration histogram, per-class mean confidence with
    scatter_reduce, and running totals into preallocated buffers with out=."""
    n, c = logits.shape
    probs = logits.softmax(-1)
    conf, pred = probs.max(1)
    cm = L.bincount(labels * c + pred, minlength=c * c).reshape(c, c)
    per_class = cm.diag() / cm.sum(1).clamp(min=1)
    top3 = logits.topk(3, dim=1).indices
    hits = (top3 == labels[:, None]).any(1)
    edges = L.linspace(0, 1, 6, dtype=L.float64)
    bins = L.bucketize(conf.double(), edges[1:-1])
    counts = L.bincount(bins, minlength=5)
    acc_bin = L.zeros(5, dtype=L.float64).index_add(0, bins, (pred == labels).double())
    acc_bin = acc_bin / counts.clamp(min=1)
    mean_conf = L.zeros(c, dtype=logits.dtype).scatter_reduce(0, labels, conf, "mean",
                                                              include_self=False)
    totals = L.zeros(3, dtype=L.int64)
    L.sum(L.stack([hits.long(), (pred == labels).long(), labels.ne(0).long()]), 1,
          out=totals)
    steps = L.arange(0, n, 2.5, dtype=L.int32)
    levels = L.logspace(0, 2, 3, dtype=L.int64)
    return [cm, per_class, hits, counts, acc_bin, mean_conf, totals, steps, levels,
            L.full((2,), 255.0, dtype=L.uint8), cm.sum(dtype=L.bool)]


def test_whole_program_classification_metrics():
    rs = np.random.RandomState(3)
    logits = rs.randn(40, 5)
    labels = rs.randint(0, 5, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = _metrics_program(rg, rg.tensor(logits), rg.tensor(labels))
        t = _metrics_program(torch, torch.tensor(logits), torch.tensor(labels))
    for a, b in zip(r, t, strict=True):
        _same(a, b)


def _prep_program(L, ids, vals, mask):
    """Data preparation with mixed dtypes: int ids and a bool mask meet float values,
    0-d tensors and Python scalars (type promotion), in-place updates that must fit their
    target's dtype, sorting, unique with counts, searchsorted and cumulative sums."""
    scale = L.tensor(2)                       # 0-d int64
    shifted = ids * scale + 1                 # int64
    w = vals * mask + 0.5 * ~mask             # float32 (bool promotes)
    z = (ids.to(L.int16) + L.tensor(3, dtype=L.int32))  # int16: the 0-d int32 loses
    ratio = ids / scale                       # true division: float32
    fl = ids // 3 - ids % 3                   # int64
    u, inv, cnt = L.unique(ids, return_inverse=True, return_counts=True)
    order = L.sort(vals, descending=True, stable=True)
    pos = L.searchsorted(L.cumsum(cnt, 0), ids, right=True)
    run = L.cumsum(mask, 0, dtype=L.int32)
    acc = L.zeros_like(vals, dtype=L.float64)
    acc += vals                               # float64 += float32: fine
    bad = None
    try:
        ids_copy = ids.clone()
        ids_copy *= 1.5                       # int64 *= float: torch raises
    except RuntimeError:
        bad = "raised"
    head, tail = L.split(vals, [3, vals.shape[0] - 3])
    pieces = vals.chunk(4)
    return [shifted, w, z, ratio, fl, u, inv, cnt, order.values, order.indices, pos, run, acc,
            head, tail, *pieces, L.tensor([[1, 2.5], [True, 0]]), L.tensor([True, 1]),
            vals.new_full((2,), 7), L.where(mask, ids, -1), bad]


def test_whole_program_data_preparation_with_mixed_dtypes():
    rs = np.random.RandomState(4)
    ids = rs.randint(0, 6, 10)
    vals = rs.randn(10).astype(np.float32)
    mask = rs.rand(10) > 0.4
    r = _prep_program(rg, rg.tensor(ids), rg.tensor(vals), rg.tensor(mask))
    t = _prep_program(torch, torch.tensor(ids), torch.tensor(vals), torch.tensor(mask))
    for a, b in zip(r, t, strict=True):
        if isinstance(b, torch.Tensor):
            _same(a, b)
        else:
            assert a == b


def test_isclose_of_two_dtypes_and_nanmean_into_an_integer_dtype_raise_as_torch():
    a, b = np.array([2, 6], np.uint8), np.array(0)
    _raises_like_torch(lambda L, x, y: L.isclose(x, y), a, b)
    _raises_like_torch(lambda L, x, y: L.isclose(x, y), a.astype(np.float32), a.astype(float))
    x = np.array([[0.0, np.nan], [1.5, -3.0]], np.float32)
    _raises_like_torch(lambda L, t: L.nanmean(t, dim=-1, dtype=L.int64), x)
    _raises_like_torch(lambda L, t: t.nanmean(dtype=L.int32), x)
    _same(*_both(lambda L, t: t.nanmean(0, dtype=L.float64), x))


def test_mT_of_0d_1d_and_batched_tensors():
    _raises_like_torch(lambda L, x: x.mT, np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: deprecated on 0-D tensors
        _same(*_both(lambda L, x: x.mT, np.array(2.5)))
    _same(*_both(lambda L, x: x.mT, np.arange(24.0).reshape(2, 3, 4)))


def test_trapezoid_with_infinities_bools_and_0d_inputs_as_torch():
    inf = np.inf
    for y in ([1.0, inf, -inf, 2.0], [[1.0, 2.0], [3.0, inf]], [1.0, 2.0, 4.0], [3.0], []):
        y = np.array(y)
        for kw in ({}, {"dx": 0.5}, {"dim": 0}):
            _same(*_both(lambda L, t, k=kw: L.trapezoid(t, **k), y))
            if y.ndim:
                _same(*_both(lambda L, t, k=kw: L.cumulative_trapezoid(t, **k), y))
    for fn in ("trapezoid", "cumulative_trapezoid"):
        _raises_like_torch(lambda L, t, f=fn: getattr(L, f)(t), np.array([True, False]))
        _raises_like_torch(lambda L, t, f=fn: getattr(L, f)(t), np.array(1.5))


@pytest.mark.parametrize("bounds", ["numbers", "min_only", "tensors"])
def test_clamp_out_dtype_depends_on_the_bounds(bounds):
    x = np.array([0.5, -1.5, 2.0], np.float32)
    for odt in ("float64", "float32", "int64", "complex64"):
        def fn(L, a, odt=odt):
            o = L.zeros(3, dtype=getattr(L, odt))
            if bounds == "numbers":
                return L.clamp(a, 0, 1, out=o), o
            if bounds == "min_only":
                return L.clamp(a, min=0.25, out=o), o
            return L.clamp(a, L.zeros(3), L.ones(3), out=o), o
        try:
            t = fn(torch, torch.tensor(x))
        except Exception:
            _raises_like_torch(fn, x)
            continue
        r = fn(rg, rg.tensor(x))
        assert r[0] is r[1]
        _same(r[1], t[1])


def test_number_values_written_into_an_unsigned_tensor_wrap_or_raise_as_torch():
    x, i = np.array([5, 6, 4], np.uint8), np.array([0, 2])
    for v in (-1, 300, 2.5, -0.5, True):
        for fn in (lambda L, a, b, v=v: a.scatter(0, b, v),
                   lambda L, a, b, v=v: a.index_fill(0, b, v),
                   lambda L, a, b, v=v: a.masked_fill(a > 4, v)):
            _like_torch(fn, x, i)


def test_setitem_with_a_number_converts_it_as_torch():
    for dt, v in (("uint8", -3), ("uint8", 300), ("float32", 1 + 2j), ("float32", 1e40),
                  ("int32", 2.7), ("int8", -1.5), ("bool", 5), ("float16", 70000.0),
                  ("complex64", 1 + 2j), ("float64", True), ("uint8", -0.5),
                  ("int64", float("nan"))):
        def fn(L, x, v=v, dt=dt):
            x = x.to(getattr(L, dt))
            x[x == 0] = v
            x[:, 1] = v
            return x
        x = np.zeros((2, 3))
        x[0, 0] = 1
        _like_torch(fn, x)


def test_copy_from_a_source_broader_than_self_raises_as_torch():
    s, y = np.zeros((3, 2)), np.ones((2, 3, 2), np.int16)
    _raises_like_torch(lambda L, a, b: a.copy_(b), s, y)
    _raises_like_torch(lambda L, a, b: a.copy_(b), s, np.ones((3, 1, 2)))
    _same(*_both(lambda L, a, b: a.copy_(b), s, np.arange(2, dtype=np.int16)))
    _raises_like_torch(lambda L, a, b: a.copy_(b), s, np.ones((1, 3, 2)))
    _same(*_both(lambda L, a, b: a.copy_(b), s, np.ones((3, 1))))


def test_ldexp_result_dtype_is_the_promoted_floating_dtype():
    x, e = np.array([0.0, 4.3, -1.5]), np.array([4, -1, 2], np.int32)
    for xd in ("float16", "float32", "float64", "int32", "bool", "complex64"):
        for ed in ("int32", "int64", "float64", "uint8"):
            _same(*_both(lambda L, a, b: L.ldexp(a, b), x.astype(xd), e.astype(ed)))
    # gradients through the composition, as torch's
    res = []
    for L in (rg, torch):
        a = L.tensor(x, requires_grad=True)
        b = L.tensor(e.astype(float), requires_grad=True)
        L.ldexp(a, b).sum().backward()
        res.append((a.grad, b.grad))
    for r, t in zip(*res):
        _same(r, t)
