"""`nn.parallel`: PyTorch's single-process data parallelism, as scripts spell it.

`DataParallel` and `data_parallel` split a batch over several GPUs and gather the
outputs; the result equals running the module on the whole batch. retrograd runs
the module on the whole batch on its own device, which gives that same result
(without the speed-up), so code written for PyTorch runs unchanged on one device.
As in PyTorch, `DataParallel` without GPUs just calls the module, and
`data_parallel` without an accelerator raises RuntimeError.
"""

from __future__ import annotations

from .. import cuda
from ..primitive import ArgumentError
from .module import Module

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]


class DataParallel(Module):
    """Wraps `module` (kept as `.module`, so state_dict keys start with "module.");
    forward runs it on the whole batch."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """Evaluate `module(*inputs, **module_kwargs)`; the functional form of DataParallel.
    Without an accelerator PyTorch refuses it, and so does this."""
    if not cuda.is_available():
        raise RuntimeError("device type could not be determined")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))


class DistributedDataParallel(Module):
    """`torch.nn.parallel.DistributedDataParallel`: importable (nanoGPT's train.py imports
    it unconditionally); constructing one needs a default process group, which retrograd
    never has (its distributed training is MPI's, `rg.distributed`), so it raises PyTorch's
    ValueError for that case."""

    def __init__(self, module: Module, *args, **kwargs) -> None:
        raise ArgumentError("Default process group has not been initialized, please make sure to "
                            "call init_process_group.")
