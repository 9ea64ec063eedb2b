"""Complex tensors: `rg.real`, `rg.imag`, `rg.conj`, `rg.angle`, `rg.view_as_real`,
`rg.view_as_complex`, `rg.complex`, `rg.polar`, and `abs` of complex data.

Gradients follow PyTorch's convention for complex values: the gradient of a
real loss L with respect to z = x + iy is dL/dx + i dL/dy (see
`retrograd/ops/complex.py` for how the rules get there).
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..engine import apply, apply1
from ..primitive import ArgumentError, DtypeError
from ..tensor import Tensor
from ._args import _t


def _floating(x: Tensor, name: str) -> Tensor:
    if x.dtype.kind in "biu":
        from ..dtypes import get_default_dtype
        return x.to(get_default_dtype())
    return x


def real(input) -> Tensor:
    """The real part (a real tensor; a real input is returned as it is, as in PyTorch)."""
    x = _t(input)
    return apply(ops.real, x) if x.dtype.kind == "c" else x  # a view: apply, not apply1


def imag(input) -> Tensor:
    """The imaginary part; PyTorch refuses it for real tensors, and so does this."""
    x = _t(input)
    if x.dtype.kind != "c":
        raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes "
                           f"(got {x.dtype})")
    return apply(ops.imag, x)


def conj(input) -> Tensor:
    """The complex conjugate (a real input is returned as it is)."""
    x = _t(input)
    return apply1(ops.conj, x) if x.dtype.kind == "c" else x


def conj_physical(input) -> Tensor:
    """The complex conjugate, as a new tensor (real input: a copy). Like
    `torch.conj_physical`: `rg.conj_physical(rg.tensor([1 + 2j]))` is `tensor([1.-2.j])`."""
    return conj(input)


def resolve_conj(input) -> Tensor:
    """PyTorch's lazy-conjugation flag has no counterpart here: the tensor itself."""
    return _t(input)


def angle(input) -> Tensor:
    """The argument of each element (atan2(imag, real)); for real data 0 or pi, with a zero
    gradient."""
    x = _t(input)
    if x.dtype.kind in "biu":
        x = _floating(x, "angle")
    return apply1(ops.angle, x)


def cabs(x: Tensor) -> Tensor:
    """|z| of a complex tensor, real; the gradient g z / |z| (0 at z = 0), as in PyTorch."""
    return apply1(ops.cabs, x)


def view_as_real(input) -> Tensor:
    """A complex tensor as a real one with a last dimension of 2 (real, imaginary)."""
    x = _t(input)
    if x.dtype.kind != "c":
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got {x.dtype}")
    return apply(ops.view_as_real, x)


def view_as_complex(input) -> Tensor:
    """A real tensor whose last dimension is 2 as a complex one."""
    x = _t(input)
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        raise RuntimeError(f"view_as_complex is only supported for float32 and float64 tensors, "
                           f"got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError(f"view_as_complex: tensor must have a last dimension of size 2, got "
                           f"shape {x.shape}")
    return apply(ops.view_as_complex, x)


def complex(real, imag) -> Tensor:  # noqa: A001 - PyTorch's name
    """real + i imag from two real floating tensors of the same dtype (broadcast)."""
    re, im = _t(real), _t(imag)
    for name, v in (("real", re), ("imag", im)):
        if v.dtype.kind != "f" or v.dtype.itemsize < 4:
            raise DtypeError(f"complex(): expected '{name}' to be a float32 or float64 tensor, "
                            f"got {v.dtype}")
    if re.dtype != im.dtype:
        raise DtypeError(f"complex(): 'real' and 'imag' must have the same dtype, got "
                        f"{re.dtype} and {im.dtype}")
    try:
        np.broadcast_shapes(re.shape, im.shape)
    except ValueError:
        raise ArgumentError(f"complex(): shapes {re.shape} and {im.shape} do not "
                            f"broadcast") from None
    return apply(ops.complex, re, im)


def polar(abs, angle) -> Tensor:  # noqa: A002 - PyTorch's argument names
    """abs * (cos(angle) + i sin(angle)), differentiable in both."""
    r, a = _t(abs), _t(angle)
    for name, v in (("abs", r), ("angle", a)):
        if v.dtype.kind != "f" or v.dtype.itemsize < 4:
            raise DtypeError(f"polar(): expected '{name}' to be a float32 or float64 tensor, "
                             f"got {v.dtype}")
    if r.dtype != a.dtype:  # torch promotes neither
        raise DtypeError(f"polar(): 'abs' and 'angle' must have the same dtype, got {r.dtype} "
                         f"and {a.dtype}")
    return complex(r * apply1(ops.cos, a), r * apply1(ops.sin, a))


def is_complex(input) -> bool:
    """Whether the tensor's dtype is complex. Like `torch.is_complex`."""
    return _t(input).dtype.kind == "c"
