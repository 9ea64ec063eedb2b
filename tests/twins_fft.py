"""PyTorch twins of the FFT family (`ops/fft.py`), for the generated tests."""

import torch

TWINS = {
    "fft_c2c": lambda x, axes, inverse, norm: (torch.fft.ifftn if inverse else torch.fft.fftn)(
        x, dim=axes, norm=norm),
    "fft_r2c": lambda x, axis, norm: torch.fft.rfft(x, dim=axis, norm=norm),
    "fft_c2r": lambda x, axis, n, norm: torch.fft.irfft(x, n=n, dim=axis, norm=norm),
}
