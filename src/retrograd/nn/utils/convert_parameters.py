"""`parameters_to_vector` and `vector_to_parameters`: a model's parameters as one flat
vector and back (for optimisers and tools that work on a single vector)."""

from __future__ import annotations

from ... import api as _f
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param: Tensor, old_device):
    """PyTorch refuses parameters spread over several devices; so do we."""
    if old_device is not None and param.device != old_device:
        raise TypeError(f"Found two parameters on different devices ({old_device} and "
                        f"{param.device}); this is currently not supported.")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    device = None
    vec = []
    for p in ([parameters] if isinstance(parameters, Tensor) else parameters):
        device = _check_device(p, device)
        vec.append(_f.reshape(p, (-1,)))
    return _f.cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of the 1-D `vec` into the parameters' values (each parameter
    gets new values of its own shape; no graph is recorded)."""
    from ..init import _bump

    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() < total:
        raise RuntimeError(f"vector_to_parameters: vec of shape {tuple(vec.shape)} does not "
                           f"hold the {total} values of the parameters")
    device = None
    pointer = 0
    for p in params:
        device = _check_device(p, device)
        n = p.numel()
        p.data = vec.data[pointer:pointer + n].reshape(p.shape).astype(p.data.dtype, copy=False)
        _bump(p)
        pointer += n
