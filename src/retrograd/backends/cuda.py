"""`rg.backends.cuda`: CUDA's matmul precision switches, kept as settings scripts may set."""

from __future__ import annotations

from types import SimpleNamespace

from .. import cuda as _cuda

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)


def is_built() -> bool:
    """Whether a CUDA backend is present (CuPy importable and a GPU found)."""
    return _cuda.is_available()
