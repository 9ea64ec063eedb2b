"""The short-time Fourier transform and its inverse (`rg.stft`, `rg.istft`), with PyTorch's
signatures and values.

Both are compositions of existing ops, so they differentiate (to every order, in both
modes) like those: `stft` pads the signal (one gather for 'reflect', 'replicate' and
'circular', `pad_constant` for 'constant'), gathers the frames with one index, multiplies
by the window (zero-padded to n_fft, centred) and transforms each frame with `rfft` or
`fft`; `istft` inverts each frame (`irfft` or `ifft`), multiplies by the window again,
overlap-adds the frames (`index_add`) and divides by the overlap-added squared window.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import fft as _fft
from .. import ops
from ..engine import apply
from ..tensor import Tensor
from ._args import _t

__all__ = ["stft", "istft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _signature(name, x, n_fft, hop, win, window) -> str:
    w = "None" if window is None else f"shape {tuple(window.shape)}"
    return (f"{name}(input of shape {tuple(x.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w})")


def _int(v, name: str, fn: str) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{fn}(): '{name}' must be an int, got {v!r}")
    return int(v)


def _window(window, n_fft: int, win: int, x: Tensor, sig: str) -> Tensor | None:
    """The window as a tensor of length n_fft (zero-padded on both sides, centred), or
    None for the rectangular window of length n_fft."""
    if window is None:
        if win == n_fft:
            return None
        w = Tensor(np.ones(win, dtype=np.finfo(x.dtype).dtype))
    else:
        w = _t(window)
        if w.ndim != 1 or w.shape[0] != win:
            raise RuntimeError(f"{sig}: expected a 1D window tensor of size equal to "
                               f"win_length={win}, but got window with shape "
                               f"{tuple(w.shape)}")
    if win < n_fft:
        left = (n_fft - win) // 2
        w = apply(ops.pad_constant, w, pads=((left, n_fft - win - left),))
    return w


def _check_lengths(n_fft, hop, win, sig):
    if hop <= 0:
        raise RuntimeError(f"{sig}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{sig}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")


def _pad_index(length: int, p: int, mode: str) -> np.ndarray:
    """Positions in a signal of `length` that make up its padding by p on both sides."""
    core = np.arange(length)
    if mode == "reflect":
        left, right = np.arange(p, 0, -1), np.arange(length - 2, length - 2 - p, -1)
    elif mode == "replicate":
        left, right = np.zeros(p, np.int64), np.full(p, length - 1)
    else:  # circular
        left, right = np.arange(length - p, length), np.arange(p)
    return np.concatenate([left, core, right]).astype(np.int64)


def stft(input, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window=None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a signal (shape (L,) or (B, L)): result
    (B?, n_fft // 2 + 1 or n_fft, n_frames), as `torch.stft`. `return_complex` must be
    given for real input (True; False returns `view_as_real` of it, deprecated as in
    PyTorch). `align_to_window=True` (only with `center=False`) starts the first frame
    where the window (win_length < n_fft) starts, not where its zero padding does."""
    x = _t(input)
    n_fft = _int(n_fft, "n_fft", "stft")
    hop = n_fft // 4 if hop_length is None else _int(hop_length, "hop_length", "stft")
    win = n_fft if win_length is None else _int(win_length, "win_length", "stft")
    sig = _signature("stft", x, n_fft, hop, win, window)
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{sig}: expected a tensor of floating point or complex values, "
                           f"got {x.dtype}")
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_in = x.dtype.kind == "c" or (window is not None and _t(window).dtype.kind == "c")
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs (return_complex=True)")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated (as in PyTorch): use "
                      "return_complex=True and view_as_real", UserWarning, stacklevel=2)
    if x.ndim not in (1, 2):
        raise RuntimeError(f"{sig}: expected a 1D or 2D tensor, got shape {tuple(x.shape)}")
    if pad_mode not in _PAD_MODES:
        raise NotImplementedError(f"stft: unrecognised pad_mode {pad_mode!r} (expected one of "
                                  f"{_PAD_MODES})")
    if center:
        p = n_fft // 2
        length = x.shape[-1]
        if pad_mode == "reflect" and p >= length:
            raise RuntimeError(f"stft: reflect padding of {p} on each side needs a signal "
                               f"longer than {p}, but the input has shape {tuple(x.shape)}")
        if pad_mode != "constant" and length == 0:
            raise RuntimeError(f"stft: cannot pad an empty signal of shape {tuple(x.shape)}")
        if pad_mode == "circular" and p > length:
            raise RuntimeError(f"stft: circular padding of {p} is larger than the signal "
                               f"length {length}")
        if pad_mode == "constant":
            x = apply(ops.pad_constant, x, pads=((p, p),))
        else:
            x = apply(ops.getitem, x, idx=(Ellipsis, _pad_index(length, p, pad_mode)))
        sig = _signature("stft", x, n_fft, hop, win, window)
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"{sig}: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    _check_lengths(n_fft, hop, win, sig)
    if align_to_window and win < n_fft:
        # PyTorch zero-pads the signal by the window's left offset on both sides, so the
        # frames step from the window's start (1 + (L - win_length) // hop of them)
        left = (n_fft - win) // 2
        if (length - win) // hop * hop + n_fft > length + 2 * left:
            # PyTorch counts 1 + (L - win_length) // hop frames; with n_fft - win_length
            # odd the last of them can end past the padded signal, which it refuses
            raise RuntimeError(f"{sig}: with align_to_window=True the last frame ends past "
                               f"the signal padded by {left} on each side (n_fft - win_length "
                               "is odd): shorten the signal or change hop_length")
        x = apply(ops.pad_constant, x, pads=((left, left),))
        length = x.shape[-1]
    w = _window(window, n_fft, win, x, sig)
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    n_frames = 1 + (length - n_fft) // hop
    idx = np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]
    frames = apply(ops.getitem, x, idx=(Ellipsis, idx))  # (B?, n_frames, n_fft)
    if w is not None:
        frames = frames * w
    norm = "ortho" if normalized else "backward"
    spec = (_fft.rfft if onesided else _fft.fft)(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if not return_complex:
        from .complex import view_as_real
        return view_as_real(spec)
    return spec


def istft(input, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window=None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of `stft` (least squares overlap-add, as `torch.istft`): a complex
    spectrogram (B?, n_freq, n_frames) back to the signal (B?, L)."""
    x = _t(input)
    if x.dtype.kind != "c":
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           f"from stft with return_complex=True (got {x.dtype})")
    n_fft = _int(n_fft, "n_fft", "istft")
    hop = n_fft // 4 if hop_length is None else _int(hop_length, "hop_length", "istft")
    win = n_fft if win_length is None else _int(win_length, "win_length", "istft")
    sig = _signature("istft", x, n_fft, hop, win, window)
    if x.ndim not in (2, 3):
        raise RuntimeError(f"{sig}: expected a 2D or 3D complex tensor, got shape "
                           f"{tuple(x.shape)}")
    if n_fft <= 0:
        raise RuntimeError(f"{sig}: expected n_fft > 0, but got n_fft={n_fft}")
    _check_lengths(n_fft, hop, win, sig)
    n_freq, n_frames = x.shape[-2], x.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_fft // 2 + 1 != n_freq:
        raise RuntimeError(f"{sig}: expected the frequency dimension (-2) of a onesided input "
                           f"to be n_fft // 2 + 1 = {n_fft // 2 + 1}, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"{sig}: expected the frequency dimension (-2) of a two-sided input "
                           f"to be n_fft = {n_fft}, but got {n_freq}")
    w = _window(window, n_fft, win, x, sig)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
    elif w is not None and w.dtype.kind == "c":
        raise RuntimeError(f"{sig}: complex windows are incompatible with "
                           "return_complex=False")
    norm = "ortho" if normalized else "backward"
    x = x.transpose(-1, -2)  # (B?, n_frames, n_freq)
    if return_complex:
        frames = _fft.ifft(x, n_fft, dim=-1, norm=norm)
    else:
        if not onesided:
            x = x[..., : n_fft // 2 + 1]
        frames = _fft.irfft(x, n_fft, dim=-1, norm=norm)
    wd = np.ones(n_fft) if w is None else np.asarray(w.detach().numpy())
    if w is not None:
        frames = frames * w
    expected = n_fft + hop * (n_frames - 1)
    idx = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    batched = frames.ndim == 3
    flat = frames.reshape((frames.shape[0], -1) if batched else (-1,))
    zeros = Tensor(np.zeros(flat.shape[:-1] + (expected,), dtype=flat.dtype))
    from .indexing import index_add
    y = index_add(zeros, -1, Tensor(idx), flat)
    # PyTorch divides by the overlap-added window**2, complex for a complex window (not |w|^2)
    envelope = np.zeros(expected, dtype=np.complex128 if wd.dtype.kind == "c" else np.float64)
    np.add.at(envelope, idx, np.tile(wd ** 2, n_frames))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + _int(length, "length", "istft")
    else:
        end = expected - n_fft // 2 if center else expected
    stop = min(end, expected)
    y = y[..., start:stop]
    env = envelope[start:stop]
    if env.size and np.abs(env).min() < 1e-11:
        raise RuntimeError(f"{sig}: window overlap add min: {np.abs(env).min():g} (the "
                           "squared window does not cover every sample: pick a window and "
                           "hop_length that satisfy the NOLA condition)")
    if w is not None and (w.requires_grad or w._fw is not None):
        # a learnt window (or one with a tangent): the overlap-added squared window divides
        # in the graph too, so the window's derivative has both terms, as in PyTorch
        sq = w * w
        env_t = index_add(Tensor(np.zeros(expected, dtype=sq.dtype)), 0, Tensor(idx),
                          sq.repeat(n_frames))
        y = y / env_t[start:stop]
    else:
        y = y / Tensor(env.astype(y.dtype if env.dtype.kind == "c" else np.finfo(y.dtype).dtype))
    if end > expected:
        warnings.warn("istft: the signal is shorter than `length`; the result is padded with "
                      "zeros in the tail", UserWarning, stacklevel=2)
        y = apply(ops.pad_constant, y, pads=((0, end - expected),))
    return y
