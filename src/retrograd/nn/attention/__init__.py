"""`torch.nn.attention`'s kernel selection, for code that chooses one: retrograd has one
implementation of `scaled_dot_product_attention` (the math one, with its compiled
kernels where they apply), so a choice of backend changes no result. `bias` holds the
causal masks (`causal_lower_right`, ...) that attention takes without building them."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager

from ...backends.cuda import SDPAParams, can_use_efficient_attention, can_use_flash_attention
from . import bias

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """PyTorch's attention backends, by its names and numbers."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextmanager
def sdpa_kernel(backends, set_priority: bool = False) -> Iterator[None]:
    """Run the block with `backends` (one `SDPBackend` or a list) allowed, as torch's
    context manager; retrograd's one implementation computes what each would, so only
    `rg.backends.cuda`'s flags (`flash_sdp_enabled()`, ...) change inside the block."""
    from ...backends import cuda as _backend  # (a settings module, imported on use)

    chosen = list(backends) if isinstance(backends, (list, tuple, set)) else [backends]
    for b in chosen:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: backends must be SDPBackend members, got {b!r}")
    saved = dict(_backend._SDP)
    _backend._SDP.update(flash=SDPBackend.FLASH_ATTENTION in chosen,
                         mem_efficient=SDPBackend.EFFICIENT_ATTENTION in chosen,
                         math=SDPBackend.MATH in chosen,
                         cudnn=SDPBackend.CUDNN_ATTENTION in chosen)
    try:
        yield
    finally:
        _backend._SDP.update(saved)
