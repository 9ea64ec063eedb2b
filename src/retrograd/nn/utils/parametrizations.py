"""`rg.nn.utils.parametrizations`: `orthogonal`, `weight_norm` and `spectral_norm` as
parametrizations
(see `parametrize`), with PyTorch's state_dict layout
(`parametrizations.weight.original0/original1`; `parametrizations.weight.original`
plus the power-iteration buffers `parametrizations.weight.0._u` / `._v`)."""

from __future__ import annotations

import numpy as np

from ... import api as _f
from ... import creation
from ...api.linalg import mv, vdot
from ...grad_mode import no_grad
from ...primitive import ArgumentError
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from . import parametrize
from ._norms import norm_except_dim, to_matrix
from ._norms import weight_norm as _weight_norm

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = creation.eye(k, dtype=q.dtype)
    eps = 10.0 * n * float(np.finfo(q.dtype).eps)
    return bool(_f.allclose(q.mH @ q, eye, atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of A = QR for a tall `a`, signs chosen so that diag(R) >= 0."""
    from ... import linalg

    q, r = linalg.qr(a)
    return q * _f.unsqueeze(_f.diagonal(r, 0, -2, -1).sgn(), -2)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.dtype.kind == "c" and orthogonal_map == "householder":
            raise ArgumentError("The householder parametrization does not support complex "
                                "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        from ... import linalg

        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                zeros = _f.expand(creation.zeros(n, n - k, dtype=x.dtype),
                                  (*x.shape[:-2], n, n - k))
                x = _f.cat([x, zeros], -1)
            a = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = linalg.matrix_exp(a)
            else:
                eye = creation.eye(n, dtype=a.dtype)
                q = linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = linalg.householder_product(a, tau)
            q = q * _f.unsqueeze(_f.diagonal(x, 0, -2, -1).detach().trunc(), -2)
        if "base" in self._buffers and self.base is not None:
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            if q.shape != self.shape:
                raise ArgumentError(f"Expected a matrix or batch of matrices of shape "
                                    f"{self.shape}. Got a tensor of shape {q.shape}.")
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("cayley", "matrix_exp"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                from ...linalg_aliases import geqrf

                a, tau = geqrf(q)
                d = _f.diagonal(a, 0, -2, -1)
                sign = _f.where(tau == 0.0, -_f.sign(d), _f.sign(d))
                a = a.clone()
                idx = np.arange(sign.shape[-1])
                a.data[..., idx, idx] = sign.data
                return a.mT if transpose else a
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:
                noise = creation.randn(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype)
                q = _make_orthogonal(_f.cat([q, noise], -1))
            self.base = q
            neg_id = creation.zeros_like(q_init)
            idx = np.arange(min(neg_id.shape[-2:]))
            neg_id.data[..., idx, idx] = -1.0
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep `module.<name>` (a matrix or batch of them) orthogonal/unitary: it is the image
    of an unconstrained matrix under `orthogonal_map` ("matrix_exp", "cayley" or
    "householder"; default matrix_exp for square or complex, else householder), times a
    stored `base` with `use_trivialization`."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ArgumentError(f"Expected a matrix or batch of matrices. Got a tensor of "
                            f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          or weight.dtype.kind == "c" else "householder")
    if orthogonal_map not in _ORTH_MAPS:
        raise ArgumentError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                            f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` as g * v / ||v|| (norm over all dims but `dim`; None:
    the whole tensor); g is `original0`, v is `original1`. As PyTorch's, the module then
    also loads checkpoints of the old `nn.utils.weight_norm` (`<name>_g`, `<name>_v`: a
    HiFi-GAN generator's, say) through a load pre-hook that renames them."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ArgumentError("Expected n_power_iterations to be positive, but got "
                                f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            from ..init import normal_

            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = to_matrix(weight, self.dim)
                h, w = mat.shape
                u = normal_(creation.empty(h, dtype=weight.dtype))
                v = normal_(creation.empty(w, dtype=weight.dtype))
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Update the buffers `_u`, `_v` in place: n steps of the power iteration."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.mT.conj(), self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = to_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = vdot(u, mv(mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize `module.<name>` as W / sigma(W), sigma estimated by power iteration
    (one step per training-mode access; buffers `_u`, `_v`). `dim` defaults to 1 for
    transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
