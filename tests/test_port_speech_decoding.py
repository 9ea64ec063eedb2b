"""Speech and sequence-decoding programs ported from PyTorch (OpenAI Whisper's model and
decoding loop with kv-cache forward hooks, its log-mel front end and logit filters, an
RNN-T loss written as a logsumexp DP over the lattice, HiFi-GAN's weight-normed generator
and losses): the minimal cases behind each fix, then a few whole programs compared end to
end against torch computed here."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from port_compare import close, close_grads

import retrograd as rg

torch.set_num_threads(1)


def _pair(make):
    """The same module built by `make(T)` in both libraries, retrograd's loaded with torch's
    (float64) weights."""
    torch.manual_seed(0)
    tm = make(torch).double()
    rm = make(rg).double()
    rm.load_state_dict({k: rg.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return tm, rm


# ---------------------------------------------------------------- layer_norm overflow


def test_layer_norm_row_whose_square_overflows_gives_torchs_zeros():
    # whisper's positional_embedding = nn.Parameter(torch.empty(...)) can hold a 1e23 before
    # a checkpoint is loaded: E[x^2] - mean^2 was inf - inf = nan here, torch gives 0
    x = np.random.RandomState(0).randn(3, 16).astype(np.float32)
    x[0, 3] = 2.3e23
    g = np.random.RandomState(1).randn(3, 16).astype(np.float32)
    xt, xr = torch.tensor(x, requires_grad=True), rg.tensor(x, requires_grad=True)
    t = torch.nn.functional.layer_norm(xt, (16,))
    r = rg.nn.functional.layer_norm(xr, (16,))
    close(r, t, tol=1e-5)
    t.backward(torch.tensor(g))
    r.backward(rg.tensor(g))
    close(xr.grad, xt.grad, "grad", tol=1e-4)


# ---------------------------------------------------------------- float32 var along dims


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("shape,dim", [((4, 3, 20), -1), ((4, 3, 20), (0, 2)), ((50,), 0),
                                       ((1, 20), 1)])
def test_float32_variance_is_torchs_to_the_last_bit(name, shape, dim):
    # normalising features far from 0 (frame energies, sample counts) per channel: torch's
    # reduction along dims is Welford in double, so its float32 variance keeps every bit;
    # two float32 passes lost ~1e-3 of it (to one value, torch's two passes, as here)
    x = (3e5 + np.random.RandomState(0).randn(*shape)).astype(np.float32)
    t = getattr(torch, name)(torch.tensor(x), dim=dim)
    r = getattr(rg, name)(rg.tensor(x, requires_grad=True), dim=dim)
    t, r = (t, r) if isinstance(t, tuple) else ((t,), (r,))
    close(r[0], t[0], tol=0)  # the mean of var_mean may be an ulp from torch's Welford mean
    close(r[-1], t[-1], tol=2e-7)
    sum(v.sum() for v in r).backward()


# ---------------------------------------------------------------- sdpa: mask and causal


def _sdpa_both(T, q, k, v, m, **kw):
    Q, K = T.tensor(q, requires_grad=True), T.tensor(k, requires_grad=True)
    o = T.nn.functional.scaled_dot_product_attention(Q, K, T.tensor(v), attn_mask=T.tensor(m),
                                                     is_causal=True, **kw)
    o.pow(2).sum().backward()
    return o, Q.grad, K.grad


@pytest.mark.parametrize("L,S,float_mask,mshape", [(3, 5, False, (3, 5)), (3, 5, True, (3, 5)),
                                                   (5, 3, False, (5, 3)),
                                                   (3, 5, True, (2, 1, 3, 5))])
def test_sdpa_attn_mask_with_is_causal_combines_as_torchs_fused_kernel(L, S, float_mask, mshape):
    # torch's CPU flash kernel (4-D inputs, no dropout) takes both: the mask within the band
    rs = np.random.RandomState(0)
    q, k, v = rs.randn(2, 2, L, 4), rs.randn(2, 2, S, 4), rs.randn(2, 2, S, 4)
    m = rs.randn(*mshape) if float_mask else rs.rand(*mshape) > 0.3
    if float_mask:
        m[..., 1, :] = -np.inf  # a row that sees nothing: zeros
    for a, b in zip(_sdpa_both(rg, q, k, v, m), _sdpa_both(torch, q, k, v, m)):
        close(a, b)


@pytest.mark.parametrize("case", ["3d", "dropout", "batch"])
def test_sdpa_attn_mask_with_is_causal_refused_where_torch_refuses(case):
    rs = np.random.RandomState(0)
    q = rs.randn(2, 3, 4) if case == "3d" else rs.randn(2, 2, 3, 4)
    k = rs.randn(1, 2, 3, 4) if case == "batch" else q
    kw = dict(dropout_p=0.5) if case == "dropout" else {}
    m = np.ones((3, 3), bool)
    for T in (torch, rg):
        with pytest.raises(RuntimeError, match="attn_mask should not be set when is_causal"):
            T.nn.functional.scaled_dot_product_attention(T.tensor(q), T.tensor(k), T.tensor(k),
                                                         attn_mask=T.tensor(m), is_causal=True,
                                                         **kw)


def test_sdpa_integer_mask_is_a_runtime_error_as_torch():
    for T in (torch, rg):
        with pytest.raises(RuntimeError, match="attn_mask"):
            T.nn.functional.scaled_dot_product_attention(T.ones(2, 3, 4), T.ones(2, 5, 4),
                                                         T.ones(2, 5, 4),
                                                         attn_mask=T.ones(3, 5, dtype=T.int64))


@pytest.mark.parametrize("dtype", ["int64", "bool", "float64"])
def test_tensor_of_a_list_of_multi_element_tensors_raises_torchs_type(dtype):
    # beam-search code building torch.tensor([seq_a, seq_b]) from token tensors
    def make(T):
        a = T.tensor(np.array([1, 0], dtype=dtype))
        return T.tensor([a, a])
    with pytest.raises(Exception) as t:
        make(torch)
    with pytest.raises(type(t.value), match="one element tensors"):
        make(rg)


# ---------------------------------------------------------------- weight_norm checkpoints


def test_parametrized_weight_norm_loads_old_weight_norm_checkpoint():
    # HiFi-GAN checkpoints hold weight_g / weight_v (old nn.utils.weight_norm); code that now
    # uses nn.utils.parametrizations.weight_norm loads them through torch's compat hook
    def make(T, new):
        wn = T.nn.utils.parametrizations.weight_norm if new else T.nn.utils.weight_norm
        return T.nn.Sequential(wn(T.nn.Conv1d(2, 3, 3)), T.nn.LeakyReLU(0.1),
                               wn(T.nn.ConvTranspose1d(3, 2, 4, 2, padding=1)))
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = make(torch, False)
    sd = old.state_dict()
    t, r = make(torch, True), make(rg, True)
    t.load_state_dict(sd)
    r.load_state_dict({k: rg.tensor(v.numpy().copy()) for k, v in sd.items()})
    assert sorted(r.state_dict()) == sorted(t.state_dict())
    x = np.random.RandomState(0).randn(2, 2, 6).astype(np.float32)
    close(r(rg.tensor(x)), t(torch.tensor(x)), tol=1e-6)
    # a wrong name still fails, naming it
    bad = {k.replace("0.weight_g", "0.weight_q"): rg.tensor(v.numpy()) for k, v in sd.items()}
    with pytest.raises(RuntimeError, match="weight_q"):
        make(rg, True).load_state_dict(bad)


# ---------------------------------------------------------------- whole programs


def _whisper(T):
    """Whisper's model.py at toy size (the float16 casts kept, float64 here)."""
    nn, F = T.nn, T.nn.functional

    class LayerNorm(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.float() if x.dtype == T.float16 else x).type(x.dtype)

    class Linear(nn.Linear):
        def forward(self, x):
            return F.linear(x, self.weight.to(x.dtype),
                            None if self.bias is None else self.bias.to(x.dtype))

    class Conv1d(nn.Conv1d):
        def _conv_forward(self, x, weight, bias):
            return super()._conv_forward(x, weight.to(x.dtype),
                                         None if bias is None else bias.to(x.dtype))

    def sinusoids(length, channels, max_timescale=10000):
        log_timescale_increment = np.log(max_timescale) / (channels // 2 - 1)
        inv_timescales = T.exp(-log_timescale_increment * T.arange(channels // 2))
        scaled_time = T.arange(length)[:, np.newaxis] * inv_timescales[np.newaxis, :]
        return T.cat([T.sin(scaled_time), T.cos(scaled_time)], dim=1)

    class MultiHeadAttention(nn.Module):
        use_sdpa = True

        def __init__(self, n_state, n_head):
            super().__init__()
            self.n_head = n_head
            self.query = Linear(n_state, n_state)
            self.key = Linear(n_state, n_state, bias=False)
            self.value = Linear(n_state, n_state)
            self.out = Linear(n_state, n_state)

        def forward(self, x, xa=None, mask=None, kv_cache=None):
            q = self.query(x)
            if kv_cache is None or xa is None or self.key not in kv_cache:
                k = self.key(x if xa is None else xa)
                v = self.value(x if xa is None else xa)
            else:
                k, v = kv_cache[self.key], kv_cache[self.value]
            n_batch, n_ctx, n_state = q.shape
            scale = (n_state // self.n_head) ** -0.25
            q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
            k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
            v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
            if self.use_sdpa:
                a = F.scaled_dot_product_attention(q, k, v,
                                                   is_causal=mask is not None and n_ctx > 1)
            else:
                qk = (q * scale) @ (k * scale).transpose(-1, -2)
                if mask is not None:
                    qk = qk + mask[:n_ctx, :n_ctx]
                a = F.softmax(qk, dim=-1).to(q.dtype) @ v
            return self.out(a.permute(0, 2, 1, 3).flatten(start_dim=2))

    class Block(nn.Module):
        def __init__(self, n_state, n_head, cross=False):
            super().__init__()
            self.attn, self.attn_ln = MultiHeadAttention(n_state, n_head), LayerNorm(n_state)
            self.cross_attn = MultiHeadAttention(n_state, n_head) if cross else None
            self.cross_attn_ln = LayerNorm(n_state) if cross else None
            self.mlp = nn.Sequential(Linear(n_state, 4 * n_state), nn.GELU(),
                                     Linear(4 * n_state, n_state))
            self.mlp_ln = LayerNorm(n_state)

        def forward(self, x, xa=None, mask=None, kv_cache=None):
            x = x + self.attn(self.attn_ln(x), mask=mask, kv_cache=kv_cache)
            if self.cross_attn:
                x = x + self.cross_attn(self.cross_attn_ln(x), xa, kv_cache=kv_cache)
            return x + self.mlp(self.mlp_ln(x))

    class Whisper(nn.Module):
        def __init__(self, n_mels=4, n_audio_ctx=4, n_state=8, n_head=2, n_vocab=12, n_ctx=8):
            super().__init__()
            self.n_ctx = n_ctx
            self.conv1 = Conv1d(n_mels, n_state, kernel_size=3, padding=1)
            self.conv2 = Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
            self.register_buffer("positional_embedding", sinusoids(n_audio_ctx, n_state))
            self.enc = nn.ModuleList([Block(n_state, n_head)])
            self.ln_post = LayerNorm(n_state)
            self.token_embedding = nn.Embedding(n_vocab, n_state)
            self.dec_pos = nn.Parameter(T.randn(n_ctx, n_state) * 0.1)
            self.dec = nn.ModuleList([Block(n_state, n_head, cross=True)])
            self.ln = LayerNorm(n_state)
            mask = T.empty(n_ctx, n_ctx).fill_(-np.inf).triu_(1)
            self.register_buffer("mask", mask, persistent=False)

        def embed_audio(self, x):
            x = F.gelu(self.conv2(F.gelu(self.conv1(x)))).permute(0, 2, 1)
            assert x.shape[1:] == self.positional_embedding.shape, "incorrect audio shape"
            x = (x + self.positional_embedding).to(x.dtype)
            for block in self.enc:
                x = block(x)
            return self.ln_post(x)

        def logits(self, x, xa, kv_cache=None):
            offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
            x = self.token_embedding(x) + self.dec_pos[offset: offset + x.shape[-1]]
            for block in self.dec:
                x = block(x.to(xa.dtype), xa, mask=self.mask, kv_cache=kv_cache)
            x = self.ln(x)
            return x @ T.transpose(self.token_embedding.weight.to(x.dtype), 0, 1)

        def forward(self, mel, tokens):
            return self.logits(tokens, self.embed_audio(mel))

        def install_kv_cache_hooks(self):
            cache, hooks = {}, []

            def save_to_cache(module, _, output):
                if module not in cache or output.shape[1] > self.n_ctx:
                    cache[module] = output
                else:
                    cache[module] = T.cat([cache[module], output], dim=1).detach()
                return cache[module]

            def install_hooks(layer):
                if isinstance(layer, MultiHeadAttention):
                    hooks.append(layer.key.register_forward_hook(save_to_cache))
                    hooks.append(layer.value.register_forward_hook(save_to_cache))
            self.dec.apply(install_hooks)
            return cache, hooks

    return Whisper, MultiHeadAttention


def _decode(T, model, mel, n_steps=4, eot=11, ts_begin=8):
    """Whisper's greedy loop: kv-cache hooks, SuppressTokens, ApplyTimestampRules' last
    rule (logsumexp of the timestamp log-probs against the best text token), sum_logprobs."""
    F = T.nn.functional
    with T.no_grad():
        audio_features = model.embed_audio(mel)
        cache, hooks = model.install_kv_cache_hooks()
        tokens = T.tensor([[1, 2]]).repeat(mel.shape[0], 1)
        sum_logprobs = T.zeros(mel.shape[0], dtype=audio_features.dtype)
        steps = []
        for i in range(n_steps):
            logits = model.logits(tokens if i == 0 else tokens[:, -1:], audio_features, cache)
            logits = logits[:, -1]
            logits[:, [0, 3]] = -np.inf
            logprobs = F.log_softmax(logits.float(), dim=-1)
            for k in range(tokens.shape[0]):
                timestamp_logprob = logprobs[k, ts_begin:].logsumexp(dim=-1)
                if timestamp_logprob > logprobs[k, :ts_begin].max():
                    logits[k, :ts_begin] = -np.inf
            next_tokens = logits.argmax(dim=-1)
            logprobs = F.log_softmax(logits.float(), dim=-1)
            sum_logprobs += logprobs[T.arange(logprobs.shape[0]), next_tokens] * \
                (tokens[:, -1] != eot)
            next_tokens[tokens[:, -1] == eot] = eot
            tokens = T.cat([tokens, next_tokens[:, None]], dim=-1)
            steps.append(logits)
        for hook in hooks:
            hook.remove()
        full = model.logits(tokens, audio_features)  # no cache: the same logits
    return tokens, steps, sum_logprobs, full


def test_program_whisper_train_steps_and_cached_greedy_decoding():
    Wt, At = _whisper(torch)
    Wr, Ar = _whisper(rg)
    tm, rm = _pair(lambda T: (Wt if T is torch else Wr)())
    np.testing.assert_array_equal(rm.mask.numpy(), tm.mask.numpy())
    rs = np.random.RandomState(0)
    mel, tok = rs.randn(2, 4, 8), np.array([[1, 5, 7, 3], [2, 2, 9, 4]])
    to = torch.optim.AdamW(tm.parameters(), lr=1e-2)
    ro = rg.optim.AdamW(rm.parameters(), lr=1e-2)
    for sdpa in (True, False):
        At.use_sdpa = Ar.use_sdpa = sdpa
        losses = []
        for T, m, opt in ((torch, tm, to), (rg, rm, ro)):
            logits = m(T.tensor(mel), T.tensor(tok))
            loss = T.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2),
                                                 T.tensor(tok[:, 1:]))
            opt.zero_grad()
            loss.backward()
            losses.append((logits, loss))
        close(losses[1][0], losses[0][0], f"logits {sdpa}")
        close(losses[1][1], losses[0][1], f"loss {sdpa}")
        close_grads(tm, rm, f" sdpa={sdpa}")
        to.step()
        ro.step()
    t, r = _decode(torch, tm, torch.tensor(mel)), _decode(rg, rm, rg.tensor(mel))
    close(r[0], t[0], "tokens")
    for a, b in zip(r[1], t[1]):
        np.testing.assert_array_equal(np.isinf(a.numpy()), np.isinf(b.numpy()))
        close(rg.where(a.isinf(), 0.0, a), torch.where(b.isinf(), 0.0, b), "step logits")
    close(r[2], t[2], "sum_logprobs", tol=1e-6)  # float32 log-probs (an ulp apart)
    close(r[3], t[3], "uncached logits")
    assert not rm.dec[0].attn.key._forward_hooks


def _log_mel(T, audio, n_mels=6, n_fft=16, hop=4, padding=0):
    """Whisper's audio.py: stft with a Hann window, |.|^2 without the last frame, a mel
    bank, log10 clamped, 8 dB below the peak; and pad_or_trim."""
    F = T.nn.functional
    if padding > 0:
        audio = F.pad(audio, (0, padding))
    window = T.hann_window(n_fft, dtype=audio.dtype)
    stft = T.stft(audio, n_fft, hop, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    filters = T.tensor(np.abs(np.random.RandomState(3).randn(n_mels, n_fft // 2 + 1)))
    log_spec = T.clamp(filters.to(audio.dtype) @ magnitudes, min=1e-10).log10()
    log_spec = T.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


def _pad_or_trim(T, array, length, axis=-1):
    if array.shape[axis] > length:
        array = array.index_select(dim=axis, index=T.arange(length))
    if array.shape[axis] < length:
        pad_widths = [(0, 0)] * array.ndim
        pad_widths[axis] = (0, length - array.shape[axis])
        array = T.nn.functional.pad(array, [pad for sizes in pad_widths[::-1] for pad in sizes])
    return array


def test_program_whisper_log_mel_pad_or_trim_and_gradient():
    rs = np.random.RandomState(0)
    for n, length, axis in ((70, 64, -1), (50, 64, -1), (3, 2, 0), (3, 5, 0)):
        a = rs.randn(3, n)
        close(_pad_or_trim(rg, rg.tensor(a), length, axis),
              _pad_or_trim(torch, torch.tensor(a), length, axis))
    a32 = rs.randn(64).astype(np.float32)
    close(_log_mel(rg, rg.tensor(a32), padding=16), _log_mel(torch, torch.tensor(a32), padding=16),
          "float32", tol=1e-5)
    a = rs.randn(2, 64)
    xt, xr = torch.tensor(a, requires_grad=True), rg.tensor(a, requires_grad=True)
    lt, lr = _log_mel(torch, xt), _log_mel(rg, xr)
    close(lr, lt)
    (lt * torch.tensor(np.cos(np.arange(lt.numel())).reshape(lt.shape))).sum().backward()
    (lr * rg.tensor(np.cos(np.arange(lr.numel())).reshape(lr.shape))).sum().backward()
    close(xr.grad, xt.grad, "grad")


def _transducer(T):
    """An RNN-T (Lugosch's tutorial): GRU encoder, GRUCell predictor, additive joiner, and
    the loss as a logsumexp DP over the (T, U+1) lattice written into a zeros tensor in
    place, with gather for the label emissions."""
    nn, F = T.nn, T.nn.functional

    class Transducer(nn.Module):
        def __init__(self, n_in=3, n_out=5, h=6):
            super().__init__()
            self.embed_x = nn.Linear(n_in, h)
            self.rnn = nn.GRU(h, h, batch_first=True, bidirectional=True)
            self.enc_out = nn.Linear(2 * h, h)
            self.embed_y = nn.Embedding(n_out, h)
            self.cell = nn.GRUCell(h, h)
            self.pred_out = nn.Linear(2 * h, h)
            self.initial_state = nn.Parameter(T.randn(h))
            self.joiner = nn.Linear(h, n_out)

        def forward(self, x, y, x_lens, y_lens):
            enc = self.enc_out(self.rnn(self.embed_x(x))[0])
            state = T.stack([self.initial_state] * y.shape[0])
            outs = []
            for u in range(y.shape[1] + 1):
                inp = T.tensor([0] * y.shape[0]) if u == 0 else y[:, u - 1]
                e = self.embed_y(inp)
                state = self.cell(e, state)
                outs.append(self.pred_out(T.cat([state, e], dim=1)))
            pred = T.stack(outs, dim=1)
            lp = self.joiner(F.relu(enc.unsqueeze(2) + pred.unsqueeze(1))).log_softmax(dim=3)
            B, t_max, u1 = lp.shape[0], lp.shape[1], lp.shape[2]
            log_alpha = T.zeros(B, t_max, u1, dtype=lp.dtype)
            for t in range(t_max):
                for u in range(u1):
                    if u == 0:
                        if t > 0:
                            log_alpha[:, t, u] = log_alpha[:, t - 1, u] + lp[:, t - 1, 0, 0]
                    else:
                        emit = T.gather(lp[:, t, u - 1], dim=1,
                                        index=y[:, u - 1].view(-1, 1)).reshape(-1)
                        if t == 0:
                            log_alpha[:, t, u] = log_alpha[:, t, u - 1] + emit
                        else:
                            log_alpha[:, t, u] = T.logsumexp(T.stack([
                                log_alpha[:, t - 1, u] + lp[:, t - 1, u, 0],
                                log_alpha[:, t, u - 1] + emit]), dim=0)
            return T.stack([log_alpha[b, x_lens[b] - 1, y_lens[b]]
                            + lp[b, x_lens[b] - 1, y_lens[b], 0] for b in range(B)])

    return Transducer


def test_program_rnnt_lattice_loss_train_steps():
    Mt, Mr = _transducer(torch), _transducer(rg)
    tm, rm = _pair(lambda T: (Mt if T is torch else Mr)())
    rs = np.random.RandomState(0)
    x, y = rs.randn(2, 5, 3), np.array([[1, 2, 3], [4, 1, 0]])
    xl, yl = np.array([5, 4]), np.array([3, 2])
    to = torch.optim.Adam(tm.parameters(), lr=1e-2)
    ro = rg.optim.Adam(rm.parameters(), lr=1e-2)
    for step in range(2):
        tl = -tm(torch.tensor(x), torch.tensor(y), torch.tensor(xl), torch.tensor(yl)).mean()
        rl = -rm(rg.tensor(x), rg.tensor(y), rg.tensor(xl), rg.tensor(yl)).mean()
        close(rl, tl, f"loss {step}")
        to.zero_grad()
        ro.zero_grad()
        tl.backward()
        rl.backward()
        close_grads(tm, rm, f" step {step}")
        to.step()
        ro.step()


def _hifigan(T):
    """HiFi-GAN's generator (weight_norm convs, ConvTranspose1d upsampling, ResBlock1 with
    dilations, leaky_relu) and a period discriminator (reflect pad, view to 2-D, Conv2d),
    with its feature-matching, adversarial and mel losses."""
    nn, F = T.nn, T.nn.functional
    wn = nn.utils.parametrizations.weight_norm

    def pad_of(k, d=1):
        return int((k * d - d) / 2)

    class ResBlock1(nn.Module):
        def __init__(self, ch, k=3, dilation=(1, 3)):
            super().__init__()
            self.convs1 = nn.ModuleList([wn(nn.Conv1d(ch, ch, k, 1, dilation=d,
                                                      padding=pad_of(k, d))) for d in dilation])
            self.convs2 = nn.ModuleList([wn(nn.Conv1d(ch, ch, k, 1, padding=pad_of(k)))
                                         for _ in dilation])

        def forward(self, x):
            for c1, c2 in zip(self.convs1, self.convs2):
                x = c2(F.leaky_relu(c1(F.leaky_relu(x, 0.1)), 0.1)) + x
            return x

    class Generator(nn.Module):
        def __init__(self, n_mels=4, ch=8):
            super().__init__()
            self.conv_pre = wn(nn.Conv1d(n_mels, ch, 7, 1, padding=3))
            self.ups = nn.ModuleList([wn(nn.ConvTranspose1d(ch, ch // 2, 4, 2, padding=1))])
            self.resblocks = nn.ModuleList([ResBlock1(ch // 2, 3), ResBlock1(ch // 2, 5)])
            self.conv_post = wn(nn.Conv1d(ch // 2, 1, 7, 1, padding=3))

        def forward(self, x):
            x = self.ups[0](F.leaky_relu(self.conv_pre(x), 0.1))
            xs = None
            for block in self.resblocks:
                xs = block(x) if xs is None else xs + block(x)
            return T.tanh(self.conv_post(F.leaky_relu(xs / len(self.resblocks))))

    class DiscriminatorP(nn.Module):
        def __init__(self, period=3):
            super().__init__()
            self.period = period
            self.convs = nn.ModuleList([wn(nn.Conv2d(1, 4, (5, 1), (3, 1), padding=(2, 0))),
                                        wn(nn.Conv2d(4, 4, (3, 1), 1, padding=(1, 0)))])
            self.conv_post = wn(nn.Conv2d(4, 1, (3, 1), 1, padding=(1, 0)))

        def forward(self, x):
            fmap = []
            b, c, t = x.shape
            if t % self.period != 0:
                n_pad = self.period - (t % self.period)
                x = F.pad(x, (0, n_pad), "reflect")
                t = t + n_pad
            x = x.view(b, c, t // self.period, self.period)
            for layer in self.convs:
                x = F.leaky_relu(layer(x), 0.1)
                fmap.append(x)
            x = self.conv_post(x)
            fmap.append(x)
            return T.flatten(x, 1, -1), fmap

    def mel(y):
        spec = T.stft(F.pad(y.unsqueeze(1), (6, 6), mode="reflect").squeeze(1), 16, 4,
                      window=T.hann_window(16, dtype=y.dtype), center=False,
                      return_complex=True)
        spec = T.sqrt(T.view_as_real(spec).pow(2).sum(-1) + 1e-9)
        basis = T.tensor(np.abs(np.random.RandomState(7).randn(4, 9)), dtype=y.dtype)
        return T.log(T.clamp(T.matmul(basis, spec), min=1e-5))

    class GAN(nn.Module):
        def __init__(self):
            super().__init__()
            self.g, self.d = Generator(), DiscriminatorP()

        def losses(self, x, y):
            y_hat = self.g(x)
            dr, _ = self.d(y)
            dg, _ = self.d(y_hat.detach())
            loss_d = T.mean((1 - dr) ** 2) + T.mean(dg ** 2)
            _, fmap_r = self.d(y)
            dg, fmap_g = self.d(y_hat)
            loss_fm = 0
            for rl, gl in zip(fmap_r, fmap_g):
                loss_fm += T.mean(T.abs(rl - gl))
            loss_mel = F.l1_loss(mel(y.squeeze(1)), mel(y_hat.squeeze(1))) * 45
            loss_g = T.mean((1 - dg) ** 2) + 2 * loss_fm + loss_mel
            return loss_d, loss_g

    return GAN


def test_program_hifigan_generator_discriminator_steps_and_remove_parametrizations():
    Mt, Mr = _hifigan(torch), _hifigan(rg)
    tm, rm = _pair(lambda T: (Mt if T is torch else Mr)())
    rs = np.random.RandomState(0)
    x, y = rs.randn(2, 4, 8), np.tanh(rs.randn(2, 1, 16))
    opts = [(torch.optim.AdamW(m.parameters(), 2e-3, betas=[0.8, 0.99]),
             rg.optim.AdamW(r.parameters(), 2e-3, betas=[0.8, 0.99]), m, r)
            for m, r in ((tm.d, rm.d), (tm.g, rm.g))]
    for step in range(2):
        for i, (to, ro, m, r) in enumerate(opts):  # discriminator, then generator
            tl = tm.losses(torch.tensor(x), torch.tensor(y))[i]
            rl = rm.losses(rg.tensor(x), rg.tensor(y))[i]
            close(rl, tl, f"loss {i} step {step}")
            to.zero_grad()
            ro.zero_grad()
            tl.backward()
            rl.backward()
            close_grads(m, r, f" {i} step {step}")
            to.step()
            ro.step()
    for T, m in ((torch, tm), (rg, rm)):
        for mod in m.g.modules():
            if T.nn.utils.parametrize.is_parametrized(mod):
                T.nn.utils.parametrize.remove_parametrizations(mod, "weight")
    assert sorted(rm.g.state_dict()) == sorted(tm.g.state_dict())
    close(rm.g(rg.tensor(x)), tm.g(torch.tensor(x)), "after remove")
