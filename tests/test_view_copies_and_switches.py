"""The *_copy functions, top-level method forms and torch's global switches, against torch."""

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

X = np.arange(24.0).reshape(2, 3, 4)

COPIES = [  # (name, args after the input)
    ("view_copy", ((6, 4),)), ("permute_copy", ((2, 0, 1),)), ("expand_copy", ((3, 2, 3, 4),)),
    ("transpose_copy", (0, 2)), ("squeeze_copy", ()), ("unsqueeze_copy", (1,)),
    ("diagonal_copy", (0, 1, 2)), ("select_copy", (1, 2)), ("slice_copy", (2, 1, 3)),
    ("split_copy", (1, 1)), ("split_with_sizes_copy", ([1, 3], 2)), ("unbind_copy", (1,)),
    ("unfold_copy", (2, 2, 1)), ("detach_copy", ()), ("alias_copy", ()),
    ("narrow_copy", (2, 1, 2)), ("as_strided_copy", ((2, 2), (1, 2))),
    ("unsafe_chunk", (2, 2)), ("unsafe_split", (2, 2)), ("unsafe_split_with_sizes", ([3, 1], 2)),
    ("constant_pad_nd", ((1, 2), 1.5)),
]


def _grads(lib, name, args):
    x = (torch.tensor(X, requires_grad=True) if lib is torch
         else rg.tensor(X, requires_grad=True))
    out = getattr(lib, name)(x, *args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    loss = sum((o * (k + 1)).sum() for k, o in enumerate(outs) if o.requires_grad)
    if name != "detach_copy":
        loss.backward()
    return [np.asarray(o.detach().numpy() if lib is torch else o.data) for o in outs], x.grad


@pytest.mark.parametrize("name, args", COPIES, ids=[c[0] for c in COPIES])
def test_copies_values_and_gradients_like_torch(name, args):
    want, gw = _grads(torch, name, args)
    got, gg = _grads(rg, name, args)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and np.array_equal(a, b)
    if gw is None:
        assert gg is None
    else:
        np.testing.assert_array_equal(gg.data, gw.numpy())


def test_copies_do_not_alias():
    x = rg.tensor(X)
    y = rg.view_copy(x, (24,))
    y[0] = 100.0
    assert x.data[0, 0, 0] == 0.0
    assert not np.shares_memory(rg.t_copy(x[0]).data, x.data)


def test_top_level_in_place_and_method_forms():
    a, b = rg.tensor([12, 18]), torch.tensor([12, 18])
    assert rg.gcd_(a, rg.tensor([8, 12])) is a
    torch.gcd_(b, torch.tensor([8, 12]))
    assert a.tolist() == b.tolist()
    x = rg.tensor([[0, 1, 0], [2, 0, 3]])
    for size, fill in ((2, -1), (5, -7), (0, -1)):
        want = torch.nonzero_static(torch.tensor(x.data), size=size, fill_value=fill)
        got = rg.nonzero_static(x, size=size, fill_value=fill)
        assert got.dtype == np.int64 and got.tolist() == want.tolist()
    with pytest.raises(RuntimeError, match="size"):
        rg.nonzero_static(x, size=-1)
    t = rg.ones(2)
    assert rg.resolve_neg(t) is t and rg.is_neg(t) is False and rg.is_distributed(t) is False
    assert rg.is_inference(t) == torch.is_inference(torch.ones(2))
    y = rg.ones(2, requires_grad=True) * 2
    assert rg.detach_(y) is y and not y.requires_grad and y.grad_fn is None


def test_deterministic_debug_mode_like_torch():
    before = torch.get_deterministic_debug_mode()
    try:
        for mode in ("warn", "error", "default", 1, 2, 0):
            torch.set_deterministic_debug_mode(mode)
            rg.set_deterministic_debug_mode(mode)
            assert rg.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
            assert (rg.are_deterministic_algorithms_enabled()
                    == torch.are_deterministic_algorithms_enabled())
            assert (rg.is_deterministic_algorithms_warn_only_enabled()
                    == torch.is_deterministic_algorithms_warn_only_enabled())
        for bad in (3, "x"):
            with pytest.raises(RuntimeError):
                torch.set_deterministic_debug_mode(bad)
            with pytest.raises(RuntimeError, match="debug_mode"):
                rg.set_deterministic_debug_mode(bad)
    finally:
        torch.set_deterministic_debug_mode(before)
        rg.set_deterministic_debug_mode(0)


def test_switches():
    rg.set_warn_always(True)
    assert rg.is_warn_always_enabled() is True
    rg.set_warn_always(False)
    assert rg.get_num_interop_threads() >= 1
    rg.set_num_interop_threads(3)
    assert rg.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError):
        rg.set_num_interop_threads(0)
    assert rg.set_flush_denormal(False) is False
    rg.init_num_threads()
    before = rg.get_default_dtype()
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            rg.set_default_tensor_type(rg.DoubleTensor)
        assert rg.get_default_dtype() == np.float64 and w
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rg.set_default_tensor_type("torch.FloatTensor")
        assert rg.get_default_dtype() == np.float32
        with pytest.raises(TypeError):
            rg.set_default_tensor_type(rg.LongTensor)
    finally:
        rg.set_default_dtype(before)
    rg.set_anomaly_enabled(True)
    assert rg.is_anomaly_check_nan_enabled()
    rg.set_anomaly_enabled(False)


def test_dlpack_shares_memory_both_ways():
    tt = torch.arange(4.0)
    r = rg.from_dlpack(tt)
    tt[0] = 9.0
    assert r.data[0] == 9.0
    a = rg.arange(3.0)
    back = torch.from_dlpack(rg.to_dlpack(a))
    a.data[1] = 7.0
    assert back[1].item() == 7.0
    # a new tensor of the same memory, as torch.from_dlpack of a torch tensor
    same = rg.from_dlpack(a)
    assert (same is a) == (torch.from_dlpack(tt) is tt) and same.data_ptr() == a.data_ptr()


def test_cond_like_torch():
    x = torch.arange(3.0)
    for pred in (True, False, torch.tensor(True), torch.tensor([False])):
        want = torch.cond(pred, lambda v: v + 1, lambda v: v - 1, (x,))
        rp = rg.tensor(pred.numpy()) if isinstance(pred, torch.Tensor) else pred
        got = rg.cond(rp, lambda v: v + 1, lambda v: v - 1, (rg.tensor(x.numpy()),))
        assert got.tolist() == want.tolist()
    with pytest.raises(RuntimeError):
        torch.cond(torch.tensor([True, False]), lambda v: v, lambda v: v, (x,))
    with pytest.raises(RuntimeError, match="pred"):
        rg.cond(rg.tensor([True, False]), lambda v: v, lambda v: v, (rg.ones(1),))


def test_legacy_new_dim_order_and_method_forms_like_torch():
    x, tx = rg.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    for args in ((2, 3), (), (rg.Size([4]),)):
        targs = tuple(torch.Size(a) if isinstance(a, rg.Size) else a for a in args)
        got, want = x.new(*args), tx.new(*targs)
        assert tuple(got.shape) == tuple(want.shape) and got.dtype == np.float32
    for data in ([1, 2], (3, 4), [[1.5]]):
        got, want = x.new(data), tx.new(data)
        assert got.dtype == np.float32 and got.tolist() == want.tolist()
    assert np.shares_memory(x.new(x).data, x.data)
    with pytest.raises(TypeError):
        x.new(rg.ones(2, dtype=rg.float64))
    for make in (lambda m: m.ones(2, 3, 4).permute(2, 0, 1), lambda m: m.ones(2, 3).t(),
                 lambda m: m.ones(3)):
        assert make(rg).dim_order() == make(torch).dim_order()
    assert x.narrow_copy(1, 0, 2).tolist() == tx.narrow_copy(1, 0, 2).tolist()
    assert x.nonzero_static(size=2).tolist() == tx.nonzero_static(size=2).tolist()
