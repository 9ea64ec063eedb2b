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
from port_compare import close as _close
from port_compare import close_grads

import retrograd as rg

torch.set_num_threads(1)


def close(a, b, what="", tol=1e-12, scale=None):
    _close(a, b, what, tol, scale)


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


# ---------------------------------------------------------------- whole programs


def _run(make, loss_fn, data, dtype, opt, steps=3, tol32=2e-4):
    """Build on both libraries (torch's weights loaded into retrograd), then per step:
    outputs, loss, every gradient and the optimizer step compared."""
    tol = 1e-9 if dtype == "float64" else tol32
    torch.manual_seed(0)
    tm = make(torch).to(getattr(torch, dtype))
    rm = make(rg).to(getattr(rg, dtype))
    rm.load_state_dict({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()})
    data = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in data.items()}
    topt, ropt = opt(torch, tm), opt(rg, rm)
    for step in range(steps):
        tl, tout = loss_fn(torch, tm, {k: torch.tensor(v) for k, v in data.items()})
        rl, rout = loss_fn(rg, rm, {k: rg.tensor(v) for k, v in data.items()})
        for k in tout:
            close(rout[k], tout[k], f"{k}, step {step}", tol)
        close(rl, tl, f"loss, step {step}", tol)
        topt.zero_grad()
        ropt.zero_grad()
        tl.backward()
        rl.backward()
        close_grads(tm, rm, f", step {step}", tol)
        topt.step()
        ropt.step()
        ss = max(float(v.abs().max()) for v in tm.state_dict().values())
        for k, v in tm.state_dict().items():  # Adam moves ~lr where a gradient is ~0
            close(rm.state_dict()[k], v, f"state {k}, step {step}", tol,
                  ss * (1e-3 if dtype == "float64" else 1e-1))


_G = np.random.default_rng(0)
GRAPH = dict(x=_G.standard_normal((12, 5)),
             ei=np.stack([_G.integers(0, 12, 30), _G.integers(0, 12, 30)]),
             y=_G.integers(0, 3, 12), batch=np.repeat(np.arange(3), [5, 4, 3]))


def _gnn(T):
    """A GCN layer on a sparse_coo_tensor adjacency, a GraphSAGE layer with max/mean
    scatter_reduce aggregation, a GAT layer with segment softmax (scatter_reduce 'amax' +
    index_add), then GIN-style pooling by the batch vector (unique/bincount)."""
    nn, F = T.nn, T.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gcn = nn.Linear(5, 8, bias=False)
            self.sage_l, self.sage_r = nn.Linear(8, 8), nn.Linear(8, 8, bias=False)
            self.gat = nn.Linear(8, 8, bias=False)
            self.att_src = nn.Parameter(T.randn(1, 2, 4) * 0.3)
            self.att_dst = nn.Parameter(T.randn(1, 2, 4) * 0.3)
            self.eps = nn.Parameter(T.zeros(1))
            self.head = nn.Sequential(nn.Linear(16, 8), nn.BatchNorm1d(8), nn.ReLU(),
                                      nn.Linear(8, 3))

        def forward(self, x, ei, batch):
            n = x.size(0)
            loop = T.arange(n)
            ei = T.cat([ei, T.stack([loop, loop])], dim=1)
            src, dst = ei
            w = T.ones(ei.size(1), dtype=x.dtype)
            deg = T.zeros(n, dtype=x.dtype).scatter_add_(0, dst, w)
            dinv = deg.pow(-0.5)
            dinv.masked_fill_(dinv == float("inf"), 0)
            adj = T.sparse_coo_tensor(T.stack([dst, src]), dinv[src] * dinv[dst], (n, n))
            h = F.relu(T.sparse.mm(adj.coalesce(), self.gcn(x)))
            idx = dst.unsqueeze(-1).expand(-1, h.size(1))
            mx = h.new_zeros(h.shape).scatter_reduce(0, idx, h[src], "amax", include_self=False)
            mean = T.zeros_like(h).scatter_reduce(0, idx, h[src], "mean", include_self=False)
            h = F.normalize(self.sage_l(mx + mean) + self.sage_r(h), dim=-1).relu()
            g = self.gat(h).view(-1, 2, 4)
            e = F.leaky_relu((g * self.att_src).sum(-1)[src] + (g * self.att_dst).sum(-1)[dst],
                             0.2)
            emax = T.zeros(n, 2, dtype=e.dtype).scatter_reduce(
                0, dst.view(-1, 1).expand_as(e), e, reduce="amax", include_self=False)
            e = (e - emax.index_select(0, dst)).exp()
            den = T.zeros(n, 2, dtype=e.dtype).index_add_(0, dst, e)
            alpha = e / (den[dst] + 1e-16)
            out = T.zeros(n, 2, 4, dtype=g.dtype).index_add_(0, dst, g[src] * alpha.unsqueeze(-1))
            h = F.elu(out.flatten(1)) + (1 + self.eps) * h
            _, inv, counts = T.unique(batch, return_inverse=True, return_counts=True)
            s = T.zeros(len(counts), 8, dtype=h.dtype).index_add(0, inv, h)
            pooled = T.cat([s / T.bincount(batch).unsqueeze(-1), T.repeat_interleave(
                s, counts, dim=0)[T.searchsorted(T.cumsum(counts, 0) - 1, T.arange(3))]], -1)
            return self.head(pooled)

    return Net()


def _gnn_loss(T, m, d):
    out = m(d["x"], d["ei"], d["batch"])
    return T.nn.functional.cross_entropy(out, T.tensor([0, 2, 1]), label_smoothing=0.1), \
        {"out": out}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_program_gnn(dtype):
    # float32: torch's sums run in another order on AVX2 than on AVX-512 hosts, and the
    # normalisations here amplify that to ~1e-3 in a few gradients (float64 checks 1e-9)
    _run(_gnn, _gnn_loss, GRAPH, dtype,
         lambda T, m: T.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4),
         tol32=2e-3)


POINTS = dict(x=np.random.default_rng(1).standard_normal((2, 3, 16)))


def _dgcnn(T):
    """DGCNN's EdgeConv (knn by pairwise distance + topk, neighbours gathered with a batch
    offset, max over neighbours) on PointNet-style Conv1d features; farthest point
    sampling and cdist/topk interpolation on the side (PointNet++)."""
    nn, F = T.nn, T.nn.functional

    def knn(x, k):
        inner = -2 * T.matmul(x.transpose(2, 1), x)
        xx = T.sum(x ** 2, dim=1, keepdim=True)
        return (-xx - inner - xx.transpose(2, 1)).topk(k=k, dim=-1)[1]

    def graph_feature(x, k=4):
        b, c, n = x.size()
        idx = (knn(x, k) + T.arange(0, b).view(-1, 1, 1) * n).view(-1)
        x = x.transpose(2, 1).contiguous()
        feature = x.view(b * n, -1)[idx, :].view(b, n, k, c)
        x = x.view(b, n, 1, c).repeat(1, 1, k, 1)
        return T.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()

    def fps(xyz, npoint):
        b, n, _ = xyz.shape
        centroids = T.zeros(b, npoint, dtype=T.long)
        distance = T.ones(b, n, dtype=xyz.dtype) * 1e10
        farthest = T.zeros(b, dtype=T.long)
        for i in range(npoint):
            centroids[:, i] = farthest
            centroid = xyz[T.arange(b), farthest, :].view(b, 1, 3)
            dist = T.sum((xyz - centroid) ** 2, -1)
            mask = dist < distance
            distance[mask] = dist[mask]
            farthest = T.max(distance, -1)[1]
        return centroids

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Sequential(nn.Conv2d(6, 8, 1, bias=False), nn.BatchNorm2d(8),
                                       nn.LeakyReLU(0.2))
            self.conv2 = nn.Sequential(nn.Conv1d(8, 16, 1), nn.BatchNorm1d(16), nn.ReLU())
            self.head = nn.Linear(32 + 3, 4)

        def forward(self, x):
            x1 = self.conv1(graph_feature(x)).max(dim=-1, keepdim=False)[0]
            x2 = self.conv2(x1)
            g = T.cat([F.adaptive_max_pool1d(x2, 1).flatten(1), x2.mean(-1)], 1)
            xyz = x.permute(0, 2, 1)
            c = fps(xyz.detach(), 4)
            centers = xyz[T.arange(2)[:, None], c]
            d, i = T.topk(T.cdist(centers, xyz), 3, dim=-1, largest=False)
            w = 1.0 / (d + 1e-8)
            interp = (xyz[T.arange(2)[:, None, None], i] * (w / w.sum(-1, keepdim=True))[
                ..., None]).sum(2).mean(1)
            return self.head(T.cat([g, interp], 1))

    return Net()


def _dgcnn_loss(T, m, d):
    out = m(d["x"])
    one_hot = T.zeros_like(out).scatter(1, T.tensor([[1], [3]]), 1)
    one_hot = one_hot * 0.8 + (1 - one_hot) * 0.2 / 3
    return -(one_hot * F_log_softmax(T, out)).sum(dim=1).mean(), {"out": out}


def F_log_softmax(T, x):
    return T.nn.functional.log_softmax(x, dim=1)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_program_point_cloud(dtype):
    _run(_dgcnn, _dgcnn_loss, POINTS, dtype,
         lambda T, m: T.optim.SGD(m.parameters(), lr=0.05, momentum=0.9))


_R = np.random.default_rng(2)
RECS = dict(dense=_R.standard_normal((6, 4)), idx0=_R.integers(0, 10, 14),
            off0=np.array([0, 2, 2, 5, 9, 11]), psw=_R.random(14), idx1=_R.integers(0, 7, (6, 3)),
            idx2=_R.integers(0, 5, 9), off2=np.array([0, 1, 3, 4, 6, 8, 9]),
            y=_R.integers(0, 2, 6).astype(float))


def _dlrm(T):
    """DLRM: EmbeddingBags (sum with per_sample_weights and padding_idx, mean on 2-D input,
    max with include_last_offset), bottom MLP, pairwise dot interactions through bmm and
    triu_indices; plus a factorization-machine term and two-tower in-batch negatives."""
    nn, F = T.nn, T.nn.functional

    class Net(nn.Module):
        def __init__(self, d=4):
            super().__init__()
            self.emb = nn.ModuleList([nn.EmbeddingBag(10, d, mode="sum", padding_idx=0),
                                      nn.EmbeddingBag(7, d, mode="mean"),
                                      nn.EmbeddingBag(5, d, mode="max", include_last_offset=True)])
            self.bot = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, d), nn.ReLU())
            self.top = nn.Sequential(nn.Linear(d + 6, 8), nn.ReLU(), nn.Linear(8, 1))
            li, lj = T.triu_indices(4, 4, offset=1)
            self.register_buffer("li", li, persistent=False)
            self.register_buffer("lj", lj, persistent=False)
            self.fm = nn.Embedding(12, 3, padding_idx=0)
            self.user, self.item = nn.Embedding(10, 4), nn.Embedding(7, 4)

        def forward(self, d):
            x = self.bot(d["dense"])
            ly = [self.emb[0](d["idx0"], d["off0"], per_sample_weights=d["psw"]),
                  self.emb[1](d["idx1"]), self.emb[2](d["idx2"], d["off2"])]
            t = T.cat([x] + ly, dim=1).view(x.size(0), -1, x.size(1))
            z = T.bmm(t, T.transpose(t, 1, 2))[:, self.li, self.lj]
            p = self.top(T.cat([x, z], 1)).squeeze(-1)
            e = self.fm(d["idx1"] + T.tensor([0, 3, 6]))
            fm = 0.5 * (e.sum(1) ** 2 - (e ** 2).sum(1)).sum(1)
            u = F.normalize(self.user(d["idx0"][:6]), dim=-1)
            v = F.normalize(self.item(d["idx1"][:, 0]), dim=-1)
            return p + fm, u @ v.T / 0.1

    return Net()


def _dlrm_loss(T, m, d):
    p, logits = m(d)
    F = T.nn.functional
    labels = T.arange(6)
    loss = F.binary_cross_entropy_with_logits(p, d["y"], pos_weight=T.tensor(2.0, dtype=p.dtype)) \
        + F.cross_entropy(logits, labels, label_smoothing=0.1) \
        + F.cross_entropy(logits.t(), labels, label_smoothing=0.1)
    return loss, {"p": p, "logits": logits}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_program_recommender(dtype):
    _run(_dlrm, _dlrm_loss, RECS, dtype, lambda T, m: T.optim.Adagrad(m.parameters(), lr=0.05))


_T = np.random.default_rng(3)
TAB = dict(xnum=_T.standard_normal((8, 4)),
           xcat=np.stack([_T.integers(0, c, 8) for c in (3, 5, 4)], 1),
           y=_T.standard_normal(8), ycls=_T.integers(0, 3, 8))
TAB["xnum"][[1, 4, 5], [2, 0, 0]] = np.nan


def _ft(T):
    """FT-Transformer: a feature tokenizer (numerical weights * values + biases, offset
    categorical embeddings, a CLS token) into a pre-norm TransformerEncoder; the missing
    values imputed with nanmean and standardised with nansum."""
    nn = T.nn

    class Net(nn.Module):
        def __init__(self, d=8, cards=(3, 5, 4), nnum=4):
            super().__init__()
            self.register_buffer("offsets", T.tensor((0,) + cards[:-1]).cumsum(0))
            self.cat = nn.Embedding(sum(cards), d)
            self.weight = nn.Parameter(T.randn(nnum + 1, d) * 0.3)
            self.bias = nn.Parameter(T.randn(nnum + len(cards), d) * 0.3)
            layer = nn.TransformerEncoderLayer(d, 2, 16, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
            self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 6))

        def forward(self, xnum, xcat):
            mask = T.isnan(xnum)
            mu = T.nanmean(xnum, dim=0, keepdim=True)
            var = T.nansum((xnum - mu) ** 2, 0, keepdim=True) / ((~mask).sum(0, keepdim=True) - 1)
            z = (T.where(mask, mu, xnum) - mu) / T.sqrt(var + 1e-8)
            z = T.cat([T.ones(len(z), 1, dtype=z.dtype), z], 1)
            x = T.cat([self.weight[None] * z[:, :, None], self.cat(xcat + self.offsets[None])], 1)
            x = x + T.cat([T.zeros(1, self.bias.shape[1], dtype=x.dtype), self.bias])[None]
            return self.head(self.enc(x)[:, 0])

    return Net()


def _ft_loss(T, m, d):
    p = m(d["xnum"], d["xcat"])
    F = T.nn.functional
    err = d["y"][:, None] - p[:, 1:3]
    q = T.tensor([0.1, 0.9], dtype=p.dtype)
    loss = F.huber_loss(p[:, 0], d["y"], delta=0.5) + T.max((q - 1) * err, q * err).sum(1).mean() \
        + F.cross_entropy(p[:, 3:], d["ycls"], weight=T.tensor([1.0, 2.0, 0.5], dtype=p.dtype),
                          label_smoothing=0.05)
    med = T.nanmedian(d["xnum"], dim=0).values
    qs = T.nanquantile(d["xnum"], T.tensor([0.25, 0.75], dtype=p.dtype), dim=0)
    return loss, {"p": p, "med": med, "qs": qs}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_program_tabular(dtype):
    # (SGD: the attention's key bias has a zero gradient up to rounding, which Adam would
    # turn into full steps)
    _run(_ft, _ft_loss, TAB, dtype,
         lambda T, m: T.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-5))


# ---------------------------------------------------------------- mixed dtypes in losses

_F32, _F64 = "float32", "float64"
_MIXED = {
    # class weights from NumPy (float64) with float32 logits: torch keeps float32
    "bce_logits pos_weight": lambda T, F, x, t, w: F.binary_cross_entropy_with_logits(
        x, t, pos_weight=w),
    "bce_logits weight none": lambda T, F, x, t, w: F.binary_cross_entropy_with_logits(
        x, t, weight=w, reduction="none"),
    "BCEWithLogitsLoss pos_weight": lambda T, F, x, t, w: T.nn.BCEWithLogitsLoss(
        pos_weight=w)(x, t),
    "bce weight": lambda T, F, x, t, w: F.binary_cross_entropy(T.sigmoid(x), t, weight=w),
    "huber float64 target": lambda T, F, x, t, w: F.huber_loss(x, t.double()),
    "huber float64 input": lambda T, F, x, t, w: F.huber_loss(x.double(), t, delta=0.5),
    "soft_margin float64 target": lambda T, F, x, t, w: F.soft_margin_loss(
        x, 2 * t.double() - 1, reduction="none"),
    "cross_entropy float64 probabilities": lambda T, F, x, t, w: F.cross_entropy(
        x.view(1, 3), (t.double() / t.sum()).view(1, 3), label_smoothing=0.1),
}


@pytest.mark.parametrize("case", list(_MIXED))
def test_loss_result_dtype_with_mixed_dtypes_as_torch(case):
    x, t, w = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.0, 1.0]), np.array([2.0, 3.0, 0.5])
    res = []
    for T in (torch, rg):
        xt = T.tensor(x, dtype=T.float32, requires_grad=True)
        out = _MIXED[case](T, T.nn.functional, xt, T.tensor(t, dtype=T.float32),
                           T.tensor(w, dtype=T.float64))
        if "huber" not in case:  # (torch's huber backward refuses mixed dtypes)
            out.sum().backward()
        res.append((out, xt.grad))
    (ro, rgd), (to, tgd) = res
    close(ro, to, case, 1e-6)
    if tgd is not None:
        close(rgd, tgd, case, 1e-6)


MORE_BAD = {
    "embedding uint8 indices": lambda T: T.nn.functional.embedding(
        T.tensor([0, 1], dtype=T.uint8), T.ones(3, 2)),
    "Embedding int16 indices": lambda T: T.nn.Embedding(3, 2)(T.tensor([0, 1], dtype=T.int16)),
    "embedding_bag 2-D uint8 input": lambda T: T.nn.functional.embedding_bag(
        T.tensor([[0, 1]], dtype=T.uint8), T.ones(3, 2)),
    "cdist float32 with float64": lambda T: T.cdist(T.zeros(2, 3), T.zeros(2, 3, dtype=T.float64)),
    "cdist float64 with float32": lambda T: T.cdist(T.zeros(2, 3, dtype=T.float64), T.zeros(2, 3)),
}


@pytest.mark.parametrize("case", list(MORE_BAD))
def test_more_bad_arguments_raise_as_torch(case):
    with pytest.raises(Exception) as want:
        MORE_BAD[case](torch)
    with pytest.raises(type(want.value)):
        MORE_BAD[case](rg)


def test_embedding_int32_and_bag_narrow_indices_still_work():
    for T in (torch, rg):
        w = T.tensor(np.arange(6.0).reshape(3, 2))
        a = T.nn.functional.embedding(T.tensor([2, 0], dtype=T.int32), w)
        b = T.nn.functional.embedding_bag(T.tensor([0, 1, 2], dtype=T.uint8), w, T.tensor([0, 1]))
        c = T.cdist(w, w)
        if T is torch:
            want = (a, b, c)
    for r, t in zip((a, b, c), want):
        close(r, t)


@pytest.mark.parametrize("array", [np.array(["cat", "dog"]), np.array([b"a"]),
                                   np.array(["2020-01-01"], dtype="datetime64[D]"),
                                   np.array([(1, 2.0)], dtype="i4,f8")])
def test_tensor_of_strings_or_dates_raises_type_error(array):
    """`torch.tensor(df["city"].values)` on an unencoded column raises TypeError; a string
    tensor would only fail later, far from the cause."""
    for T in (torch, rg):
        with pytest.raises(TypeError):
            T.tensor(array)
        with pytest.raises(TypeError):
            T.as_tensor(array)
