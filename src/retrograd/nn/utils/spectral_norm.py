"""The old hook form of spectral norm: `spectral_norm(module)` keeps the weight as
`weight_orig` with power-iteration buffers `weight_u`, `weight_v` (PyTorch's state_dict
keys) and recomputes `weight = weight_orig / sigma` before each forward, doing one power
iteration step per forward in training mode."""

from __future__ import annotations

from ... import creation
from ...api.linalg import mv, vdot
from ...grad_mode import no_grad
from ...primitive import ArgumentError
from .. import functional as F
from ..module import Module, Parameter
from . import _hooks
from ._norms import to_matrix

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


class SpectralNorm:
    """The pre-forward hook that recomputes `module.<name>` as `<name>_orig / sigma`."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ArgumentError("Expected n_power_iterations to be positive, but got "
                                f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module: Module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = to_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(mv(mat.mT, u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(mv(mat, v), dim=0, eps=self.eps))
        u, v = u.clone(), v.clone()
        sigma = vdot(u, mv(mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        object.__setattr__(module, self.name,
                           self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        if name in _hooks.hooks(module):
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                               f"{name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            mat = to_matrix(weight, dim)
            h, w = mat.shape
            u = F.normalize(creation.empty(h, dtype=weight.dtype).normal_(0, 1), dim=0, eps=eps)
            v = F.normalize(creation.empty(w, dtype=weight.dtype).normal_(0, 1), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        object.__setattr__(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        _hooks.add_hook(module, name, fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Normalise `module.<name>` by its largest singular value, estimated by power iteration
    (`dim` defaults to 1 for transposed convolutions, else 0)."""
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo `spectral_norm`: `<name>` becomes a plain parameter holding W / sigma."""
    fn = _hooks.hooks(module).get(name)
    if not isinstance(fn, SpectralNorm):
        raise ArgumentError(f"spectral_norm of '{name}' not found in {module}")
    fn.remove(module)
    _hooks.remove_hook(module, name)
    return module
