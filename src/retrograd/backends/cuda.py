"""`rg.backends.cuda`: CUDA's matmul precision switches and attention backend flags, kept
as settings scripts may set."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

from .. import cuda as _cuda

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)


def is_built() -> bool:
    """Whether a CUDA backend is present (CuPy importable and a GPU found)."""
    return _cuda.is_available()


# ---------------------------------------------------------------- attention backend flags

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}
"""Which scaled_dot_product_attention backends are enabled, as torch's global flags:
retrograd has one implementation, which computes what each would, so they only record
what a script set (and what `rg.nn.attention.sdpa_kernel` sets inside its block)."""


def flash_sdp_enabled() -> bool:
    """Whether the flash attention backend is enabled (recorded only)."""
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient attention backend is enabled (recorded only)."""
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    """Whether the math attention backend is enabled (recorded only)."""
    return _SDP["math"]


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN attention backend is enabled (recorded only)."""
    return _SDP["cudnn"]


def enable_flash_sdp(enabled: bool) -> None:
    """Enable or disable the flash attention backend (recorded only)."""
    _SDP["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Enable or disable the memory-efficient attention backend (recorded only)."""
    _SDP["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Enable or disable the math attention backend (recorded only)."""
    _SDP["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Enable or disable the cuDNN attention backend (recorded only)."""
    _SDP["cudnn"] = bool(enabled)


def is_flash_attention_available() -> bool:
    """Whether a flash attention kernel is built in: no (one NumPy implementation)."""
    return False


@contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[dict]:
    """PyTorch's deprecated context manager (2023-era LLM code still calls it): sets the
    backend flags for the block and restores them after, with torch's FutureWarning."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    saved = dict(_SDP)
    _SDP.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield {}
    finally:
        _SDP.update(saved)


class SDPAParams:
    """The arguments of one `scaled_dot_product_attention` call, as PyTorch's
    `SDPAParams(query, key, value, attn_mask, dropout, is_causal, enable_gqa)` (all
    positional; read-only attributes), for the `can_use_*_attention` checks."""

    __slots__ = ("_args",)

    def __init__(self, query, key, value, attn_mask, dropout, is_causal, enable_gqa, /) -> None:
        from ..tensor import Tensor  # (the settings module imports no tensor code at load)

        if not (isinstance(query, Tensor) and isinstance(key, Tensor)
                and isinstance(value, Tensor)) \
                or not (attn_mask is None or isinstance(attn_mask, Tensor)) \
                or not isinstance(dropout, numbers.Real):
            raise TypeError("SDPAParams(query, key, value, attn_mask, dropout, is_causal, "
                            "enable_gqa): expected three tensors, a tensor or None, a float "
                            f"and two bools; got {type(query).__name__}, {type(key).__name__}, "
                            f"{type(value).__name__}, {type(attn_mask).__name__}, "
                            f"{type(dropout).__name__}, {type(is_causal).__name__}, "
                            f"{type(enable_gqa).__name__}")
        self._args = (query, key, value, attn_mask, float(dropout), bool(is_causal),
                      bool(enable_gqa))

    query = property(lambda self: self._args[0])
    key = property(lambda self: self._args[1])
    value = property(lambda self: self._args[2])
    attn_mask = property(lambda self: self._args[3])
    dropout = property(lambda self: self._args[4])
    is_causal = property(lambda self: self._args[5])
    enable_gqa = property(lambda self: self._args[6])


def _no_fused_kernel(params: SDPAParams, name: str) -> bool:
    if not isinstance(params, SDPAParams):
        raise TypeError(f"{name}(params: SDPAParams, debug: bool = False): params must be "
                        f"an SDPAParams, got {type(params).__name__}")
    return False


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether attention on `params` could run a flash kernel: never (retrograd has none;
    as PyTorch built without CUDA, which answers False without debug warnings)."""
    return _no_fused_kernel(params, "can_use_flash_attention")


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether attention on `params` could run the memory-efficient kernel: never."""
    return _no_fused_kernel(params, "can_use_efficient_attention")


def can_use_cudnn_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether attention on `params` could run the cuDNN kernel: never."""
    return _no_fused_kernel(params, "can_use_cudnn_attention")
