"""Classic NLP programs in plain PyTorch (the pytorch/tutorials seq2seq translation model,
beam search, a BiLSTM-CRF tagger, a pointer-generator and T5's relative position
buckets), re-typed against a module `torch` that is either torch or retrograd, so one
body runs on both. Each test copies torch's weights into retrograd and compares losses,
gradients, a few optimiser steps and decoded outputs; plus the gaps this port found."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch as _torch
from port_compare import close

import retrograd as rg

# ---------------------------------------------------------------- gaps found by the port


@pytest.mark.parametrize("cls", ["Embedding", "EmbeddingBag"])
def test_from_pretrained_not_2d_is_assertion_error(cls):
    """torch asserts the table is 2-D (AssertionError); retrograd raised only ValueError."""
    with pytest.raises(AssertionError):
        getattr(_torch.nn, cls).from_pretrained(_torch.zeros(5))
    with pytest.raises(AssertionError, match="2-D"):
        getattr(rg.nn, cls).from_pretrained(rg.zeros(5))
    with pytest.raises(ValueError):
        getattr(rg.nn, cls).from_pretrained(rg.zeros(2, 3, 4))


# ---------------------------------------------------------------- the sources, re-typed


def seq2seq_tutorial(torch, SOS_token=0, MAX_LENGTH=5):
    """pytorch/tutorials intermediate/seq2seq_translation_tutorial: EncoderRNN and
    AttnDecoderRNN (GRU, Bahdanau attention with bmm/softmax, teacher forcing or topk)."""
    nn = torch.nn
    F = torch.nn.functional

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = torch.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs = []
            attentions = []
            for i in range(MAX_LENGTH):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs)
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()
            decoder_outputs = torch.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = torch.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = torch.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    return EncoderRNN, AttnDecoderRNN


def beam_search(torch, logits, K, EOS=1, alpha=0.7):
    """Batched beam search over a fake decoder's (T, B*K, V) logits: log-prob
    accumulation, -inf masking of finished beams, topk over the flattened beams, `//` and
    `%` of the indices, index_select of the state, a GNMT length penalty, gather of the
    best hypothesis."""
    F = torch.nn.functional
    T, BK, V = logits.shape
    B = BK // K
    scores = torch.zeros(B, K)
    scores[:, 1:] = float('-inf')
    scores = scores.view(-1)
    seqs = torch.full((B * K, 1), 2, dtype=torch.long)
    finished = torch.zeros(B * K, dtype=torch.bool)
    hidden = torch.arange(B * K * 4, dtype=torch.float64).view(B * K, 4)
    lengths = torch.ones(B * K)
    for t in range(T):
        logp = F.log_softmax(logits[t], dim=-1)
        logp = logp.masked_fill(finished.unsqueeze(1), float('-inf'))
        logp[:, EOS] = torch.where(finished, torch.zeros_like(logp[:, EOS]), logp[:, EOS])
        cand = (scores.unsqueeze(1) + logp).view(B, -1)
        top_scores, top_idx = cand.topk(K, dim=1)
        beam_idx = top_idx // V
        tok_idx = top_idx % V
        flat = ((torch.arange(B) * K).unsqueeze(1) + beam_idx).view(-1)
        seqs = torch.cat([seqs.index_select(0, flat), tok_idx.view(-1, 1)], dim=1)
        hidden = hidden.index_select(0, flat)
        finished = finished[flat] | (tok_idx.view(-1) == EOS)
        lengths = lengths[flat] + (~finished).float()
        scores = top_scores.view(-1)
    normed = scores / ((5 + lengths) / 6) ** alpha
    best = normed.view(B, K).argmax(dim=-1)
    best_seq = seqs.view(B, K, -1).gather(
        1, best.view(B, 1, 1).expand(-1, -1, seqs.size(-1))).squeeze(1)
    return (scores, normed, best, best_seq, hidden, lengths,
            torch.div(top_idx, V, rounding_mode='floor'))


def t5_bucket(torch, relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """HF transformers T5Attention._relative_position_bucket."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large,
        torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def pointer_generator(torch, vocab_logits, attn_logits, p_gen_logit, ext_ids, target,
                      max_oov=3):
    """See et al.'s final distribution: p_gen * vocab ++ zeros, scatter_add of
    (1 - p_gen) * attention into the extended vocabulary, NLL of the gold ids plus the
    coverage loss."""
    F = torch.nn.functional
    vocab_dist = F.softmax(vocab_logits, dim=1)
    attn = F.softmax(attn_logits, dim=-1)
    p_gen = torch.sigmoid(p_gen_logit)
    vocab_dist_ = torch.cat([p_gen * vocab_dist, torch.zeros((vocab_dist.size(0), max_oov))], 1)
    final = vocab_dist_.scatter_add(1, ext_ids, (1 - p_gen) * attn)
    gold = torch.gather(final, 1, target.unsqueeze(1)).squeeze()
    loss = -torch.log(gold + 1e-12).mean()
    cov = torch.sum(torch.min(attn, torch.cumsum(attn, 0)), 1).mean()
    return final, loss + 0.5 * cov


def crf(torch, feats, tags, transitions, START=3, STOP=4):
    """A BiLSTM-CRF's CRF layer (vectorised): the forward algorithm with logsumexp, the
    gold path score, Viterbi with max over dims and backtracking with gather."""
    n = transitions.shape[0]
    alpha = torch.full((n,), -10000.)
    alpha[START] = 0.
    for feat in feats:
        alpha = torch.logsumexp(alpha.unsqueeze(0) + transitions + feat.unsqueeze(1), dim=1)
    log_z = torch.logsumexp(alpha + transitions[STOP], dim=0)
    tags = torch.cat([torch.tensor([START], dtype=torch.long), tags])
    gold = torch.zeros(1)
    for i, feat in enumerate(feats):
        gold = gold + transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
    gold = gold + transitions[STOP, tags[-1]]
    score = torch.full((n,), -10000.)
    score[START] = 0
    history = []
    for feat in feats:
        score, idx = (score.unsqueeze(0) + transitions).max(dim=1)
        score = score + feat
        history.append(idx)
    best_score, best = (score + transitions[STOP]).max(dim=0)
    path = [best]
    for idx in reversed(history):
        best = idx.gather(0, best.view(1)).squeeze(0)
        path.append(best)
    return log_z - gold, best_score, torch.stack(path[:-1][::-1])


# ---------------------------------------------------------------- whole programs


def _seq2seq_run(torch, enc_sd=None, dec_sd=None):
    EncoderRNN, AttnDecoderRNN = seq2seq_tutorial(torch)
    enc, dec = EncoderRNN(9, 6, dropout_p=0.0), AttnDecoderRNN(6, 10, dropout_p=0.0)
    enc, dec = enc.double(), dec.double()
    if enc_sd is not None:
        enc.load_state_dict({k: torch.tensor(v) for k, v in enc_sd.items()})
        dec.load_state_dict({k: torch.tensor(v) for k, v in dec_sd.items()})
    sds = [{k: v.detach().numpy().copy() for k, v in m.state_dict().items()} for m in (enc, dec)]
    rs = np.random.RandomState(0)
    inp, tgt = torch.tensor(rs.randint(2, 9, (3, 5))), torch.tensor(rs.randint(2, 10, (3, 5)))
    eo = torch.optim.Adam(enc.parameters(), lr=0.01)
    do = torch.optim.Adam(dec.parameters(), lr=0.01)
    criterion = torch.nn.NLLLoss()
    losses, grads = [], None
    for _ in range(3):
        eo.zero_grad()
        do.zero_grad()
        encoder_outputs, encoder_hidden = enc(inp)
        decoder_outputs, _, _ = dec(encoder_outputs, encoder_hidden, tgt)
        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), tgt.view(-1))
        loss.backward()
        if grads is None:
            grads = [p.grad.detach().numpy().copy() for p in dec.parameters()]
        eo.step()
        do.step()
        losses.append(loss.item())
    enc.eval()
    dec.eval()
    with torch.no_grad():
        decoder_outputs, _, attn = dec(*enc(inp))
        _, topi = decoder_outputs.topk(1)
    return sds, losses, grads, topi.squeeze(), attn, decoder_outputs


def test_seq2seq_translation_tutorial_trains_and_decodes_as_torch():
    sds, lt, gt, it, at, ot = _seq2seq_run(_torch)
    _, lr_, gr, ir, ar, or_ = _seq2seq_run(rg, *sds)
    np.testing.assert_allclose(lr_, lt, rtol=1e-10)
    scale = max(np.abs(g).max() for g in gt)  # Va.bias's gradient is 0 up to rounding
    for a, b in zip(gr, gt):
        close(a, b, "grad", 1e-9, scale)
    close(ir, it, "greedy ids")
    close(ar, at, "attention", 1e-9)
    close(or_, ot, "log-probs", 1e-9)


def test_beam_search_matches_torch():
    rs = np.random.RandomState(0)
    logits = rs.randn(5, 6, 7) * 2
    logits[2, :, 1] += 3  # some beams finish early
    out_t = beam_search(_torch, _torch.tensor(logits), K=3)
    out_r = beam_search(rg, rg.tensor(logits), K=3)
    for a, b, what in zip(out_r, out_t, "scores normed best best_seq hidden lengths div".split()):
        close(a, b, what, 1e-12)


def test_pointer_generator_and_t5_buckets_match_torch():
    rs = np.random.RandomState(1)
    args = [rs.randn(3, 6), rs.randn(3, 5), rs.randn(3, 1)]
    ids, target = rs.randint(0, 9, (3, 5)), np.array([7, 2, 8])
    outs = []
    for T in (rg, _torch):
        xs = [T.tensor(a, requires_grad=True) for a in args]
        final, loss = pointer_generator(T, *xs, T.tensor(ids), T.tensor(target))
        loss.backward()
        outs.append([final, loss] + [x.grad for x in xs])
    for a, b in zip(*outs):
        close(a, b, "pointer-generator", 1e-12)
    rel = np.arange(-300, 300).reshape(20, 30)
    for bidirectional in (True, False):
        close(t5_bucket(rg, rg.tensor(rel), bidirectional),
              t5_bucket(_torch, _torch.tensor(rel), bidirectional), "t5 buckets")
        q, k = np.arange(12)[:, None], np.arange(16)[None, :]
        close(t5_bucket(rg, rg.tensor(k - q), bidirectional, 8, 16),
              t5_bucket(_torch, _torch.tensor(k - q), bidirectional, 8, 16), "t5 small")


def test_crf_forward_algorithm_and_viterbi_match_torch():
    rs = np.random.RandomState(2)
    feats, trans = rs.randn(6, 5), rs.randn(5, 5)
    trans[3, :] = -10000
    trans[:, 4] = -10000
    tags = np.array([0, 1, 2, 2, 0, 1])
    outs = []
    for T in (rg, _torch):
        T.set_default_dtype(T.float64)
        try:
            f, tr = T.tensor(feats, requires_grad=True), T.tensor(trans, requires_grad=True)
            nll, best, path = crf(T, f, T.tensor(tags), tr)
            nll.sum().backward()
            outs.append([nll, best, path, f.grad, tr.grad])
        finally:
            T.set_default_dtype(T.float32)
    for a, b in zip(*outs):
        close(a, b, "crf", 1e-10)


@pytest.mark.parametrize("case", ["bias", "finite_kpm", "f32_kpm_f64_model", "all_masked",
                                  "bool_and_float", "causal"])
def test_encoder_layer_fast_path_reads_float_masks_as_bool(case):
    """PyTorch's fused TransformerEncoderLayer (eval, no grad, batch_first) masks every
    nonzero entry of a float src_mask / src_key_padding_mask (an additive bias is not
    added; pytorch issue 147209); retrograd added it as on the general path, and raised
    for a float32 padding mask with a float64 model, which PyTorch takes."""
    rs = np.random.RandomState(3)
    x = rs.randn(3, 5, 8)
    kb = np.array([[False] * 5, [False] * 3 + [True] * 2, [False] + [True] * 4])
    bias = rs.randn(5, 5) * 0.5
    bias[:, 0] = 0

    def masks(T):
        k = T.tensor(kb)
        return {"bias": (T.tensor(bias), None),
                "finite_kpm": (None, k.double().masked_fill(k, -3.0)),
                "f32_kpm_f64_model": (None, k.float().masked_fill(k, float("-inf"))),
                "all_masked": (None, T.full((3, 5), -2.0, dtype=T.float64)),
                "bool_and_float": (T.zeros(5, 5, dtype=T.bool), k.double().masked_fill(k, 4.0)),
                "causal": (T.nn.Transformer.generate_square_subsequent_mask(5, dtype=T.float64),
                           k)}[case]

    tl = _torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                           dtype=_torch.float64).eval()
    rl = rg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                       dtype=rg.float64).eval()
    rl.load_state_dict({k: rg.tensor(v.numpy()) for k, v in tl.state_dict().items()})
    for grad in (False, True):  # the fused path, then the general one
        outs = []
        for T, layer in ((_torch, tl), (rg, rl)):
            src_mask, kpm = masks(T)
            with T.set_grad_enabled(grad):
                xs = T.tensor(x).requires_grad_(grad)
                outs.append(layer(xs, src_mask=src_mask, src_key_padding_mask=kpm).detach())
        close(outs[1], outs[0], f"{case} grad={grad}", 1e-9)
        if case == "all_masked" and not grad:  # nested tensors refuse a batch of padding only
            for T, layer in ((_torch, tl), (rg, rl)):
                with T.no_grad(), pytest.raises(RuntimeError, match="non-zero numel"):
                    T.nn.TransformerEncoder(layer, 2).eval()(T.tensor(x),
                                                             src_key_padding_mask=masks(T)[1])
            continue
        tenc = _torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=True).eval()
        renc = rg.nn.TransformerEncoder(rl, 2, enable_nested_tensor=True).eval()
        renc.load_state_dict({k: rg.tensor(v.numpy()) for k, v in tenc.state_dict().items()})
        outs = []
        for T, enc in ((_torch, tenc), (rg, renc)):
            src_mask, kpm = masks(T)
            with T.set_grad_enabled(grad):
                outs.append(enc(T.tensor(x).requires_grad_(grad), mask=src_mask,
                                src_key_padding_mask=kpm).detach())
        close(outs[1], outs[0], f"encoder {case} grad={grad}", 1e-9)


@pytest.mark.parametrize("act", ["gelu_tanh_module", "tanh_module", "silu_function"])
def test_transformer_decoder_clones_of_a_module_activation_run_relu_as_torch(act):
    """PyTorch's TransformerDecoderLayer.__setstate__ puts F.relu in place of an activation
    Module on every copy, so nn.Transformer(activation=nn.GELU(...)) and
    TransformerDecoder(layer, n) run ReLU in their decoder layers; retrograd ran the Module."""
    def make(T):
        a = {"gelu_tanh_module": lambda: T.nn.GELU(approximate="tanh"),
             "tanh_module": T.nn.Tanh, "silu_function": lambda: T.nn.functional.silu}[act]()
        m = T.nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, activation=a, dtype=T.float64)
        layer = T.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation=a,
                                             dtype=T.float64)
        return m, T.nn.TransformerDecoder(layer, 2)

    (tm, td), (rm, rd) = make(_torch), make(rg)
    for t, r in ((tm, rm), (td, rd)):
        r.load_state_dict({k: rg.tensor(v.numpy()) for k, v in t.state_dict().items()})
        assert str(r).count("activation") == str(t).count("activation")
    rs = np.random.RandomState(4)
    src, tgt = rs.randn(6, 2, 8) * 3, rs.randn(4, 2, 8) * 3
    outs = []
    for T, m, d in ((_torch, tm, td), (rg, rm, rd)):
        s, t = T.tensor(src), T.tensor(tgt, requires_grad=True)
        y = m(s, t) + d(t, s)
        y.pow(2).sum().backward()
        outs.append((y.detach(), t.grad))
    close(outs[1][0], outs[0][0], "output", 1e-9)
    close(outs[1][1], outs[0][1], "grad", 1e-9)


_BAD_INPUTS = {
    "nll_loss_long_input": lambda T: T.nn.functional.nll_loss(
        T.zeros(3, 4, dtype=T.long), T.zeros(3, dtype=T.long)),
    "nll_loss_bool_unbatched": lambda T: T.nn.functional.nll_loss(
        T.zeros(4, dtype=T.bool), T.tensor(1)),
    "cross_entropy_long_input": lambda T: T.nn.functional.cross_entropy(
        T.zeros(3, 4, dtype=T.long), T.zeros(3, dtype=T.long)),
    "cross_entropy_int_input_prob_target": lambda T: T.nn.functional.cross_entropy(
        T.zeros(3, 4, dtype=T.int32), T.zeros(3, 4)),
    "lstm_long_input": lambda T: T.nn.LSTM(3, 4)(T.zeros(5, 2, 3, dtype=T.long)),
    "gru_bool_unbatched_input": lambda T: T.nn.GRU(3, 4)(T.zeros(5, 3, dtype=T.bool)),
    "lstm_packed_long_input": lambda T: T.nn.LSTM(3, 4)(
        T.nn.utils.rnn.pack_sequence([T.zeros(2, 3, dtype=T.long)])),
    "lstm_hx_one_tensor": lambda T: T.nn.LSTM(3, 4)(T.zeros(5, 2, 3), T.zeros(1, 2, 4)),
    "lstm_hx_two_layer_tensor": lambda T: T.nn.LSTM(3, 4, 2)(T.zeros(5, 2, 3),
                                                             T.zeros(2, 2, 4)),
    "lstm_hx_one_tuple": lambda T: T.nn.LSTM(3, 4)(T.zeros(5, 2, 3), (T.zeros(1, 2, 4),)),
    "sdpa_mixed_dtypes": lambda T: T.nn.functional.scaled_dot_product_attention(
        T.zeros(2, 3, 4), T.zeros(2, 3, 4, dtype=T.float64), T.zeros(2, 3, 4)),
    "sdpa_long_inputs": lambda T: T.nn.functional.scaled_dot_product_attention(
        *[T.zeros(2, 3, 4, dtype=T.long)] * 3),
    "mha_key_of_another_size": lambda T: T.nn.MultiheadAttention(4, 2)(
        T.zeros(3, 2, 4), T.zeros(3, 2, 5), T.zeros(3, 2, 5)),
    "decoder_memory_of_another_size": lambda T: T.nn.TransformerDecoderLayer(4, 2, 8)(
        T.zeros(3, 2, 4), T.zeros(3, 2, 5)),
}


@pytest.mark.parametrize("case", sorted(_BAD_INPUTS))
def test_bad_inputs_raise_torchs_exception_type(case):
    """nll_loss of an integer input returned a number (PyTorch: NotImplementedError);
    cross_entropy's integer input, an RNN's integer input, an LSTM state that is not an
    (h, c) pair and scaled_dot_product_attention's mixed dtypes raised exceptions of
    another type than PyTorch's; a key/memory of another size than the attention's
    embedding leaked NumPy's matmul ValueError."""
    f = _BAD_INPUTS[case]
    with pytest.raises(Exception) as torch_err:
        f(_torch)
    with pytest.raises(torch_err.type):
        f(rg)
