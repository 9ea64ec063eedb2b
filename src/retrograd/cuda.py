"""`rg.cuda`: NVIDIA GPUs through CuPy (the optional extra `retrograd[gpu]`).

Nothing here imports CuPy until a CUDA tensor is asked for (`t.to("cuda")`,
`rg.zeros(3, device="cuda")`) or a question is asked about the GPU
(`is_available()`, `device_count()`); without CuPy, or without a GPU, those say
False and 0 instead of failing.
"""

from __future__ import annotations

import numpy as np

from . import devices
from .amp import cuda_amp as amp  # rg.cuda.amp.GradScaler / autocast, as torch.cuda.amp

__all__ = ["amp", "is_available", "is_bf16_supported", "device_count", "manual_seed",
           "manual_seed_all", "synchronize", "current_device", "empty_cache"]


def _load():
    """The CuPy backend, or None when CuPy or a GPU is missing."""
    try:
        import cupy
    except Exception:  # noqa: BLE001 - not installed, or a broken CUDA install
        return None
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no driver or no device
        return None
    if n < 1:
        return None

    def to_device(arr, index):
        with cupy.cuda.Device(index):
            return cupy.asarray(arr)

    def count():
        return n

    def special():
        import cupyx.scipy.special
        return cupyx.scipy.special

    def scipy_linalg():
        import cupyx.scipy.linalg
        return cupyx.scipy.linalg

    b = devices.Backend("cuda", cupy.ndarray, cupy, index_of=lambda a: a.device.id,
                        to_device=to_device, to_host=cupy.asnumpy, device_count=count,
                        context=cupy.cuda.Device)
    b.special = special
    b.scipy_linalg = scipy_linalg
    return b


devices.register_loader("cuda", _load)


def is_available() -> bool:
    """Whether a CUDA device can be used: CuPy importable and at least one GPU. Never
    raises."""
    return devices.available("cuda")


def device_count() -> int:
    """How many CUDA devices there are (0 without CuPy or a GPU)."""
    if not is_available():
        return 0
    return int(devices.backend("cuda").device_count())


def current_device() -> int:
    """The index of the CUDA device new tensors go to by default (always 0 here)."""
    return 0


def manual_seed(seed: int) -> None:
    """Seed the generators of the CUDA devices (rand/randn/dropout on the device)."""
    devices.seed_backend("cuda", int(seed))


manual_seed_all = manual_seed


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: retrograd has no bfloat16 (NumPy has no such type), on any device. nanoGPT's
    train.py asks this to choose between bfloat16 and float16."""
    return False


def empty_cache() -> None:
    """Give the cached, unused device memory back (CuPy's memory pools); a no-op while no
    CUDA tensor has been made, as PyTorch's is before CUDA is initialised: training loops
    call it unconditionally."""
    if devices._BY_NAME.get("cuda") is not None:
        xp = devices.backend("cuda").xp
        if xp is not np:
            xp.get_default_memory_pool().free_all_blocks()
            xp.get_default_pinned_memory_pool().free_all_blocks()


def synchronize() -> None:
    """Wait for all queued work on the current CUDA device (a no-op without one)."""
    if devices._BY_NAME.get("cuda") is not None:
        xp = devices.backend("cuda").xp
        sync = getattr(getattr(xp, "cuda", None), "Stream", None)
        if sync is not None and xp is not np:
            xp.cuda.Stream.null.synchronize()
