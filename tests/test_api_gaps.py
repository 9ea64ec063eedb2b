"""Small PyTorch API gaps ported code hits, each compared with torch: rg.utils.dlpack and
the DLPack protocol on tensors, Tensor.as_subclass, Tensor.output_nr, the storage class
names, Tensor.set_."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.utils import dlpack as rg_dlpack

# ---------------------------------------------------------------- dlpack


def test_utils_dlpack_names_match_torch():
    from torch.utils import dlpack as t_dlpack
    assert {m.name: int(m) for m in rg_dlpack.DLDeviceType} == \
        {m.name: int(m) for m in t_dlpack.DLDeviceType}
    assert rg_dlpack.from_dlpack is rg.from_dlpack and rg_dlpack.to_dlpack is rg.to_dlpack
    assert rg.utils.dlpack is rg_dlpack


def test_capsule_round_trip_shares_writable_memory():
    t = rg.arange(6.0).reshape(2, 3)
    u = rg_dlpack.from_dlpack(rg_dlpack.to_dlpack(t))
    assert u is not t and u.shape == t.shape and u.dtype == t.dtype
    u[0, 1] = 9.0
    assert t[0, 1].item() == 9.0
    # torch's own capsule (the unversioned kind): writable, as torch's tensor from it
    tt = torch.arange(6.0).reshape(2, 3)[:, 1:]
    v = rg_dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(tt))
    w = torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(tt))
    assert v.shape == tuple(w.shape) and v.stride() == w.stride()
    np.testing.assert_array_equal(v.numpy(), w.numpy())
    v[1, 0] = -1.0
    assert tt[1, 0].item() == -1.0
    # an rg capsule read by torch
    t2 = rg.arange(4.0)
    x = torch.utils.dlpack.from_dlpack(rg_dlpack.to_dlpack(t2))
    x[2] = 7.0
    assert t2[2].item() == 7.0


def test_exporters_share_memory_both_ways():
    a = np.arange(4.0)
    t = rg.from_dlpack(a)
    t[0] = 5.0
    assert a[0] == 5.0
    tt = torch.arange(4.0)
    r = rg.from_dlpack(tt[::2])
    assert r.stride() == tt[::2].stride()
    r[1] = 3.0
    assert tt[2].item() == 3.0
    # an rg tensor is itself an exporter (torch.from_dlpack, np.from_dlpack)
    g = rg.arange(3.0)
    assert g.__dlpack_device__() == torch.arange(3.0).__dlpack_device__()
    w = torch.from_dlpack(g)
    w[1] = 8.0
    assert g[1].item() == 8.0
    np.testing.assert_array_equal(np.from_dlpack(g), g.numpy())
    # rg tensor to rg: a new tensor of the same memory, as torch.from_dlpack(torch tensor)
    s = rg.from_dlpack(g)
    assert (s is g) == (torch.from_dlpack(tt) is tt) and s.data_ptr() == g.data_ptr()


def test_dlpack_refusals_match_torch():
    def kind(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e)
        return None

    for bad in ([1, 2], 5):
        assert kind(lambda b=bad: rg.from_dlpack(b)) is kind(lambda b=bad: torch.from_dlpack(b))
        assert kind(lambda b=bad: rg.from_dlpack(b)) is RuntimeError
    c, tc = rg.to_dlpack(rg.ones(2)), torch.utils.dlpack.to_dlpack(torch.ones(2))
    rg.from_dlpack(c)
    torch.from_dlpack(tc)
    assert kind(lambda: rg.from_dlpack(c)) is kind(lambda: torch.from_dlpack(tc)) is RuntimeError
    # requires grad: __dlpack__ refuses (BufferError), to_dlpack exports, as torch
    x, tx = rg.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert kind(lambda: rg.from_dlpack(x)) is kind(lambda: torch.from_dlpack(tx)) is BufferError
    assert kind(lambda: torch.from_dlpack(x)) is BufferError
    assert kind(lambda: rg.to_dlpack(x)) is kind(lambda: torch.to_dlpack(tx)) is None
    with pytest.raises(TypeError):
        rg.to_dlpack(np.ones(2))


# ---------------------------------------------------------------- as_subclass


class RgSub(rg.Tensor):
    pass


class TorchSub(torch.Tensor):
    pass


def test_as_subclass_is_a_view_that_keeps_the_history():
    x, tx = rg.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    s, ts = x.as_subclass(RgSub), tx.as_subclass(TorchSub)
    assert type(s) is RgSub and type(ts) is TorchSub
    assert s.requires_grad == ts.requires_grad
    assert s.is_leaf == ts.is_leaf
    assert (s.grad_fn is None) == (ts.grad_fn is None)
    assert (s._base is x) == (ts._base is tx)
    assert s.data_ptr() == x.data_ptr()
    (s * 2).sum().backward()
    (ts * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    y, ty = x * 3, tx * 3
    sy, tsy = y.as_subclass(RgSub), ty.as_subclass(TorchSub)
    (sy ** 2).sum().backward()
    (tsy ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_as_subclass_shares_memory_and_version():
    z, tz = rg.ones(3), torch.ones(3)
    s, ts = z.as_subclass(RgSub), tz.as_subclass(TorchSub)
    s.add_(1)
    ts.add_(1)
    np.testing.assert_array_equal(z.numpy(), tz.numpy())
    assert (z._version, s._version) == (tz._version, ts._version)
    assert (s._base is z) == (ts._base is tz)
    p, tp = rg.nn.Parameter(rg.ones(2)), torch.nn.Parameter(torch.ones(2))
    q, tq = p.as_subclass(rg.Tensor), tp.as_subclass(torch.Tensor)
    assert type(q) is rg.Tensor and type(tq) is torch.Tensor
    assert q.requires_grad == tq.requires_grad and q.is_leaf == tq.is_leaf


def test_as_subclass_refusals_match_torch():
    x, tx = rg.ones(2), torch.ones(2)
    for cls_rg, cls_t in ((int, int), (object, object)):
        with pytest.raises(TypeError) as want:
            tx.as_subclass(cls_t)
        with pytest.raises(TypeError) as got:
            x.as_subclass(cls_rg)
        assert str(got.value) == str(want.value)
    with pytest.raises(TypeError) as want:
        tx.as_subclass(3)
    with pytest.raises(TypeError) as got:
        x.as_subclass(3)
    assert str(got.value) == str(want.value)


# ---------------------------------------------------------------- output_nr


def _nrs(out) -> list:
    return [t.output_nr for t in out]


@pytest.mark.parametrize("case", [
    "split2", "split_sizes", "chunk", "unbind", "split_with_sizes", "tensor_split", "hsplit",
    "vsplit", "max", "min", "sort", "topk", "kthvalue", "median", "mode", "aminmax",
    "std_mean", "var_mean", "qr", "svd", "eigh", "slogdet", "eig"])
def test_output_nr_matches_torch(case):
    a = np.random.default_rng(0).standard_normal((4, 3))
    calls = {
        "split2": lambda m, x: x.split(2), "split_sizes": lambda m, x: x.split([1, 3]),
        "chunk": lambda m, x: m.chunk(x, 2), "unbind": lambda m, x: x.unbind(1),
        "split_with_sizes": lambda m, x: m.split_with_sizes(x, [2, 2]),
        "tensor_split": lambda m, x: m.tensor_split(x, 3), "hsplit": lambda m, x: m.hsplit(x, 3),
        "vsplit": lambda m, x: m.vsplit(x, 2), "max": lambda m, x: x.max(1),
        "min": lambda m, x: x.min(0), "sort": lambda m, x: x.sort(1),
        "topk": lambda m, x: x.topk(2), "kthvalue": lambda m, x: x.kthvalue(2, 1),
        "median": lambda m, x: x.median(1), "mode": lambda m, x: x.mode(1),
        "aminmax": lambda m, x: m.aminmax(x, dim=1), "std_mean": lambda m, x: m.std_mean(x, 1),
        "var_mean": lambda m, x: m.var_mean(x, 1), "qr": lambda m, x: m.linalg.qr(x),
        "svd": lambda m, x: m.linalg.svd(x, full_matrices=False),
        "eigh": lambda m, x: m.linalg.eigh(x[:3] @ x[:3].T),
        "slogdet": lambda m, x: m.linalg.slogdet(x[:3]), "eig": lambda m, x: m.linalg.eig(x[:3]),
    }
    fn = calls[case]
    want = _nrs(fn(torch, torch.tensor(a, requires_grad=True)))
    assert _nrs(fn(rg, rg.tensor(a, requires_grad=True))) == want
    # without recording, every output is output 0 (as torch)
    assert _nrs(fn(rg, rg.tensor(a))) == _nrs(fn(torch, torch.tensor(a)))
    with rg.no_grad(), torch.no_grad():
        assert _nrs(fn(rg, rg.tensor(a, requires_grad=True))) == \
            _nrs(fn(torch, torch.tensor(a, requires_grad=True)))


def test_output_nr_of_leaves_and_later_ops():
    x, tx = rg.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
    assert x.output_nr == tx.output_nr and rg.ones(2).output_nr == torch.ones(2).output_nr
    _, b = x.split(2)
    _, tb = tx.split(2)
    assert (b * 1).output_nr == (tb * 1).output_nr
    assert b.output_nr == tb.output_nr


# ---------------------------------------------------------------- storage classes


def test_storage_classes_match_torch():
    t, tt = rg.arange(4.0), torch.arange(4.0)
    u, tu = t.untyped_storage(), tt.untyped_storage()
    assert isinstance(u, rg.UntypedStorage) == isinstance(tu, torch.UntypedStorage) is True
    assert isinstance(u, rg.TypedStorage) == isinstance(tu, torch.TypedStorage) is False
    with warnings.catch_warnings():  # torch's TypedStorage deprecation (warned once)
        warnings.simplefilter("ignore")
        ts = tt.storage()
    s = t.storage()
    assert isinstance(s, rg.TypedStorage) and isinstance(ts, torch.TypedStorage)
    assert isinstance(s, rg.UntypedStorage) == isinstance(ts, torch.UntypedStorage)
    assert (u.size(), u.nbytes(), s.size()) == (tu.size(), tu.nbytes(), ts.size())
    assert rg.is_storage(u) == torch.is_storage(tu) and rg.is_storage(s) == torch.is_storage(ts)
    assert rg.is_storage(t) == torch.is_storage(tt)
    assert isinstance(s.untyped(), rg.UntypedStorage) and s.untyped().data_ptr() == t.data_ptr()
    assert t[1:].untyped_storage().data_ptr() == t.data_ptr()


def test_storage_constructors_match_torch():
    for size in (0, 5):
        a, b = rg.UntypedStorage(size), torch.UntypedStorage(size)
        assert (a.size(), a.nbytes(), str(a.device)) == (b.size(), b.nbytes(), str(b.device))
    assert rg.UntypedStorage().size() == torch.UntypedStorage().size()
    assert rg.UntypedStorage([1, 2, 3]).tolist() == torch.UntypedStorage([1, 2, 3]).tolist()
    with pytest.raises(RuntimeError):
        torch.UntypedStorage("ab")
    with pytest.raises(RuntimeError):
        rg.UntypedStorage("ab")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.TypedStorage(3)
    s = rg.TypedStorage(3)
    assert (s.size(), s.nbytes(), str(s.dtype)) == (ts.size(), ts.nbytes(),
                                                    str(ts.dtype).replace("torch.", ""))


# ---------------------------------------------------------------- set_


def _pair(a):
    return rg.tensor(np.array(a, np.float32)), torch.tensor(np.array(a, np.float32))


def _same(r, t) -> None:
    # (an empty tensor's strides are left out: rg.zeros(0).stride() is (0,), torch's (1,))
    assert r.shape == tuple(t.shape) and (r.stride() == t.stride() or not r.numel())
    assert r.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(r.numpy(), t.numpy())


def test_set_to_a_tensor_matches_torch():
    (a, ta), (b, tb) = _pair([0.0, 0.0, 0.0]), _pair(np.arange(6.0).reshape(2, 3))
    assert a.set_(b) is a and ta.set_(tb) is ta
    _same(a, ta)
    assert a.data_ptr() == b.data_ptr()
    assert (a._version, b._version) == (ta._version, tb._version)
    a.add_(1)
    ta.add_(1)
    _same(b, tb)
    assert (a._version, b._version) == (ta._version, tb._version)
    # a view of the source: its offset in the block carries over
    (c, tc), (d, td) = _pair([1.0]), _pair(np.arange(8.0))
    c.set_(d[2:])
    tc.set_(td[2:])
    _same(c, tc)
    assert (c._base is None) == (tc._base is None)


def test_set_with_no_source_empties():
    a, ta = _pair([[1.0, 2.0], [3.0, 4.0]])
    a.set_()
    ta.set_()
    _same(a, ta)
    assert a.dtype == np.float32 and a._version == ta._version


@pytest.mark.parametrize("args", [(1, (2,), (2,)), (1, (2,)), (0, (2, 2), (1, 2)),
                                  (3, (0,), (1,)), (0, (2, 3), (0, 1))])
@pytest.mark.parametrize("src", ["tensor", "view", "storage", "typed"])
def test_set_to_a_window_matches_torch(args, src):
    b, tb = _pair(np.arange(10.0))

    def source(x):
        return {"tensor": x, "view": x[2:], "storage": x.untyped_storage(),
                "typed": x[2:].storage()}[src]

    a, ta = _pair([0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's TypedStorage deprecation
        ta.set_(source(tb), *args)
        a.set_(source(b), *args)
    _same(a, ta)
    if 0 in args[-1]:  # positions sharing an element: refused (torch writes through)
        with pytest.raises(RuntimeError, match="read-only"):
            a[(0,) * a.ndim] = -5.0
    elif a.numel():
        a[(0,) * a.ndim] = -5.0
        ta[(0,) * ta.ndim] = -5.0
        np.testing.assert_array_equal(b.numpy(), tb.numpy())


def test_set_of_a_view_bumps_the_shared_version():
    (z, tz), (b, tb) = _pair([0.0, 0.0]), _pair([1.0, 2.0, 3.0])
    zz, tzz = z.view(2), tz.view(2)
    z.set_(b)
    tz.set_(tb)
    _same(zz, tzz)
    assert (zz._version, z._version) == (tzz._version, tz._version)


def test_set_refusals_match_torch():
    x, tx = rg.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad") as want:
        tx.set_(torch.zeros(2))
    with pytest.raises(RuntimeError) as got:
        x.set_(rg.zeros(2))
    assert str(got.value) == str(want.value)
    with torch.no_grad():
        tx.set_(torch.zeros(2))
    with rg.no_grad():
        x.set_(rg.zeros(2))
    assert (x.shape, x.requires_grad, x.is_leaf) == (tuple(tx.shape), tx.requires_grad,
                                                     tx.is_leaf)
    for fn in (lambda m: m.zeros(2).set_(m.zeros(2, dtype=m.float64)),
               lambda m: m.zeros(2).set_(m.arange(6.0), -1, (2,), (1,)),
               lambda m: m.zeros(2).set_(m.arange(6.0), 0, (2, 3), (1,))):
        with pytest.raises(RuntimeError):
            fn(torch)
        with pytest.raises(RuntimeError):
            fn(rg)
    for fn in (lambda m: m.zeros(2).set_(3), lambda m: m.zeros(2).set_(m.arange(6.0), 1)):
        with pytest.raises(TypeError):
            fn(torch)
        with pytest.raises(TypeError):
            fn(rg)


def test_set_makes_saved_values_stale_as_torch():
    x, tx = rg.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    loss, tloss = (x * x).sum(), (tx * tx).sum()
    with torch.no_grad():
        tx.set_(torch.zeros(3))
    with rg.no_grad():
        x.set_(rg.zeros(3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tloss.backward()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_set_refuses_what_it_cannot_do_clearly():
    # torch grows the storage; numpy memory cannot grow in place
    with pytest.raises(RuntimeError, match="cannot grow"):
        rg.zeros(2).set_(rg.arange(6.0), 4, (3,), (1,))
    # history: torch records a node whose backward raises
    y = rg.ones(3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="history"):
        y.set_(rg.zeros(3))
    with pytest.raises(RuntimeError, match="requires grad"):
        rg.zeros(3).set_(rg.ones(2, requires_grad=True))
    with pytest.raises(rg.jit.JitError if hasattr(rg.jit, "JitError") else Exception,
                       match="set_"):
        rg.jit(lambda t: rg.zeros(2).set_(t) * 1)(rg.ones(2))


# ---------------------------------------------------------------- utils.deterministic


@pytest.fixture
def deterministic():
    from retrograd.utils import deterministic as rg_det
    torch_det = torch.utils.deterministic
    assert rg_det.fill_uninitialized_memory is torch_det.fill_uninitialized_memory is True
    rg.use_deterministic_algorithms(True)
    torch.use_deterministic_algorithms(True)
    try:
        yield rg_det, torch_det
    finally:
        rg.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)
        rg_det.fill_uninitialized_memory = torch_det.fill_uninitialized_memory = True


def test_deterministic_empty_fills_as_torch(deterministic):
    rg_det, torch_det = deterministic
    for name in ("float16", "float64", "complex64", "int8", "uint8", "int32", "int64", "bool"):
        want = torch.empty(2, dtype=getattr(torch, name)).numpy()
        np.testing.assert_array_equal(rg.empty(2, dtype=getattr(rg, name)).numpy(), want)
    makers = (lambda m: m.empty_like(m.zeros(2)), lambda m: m.zeros(1).new_empty(2),
              lambda m: m.empty_strided((2,), (1,)), lambda m: m.empty_permuted((2, 2), (1, 0)),
              lambda m: m.zeros(1).new_empty_strided((2,), (1,)),
              lambda m: m.ones(3).resize_(5))
    for make in makers:
        np.testing.assert_array_equal(make(rg).numpy(), make(torch).numpy())
    assert rg.empty(2, requires_grad=True).requires_grad
    rg_det.fill_uninitialized_memory = torch_det.fill_uninitialized_memory = False
    assert not rg.empty(2).isnan().any()  # unspecified values (zeros here), not the fill
    with pytest.raises(RuntimeError) as want:
        torch_det.fill_uninitialized_memory = 1
    with pytest.raises(RuntimeError) as got:
        rg_det.fill_uninitialized_memory = 1
    assert str(got.value) == str(want.value)
    assert rg_det.fill_uninitialized_memory is torch_det.fill_uninitialized_memory is False


# ---------------------------------------------------------------- utils.weak


def _weak_story(m, weak):
    """The same steps on torch's and rg's weak module; what each step observed."""
    import gc
    seen = []
    t, u = m.ones(2), m.ones(2)
    r, r2 = weak.WeakIdRef(t), weak.WeakIdRef(t)
    seen += [r == r2, hash(r) == hash(r2) == id(t), r() is t, r == weak.WeakIdRef(u)]
    d = weak.WeakIdKeyDictionary()
    d[t], d[u] = 1, 2
    seen += [len(d), d[t], d[u], t in d, m.ones(2) in d, 3 in d, d.get(m.ones(1), "none")]
    seen.append(sorted(d.values()))
    dead = weak.WeakIdRef(u)
    del u
    gc.collect()
    seen += [len(d), [k is t for k in d], list(d.items())[0][1], dead() is None]
    tw = weak.TensorWeakRef(t)
    seen += [tw() is t, tw.ref() is t]
    try:
        weak.TensorWeakRef(3)
    except Exception as e:  # noqa: BLE001 - its type is compared
        seen.append(type(e).__name__)
    try:
        d[3] = 1
    except Exception as e:  # noqa: BLE001
        seen.append(type(e).__name__)
    c = d.copy()
    c[m.zeros(1)] = 5
    seen += [len(c), len(d), weak.WeakTensorKeyDictionary is weak.WeakIdKeyDictionary]
    e = weak.WeakIdKeyDictionary({t: 7})
    seen.append(e.pop(t))
    seen.append(len(e))
    h = hash(r)
    del t
    gc.collect()
    seen += [tw(), len(d), r(), r == r2, r == r, hash(r) == h]
    return seen


def test_utils_weak_matches_torch():
    import torch.utils.weak as torch_weak

    from retrograd.utils import weak as rg_weak
    assert set(rg_weak.__all__) == set(torch_weak.__all__)
    assert _weak_story(rg, rg_weak) == _weak_story(torch, torch_weak)
    # (torch's `!=` of two WeakIdRefs falls back to weakref's, comparing the tensors
    # elementwise; rg's is the negation of `==`)
    t = rg.ones(2)
    assert (rg_weak.WeakIdRef(t) != rg_weak.WeakIdRef(t)) is False
