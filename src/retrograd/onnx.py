"""`rg.onnx`: present so PyTorch scripts that `import torch.onnx` run; retrograd has no
ONNX exporter, so `export` refuses with a clear error instead of writing a wrong file."""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is in progress: never, as retrograd does not export."""
    return False


def export(model, args=(), f=None, *a, **k):
    """Refused: retrograd cannot write ONNX graphs."""
    raise NotImplementedError("rg.onnx.export: retrograd has no ONNX exporter; save the "
                              "weights with rg.save(model.state_dict(), path) instead")
