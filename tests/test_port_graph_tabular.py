# ruff: noqa: E731  (the sources' idioms, as written)
"""Graph, point-cloud, recommender and tabular programs written in plain PyTorch (no
torch_geometric), ported to retrograd: GCN on a sparse_coo_tensor adjacency, GraphSAGE /
GIN / GAT with scatter_reduce / index_add aggregation and batch-vector pooling, PointNet
and DGCNN (knn by cdist + topk), EmbeddingBag / DLRM / factorization machines / two-tower
retrieval, FT-Transformer-style tabular models with missing values.

Each case runs the same code against torch and retrograd (a module object T), with
torch's weights loaded into retrograd, and compares values, gradients and optimizer steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

torch.set_num_threads(1)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def close(a, b, what="", tol=1e-12, scale=None):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    s = max(np.nanmax(np.abs(b), initial=0.0), scale or 0.0, 1e-30)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * s, err_msg=what)


# ---------------------------------------------------------------- sparse adjacency


def test_sparse_coo_coalesce_then_sparse_mm():
    """`adj = torch.sparse_coo_tensor(ei, w, (n, n)).coalesce()` (GCN code) then
    `torch.sparse.mm(adj, h)`: same values and gradients to the weights."""
    ei = np.array([[0, 1, 1, 2, 0], [1, 0, 2, 1, 1]])
    w = np.array([0.5, 1.0, 2.0, -1.0, 0.25])
    h = np.arange(6.0).reshape(3, 2)
    outs = {}
    for T in (torch, rg):
        wt = T.tensor(w, requires_grad=True)
        a = T.sparse_coo_tensor(T.tensor(ei), wt, (3, 3)).coalesce()
        assert a.is_coalesced()
        out = T.sparse.mm(a, T.tensor(h))
        out.sum().backward()
        outs[T] = (out, wt.grad, a.to_dense())
    for r, t in zip(outs[rg], outs[torch]):
        close(r, t)


def _coo_program(T):
    """pygcn-style: a legacy torch.sparse.FloatTensor adjacency, coalesce, sparse dropout
    on _indices()/_values() with a fixed mask, spmm; to_sparse().indices()/values()."""
    i = T.tensor([[1, 0, 1, 2, 0], [0, 1, 0, 2, 2]])
    v = T.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=T.float64, requires_grad=True)
    a = T.sparse_coo_tensor(i, v, (3, 3))
    raw = (a.is_coalesced(), a._nnz(), a.sparse_dim(), a.dense_dim(), a._indices(), a._values())
    c = a.coalesce()
    keep = T.tensor([True, False, True, True])
    d = T.sparse.FloatTensor(c._indices()[:, keep], c.values()[keep], c.shape) * 2.0
    h = T.tensor(np.arange(6.0).reshape(3, 2) / 7)
    out = T.sparse.mm(d, h) + T.spmm(c, h)
    x = T.tensor([[0.0, 1.5], [2.0, 0.0]], dtype=T.float64, requires_grad=True)
    s = x.to_sparse()
    (out.sum() + (c.values() ** 2).sum() + s.values().pow(3).sum()).backward()
    return (*raw, c.is_coalesced(), c._nnz(), c.indices(), c.values(), d.to_dense(), out,
            s.is_coalesced(), s.indices(), s.values(), v.grad, x.grad)


def test_sparse_coo_tensor_keeps_its_coo_form():
    for r, t in zip(_coo_program(rg), _coo_program(torch)):
        if isinstance(t, (bool, int)):
            assert r == t
        else:
            close(r, t)


def test_sparse_coo_refuses_indices_it_does_not_know():
    for T in (torch, rg):
        a = T.sparse_coo_tensor(T.tensor([[0, 0]]), T.tensor([1.0, 2.0]), (3,))
        with pytest.raises(RuntimeError, match="uncoalesced"):
            a.indices()
    with pytest.raises(RuntimeError, match="dense"):  # torch's result of a * 2 is sparse
        (a * 2)._indices()


def _spgat(T):
    """pyGAT's sparse GAT layer: a custom Function whose backward reads a._indices()."""

    class SpecialSpmmFunction(T.autograd.Function):
        @staticmethod
        def forward(ctx, indices, values, shape, b):
            assert indices.requires_grad == False  # noqa: E712
            a = T.sparse_coo_tensor(indices, values, shape)
            ctx.save_for_backward(a, b)
            ctx.N = shape[0]
            return T.matmul(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            grad_values = grad_b = None
            if ctx.needs_input_grad[1]:
                grad_a_dense = grad_output.matmul(b.t())
                edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
                grad_values = grad_a_dense.view(-1)[edge_idx]
            if ctx.needs_input_grad[3]:
                grad_b = a.t().matmul(grad_output)
            return None, grad_values, None, grad_b

    rng = np.random.default_rng(1)
    n = 5
    edge = T.tensor(rng.random((n, n)) < 0.5).nonzero().t()
    h = T.tensor(rng.standard_normal((n, 3)), requires_grad=True)
    a = T.tensor(rng.standard_normal((1, 6)), requires_grad=True)
    edge_h = T.cat((h[edge[0, :], :], h[edge[1, :], :]), dim=1).t()
    edge_e = T.exp(-T.nn.functional.leaky_relu(a.mm(edge_h).squeeze(), 0.2))
    rowsum = SpecialSpmmFunction.apply(edge, edge_e, T.Size([n, n]),
                                       T.ones(size=(n, 1), dtype=T.float64))
    h_prime = SpecialSpmmFunction.apply(edge, edge_e, T.Size([n, n]), h).div(rowsum)
    T.nn.functional.elu(h_prime).sum().backward()
    return h_prime, h.grad, a.grad


def test_pygat_sparse_layer():
    for r, t in zip(_spgat(rg), _spgat(torch)):
        close(r, t)


# ---------------------------------------------------------------- scatter_reduce ties


@pytest.mark.parametrize("fn", ["scatter_reduce", "index_reduce"])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_extreme_ties_share_gradient_as_torch(fn, reduce, include_self):
    """Ties with the (excluded) base value: PyTorch's backward still counts the base among
    the ties (a max-aggregation over relu'd messages into zeros hits this)."""
    base = np.array([0.0, 0.0, 1.0])
    src = np.array([0.0, 0.0, -1.0, 3.0, 1.0])
    idx = np.array([0, 0, 0, 1, 2])
    g = np.array([1.0, 2.0, 3.0])
    res = {}
    for T in (torch, rg):
        b = T.tensor(base, requires_grad=True)
        s = T.tensor(src, requires_grad=True)
        if fn == "scatter_reduce":
            o = b.scatter_reduce(0, T.tensor(idx), s, reduce, include_self=include_self)
        else:
            o = b.index_reduce(0, T.tensor(idx), s, reduce, include_self=include_self)
        (o * T.tensor(g)).sum().backward()
        res[T] = (o, b.grad, s.grad)
    for r, t in zip(res[rg], res[torch]):
        close(r, t)


@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_amax_ties_forward_mode_as_torch(include_self):
    """PyTorch's forward mode does not count an excluded base among the ties."""
    import torch.autograd.forward_ad as fwAD

    base, tb = np.zeros(2), np.array([5.0, 7.0])
    src, ts = np.array([0.0, 0.0, -1.0, 3.0]), np.array([1.0, 2.0, 4.0, 8.0])
    idx = [0, 0, 0, 1]
    with fwAD.dual_level():
        o = fwAD.make_dual(torch.tensor(base), torch.tensor(tb)).scatter_reduce(
            0, torch.tensor(idx), fwAD.make_dual(torch.tensor(src), torch.tensor(ts)), "amax",
            include_self=include_self)
        want = fwAD.unpack_dual(o).tangent
    _, got = rg.func.jvp(
        lambda b, s: b.scatter_reduce(0, rg.tensor(idx), s, "amax", include_self=include_self),
        (rg.tensor(base), rg.tensor(src)), (rg.tensor(tb), rg.tensor(ts)))
    close(got, want)


@pytest.mark.parametrize("reduce", ["max", "min"])
@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_takes_max_min_aliases_and_refuses_their_backward(reduce, include_self):
    """torch_scatter-style code passes reduce='max': PyTorch's forward treats it as 'amax'
    (in place too), its backward raises RuntimeError."""
    idx, src = [0, 0, 2], [1.0, 2.0, -1.0]
    res = {}
    for T in (torch, rg):
        s = T.tensor(src, requires_grad=True)
        o = T.zeros(3).scatter_reduce(0, T.tensor(idx), s, reduce, include_self=include_self)
        i = T.zeros(3, dtype=T.long)
        i.scatter_reduce_(0, T.tensor(idx), T.tensor([1, 2, -1]), reduce,
                          include_self=include_self)
        with pytest.raises(RuntimeError):
            o.sum().backward()
        res[T] = (o, i)
    for r, t in zip(res[rg], res[torch]):
        close(r, t)


BAD = {
    "index_add src dtype": lambda T: T.zeros(3, 2).index_add_(
        0, T.tensor([0, 1]), T.ones(2, 2, dtype=T.float64)),
    "scatter_add src dtype": lambda T: T.zeros(3).scatter_add(
        0, T.tensor([0, 1]), T.ones(2, dtype=T.float64)),
    "scatter_reduce src dtype": lambda T: T.zeros(3).scatter_reduce(
        0, T.tensor([0, 1]), T.ones(2, dtype=T.float64), "sum"),
    "nanmean of integers": lambda T: T.nanmean(T.tensor([1, 2])),
    "Embedding padding_idx out of range": lambda T: T.nn.Embedding(3, 2, padding_idx=3),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arguments_raise_torch_exception_type(case):
    with pytest.raises(Exception) as want:
        BAD[case](torch)
    with pytest.raises(type(want.value)):
        BAD[case](rg)


# ---------------------------------------------------------------- nn.init through .data


@pytest.mark.parametrize("init", ["constant_", "eye_", "zeros_", "ones_", "dirac_"])
def test_nn_init_fills_the_data_array_in_place(init):
    """pyGAT: `nn.init.xavier_uniform_(self.W.data, gain=1.414)`; retrograd's `.data` is
    the parameter's own NumPy array, so init fills it (deterministic fills compared)."""
    args = {"constant_": (0.25,)}.get(init, ())
    shape = (2, 3, 3) if init == "dirac_" else (3, 4)
    tp = torch.nn.Parameter(torch.full(shape, 7.0))
    rp = rg.nn.Parameter(rg.full(shape, 7.0))
    getattr(torch.nn.init, init)(tp.data, *args)
    out = getattr(rg.nn.init, init)(rp.data, *args)
    assert out is rp.data
    close(rp, tp)


def test_nn_init_random_fill_of_the_data_array():
    w = rg.nn.Parameter(rg.zeros(6, 4))
    rg.nn.init.xavier_uniform_(w.data, gain=1.414)
    bound = 1.414 * np.sqrt(6.0 / 10)
    assert np.abs(w.data).max() <= bound and np.unique(w.data).size == 24
    rg.nn.init.kaiming_uniform_(w.data, a=np.sqrt(5))
    assert np.abs(w.data).max() <= 0.5 and np.unique(w.data).size == 24
