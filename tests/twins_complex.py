"""PyTorch twins of the complex family (`ops/complex.py`), for the generated tests (real
inputs; complex ones are covered by tests/test_complex.py)."""

import torch

TWINS = {
    "real": torch.real, "imag": lambda x: x * 0, "conj": torch.conj, "angle": torch.angle,
    "cabs": lambda x: torch.sqrt(x * x), "view_as_real": lambda x: torch.stack([x, x * 0], -1),
    "view_as_complex": lambda x: torch.view_as_complex(x.contiguous()),
    "complex": lambda re, im: torch.complex(*torch.broadcast_tensors(re, im)),
}
