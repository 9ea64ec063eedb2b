"""Structured-prediction and sequence-to-sequence programs ported from PyTorch (a
pytorch-crf linear-chain CRF, torch-struct style semiring dynamic programs with marginals
by autograd, CTC training, packed bidirectional RNN encoders, attention seq2seq with beam
search and fairseq's label-smoothed loss): the minimal cases behind each fix, then a few
whole programs compared end to end against torch computed here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

torch.set_num_threads(1)

_INF = float("inf")


def _both(values, dtype="float64"):
    """The same values as a torch tensor and a retrograd tensor."""
    a = np.asarray(values, dtype=dtype)
    return torch.tensor(a), rg.tensor(a)


# ---------------------------------------------------------------- logaddexp at +inf


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_gradient_at_infinite_arguments_is_torchs(name):
    """A +inf argument beside a finite or -inf one takes the whole gradient (1) and the
    other none (0), as PyTorch's g / (1 + exp(other - self)); NaN where both are the same
    infinity; also through a second derivative."""
    a = [-_INF, 0.0, _INF, _INF, -_INF, np.nan, -_INF, _INF, 0.0, 1.5, -700.0]
    b = [-_INF, -_INF, 0.0, _INF, _INF, 0.0, 0.0, -_INF, np.nan, -2.0, 700.0]
    res = []
    for L in (torch, rg):
        x = L.tensor(a, dtype=L.float64, requires_grad=True)
        y = L.tensor(b, dtype=L.float64, requires_grad=True)
        z = getattr(L, name)(x, y)
        gx, gy = L.autograd.grad(z.pow(2).sum(), [x, y], create_graph=True)
        ggx, ggy = L.autograd.grad(gx.sum(), [x, y])
        res.append((z, gx, gy, ggx, ggy))
    for r, t, what in zip(res[1], res[0], ["out", "gx", "gy", "ggx", "ggy"]):
        close(r, t, what)


def test_softplus_gradient_of_nan_is_nan_as_torch():
    """A NaN input's softplus gradient is NaN (it was sigmoid(threshold), about 1), and the
    threshold's first and second derivatives stay PyTorch's."""
    vals = [np.nan, 20.0, 19.0, 21.0, -3.0, 5.0, 10.0]
    for beta in (1.0, 2.0):
        res = []
        for L in (torch, rg):
            x = L.tensor(vals, dtype=L.float64, requires_grad=True)
            y = L.nn.functional.softplus(x, beta=beta, threshold=20.0)
            g, = L.autograd.grad(y.sum(), x, create_graph=True)
            gg, = L.autograd.grad(g.sum(), x)
            res.append((y, g, gg))
        for r, t in zip(res[1], res[0]):
            close(r, t, f"beta={beta}")


@pytest.mark.parametrize("shape,dim,high", [((50, 6, 7), 0, 3), ((4, 30), 1, 2),
                                             ((200, 5), 0, 10), ((33,), 0, 4)])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_mode_index_among_ties_past_16_entries_is_torchs(shape, dim, high, dtype):
    """`mode` (majority vote over an ensemble's decoded labels) returns the index PyTorch's
    CPU kernel does: its std::sort is not stable past 16 entries, so the occurrence it
    reports is not simply the last one."""
    x = np.random.RandomState(0).randint(0, high, shape).astype(dtype)
    tv, ti = torch.tensor(x).mode(dim)
    rv, ri = rg.tensor(x).mode(dim)
    close(rv, tv, "values")
    close(ri, ti, "indices")


# ---------------------------------------------------------------- vmap over a gold score

_VMAP_PATTERNS = {
    "x[i]": lambda L, x, i, j, k: x[i],
    "x[:, j]": lambda L, x, i, j, k: x[:, j],
    "x[i, j]": lambda L, x, i, j, k: x[i, j],
    "x[i, :, k]": lambda L, x, i, j, k: x[i, :, k],
    "x[0, j]": lambda L, x, i, j, k: x[0, j],
    "x[..., k]": lambda L, x, i, j, k: x[..., k],
    "x[i, 1:3]": lambda L, x, i, j, k: x[i, 1:3],
    "x[1:3, j, k]": lambda L, x, i, j, k: x[1:3, j, k],
    "x[arange, j]": lambda L, x, i, j, k: x[L.arange(3), j],
}


@pytest.mark.parametrize("pattern", list(_VMAP_PATTERNS))
@pytest.mark.parametrize("batched_x", [True, False])
def test_vmap_indexing_with_batched_index_tensors_as_torch_func(pattern, batched_x):
    """Under vmap, `x[idx]` with batched integer index tensors (a CRF's gold score
    `emissions[arange(T), tags]` per sequence) is batched as torch.func.vmap does: values,
    the placement of the index dimensions, and gradients through vmap(grad)."""
    rs = np.random.RandomState(0)
    arrays = (rs.randn(3, 4, 5, 6), rs.randint(-3, 3, (3, 2, 3)), rs.randint(0, 4, (3, 3)),
              rs.randint(0, 5, (3, 3)))
    f = _VMAP_PATTERNS[pattern]
    in_dims = (0 if batched_x else None, 0, 0, 0)
    res = []
    for L in (torch, rg):
        x, i, j, k = (L.tensor(a) for a in arrays)
        x.requires_grad_()
        y = L.func.vmap(lambda *a, L=L: f(L, *a), in_dims=in_dims)(x, i, j, k)
        g, = L.autograd.grad(y.pow(2).sum(), x)
        gg = L.func.vmap(L.func.grad(lambda *a, L=L: f(L, *a).pow(2).sum()), in_dims=in_dims)(
            x, i, j, k) if batched_x else g
        res.append((y, g, gg))
    for r, t, what in zip(res[1], res[0], ["values", "grad", "vmap(grad)"]):
        close(r, t, what)


def test_vmap_crf_negative_log_likelihood_and_per_sequence_gradients():
    """A per-sequence CRF loss written for one sequence and vmapped over the batch, with
    vmap(grad) for per-sequence emission gradients and jacrev and hessian of one."""
    rs = np.random.RandomState(0)
    T, K = 5, 3
    em, tags = rs.randn(4, T, K), rs.randint(0, K, (4, T))
    mask = np.array([[t < n for t in range(T)] for n in [5, 3, 4, 1]])
    trans, start = rs.randn(K, K) * 0.3, rs.randn(K) * 0.1
    res = []
    for L in (torch, rg):
        tr, st = L.tensor(trans), L.tensor(start)

        def nll(e, y, m, L=L, tr=tr, st=st):
            gold = e[L.arange(T), y]                      # (T,) emission of each tag
            steps = tr[y[:-1], y[1:]]                      # (T - 1,) transitions taken
            score = st[y[:1]].sum() + gold[0] + ((steps + gold[1:]) * m[1:]).sum()
            a = st + e[0]
            for i in range(1, T):
                a = L.where(m[i], L.logsumexp(a.unsqueeze(1) + tr + e[i].unsqueeze(0), 0), a)
            return L.logsumexp(a, 0) - score

        E, Y, M = L.tensor(em), L.tensor(tags), L.tensor(mask)
        F = L.func
        res.append((F.vmap(nll)(E, Y, M), F.vmap(F.grad(nll))(E, Y, M),
                    F.jacrev(lambda e, Y=Y, M=M, nll=nll: nll(e, Y[1], M[1]))(E[1]),
                    F.hessian(lambda e, Y=Y, M=M, nll=nll: nll(e, Y[2], M[2]))(E[2])))
    for r, t, what in zip(res[1], res[0], ["nll", "per-sequence grads", "jacrev", "hessian"]):
        close(r, t, what)


# ---------------------------------------------------------------- ESPnet's CTC wrapper


def test_cudnn_flags_context_and_cuda_empty_cache_as_torch():
    """ESPnet computes its CTC loss inside `torch.backends.cudnn.flags(deterministic=True)`
    and training loops call `torch.cuda.empty_cache()` on CPU too: the flags take the
    context's values (its defaults turn cuDNN off) and come back after it, as torch's."""
    seen = []
    for L in (torch, rg):
        cudnn = L.backends.cudnn
        before = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
        with cudnn.flags(deterministic=True):
            inside = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
        with cudnn.flags(enabled=True, benchmark=True):
            inside2 = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
        seen.append((before, inside, inside2, (cudnn.enabled, cudnn.benchmark,
                                               cudnn.deterministic)))
        assert L.cuda.empty_cache() is None
    assert seen[1] == seen[0]


# ---------------------------------------------------------------- whole programs


def _load(L, module, seed: int, scale: float = 0.4):
    """Load the same uniform(-scale, scale) float64 weights into `module` (either library)."""
    r = np.random.RandomState(seed)
    module.load_state_dict({k: L.tensor(r.uniform(-scale, scale, tuple(v.shape)))
                            for k, v in module.state_dict().items()})
    return module


def _crf_class(L):
    """pytorch-crf's CRF (forward algorithm, gold score, Viterbi), as its repository has it."""
    nn = L.nn

    class CRF(nn.Module):
        def __init__(self, num_tags: int, batch_first: bool = False) -> None:
            super().__init__()
            self.batch_first = batch_first
            self.start_transitions = nn.Parameter(L.empty(num_tags))
            self.end_transitions = nn.Parameter(L.empty(num_tags))
            self.transitions = nn.Parameter(L.empty(num_tags, num_tags))

        def forward(self, emissions, tags, mask, reduction="sum"):
            if self.batch_first:
                emissions, tags, mask = (emissions.transpose(0, 1), tags.transpose(0, 1),
                                         mask.transpose(0, 1))
            llh = self._score(emissions, tags, mask) - self._normalizer(emissions, mask)
            if reduction == "none":
                return llh
            if reduction == "sum":
                return llh.sum()
            if reduction == "mean":
                return llh.mean()
            return llh.sum() / mask.type_as(emissions).sum()

        def _score(self, emissions, tags, mask):
            seq_length, batch_size = tags.shape
            mask = mask.type_as(emissions)
            score = self.start_transitions[tags[0]]
            score += emissions[0, L.arange(batch_size), tags[0]]
            for i in range(1, seq_length):
                score += self.transitions[tags[i - 1], tags[i]] * mask[i]
                score += emissions[i, L.arange(batch_size), tags[i]] * mask[i]
            seq_ends = mask.long().sum(dim=0) - 1
            return score + self.end_transitions[tags[seq_ends, L.arange(batch_size)]]

        def _normalizer(self, emissions, mask):
            score = self.start_transitions + emissions[0]
            for i in range(1, emissions.size(0)):
                nxt = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
                score = L.where(mask[i].unsqueeze(1), L.logsumexp(nxt, dim=1), score)
            return L.logsumexp(score + self.end_transitions, dim=1)

        def decode(self, emissions, mask):
            if self.batch_first:
                emissions, mask = emissions.transpose(0, 1), mask.transpose(0, 1)
            seq_length, batch_size = mask.shape
            score = self.start_transitions + emissions[0]
            history = []
            for i in range(1, seq_length):
                nxt = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
                nxt, indices = nxt.max(dim=1)
                score = L.where(mask[i].unsqueeze(1), nxt, score)
                history.append(indices)
            score += self.end_transitions
            seq_ends = mask.long().sum(dim=0) - 1
            best = []
            for idx in range(batch_size):
                _, last = score[idx].max(dim=0)
                tags = [last.item()]
                for hist in reversed(history[:seq_ends[idx]]):
                    tags.append(hist[idx][tags[-1]].item())
                best.append(tags[::-1])
            return best

    return CRF


def _crf_program(L):
    rs = np.random.RandomState(0)
    B, T, K = 4, 6, 5
    lens = [6, 3, 5, 1]
    em = L.tensor(rs.randn(B, T, K))
    tags = L.tensor(rs.randint(0, K, (B, T)))
    mask = L.tensor(np.array([[t < n for t in range(T)] for n in lens])).to(L.uint8)
    crf = _load(L, _crf_class(L)(K, batch_first=True).double(), 1, 0.1)
    opt = L.optim.Adam(crf.parameters(), lr=0.1)
    out = []
    for red in ["none", "sum", "mean", "token_mean"]:
        opt.zero_grad()
        e = em.clone().requires_grad_()
        llh = crf(e, tags, mask.bool() if red == "mean" else mask, reduction=red)
        (-llh.sum()).backward()
        norm = L.nn.utils.clip_grad_norm_(crf.parameters(), 0.5)
        opt.step()
        out += [llh, e.grad, norm, crf.transitions.detach().clone()]
    return out, crf.decode(em, mask)


def test_program_pytorch_crf_losses_adam_steps_and_viterbi():
    (t, tdec), (r, rdec) = _crf_program(torch), _crf_program(rg)
    for i, (a, b) in enumerate(zip(r, t)):
        close(a, b, f"crf output {i}")
    assert rdec == tdec


def _ctc_program(L):
    """A DeepSpeech/ESPnet-style acoustic model: a packed (unsorted) 2-layer bidirectional
    GRU over padded features, log_softmax, CTC with a blank that is not 0, int32 lengths,
    concatenated targets and zero_infinity (one utterance too short for its target), Adam
    with clip_grad_norm_ and clip_grad_value_, then greedy CTC decoding."""
    nn, U = L.nn, L.nn.utils.rnn
    rs = np.random.RandomState(3)
    N, T, D, H, C = 4, 9, 3, 4, 5
    blank = C - 1
    x = L.tensor(rs.randn(N, T, D))
    in_lens = L.tensor([9, 7, 2, 8]).int()
    tgt_lens = L.tensor([3, 4, 3, 1]).int()
    targets = L.tensor(rs.randint(0, blank, int(tgt_lens.sum())))
    rnn = _load(L, nn.GRU(D, H, num_layers=2, bidirectional=True, batch_first=True).double(), 4)
    fc = _load(L, nn.Linear(2 * H, C).double(), 5)
    params = list(rnn.parameters()) + list(fc.parameters())
    opt = L.optim.Adam(params, lr=1e-2)
    ctc = nn.CTCLoss(blank=blank, reduction="mean", zero_infinity=True)
    out = []
    for _ in range(3):
        opt.zero_grad()
        packed = U.pack_padded_sequence(x, in_lens.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = rnn(packed)
        h, lens = U.pad_packed_sequence(h, batch_first=True, total_length=T)
        lp = fc(h).log_softmax(-1).transpose(0, 1)
        loss = ctc(lp, targets, in_lens, tgt_lens)
        per = L.nn.functional.ctc_loss(lp, targets, in_lens, tgt_lens, blank=blank,
                                       reduction="none")
        loss.backward()
        norm = L.nn.utils.clip_grad_norm_(params, max_norm=1.0)
        L.nn.utils.clip_grad_value_(params, 0.05)
        out += [loss, per, lens, norm, fc.weight.grad.clone()]
        opt.step()
    best = lp.argmax(-1).transpose(0, 1)
    decoded = []
    for seq, n in zip(best, in_lens.tolist()):
        u = L.unique_consecutive(seq[:n])
        decoded.append(u[u != blank].tolist())
    return out + [rnn.weight_hh_l1_reverse], decoded


def test_program_ctc_packed_bigru_training_and_greedy_decoding():
    (t, tdec), (r, rdec) = _ctc_program(torch), _ctc_program(rg)
    for i, (a, b) in enumerate(zip(r, t)):
        close(a, b, f"ctc output {i}")
    assert rdec == tdec


def _seq2seq_program(L):
    """An attention seq2seq (packed bidirectional LSTM encoder, Bahdanau attention with
    masked_fill(-inf) and bmm, LSTMCell decoder) trained with teacher forcing on fairseq's
    label-smoothed NLL (gather, masked_fill_ on ignore_index), then beam search: topk over
    the flattened (beam * V) scores, floor division and % for beam and token, index_select
    to reorder states, eq(eos) bookkeeping and a length penalty."""
    nn, F = L.nn, L.nn.functional
    V, E, H, PAD, BOS, EOS = 9, 4, 5, 0, 1, 2
    rs = np.random.RandomState(5)
    src = rs.randint(3, V, (3, 6))
    src_len = [6, 3, 5]
    for b, n in enumerate(src_len):
        src[b, n:] = PAD
    tgt = rs.randint(3, V, (3, 4))
    tgt[1, 2:] = [EOS, PAD]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, E, padding_idx=PAD)
            self.enc = nn.LSTM(E, H, bidirectional=True, batch_first=True)
            self.bridge = nn.Linear(2 * H, H)
            self.Wq, self.Wk = nn.Linear(H, H, bias=False), nn.Linear(2 * H, H)
            self.v = nn.Linear(H, 1, bias=False)
            self.cell = nn.LSTMCell(E + 2 * H, H)
            self.out = nn.Linear(3 * H, V)

        def encode(self, x, lens):
            p = nn.utils.rnn.pack_padded_sequence(self.emb(x), lens, batch_first=True,
                                                  enforce_sorted=False)
            o, (h, c) = self.enc(p)
            o, _ = nn.utils.rnn.pad_packed_sequence(o, batch_first=True)
            h0 = L.tanh(self.bridge(L.cat([h[0], h[1]], -1)))
            return o, (h0, L.zeros_like(h0)), x.ne(PAD)

        def step(self, y, state, keys, mask):
            s = self.v(L.tanh(self.Wq(state[0]).unsqueeze(1) + self.Wk(keys))).squeeze(2)
            a = F.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
            ctx = L.bmm(a.unsqueeze(1), keys).squeeze(1)
            h, c = self.cell(L.cat([self.emb(y), ctx], -1), state)
            return F.log_softmax(self.out(L.cat([h, ctx], -1)), dim=-1), (h, c)

    def label_smoothed_nll_loss(lprobs, target, epsilon, ignore_index):
        target = target.unsqueeze(-1)
        nll_loss = -lprobs.gather(dim=-1, index=target)
        smooth_loss = -lprobs.sum(dim=-1, keepdim=True)
        pad_mask = target.eq(ignore_index)
        nll_loss.masked_fill_(pad_mask, 0.0)
        smooth_loss.masked_fill_(pad_mask, 0.0)
        eps_i = epsilon / (lprobs.size(-1) - 1)
        loss = (1.0 - epsilon - eps_i) * nll_loss.sum() + eps_i * smooth_loss.sum()
        return loss, nll_loss.sum()

    m = _load(L, Model().double(), 7)
    x, y = L.tensor(src), L.tensor(tgt)
    opt = L.optim.Adam(m.parameters(), lr=1e-2)
    out = []
    for _ in range(2):
        keys, state, mask = m.encode(x, L.tensor(src_len))
        inp, lps = L.full((3,), BOS, dtype=L.long), []
        for t in range(y.size(1)):
            lp, state = m.step(inp, state, keys, mask)
            lps.append(lp)
            inp = y[:, t]
        lprobs = L.stack(lps, 1)
        loss, nll = label_smoothed_nll_loss(lprobs.view(-1, V), y.view(-1), 0.1, PAD)
        ce = F.cross_entropy(lprobs.view(-1, V), y.view(-1), ignore_index=PAD,
                             label_smoothing=0.1)
        opt.zero_grad()
        (loss / y.ne(PAD).sum()).backward()
        out += [loss, nll, ce, L.nn.utils.clip_grad_norm_(m.parameters(), 0.5)]
        opt.step()
    beam, B, maxlen = 3, 3, 5
    with L.no_grad():
        keys, (h, c), mask = m.encode(x, L.tensor(src_len))
        order = L.arange(B).view(-1, 1).repeat(1, beam).view(-1)
        keys, mask = keys.index_select(0, order), mask.index_select(0, order)
        h, c = h.index_select(0, order), c.index_select(0, order)
        tokens = L.full((B * beam, maxlen + 1), PAD, dtype=L.long)
        tokens[:, 0] = BOS
        scores = L.zeros(B * beam, dtype=L.float64)
        scores.view(B, beam)[:, 1:] = float("-inf")
        done = L.zeros(B * beam, dtype=L.bool)
        for step in range(maxlen):
            lp, (h, c) = m.step(tokens[:, step], (h, c), keys, mask)
            lp[done] = float("-inf")
            lp[done, EOS] = 0.0
            top_s, top_i = (scores.unsqueeze(1) + lp).view(B, -1).topk(beam, dim=1)
            src_beam = L.div(top_i, V, rounding_mode="floor")
            assert L.equal(src_beam, top_i // V)
            sel = (src_beam + (L.arange(B) * beam).unsqueeze(1)).view(-1)
            h, c, tokens = h.index_select(0, sel), c.index_select(0, sel), tokens[sel]
            tokens[:, step + 1] = (top_i % V).view(-1)
            scores, done = top_s.view(-1), done[sel] | tokens[:, step + 1].eq(EOS)
            if done.all():
                break
        lengths = (tokens[:, 1:].ne(PAD) & ~tokens[:, 1:].eq(EOS).cumsum(1).gt(1)).sum(1)
        normed = scores / ((5.0 + lengths) / 6.0) ** 0.6
        best = normed.view(B, beam).argmax(1)
    return out + [tokens, scores, lengths, normed, best]


def test_program_attention_seq2seq_label_smoothing_and_beam_search():
    t, r = _seq2seq_program(torch), _seq2seq_program(rg)
    for i, (a, b) in enumerate(zip(r, t)):
        close(a, b, f"seq2seq output {i}")


def _semiring_program(L):
    """torch-struct style: a linear-chain log partition in the log and max semirings, its
    marginals (and argmax) as autograd.grad of logZ, the entropy through a second
    derivative, and a non-projective dependency CRF's marginals by the matrix-tree
    theorem (slogdet of the root-augmented Laplacian)."""
    rs = np.random.RandomState(6)
    edge = L.tensor(rs.randn(2, 4, 3, 3)).requires_grad_()
    lengths = L.tensor([5, 3])
    out = []
    for plus in (lambda v, d: L.logsumexp(v, dim=d), lambda v, d: v.max(dim=d)[0]):
        alpha, chart = plus(edge[:, 0], -2), []
        chart.append(alpha)
        for i in range(1, edge.size(1)):
            alpha = plus(alpha.unsqueeze(-1) + edge[:, i], -2)
            chart.append(alpha)
        last = L.stack(chart, 1)[L.arange(2), lengths - 2]
        logz = plus(last, -1)
        marg, = L.autograd.grad(logz.sum(), edge, create_graph=True)
        out += [logz, marg]
    ent = out[0] - (out[1] * edge).sum((1, 2, 3))
    out.append(L.autograd.grad(ent.sum(), edge)[0])
    arc = L.tensor(rs.randn(2, 5, 5)).requires_grad_()
    w = arc.exp().masked_fill(L.eye(5, dtype=L.bool), 0)
    lap = L.diag_embed(w.sum(1) + arc.diagonal(0, -2, -1).exp()) - w
    sign, logdet = L.linalg.slogdet(lap)
    out += [sign, logdet, L.autograd.grad(logdet.sum(), arc)[0]]
    return out


def test_program_semiring_marginals_entropy_and_matrix_tree():
    t, r = _semiring_program(torch), _semiring_program(rg)
    for i, (a, b) in enumerate(zip(r, t)):
        close(a, b, f"semiring output {i}")


def test_softsign_gradient_at_infinity_is_nan_as_torch():
    """PyTorch's softsign is x / (|x| + 1) written out, so its gradient at +-inf is NaN
    (0 - inf / inf); elsewhere 1 / (|x| + 1)^2, second derivative included."""
    vals = [-_INF, -2.0, 0.0, 3.0, _INF, np.nan]
    res = []
    for L in (torch, rg):
        x = L.tensor(vals, dtype=L.float64, requires_grad=True)
        g, = L.autograd.grad(L.nn.functional.softsign(x).sum(), x, create_graph=True)
        gg, = L.autograd.grad(g.sum(), x)
        res.append((g, gg))
    for r, t in zip(res[1], res[0]):
        close(r, t)
