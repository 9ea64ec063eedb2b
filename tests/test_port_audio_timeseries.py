"""Audio and time-series programs ported from PyTorch (log-mel front ends with stft/istft,
multi-resolution STFT losses, WaveNet, Demucs / Conv-TasNet, CTC speech models, TCN,
N-BEATS, Autoformer decomposition, DeepAR likelihoods): the minimal cases behind each
fix, then a few whole programs compared end to end against torch computed here."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd as rg

torch.set_num_threads(1)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def close(a, b, what="", tol=1e-9):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    s = max(np.abs(b).max(initial=0.0), 1e-30)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * s, err_msg=what)


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
