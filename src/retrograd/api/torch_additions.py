"""Smaller PyTorch names retrograd lacked: `rg.newaxis`, `rg.has_lapack`, `rg.has_spectral`,
`rg.legacy_contiguous_format`, `rg.norm_except_dim`, `rg.grid_sampler_2d` /
`grid_sampler_3d` (F.grid_sample with torch's integer codes), `rg.convolution` (torch's
generic convolution entry point), the functions torch removed in 1.9 and keeps only to say
what replaced them (`rg.solve`, `lstsq`, `eig`, `symeig`, `matrix_rank`, and their methods),
`rg.embedding_renorm_` (F.embedding's max_norm step, in place, no gradient), and the Tensor
queries `name`, `volatile`, `is_set_to`, `const_data_ptr`, `is_distributed` and `map2_`,
and the deprecated out-of-place `Tensor.resize` / `resize_as` (a reshape that keeps the
number of elements).

The functions are thin fronts on existing public ones, so gradients, forward mode, vmap and
`rg.jit` are theirs (embedding_renorm_ reads the indices in Python: jit and vmap refuse it).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from .. import devices
from ..layouts import contiguous_format
from ..tensor import Tensor
from ._args import _t

__all__ = ["newaxis", "has_lapack", "has_spectral", "legacy_contiguous_format",
           "norm_except_dim", "grid_sampler_2d", "grid_sampler_3d", "convolution", "solve",
           "lstsq", "eig", "symeig", "matrix_rank", "embedding_renorm_"]

newaxis = None  # `x[:, rg.newaxis]`, as NumPy's and torch's
has_lapack = True  # linear algebra is NumPy's LAPACK (and SciPy's where installed)
has_spectral = True  # rg.fft is NumPy's pocketfft
legacy_contiguous_format = contiguous_format  # torch's alias of contiguous_format


def norm_except_dim(v, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """The `pow`-norm of `v` over every dimension but `dim`, kept as size-1 dimensions (the
    whole tensor's norm, 0-d, for dim=-1): weight normalisation's `||v||`. Like
    `torch.norm_except_dim`; differentiable."""
    from ..linalg import vector_norm
    v = _t(v)
    if dim == -1:
        return vector_norm(v, pow)
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(f"norm_except_dim(): dim {dim} is out of range for a tensor of "
                         f"{v.ndim} dimensions")
    d = dim % v.ndim
    others = tuple(k for k in range(v.ndim) if k != d)
    return vector_norm(v, pow, others, keepdim=True)


_INTERP = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _grid_sampler(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                  align_corners: bool, nd: int) -> Tensor:
    from .grid import grid_sample
    x = _t(input)
    if x.ndim != nd + 2:
        raise RuntimeError(f"grid_sampler_{nd}d(): expected a {nd + 2}-D input, got shape "
                           f"{x.shape}")
    if interpolation_mode not in _INTERP or (nd == 3 and interpolation_mode == 2):
        raise RuntimeError(f"grid_sampler_{nd}d(): interpolation_mode {interpolation_mode} is "
                           "not one of 0 (bilinear), 1 (nearest)"
                           + (", 2 (bicubic, 2-D only)" if nd == 2 else ""))
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler_{nd}d(): padding_mode {padding_mode} is not one of "
                           "0 (zeros), 1 (border), 2 (reflection)")
    return grid_sample(x, grid, mode=_INTERP[interpolation_mode],
                       padding_mode=_PADDING[padding_mode], align_corners=bool(align_corners))


def grid_sampler_2d(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                    align_corners: bool) -> Tensor:
    """`F.grid_sample` on a 4-D input with torch's integer codes (interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection). Like
    `torch.grid_sampler_2d`."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 2)


def grid_sampler_3d(input, grid, interpolation_mode: int, padding_mode: int,  # noqa: A002
                    align_corners: bool) -> Tensor:
    """`F.grid_sample` on a 5-D input with torch's integer codes (interpolation 0 trilinear,
    1 nearest; padding 0 zeros, 1 border, 2 reflection). Like `torch.grid_sampler_3d`."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 3)


def _tuple(v, n: int, what: str) -> tuple:
    t = tuple(int(a) for a in v) if isinstance(v, (tuple, list)) else (int(v),)
    if len(t) == 1:
        t = t * n
    if len(t) != n:
        raise RuntimeError(f"convolution(): expected {what} to be a single integer value or a "
                           f"list of {n} values to match the convolution dimensions, but got "
                           f"{what}={list(t)}")
    return t


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool,  # noqa: A002
                output_padding, groups: int) -> Tensor:
    """torch's generic convolution: `F.conv{1,2,3}d` (or `conv_transpose{1,2,3}d` with
    `transposed`) chosen by the weight's dimensions, every argument explicit (output_padding
    is read only when transposed, as torch does). Like `torch.convolution`; differentiable in
    input, weight and bias."""
    from . import windows as F
    x, w = _t(input), _t(weight)
    nd = w.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution(): weight must be 3-, 4- or 5-D (1, 2 or 3 spatial "
                           f"dimensions), got shape {w.shape}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"convolution(): expected a {nd + 1}-D (unbatched) or {nd + 2}-D "
                           f"(batched) input for a weight of shape {w.shape}, got input of "
                           f"shape {x.shape}")
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    padding = _tuple(padding, nd, "padding")
    if transposed:
        out_pad = _tuple(output_padding, nd, "output_padding")
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(x, w, bias, stride, padding, out_pad, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(x, w, bias, stride, padding, dilation, groups)


# ---------------------------------------------------------------- removed in torch 1.9

_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`, which has its "
             "arguments reversed and does not return the LU factorization: "
             "X = torch.solve(B, A).solution becomes X = rg.linalg.solve(A, B)",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`, which has its "
             "arguments reversed and does not return the QR decomposition: "
             "X = torch.lstsq(B, A).solution becomes X = rg.linalg.lstsq(A, B).solution",
    "eig": "use rg.linalg.eigvals(A) for the eigenvalues and rg.linalg.eig(A) for values and "
           "vectors (complex tensors, not real ones mimicking complex)",
    "symeig": "use rg.linalg.eigvalsh(A, UPLO='U' if upper else 'L') for the eigenvalues and "
              "rg.linalg.eigh(A, UPLO=...) for values and vectors (the default triangle is "
              "now the lower one)",
    "matrix_rank": "use rg.linalg.matrix_rank (its 'symmetric' is now 'hermitian')",
}


def _removed(name: str) -> Callable:
    def fn(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now "
                           f"removed (in torch too): {_REMOVED[name]}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Raises RuntimeError, as `torch.{name}` does since torch 1.9 removed it; "
                  f"the message says what replaces it.")
    return fn


solve = _removed("solve")
lstsq = _removed("lstsq")
eig = _removed("eig")
symeig = _removed("symeig")
matrix_rank = _removed("matrix_rank")


# ---------------------------------------------------------------- Tensor queries

def name(self) -> None:
    """None: retrograd has no named tensors (torch's `Tensor.name` of an unnamed tensor)."""
    return None


def volatile(self) -> bool:
    """False, with torch's warning: `volatile` was removed (use `rg.no_grad()`)."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def is_set_to(self, tensor: Tensor) -> bool:
    """Whether self and `tensor` are the same memory with the same shape and strides (the
    same view of one buffer). Like `torch.Tensor.is_set_to`."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' must be a Tensor, got "
                        f"{type(tensor).__name__}")
    a, b = self.data, tensor.data
    if a.__class__ is not b.__class__ or a.dtype != b.dtype:
        return False
    if a.shape != b.shape or a.strides != b.strides:
        return False
    if a.size == 0:
        return a is b or (a.base is not None and a.base is b.base)
    from .tensor_methods import data_ptr
    return data_ptr(self) == data_ptr(tensor)


def const_data_ptr(self) -> int:
    """The address of the first element (`data_ptr`). Like `torch.Tensor.const_data_ptr`."""
    from .tensor_methods import data_ptr
    return data_ptr(self)


def is_distributed(self) -> bool:
    """False: a tensor lives in one process. Like `torch.Tensor.is_distributed`."""
    return False


def map2_(self, x: Tensor, y: Tensor, callable: Callable) -> Tensor:  # noqa: A002
    """Replace each element `v` by `callable(v, a, b)`, `a` and `b` the matching elements of
    `x` and `y` broadcast to self's shape, in place; CPU only, not with grad. Like
    `torch.Tensor.map2_`."""
    from .tensor_extras import _refuse_grad, _write
    _refuse_grad(self, "map2_")
    others = []
    for t in (x, y):
        arr = t.data if isinstance(t, Tensor) else np.asarray(t)
        try:
            others.append(np.broadcast_to(devices.host(arr), self.shape).reshape(-1).tolist())
        except ValueError:
            raise RuntimeError(f"map2_(): a tensor of shape {np.shape(arr)} cannot be "
                               f"broadcast to self's shape {self.shape}") from None
    triples = zip(self.data.reshape(-1).tolist(), *others)
    out = np.array([callable(v, a, b) for v, a, b in triples], dtype=self.data.dtype)
    return _write(self, out.reshape(self.shape))


# ---------------------------------------------------------------- embedding rows


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,  # noqa: A002
                      norm_type: float) -> Tensor:
    """Scale, in place, each row of the 2-D `input` that `indices` names (each once;
    negative ones count from the end) whose `norm_type`-norm exceeds `max_norm` to norm
    max_norm (factor max_norm / (norm + 1e-7)); returns input. Like
    `torch.embedding_renorm_` (F.embedding's max_norm step); refused on a tensor that
    requires grad while grad is recorded, as torch refuses it on a leaf."""
    from .. import engine
    from .._values import values_of
    from ..grad_mode import state
    if not isinstance(input, Tensor) or not isinstance(indices, Tensor):
        raise TypeError("embedding_renorm_(): input and indices must be tensors")
    if input.ndim != 2:
        raise RuntimeError(f"embedding_renorm_(): expected a 2-dimensional weight, got shape "
                           f"{input.shape}")
    if indices.dtype.kind not in "iu":
        raise RuntimeError(f"embedding_renorm_(): expected indices of an integer dtype (int64 "
                           f"or int32), got {indices.dtype}")
    if state.enabled and input.requires_grad:
        raise RuntimeError("embedding_renorm_(): a tensor that requires grad (shape "
                           f"{input.shape}) is being used in an in-place operation; call it "
                           "under rg.no_grad(), as F.embedding does")
    how = "renorm outside the function"
    rows = devices.host(values_of(indices, "embedding_renorm_()", how)).reshape(-1)
    n = input.shape[0]
    if rows.size and (rows.min() < -n or rows.max() >= n):
        bad = rows.min() if rows.min() < -n else rows.max()
        raise IndexError(f"embedding_renorm_(): index {int(bad)} is out of range for a weight "
                         f"of {n} rows")
    rows = np.unique(np.where(rows < 0, rows + n, rows))
    w = values_of(input, "embedding_renorm_()", how)
    picked = devices.host(w[rows]) if w.__class__ is not np.ndarray else w[rows]
    p = float(norm_type)
    norms = np.linalg.norm(picked.astype(np.float64), ord=p, axis=1) if picked.size else \
        np.zeros(0)
    over = norms > max_norm
    if over.any():
        scale = (max_norm / (norms[over] + 1e-7)).astype(w.dtype)
        w[rows[over]] = w[rows[over]] * devices.like(scale[:, None], w)
        input._cell()[0] += 1
        engine.mark_inplace()
    return input


# ---------------------------------------------------------------- deprecated resize


def resize(self, *sizes) -> Tensor:
    """self reshaped to `sizes` (ints or one tuple), which must hold as many elements;
    differentiable. Like torch's deprecated out-of-place `Tensor.resize` (with its
    warning)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize(self, sizes, "resize")


def resize_as(self, tensor: Tensor) -> Tensor:
    """self reshaped to `tensor`'s shape, which must hold as many elements. Like torch's
    deprecated out-of-place `Tensor.resize_as` (with its warning)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"resize_as(): 'tensor' must be a Tensor, got {type(tensor).__name__}")
    return _resize(self, tensor.shape, "resize_as")


def _resize(self, sizes, fn: str) -> Tensor:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = tuple(int(s) for s in sizes)
    n = int(np.prod(shape)) if shape else 1
    if any(s < 0 for s in shape) or n != self.size:
        raise RuntimeError(f"{fn}(): requested resize to {shape} ({n} elements in total), but "
                           f"the given tensor has a size of {self.shape} ({self.size} "
                           "elements); autograd's resize can only change the shape, keeping "
                           "the number of elements")
    return self.reshape(shape)
