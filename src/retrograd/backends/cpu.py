"""`rg.backends.cpu`: PyTorch's `torch.backends.cpu.get_cpu_capability()`, which ported
image code (torchvision's resize kernels) reads to choose its uint8 path."""

from __future__ import annotations

import os
import platform

__all__ = ["get_cpu_capability"]


def _features() -> dict:
    """NumPy's runtime CPU feature table (name -> supported)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__
    return __cpu_features__


def get_cpu_capability() -> str:
    """The widest vector instruction set this CPU offers, in PyTorch's names: "AVX512" or
    "AVX2" on x86-64 (lowered by ATEN_CPU_CAPABILITY=avx2/default, as in PyTorch), else
    "DEFAULT". NumPy's kernels choose their own; this answers the question honestly."""
    f = _features()
    machine = platform.machine().lower()
    caps = ["DEFAULT"]
    if machine in ("x86_64", "amd64"):
        if f.get("AVX2") and f.get("FMA3"):
            caps.append("AVX2")
            if all(f.get(k) for k in ("AVX512F", "AVX512BW", "AVX512DQ", "AVX512VL")):
                caps.append("AVX512")
    want = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if want in caps:
        return want
    return caps[-1]
