"""PyTorch's `torch.nn.modules.container` path: its layers, re-exported from retrograd.nn."""

from ..containers import (  # noqa: F401
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)

__all__ = [
    "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential",
]
