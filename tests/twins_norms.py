"""PyTorch twins of the normalisation family (`ops/norms.py`), for the generated tests."""

import torch


def _standardize(x, axes, eps):
    var, mean = torch.var_mean(x, dim=axes, keepdim=True, correction=0)
    return (x - mean) / torch.sqrt(var + eps)


TWINS = {"standardize": _standardize}
TWINS["pnorm"] = lambda x, p, axis, keepdims: torch.linalg.vector_norm(
    x, ord=p, dim=axis, keepdim=keepdims)
TWINS["layer_norm"] = lambda x, w, b, axes, eps: torch.nn.functional.layer_norm(
    x, x.shape[len(x.shape) - len(axes):], w, b, eps)
