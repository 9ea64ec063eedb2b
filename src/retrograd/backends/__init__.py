"""`rg.backends`: the backend switches PyTorch scripts read or set at start-up.

`torch.backends.cudnn.benchmark = True` and `torch.backends.mps.is_available()` appear
in many training scripts; here they are plain settings and honest answers (no cuDNN
and no Metal backend), so such scripts run unchanged.
"""

from . import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
