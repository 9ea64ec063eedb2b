"""Audio and time-series programs ported from PyTorch (log-mel front ends with stft/istft,
multi-resolution STFT losses, WaveNet, Demucs / Conv-TasNet, CTC speech models, TCN,
N-BEATS, Autoformer decomposition, DeepAR likelihoods): the minimal cases behind each
fix, then a few whole programs compared end to end against torch computed here."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from port_compare import close, close_grads

import retrograd as rg

torch.set_num_threads(1)


# ---------------------------------------------------------------- RNN _all_weights


@pytest.mark.parametrize("kw", [dict(num_layers=2), dict(bidirectional=True, bias=False),
                                dict(proj_size=3, num_layers=2, bidirectional=True)])
def test_lstm_all_weights_names_as_torch(kw):
    # DeepAR (zhykoties/TimeSeries) sets the forget-gate biases by walking _all_weights
    t = torch.nn.LSTM(4, 5, **kw)
    r = rg.nn.LSTM(4, 5, **kw)
    assert r._all_weights == t._all_weights
    assert [[p.shape for p in g] for g in r.all_weights] == \
        [[tuple(p.shape) for p in g] for g in t.all_weights]


def test_deepar_forget_bias_init_through_all_weights():
    ref = torch.nn.LSTM(3, 4, num_layers=2).state_dict()

    def init(T):
        lstm = T.nn.LSTM(3, 4, num_layers=2)
        lstm.load_state_dict({k: T.tensor(v.numpy().copy()) for k, v in ref.items()})
        for names in lstm._all_weights:
            for name in filter(lambda n: "bias" in n, names):
                bias = getattr(lstm, name)
                n = bias.size(0)
                with T.no_grad():
                    bias[n // 4:n // 2].fill_(1.0)
        return lstm
    t, r = init(torch), init(rg)
    for k, v in t.state_dict().items():
        if "bias" in k:
            close(r.state_dict()[k], v, k)


# ---------------------------------------------------------------- stft


def _sig(n=50, seed=0):
    return np.random.RandomState(seed).randn(n)


def test_stft_rejects_integer_input():
    with pytest.raises(RuntimeError):
        torch.stft(torch.arange(40), 8, return_complex=True)
    with pytest.raises(RuntimeError, match="floating point or complex"):
        rg.stft(rg.arange(40), 8, return_complex=True)


def test_stft_complex_input_return_complex_false_is_view_as_real():
    x = _sig(80) + 1j * _sig(80, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.stft(torch.tensor(x), 16, 4, return_complex=False)
        r = rg.stft(rg.tensor(x), 16, 4, return_complex=False)
        w = np.hanning(16) * (1 + 0.5j)
        tw = torch.stft(torch.tensor(_sig(40)), 16, 4, window=torch.tensor(w),
                        return_complex=False)
        rw = rg.stft(rg.tensor(_sig(40)), 16, 4, window=rg.tensor(w), return_complex=False)
    close(r, t)
    close(rw, tw)


@pytest.mark.parametrize("n_fft,win,hop,n", [(16, 10, 4, 50), (16, 11, 3, 48), (16, 16, 4, 40),
                                             (16, 10, 4, 16), (8, 5, 2, 10)])
def test_stft_align_to_window(n_fft, win, hop, n):
    x = _sig(n)
    w = np.hanning(win)
    for align in (None, False, True):
        t = torch.stft(torch.tensor(x, requires_grad=True), n_fft, hop, win, torch.tensor(w),
                       center=False, align_to_window=align, return_complex=True)
        xr = rg.tensor(x, requires_grad=True)
        r = rg.stft(xr, n_fft, hop, win, rg.tensor(w), center=False, align_to_window=align,
                    return_complex=True)
        close(r, t, str(align))
        xt = torch.tensor(x, requires_grad=True)
        tg, = torch.autograd.grad(torch.stft(xt, n_fft, hop, win, torch.tensor(w), center=False,
                                             align_to_window=align, return_complex=True)
                                  .abs().sum(), xt)
        rg_, = rg.autograd.grad(r.abs().sum(), xr)
        close(rg_, tg, "grad")
    # no window: the rectangular window of win_length, zero-padded to n_fft
    t = torch.stft(torch.tensor(x), n_fft, hop, win, center=False, align_to_window=True,
                   return_complex=True)
    r = rg.tensor(x).stft(n_fft, hop, win, center=False, align_to_window=True,
                          return_complex=True)
    close(r, t)


def test_stft_align_to_window_errors():
    x = _sig(50)
    with pytest.raises(RuntimeError):
        torch.stft(torch.tensor(x), 16, 4, center=True, align_to_window=False,
                   return_complex=True)
    with pytest.raises(RuntimeError, match="align_to_window"):
        rg.stft(rg.tensor(x), 16, 4, center=True, align_to_window=False, return_complex=True)
    for T in (torch, rg):
        # the signal must still hold n_fft samples before the alignment padding
        with pytest.raises(RuntimeError):
            T.stft(T.tensor(x[:14]), 16, 4, 10, T.hann_window(10, dtype=T.float64),
                   center=False, align_to_window=True, return_complex=True)
        # n_fft - win_length odd: torch counts a last frame that ends past the padding
        with pytest.raises(RuntimeError):
            T.stft(T.tensor(x[:47]), 16, 3, 11, T.hann_window(11, dtype=T.float64),
                   center=False, align_to_window=True, return_complex=True)


@pytest.mark.parametrize("win,length,onesided", [(16, None, None), (12, 40, None),
                                                 (16, None, False)])
def test_istft_gradient_with_respect_to_a_learnt_window(win, length, onesided):
    # the window divides the overlap-add too (its overlap-added square), so a learnt
    # window's gradient has two terms
    x = _sig(64)
    w = np.hanning(win) + 0.1
    outs = []
    for T in (torch, rg):
        wt = T.tensor(w, requires_grad=True)
        spec = T.stft(T.tensor(x), 16, 4, win, window=T.tensor(w), onesided=onesided,
                      return_complex=True)
        y = T.istft(spec, 16, 4, win, window=wt, length=length, onesided=onesided)
        (g,) = T.autograd.grad((y ** 2).sum(), wt)
        outs.append((y, g))
    close(outs[1][0], outs[0][0])
    close(outs[1][1], outs[0][1], "window grad")
    # forward mode as well
    tw = _sig(win, 5)
    spec_t = torch.stft(torch.tensor(x), 16, 4, win, window=torch.tensor(w), return_complex=True)
    spec_r = rg.stft(rg.tensor(x), 16, 4, win, window=rg.tensor(w), return_complex=True)
    _, tt = torch.func.jvp(lambda v: torch.istft(spec_t, 16, 4, win, window=v, length=length),
                           (torch.tensor(w),), (torch.tensor(tw),))
    _, rt = rg.func.jvp(lambda v: rg.istft(spec_r, 16, 4, win, window=v, length=length),
                        (rg.tensor(w),), (rg.tensor(tw),))
    close(rt, tt, "window tangent")


def test_log_prob_of_a_python_number_raises_while_validating_as_torch():
    for T in (torch, rg):
        # torch validates by default until torch._dynamo loads (torch.optim, torch.func do
        # that), which turns the default off for the process: ask torch for it explicitly
        kw = {"validate_args": True} if T is torch else {}
        with pytest.raises(ValueError, match="must be a Tensor"):
            T.distributions.Normal(0.0, 1.0, **kw).log_prob(0.5)
        with pytest.raises(ValueError, match="must be a Tensor"):
            T.distributions.NegativeBinomial(3.0, probs=0.5, **kw).log_prob(2.0)
    # without validation a number is taken, as torch's arithmetic takes it
    t = torch.distributions.Normal(0.0, 1.0, validate_args=False).log_prob(0.5)
    r = rg.distributions.Normal(0.0, 1.0, validate_args=False).log_prob(0.5)
    assert float(r) == pytest.approx(float(t))


def test_window_functions_take_torchs_layout_device_and_pin_memory_keywords():
    for T in (torch, rg):
        ref = torch.hann_window(8, periodic=False, dtype=torch.float64)
        close(T.hann_window(8, False, dtype=T.float64, layout=T.strided, device="cpu",
                            pin_memory=False), ref)
        close(T.kaiser_window(8, True, 5.0, dtype=T.float64, pin_memory=False, device="cpu"),
              torch.kaiser_window(8, True, 5.0, dtype=torch.float64))
        close(T.signal.windows.hann(8, sym=False, dtype=T.float64, layout=T.strided,
                                    device="cpu"),
              torch.signal.windows.hann(8, sym=False, dtype=torch.float64))
        with pytest.raises(RuntimeError):
            T.hann_window(8, layout=T.sparse_coo)
        with pytest.raises(ValueError):
            T.signal.windows.hann(8, layout=T.sparse_coo)
    assert rg.bartlett_window(5, requires_grad=True, device="cpu").requires_grad


# ---------------------------------------------------------------- complex views


_Z = np.random.RandomState(3).randn(2, 5) + 1j * np.random.RandomState(4).randn(2, 5)


def _write_programs():
    def view_as_real_write(T):
        s = T.tensor(_Z.copy())
        r = T.view_as_real(s)
        r[..., 1] = 0  # drop the phase, as spectrogram code does through the real view
        return s

    def real_mul_(T):
        s = T.tensor(_Z.copy())
        s.real.mul_(2)
        return s

    def imag_zero_(T):
        s = T.tensor(_Z.copy())
        s.imag.zero_()
        return s

    def imag_row(T):
        s = T.tensor(_Z.copy())
        s.imag[0] = 1.0
        return s

    def view_as_complex_mul_(T):
        r = T.tensor(np.stack([_Z.real, _Z.imag], -1))
        T.view_as_complex(r).mul_(1j)
        return r

    def real_iadd(T):
        s = T.tensor(_Z.copy())
        s.real += 1
        return s

    def real_set(T):
        s = T.tensor(_Z.copy())
        s.real = T.ones(2, 5, dtype=T.float64)
        return s

    def imag_set(T):
        s = T.tensor(_Z.copy())
        s.imag = T.zeros(2, 5, dtype=T.float64)
        return s

    def spec_then_clamp(T):
        s = T.tensor(_Z.copy())
        mag = s.abs()
        s.real.clamp_(min=0)
        return s, mag

    return [real_mul_, imag_zero_, imag_row, view_as_real_write, view_as_complex_mul_,
            real_iadd, real_set, imag_set, spec_then_clamp]


@pytest.mark.parametrize("prog", _write_programs(), ids=lambda f: f.__name__)
def test_writes_through_real_imag_and_view_as_real_reach_the_tensor(prog):
    t, r = prog(torch), prog(rg)
    for a, b in zip(t if isinstance(t, tuple) else (t,), r if isinstance(r, tuple) else (r,)):
        close(b, a.resolve_conj())


def test_complex_views_read_and_differentiate_as_before():
    x = np.random.RandomState(0).randn(3, 4, 2)
    for T in (torch, rg):
        xt = T.tensor(x, requires_grad=True)
        z = T.view_as_complex(xt) * (1 + 2j)
        y = (T.view_as_real(z) ** 2).sum() + (z.real * z.imag).sum()
        (g,) = T.autograd.grad(y, xt)
        if T is torch:
            ref = (y, g)
    close(y, ref[0])
    close(g, ref[1])
    # a strided complex tensor (a transposed spectrogram) still views as real
    st = torch.tensor(_Z).t()
    close(rg.view_as_real(rg.tensor(_Z).t()), torch.view_as_real(st))


def test_write_into_complex_view_of_recorded_tensor_never_silently_wrong():
    # torch rebases the write into the complex tensor's history; retrograd refuses it
    # (it cannot scatter into a real or imaginary part), rather than a stale gradient
    s = rg.tensor(_Z.copy(), requires_grad=True)
    t = s * 2
    with pytest.raises(RuntimeError, match="in place"):
        t.real.mul_(3)
    with pytest.raises(RuntimeError, match="in place"):
        rg.view_as_real(t)[..., 1] = 0


def test_version_counter_shared_with_complex_views():
    for T in (torch, rg):
        a = T.tensor(_Z.copy())
        w = T.tensor(np.ones((2, 5, 2)), requires_grad=True)
        y = (T.view_as_real(a) * w).sum()
        a.real.mul_(2)  # the values mul saved for w's gradient changed
        with pytest.raises(RuntimeError, match="modified by an inplace|in-place|in place"):
            y.backward()


# ---------------------------------------------------------------- whole programs


def _load(tm, rm):
    rm.load_state_dict({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()})


def _grads(tm, rm, tol=1e-9):
    close_grads(tm, rm, "", tol)


def _logmel_program(T, wav):
    """A hand-written log-mel front end (torchaudio's formulas), its istft round trip and a
    multi-resolution STFT loss, as vocoder repositories write them."""
    def hz_to_mel(f):
        return 2595.0 * math.log10(1.0 + f / 700.0)

    def mel_fb(n_freqs, n_mels, sr, dtype):
        all_freqs = T.linspace(0, sr // 2, n_freqs, dtype=dtype)
        m_pts = T.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2, dtype=dtype)
        f_pts = 700.0 * (10 ** (m_pts / 2595.0) - 1.0)
        f_diff = f_pts[1:] - f_pts[:-1]
        slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
        down = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
        up = slopes[:, 2:] / f_diff[1:]
        fb = T.max(T.zeros(1, dtype=dtype), T.min(down, up))
        return fb * (2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])).unsqueeze(0)

    def amplitude_to_db(x, top_db=80.0):
        x_db = 10.0 * T.log10(T.clamp(x, min=1e-10))
        x_db = x_db.reshape(-1, 1, x_db.shape[-2], x_db.shape[-1])
        return T.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))

    x = T.tensor(wav, requires_grad=True)
    window = T.hann_window(48, periodic=True, dtype=x.dtype)
    spec = T.stft(x, 64, hop_length=16, win_length=48, window=window, center=True,
                  pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
    mel = T.matmul(spec.abs().pow(2.0).transpose(-1, -2), mel_fb(33, 12, 8000, x.dtype))
    db = amplitude_to_db(mel.transpose(-1, -2))
    rec = T.istft(spec, 64, hop_length=16, win_length=48, window=window, length=wav.shape[-1])
    y = T.tensor(wav[::-1].copy())
    loss = 0.0
    for n_fft, hop, win in ((64, 12, 48), (32, 6, 24), (128, 24, 100)):
        w = T.hann_window(win, dtype=x.dtype)
        xm = T.stft(x, n_fft, hop, win, w, return_complex=True).abs().clamp(min=1e-7)
        ym = T.stft(y, n_fft, hop, win, w, return_complex=True).abs().clamp(min=1e-7)
        loss = loss + T.norm(ym - xm, p="fro") / T.norm(ym, p="fro") \
            + T.nn.functional.l1_loss(T.log(ym), T.log(xm))
    total = db.mean() + loss + (T.view_as_real(spec) ** 2).mean()
    (g,) = T.autograd.grad(total, x)
    return db, rec, loss, g


def test_program_logmel_istft_multires_stft_loss():
    wav = np.random.RandomState(0).randn(2, 300)
    outs = [_logmel_program(T, wav) for T in (torch, rg)]
    for name, a, b in zip(("log-mel", "istft", "mr-stft loss", "grad"), *outs):
        close(b, a, name)
    close(outs[1][1], torch.tensor(wav), "round trip", 1e-9)


def _deepar(T):
    nn, F, D = T.nn, T.nn.functional, T.distributions

    class DeepAR(nn.Module):
        def __init__(self, lik):
            super().__init__()
            self.lik = lik
            self.embedding = nn.Embedding(5, 3)
            self.lstm = nn.LSTM(1 + 2 + 3, 6, num_layers=2)
            for names in self.lstm._all_weights:  # the repository's forget-gate init
                for name in filter(lambda n: "bias" in n, names):
                    bias = getattr(self.lstm, name)
                    n = bias.size(0)
                    with T.no_grad():
                        bias[n // 4:n // 2].fill_(1.0)
            self.mu = nn.Linear(12, 1)
            self.presigma = nn.Linear(12, 1)
            self.df = nn.Linear(12, 1)

        def forward(self, x, idx, hidden, cell):
            inp = T.cat((x, self.embedding(idx)), dim=2)
            _, (hidden, cell) = self.lstm(inp, (hidden, cell))
            h = hidden.permute(1, 2, 0).contiguous().view(hidden.shape[1], -1)
            sigma = F.softplus(self.presigma(h))
            return (T.squeeze(self.mu(h)), T.squeeze(sigma),
                    T.squeeze(2.0 + F.softplus(self.df(h))), hidden, cell)

        def nll(self, mu, sigma, df, labels):
            keep = labels != 0
            if self.lik == "studentt":
                d = D.StudentT(df[keep], mu[keep], sigma[keep])
                return -d.log_prob(labels[keep]).mean()
            m = F.softplus(mu[keep])
            alpha = sigma[keep]
            d = D.NegativeBinomial(total_count=1.0 / alpha, probs=m * alpha / (1.0 + m * alpha))
            return -d.log_prob(labels[keep].round().abs()).mean()
    return DeepAR


@pytest.mark.parametrize("lik", ["studentt", "negbin"])
def test_program_deepar_lstm_likelihoods(lik):
    rs = np.random.RandomState(1)
    x = rs.randn(8, 3, 3)
    x[..., 0] = np.abs(rs.randn(8, 3)) * 3
    x[2, 1, 0] = 0.0
    idx = rs.randint(0, 5, size=(1, 3))
    tm, rm = _deepar(torch)(lik).double(), _deepar(rg)(lik).double()
    _load(tm, rm)
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2)
    ropt = rg.optim.Adam(rm.parameters(), lr=1e-2)
    for step in range(2):
        losses = []
        for T, m, opt in ((torch, tm, topt), (rg, rm, ropt)):
            opt.zero_grad()
            h = T.zeros(2, 3, 6, dtype=T.float64)
            c = T.zeros(2, 3, 6, dtype=T.float64)
            loss = 0.0
            for t in range(7):
                mu, sigma, df, h, c = m(T.tensor(x[t:t + 1]), T.tensor(idx), h, c)
                loss = loss + m.nll(mu, sigma, df, T.tensor(x[t + 1, :, 0]))
            loss.backward()
            opt.step()
            losses.append(loss)
        close(losses[1], losses[0], f"loss, step {step}")
        _grads(tm, rm)


def _autoformer(T):
    nn, F = T.nn, T.nn.functional

    class Decomp(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
            self.avg = nn.AvgPool1d(kernel_size=k, stride=1, padding=0)

        def forward(self, x):
            front = x[:, 0:1, :].repeat(1, (self.k - 1) // 2, 1)
            end = x[:, -1:, :].repeat(1, (self.k - 1) // 2, 1)
            trend = self.avg(T.cat([front, x, end], dim=1).permute(0, 2, 1)).permute(0, 2, 1)
            trend2 = F.avg_pool1d(F.pad(x.permute(0, 2, 1), (2, 2), mode="replicate"), 5,
                                  stride=1).permute(0, 2, 1)
            return x - trend, (trend + trend2) / 2

    class AutoCorr(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.decomp = Decomp(5)
            self.head = nn.Linear(d, 1)

        def forward(self, x):
            B, L, _ = x.shape
            q, k, v = (f(x).view(B, L, 2, -1) for f in (self.q, self.k, self.v))
            res = T.fft.rfft(q.permute(0, 2, 3, 1).contiguous(), dim=-1) * T.conj(
                T.fft.rfft(k.permute(0, 2, 3, 1).contiguous(), dim=-1))
            corr = T.fft.irfft(res, n=L, dim=-1)
            top_k = int(math.log(L))
            mean_value = T.mean(T.mean(corr, dim=1), dim=1)
            index = T.topk(T.mean(mean_value, dim=0), top_k, dim=-1)[1]
            weights = T.stack([mean_value[:, index[i]] for i in range(top_k)], dim=-1)
            w = T.softmax(weights, dim=-1)
            values = v.permute(0, 2, 3, 1).contiguous()
            agg = T.zeros_like(values)
            for i in range(top_k):
                agg = agg + T.roll(values, -int(index[i]), -1) * w[:, i].view(-1, 1, 1, 1)
            seasonal, trend = self.decomp(agg.permute(0, 3, 1, 2).reshape(B, L, -1) + x)
            return self.head(seasonal).squeeze(-1) + trend.mean(-1)
    return AutoCorr


def test_program_autoformer_autocorrelation_decomposition():
    rs = np.random.RandomState(2)
    x = np.cumsum(rs.randn(3, 16, 4), axis=1)
    y = rs.randn(3, 16)
    tm, rm = _autoformer(torch)(4).double(), _autoformer(rg)(4).double()
    _load(tm, rm)
    topt = torch.optim.AdamW(tm.parameters(), lr=1e-3)
    ropt = rg.optim.AdamW(rm.parameters(), lr=1e-3)
    for step in range(3):
        outs = []
        for T, m, opt in ((torch, tm, topt), (rg, rm, ropt)):
            out = m(T.tensor(x))
            loss = T.nn.functional.mse_loss(out, T.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            outs.append((out, loss))
        close(outs[1][0], outs[0][0], f"output, step {step}")
        close(outs[1][1], outs[0][1], f"loss, step {step}")
        _grads(tm, rm)
