"""`rg.autograd.grad_mode`: the grad-mode switches under `torch.autograd.grad_mode`'s names."""

from __future__ import annotations

from ..api.modes import inference_mode, set_grad_enabled
from ..grad_mode import enable_grad, no_grad

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
