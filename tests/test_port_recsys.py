# ruff: noqa: E731  (the sources' idioms, as written)
"""Recommender programs written in plain PyTorch (pytorch-fm, DLRM, RecBole, LightGCN
style), ported to retrograd: compressed-row (CSR) adjacency matrices, DeepFM / DCN over
offset-shifted field embeddings, DLRM's EmbeddingBag(sparse=True) + dot interaction
trained by SGD, a two-tower model with in-batch negatives plus sampled softmax and BPR,
and top-k ranking metrics with hashing and bucketing.

Each case runs the same code against torch and retrograd (a module object T), with the
same float64 weights, and compares values, gradients and optimizer steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close as _close

import retrograd as rg

torch.set_num_threads(1)
LIBS = (torch, rg)


def close(a, b, what="", tol=1e-10, scale=None):
    if getattr(b, "is_sparse", False):
        b = b.to_dense()
    _close(a, b, what, tol, scale)


def _load(model, T, seed: int, scale: float = 0.3) -> None:
    """Every float parameter and buffer drawn from one NumPy stream (the same in both)."""
    r = np.random.default_rng(seed)
    sd = {k: T.tensor(r.standard_normal(tuple(v.shape)) * scale) if v.dtype == T.float64
          else v for k, v in model.state_dict().items()}
    model.load_state_dict(sd)


# ---------------------------------------------------------------- CSR adjacency


_CSR = np.array([0, 2, 2, 5, 6]), np.array([0, 3, 1, 2, 4, 0]), \
    np.array([0.5, -1.0, 2.0, 0.25, 1.5, 3.0])


def _csr(T, values=None, **kw):
    crow, col, val = _CSR
    return T.sparse_csr_tensor(T.tensor(crow), T.tensor(col),
                               T.tensor(val) if values is None else values, **kw)


def test_sparse_csr_tensor_values_products_and_parts():
    """`torch.sparse_csr_tensor(crow, col, values, size)`: its dense values, the default
    size, `torch.sparse.mm` / `@` with a dense matrix, gradients to `values`, and
    `crow_indices()` / `col_indices()` / `values()` / `_nnz()`."""
    b = np.arange(10.0).reshape(5, 2) - 3
    outs = {}
    for T in LIBS:
        v = T.tensor(_CSR[2], requires_grad=True)
        a = _csr(T, v, size=(4, 5))
        y = T.sparse.mm(a, T.tensor(b)) + a @ T.tensor(b)
        (y ** 2).sum().backward()
        c = _csr(T)
        outs[T] = [a.to_dense(), y, v.grad, tuple(c.shape), c.crow_indices(), c.col_indices(),
                   c.values(), c._nnz(), _csr(T, size=(4, 6), dtype=T.float32).to_dense()]
    for k, (x, t) in enumerate(zip(outs[rg], outs[torch])):
        if isinstance(t, (tuple, int)):
            assert x == t, k
        else:
            close(x, t, str(k))


def test_to_sparse_csr_round_trip_and_layout_errors():
    """`dense.to_sparse_csr()` (or `to_sparse(layout=torch.sparse_csr)`) reads back
    PyTorch's compressed rows; asking a CSR tensor for COO `indices()`, or a COO one for
    `crow_indices()`, raises RuntimeError."""
    m = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, -1.0]])
    outs = {}
    for T in LIBS:
        c = T.tensor(m).to_sparse_csr()
        c2 = T.tensor(m).to_sparse(layout=T.sparse_csr)
        outs[T] = [c.crow_indices(), c.col_indices(), c.values(), c.to_dense(),
                   c2.crow_indices(), c2.col_indices()]
        with pytest.raises(RuntimeError):
            c.indices()
        with pytest.raises(RuntimeError):
            T.tensor(m).to_sparse().crow_indices()
    for x, t in zip(outs[rg], outs[torch]):
        close(x, t)


@pytest.mark.parametrize("crow,col,size", [
    ([1, 2], [0, 1], (1, 3)),        # crow_indices[0] != 0
    ([0, 1], [0, 1], (1, 3)),        # crow_indices[-1] != nnz
    ([0, 1, 2], [0, 1], (1, 3)),     # rows + 1 != len(crow_indices)
    ([0, 2], [0, 5], (1, 3)),        # a column past the size
    ([0, 2], [2, 0], (1, 3)),        # columns not sorted within the row
])
def test_sparse_csr_tensor_bad_indices_raise(crow, col, size):
    """Inconsistent compressed rows raise RuntimeError (PyTorch with check_invariants)."""
    for T in LIBS:
        with pytest.raises(RuntimeError):
            T.sparse_csr_tensor(T.tensor(crow), T.tensor(col), T.tensor([1.0, 2.0]), size,
                                check_invariants=True)


def test_lightgcn_on_csr_adjacency_trains_like_torch():
    """LightGCN: a symmetric-normalised user-item adjacency from scipy CSR, three
    propagation layers by `torch.sparse.mm`, BPR by softplus and Adam."""
    sp = pytest.importorskip("scipy.sparse")
    r = np.random.default_rng(11)
    nu, ni, d = 5, 6, 4
    inter = (r.random((nu, ni)) < 0.4).astype(np.float64)
    adj = sp.bmat([[None, sp.csr_matrix(inter)], [sp.csr_matrix(inter.T), None]]).tocsr()
    deg = np.asarray(adj.sum(1)).ravel()
    dinv = np.where(deg > 0, deg ** -0.5, 0.0)
    norm = (sp.diags(dinv) @ adj @ sp.diags(dinv)).tocsr()
    w_u, w_i = r.standard_normal((nu, d)) * 0.1, r.standard_normal((ni, d)) * 0.1
    res = {}
    for T in LIBS:
        nn, F = T.nn, T.nn.functional
        G = T.sparse_csr_tensor(T.tensor(norm.indptr.astype(np.int64)),
                                T.tensor(norm.indices.astype(np.int64)), T.tensor(norm.data),
                                size=norm.shape)
        ue = nn.Embedding.from_pretrained(T.tensor(w_u), freeze=False)
        ie = nn.Embedding.from_pretrained(T.tensor(w_i), freeze=False)
        opt = T.optim.Adam([ue.weight, ie.weight], lr=0.01)
        users, pos, neg = T.tensor([0, 1, 2, 4]), T.tensor([1, 2, 3, 0]), T.tensor([5, 4, 0, 2])
        losses = []
        for _ in range(3):
            emb = T.cat([ue.weight, ie.weight])
            embs = [emb]
            for _ in range(3):
                emb = T.sparse.mm(G, emb)
                embs.append(emb)
            U, I = T.split(T.stack(embs, dim=1).mean(1), [nu, ni])
            u, p, n = U[users], I[pos], I[neg]
            reg = 0.5 * (ue(users).norm(2).pow(2) + ie(pos).norm(2).pow(2)
                         + ie(neg).norm(2).pow(2)) / 4.0
            loss = F.softplus((u * n).sum(1) - (u * p).sum(1)).mean() + 1e-4 * reg
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss)
        res[T] = losses + [ue.weight, ie.weight]
    for k, (x, t) in enumerate(zip(res[rg], res[torch])):
        close(x, t, str(k))


# ---------------------------------------------------------------- whole programs


class _Fields:
    """pytorch-fm's FeaturesEmbedding / FeaturesLinear, FM, CrossNetwork and MLP."""

    def __init__(self, T):
        nn = T.nn
        self.T = T

        class FeaturesEmbedding(nn.Module):
            def __init__(self, field_dims, embed_dim, out=None):
                super().__init__()
                self.embedding = nn.Embedding(sum(field_dims), embed_dim if out is None
                                              else out)
                self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)

            def forward(self, x):
                return self.embedding(x + x.new_tensor(self.offsets).unsqueeze(0))

        class FeaturesLinear(FeaturesEmbedding):
            def __init__(self, field_dims):
                super().__init__(field_dims, None, 1)
                self.bias = nn.Parameter(T.zeros((1,)))

            def forward(self, x):
                return T.sum(super().forward(x), dim=1) + self.bias

        class FM(nn.Module):
            def forward(self, x):
                ix = T.sum(x, dim=1) ** 2 - T.sum(x ** 2, dim=1)
                return 0.5 * T.sum(ix, dim=1, keepdim=True)

        class CrossNetwork(nn.Module):
            def __init__(self, input_dim, num_layers):
                super().__init__()
                self.w = nn.ModuleList([nn.Linear(input_dim, 1, bias=False)
                                        for _ in range(num_layers)])
                self.b = nn.ParameterList([nn.Parameter(T.zeros((input_dim,)))
                                           for _ in range(num_layers)])

            def forward(self, x):
                x0 = x
                for w, b in zip(self.w, self.b):
                    x = x0 * w(x) + b + x
                return x

        def mlp(d, dims, out=True):
            layers = []
            for e in dims:
                layers += [nn.Linear(d, e), nn.BatchNorm1d(e), nn.ReLU(), nn.Dropout(0.0)]
                d = e
            return nn.Sequential(*layers, *([nn.Linear(d, 1)] if out else []))

        self.FeaturesEmbedding, self.FeaturesLinear = FeaturesEmbedding, FeaturesLinear
        self.FM, self.CrossNetwork, self.mlp = FM, CrossNetwork, mlp


def _deepfm_and_dcn(T, field_dims):
    """pytorch-fm's DeepFM (linear + FM trick + MLP) and DCN (cross layers + MLP)."""
    nn, L = T.nn, _Fields(T)

    class DeepFM(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear, self.fm = L.FeaturesLinear(field_dims), L.FM()
            self.embedding = L.FeaturesEmbedding(field_dims, 4)
            self.mlp = L.mlp(16, (8, 8))

        def forward(self, x):
            e = self.embedding(x)
            y = self.linear(x) + self.fm(e) + self.mlp(e.view(-1, 16))
            return T.sigmoid(y.squeeze(1))

    class DCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = L.FeaturesEmbedding(field_dims, 4)
            self.cn, self.mlp = L.CrossNetwork(16, 2), L.mlp(16, (8,), out=False)
            self.linear = nn.Linear(24, 1)

        def forward(self, x):
            e = self.embedding(x).view(-1, 16)
            return T.sigmoid(self.linear(T.cat([self.cn(e), self.mlp(e)], 1)).squeeze(1))

    return DeepFM(), DCN()


def test_deepfm_and_dcn_train_like_torch():
    """DeepFM and DCN over offset-shifted field embeddings, BCELoss and
    Adam(weight_decay): losses, every gradient at step 0, the parameters after three
    steps and the eval-mode predictions."""
    field_dims = [5, 7, 4, 9]
    r = np.random.default_rng(5)
    X = np.stack([r.integers(0, d, 16) for d in field_dims], 1)
    Y = r.integers(0, 2, 16).astype(np.float64)
    res = {}
    for T in LIBS:
        nn = T.nn
        T.set_default_dtype(T.float64)
        try:
            models = _deepfm_and_dcn(T, field_dims)
            out = []
            for seed, model in enumerate(models):
                _load(model, T, seed)
                opt = T.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-6)
                for it in range(3):
                    loss = nn.BCELoss()(model(T.tensor(X)), T.tensor(Y))
                    model.zero_grad()
                    loss.backward()
                    out.append(loss)
                    if it == 0:
                        out += [p.grad for p in model.parameters()]
                    opt.step()
                model.eval()
                out += [model(T.tensor(X))] + list(model.parameters())
            res[T] = out
        finally:
            T.set_default_dtype(T.float32)
    assert len(res[rg]) == len(res[torch])
    for k, (x, t) in enumerate(zip(res[rg], res[torch])):  # (the biases before BatchNorm
        close(x, t, str(k), tol=1e-9, scale=1.0)           # get 0 up to rounding)


def test_dlrm_sparse_embedding_bags_train_like_torch():
    """DLRM: EmbeddingBag(mode='sum', sparse=True) tables fed (indices, offsets) with empty
    bags, bottom MLP, dot interaction by bmm + tril_indices(offset=-1) indexing, top MLP
    with sigmoid, BCELoss and SGD (torch: sparse gradients; here dense, same numbers).
    SparseAdam, which needs the sparse rows, refuses retrograd's dense gradients."""
    r = np.random.default_rng(3)
    ln_emb, B, d = [10, 12, 8], 6, 4
    tables = [r.uniform(-0.3, 0.3, (n, d)) for n in ln_emb]
    dense = np.log1p(r.random((B, 5)))
    lS_i, lS_o = [], []
    for n in ln_emb:
        lens = r.integers(0, 4, B)
        lS_o.append(np.concatenate([[0], np.cumsum(lens)[:-1]]))
        lS_i.append(r.integers(0, n, lens.sum()))
    target = r.integers(0, 2, (B, 1)).astype(np.float64)
    res = {}
    for T in LIBS:
        nn = T.nn
        T.set_default_dtype(T.float64)
        try:
            emb_l = nn.ModuleList(nn.EmbeddingBag.from_pretrained(T.tensor(w), freeze=False,
                                                                  mode="sum", sparse=True)
                                  for w in tables)
            bot = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, d), nn.ReLU())
            top = nn.Sequential(nn.Linear(d + 6, 8), nn.ReLU(), nn.Linear(8, 1), nn.Sigmoid())
            for k, m in enumerate((bot, top)):
                _load(m, T, 10 + k)
            params = [*emb_l.parameters(), *bot.parameters(), *top.parameters()]
            opt = T.optim.SGD(params, lr=0.1)
            out = []
            for _ in range(3):
                x = bot(T.tensor(dense))
                ly = [E(T.tensor(i), T.tensor(o)) for E, i, o in zip(emb_l, lS_i, lS_o)]
                Tm = T.cat([x] + ly, dim=1).view((B, -1, d))
                Z = T.bmm(Tm, T.transpose(Tm, 1, 2))
                li, lj = T.tril_indices(Z.shape[1], Z.shape[2], offset=-1)
                p = top(T.cat([x, Z[:, li, lj]], dim=1))
                loss = nn.BCELoss()(p, T.tensor(target))
                opt.zero_grad()
                loss.backward()
                out += [p, loss] + [q.grad for q in params]
                opt.step()
            res[T] = out + [q.detach() for q in params]
        finally:
            T.set_default_dtype(T.float32)
    for k, (x, t) in enumerate(zip(res[rg], res[torch])):
        close(x, t, str(k))
    e = rg.nn.Embedding(5, 2, sparse=True)
    e(rg.tensor([1, 1, 3])).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam"):
        rg.optim.SparseAdam(e.parameters()).step()


def test_two_tower_sampled_softmax_bpr_and_metrics_like_torch():
    """Two towers (EmbeddingBag mean with padding_idx, MLP, normalize) trained on in-batch
    negatives (`q @ d.T / t`, cross_entropy with label_smoothing); sampled softmax with
    unique(return_inverse, return_counts) and the log-q correction; BPR by logsigmoid;
    BCE with pos_weight; recall/NDCG@k with topk, scatter_ and gather, AUC by argsort
    ranks, feature hashing with % and age bucketing."""
    r = np.random.default_rng(4)
    Q, D = r.integers(0, 30, (8, 5)), r.integers(0, 40, (8, 4))
    item, user = r.standard_normal((50, 8)), r.standard_normal((6, 8))
    pos, negs, freq = r.integers(0, 50, 6), r.integers(0, 50, 20), r.random(50) + 0.1
    scores, pos_items = r.standard_normal((6, 20)), r.integers(0, 20, (6, 3))
    y, p, ids, age = r.integers(0, 2, 30), r.random(30), r.integers(-10**9, 10**9, 9), \
        r.random(12) * 80
    lg, tg = r.standard_normal((5, 3)), r.integers(0, 2, (5, 3)).astype(np.float64)
    res = {}
    for T in LIBS:
        nn, F = T.nn, T.nn.functional
        T.set_default_dtype(T.float64)
        try:
            towers = [nn.Sequential() for _ in range(2)]
            for k, (tw, n) in enumerate(zip(towers, (30, 40))):
                tw.add_module("emb", nn.EmbeddingBag(n, 8, mode="mean", padding_idx=0))
                tw.add_module("mlp", nn.Sequential(nn.Linear(8, 16), nn.GELU(),
                                                   nn.LayerNorm(16), nn.Linear(16, 8)))
                _load(tw, T, 20 + k, 0.4)
        finally:
            T.set_default_dtype(T.float32)
        opt = T.optim.Adagrad([*towers[0].parameters(), *towers[1].parameters()], lr=0.05)
        out = []
        for _ in range(3):
            q, d = (F.normalize(tw(T.tensor(x)), dim=-1) for tw, x in zip(towers, (Q, D)))
            loss = F.cross_entropy(q @ d.T / 0.05, T.arange(8), label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss)
        out.append(towers[0].emb.weight)
        it, us = T.tensor(item, requires_grad=True), T.tensor(user, requires_grad=True)
        probs = T.tensor(freq) / T.tensor(freq).sum()
        uniq, inv, cnt = T.unique(T.tensor(negs), return_inverse=True, return_counts=True)
        pt = T.tensor(pos)
        pos_logit = (us * it[pt]).sum(-1, keepdim=True) - T.log(probs[pt] * 20).unsqueeze(-1)
        neg_logit = (us @ it[uniq].T - T.log(probs[uniq] * 20)).masked_fill(
            pt.unsqueeze(1) == uniq.unsqueeze(0), float("-inf"))
        ss = F.cross_entropy(T.cat([pos_logit, neg_logit], 1), T.zeros(6, dtype=T.long))
        bpr = -F.logsigmoid((us * it[:6]).sum(1) - (us * it[6:12]).sum(1)).mean()
        lt = T.tensor(lg, requires_grad=True)
        bce = F.binary_cross_entropy_with_logits(lt, T.tensor(tg),
                                                 pos_weight=T.tensor([1.0, 3.0, 0.5]).double())
        (ss + bpr + bce).backward()
        out += [uniq, inv, cnt, ss, bpr, bce, it.grad, us.grad, lt.grad]
        s = T.tensor(scores)
        _, top = T.topk(s, 5, dim=-1)
        mask = T.zeros_like(s, dtype=T.bool).scatter_(1, T.tensor(pos_items), True)
        hit = T.gather(mask, 1, top)
        disc = 1.0 / T.log2(T.arange(2, 7, dtype=T.float64))
        idcg = T.cumsum(disc, 0)[mask.sum(1).clamp(max=5) - 1]
        order = T.argsort(T.tensor(p))
        ranks = T.empty_like(order)
        ranks[order] = T.arange(1, 31)
        yt = T.tensor(y)
        npos = yt.sum()
        auc = (ranks[yt == 1].sum() - npos * (npos + 1) / 2) / (npos * (30 - npos))
        bounds = T.tensor([18.0, 25, 35, 45, 55, 65], dtype=T.float64)
        out += [hit.sum(1).float() / mask.sum(1).float(), (hit.double() * disc).sum(-1) / idcg,
                auc, T.isin(top, T.tensor(pos_items[0])), T.tensor(ids) % 97,
                T.bucketize(T.tensor(age), bounds), T.searchsorted(bounds, T.tensor(age),
                                                                  side="right")]
        res[T] = out
    for k, (x, t) in enumerate(zip(res[rg], res[torch])):
        close(x, t, str(k), tol=1e-9)
