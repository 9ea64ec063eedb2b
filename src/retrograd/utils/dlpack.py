"""`rg.utils.dlpack`: PyTorch's `torch.utils.dlpack`, sharing memory with other array
libraries through DLPack: `to_dlpack` (a tensor's capsule), `from_dlpack` (a tensor of an
exporter's or a capsule's memory) and `DLDeviceType` (DLPack's device codes)."""

from __future__ import annotations

from enum import IntEnum

from ..api.torch_misc import from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(IntEnum):
    """DLPack's device type codes (the first item of `__dlpack_device__()`)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
