"""Linear algebra: `rg.matmul`, `rg.einsum`, and PyTorch's BLAS-style products `mm`, `bmm`, `mv`,
`vdot`, `addmm`, `addmv`, `addr`, `baddbmm`, `addbmm`, `addcmul`, `addcdiv`."""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..dtypes import result_type
from ..engine import apply
from ..grad_mode import state as _state
from ..ops.linalg import _einsum_parse
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._args import _t, broadcasts_into, promote
from ._errors import DtypeError, ShapeError
from ._opmath import float16_in_float32


def _sublist_letters(sub, where: str) -> str:
    out = []
    for i in sub:
        if i is Ellipsis:
            out.append("...")
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool) and 0 <= i < 52:
            out.append(chr(ord("a") + i) if i < 26 else chr(ord("A") + i - 26))
        else:
            raise ArgumentError(f"einsum(): {where} holds {i!r}; subscripts in the sublist "
                                "form are ints in [0, 52) or Ellipsis")
    return "".join(out)


def _sublist_spec(args) -> tuple[str, tuple]:
    """`einsum(op0, sub0, op1, sub1, ..., [sub_out])` (NumPy's and PyTorch's second form) as
    a subscripts string and the operands."""
    operands, inputs = args[0::2], args[1::2]
    out = None
    if len(args) % 2:
        operands, out = args[0::2][:-1], args[-1]
    spec = ",".join(_sublist_letters(sub, f"the sublist of operand {k}")
                    for k, sub in enumerate(inputs))
    if out is not None:
        spec += "->" + _sublist_letters(out, "the output sublist")
    return spec, tuple(operands)


def einsum(spec: str, *operands) -> Tensor:
    """Einstein summation, e.g. `rg.einsum('ij,jk->ik', a, b)` for `a @ b`; differentiable in
    every operand. Like `torch.einsum` and `np.einsum`, including their sublist form
    `rg.einsum(a, [0, 1], b, [1, 2], [0, 2])`."""
    if _state.flops is not None:
        return _state.flops.run("einsum", einsum, spec, *operands)
    if not isinstance(spec, str):
        spec, operands = _sublist_spec((spec, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ts = [_t(t) for t in operands]
    _einsum_parse(spec, [t.shape for t in ts])  # validate before recording
    if ts and all(t.data.dtype.kind in "biu" for t in ts):
        dtype = _integer_einsum_dtype(spec, ts)
        ts = [t if t.data.dtype == dtype else t.to(dtype) for t in ts]
    elif len({t.data.dtype for t in ts}) > 1 and not _complex_step(ts):
        # PyTorch multiplies (promoting) where no label is summed across a pair, and
        # refuses two dtypes only in a batched matrix product: walk its order to know
        dtype = _integer_einsum_dtype(spec, ts)
        ts = [t if t.data.dtype == dtype else t.to(dtype) for t in ts]
    _same_dtype("einsum", ts)
    return apply(ops.einsum, *ts, spec=spec)


def _complex_step(ts) -> bool:
    """Whether a complex-step gradient check perturbs one real operand (then mixed real and
    complex operands are taken as they are)."""
    return bool(_state.complex_step) and {t.data.dtype.kind for t in ts} == {"f", "c"}


def _promote2(da: np.dtype, db: np.dtype) -> np.dtype:
    """PyTorch's result dtype of a product of two tensors of these dtypes."""
    return result_type(np.empty((1,), da), np.empty((1,), db))


def _integer_einsum_dtype(spec: str, ts) -> np.dtype:
    """The dtype of PyTorch's einsum of integer or bool operands (or of operands of several
    dtypes), found by walking its algorithm on sizes alone: one operand with labels to sum
    is summed (an integer one to int64); pairs are contracted left to right, a label held by
    one side only summed first, then multiplied (promoting) when nothing is summed across
    both, else a batched matrix product, which PyTorch refuses for two dtypes or for bool:
    so refused here too."""
    terms, out = _einsum_parse(spec, [t.shape for t in ts])
    summed = [c for c in dict.fromkeys("".join(terms)) if c not in out]

    def wide_of(d: np.dtype) -> np.dtype:  # the dtype of a sum
        return np.dtype(np.int64) if d.kind in "biu" else d

    if len(ts) == 1:
        return wide_of(ts[0].data.dtype) if summed else ts[0].data.dtype
    sizes = [{c: s for c, s in zip(t, x.shape)} for t, x in zip(terms, ts)]
    count = {c: sum(d.get(c, 1) != 1 for d in sizes) for c in summed}
    pending = [(d, x.data.dtype) for d, x in zip(sizes, ts)]
    while len(pending) > 1:
        (a, da), (b, db) = pending[0], pending[1]
        a, b, across = dict(a), dict(b), False
        for c in summed:
            if a.get(c, 1) != 1 and b.get(c, 1) != 1:
                count[c] -= 1
                if count[c] == 1:
                    across, count[c] = True, 0
                    a[c] = b[c] = 1
            elif count[c] == 1 and (a.get(c, 1) != 1 or b.get(c, 1) != 1):
                side, count[c] = (a, 0) if a.get(c, 1) != 1 else (b, 0)
                side[c] = 1
                if side is a:
                    da = wide_of(da)
                else:
                    db = wide_of(db)
        if across and (da != db or da.kind == "b"):
            raise (DtypeError if da.kind == "b" else ArgumentError)(
                f"einsum('{spec}'): PyTorch contracts these operands with a batched matrix "
                f"product of {da} and {db} operands, which it refuses (the same dtype, not bool, "
                "needed); convert the operands with .to(dtype) first")
        merged = {c: max(a.get(c, 1), b.get(c, 1)) for c in {*a, *b}}
        pending[:2] = [(merged, da if across else _promote2(da, db))]
    return pending[0][1]


def matmul(input, other, *, out=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Matrix product with NumPy's rules (vectors, batches broadcast). Like `torch.matmul`
    and the `@` operator: `rg.matmul(rg.ones(2, 3), rg.ones(3))` is `tensor([3., 3.])`;
    `out=` writes the result into a tensor, as PyTorch's."""
    if _state.flops is not None and out is None:
        return _state.flops.run("matmul", matmul, input, other)
    if out is not None:
        from .torch_names import _into
        return _into("matmul", matmul(input, other), out)
    x, y = _t(input), _t(other)
    sx, sy = x.data.shape, y.data.shape
    if not sx or not sy:
        raise ShapeError(f"matmul(): both operands need at least one dimension, got shapes "
                         f"{x.shape} and {y.shape}")
    kx = sx[-1]
    ky = sy[-2] if len(sy) > 1 else sy[0]
    if kx != ky:
        raise ShapeError(f"matmul(): shapes {x.shape} and {y.shape} do not align "
                         f"({kx} != {ky})")
    if x.data.dtype is not y.data.dtype:
        _same_dtype("matmul", (x, y))
    return apply(ops.matmul, x, y)


def _same_dtype(name: str, ts) -> None:
    """Products do not promote, as in PyTorch: operands of different dtypes are refused
    (but for a complex-step gradient check, which perturbs one real input at a time)."""
    dts = {t.data.dtype for t in ts}
    if len(dts) > 1 and not (_state.complex_step and {d.kind for d in dts} == {"f", "c"}):
        raise RuntimeError(f"{name}(): expected operands of the same dtype, got "
                           f"{', '.join(str(t.data.dtype) for t in ts)}; convert one with "
                           ".to(dtype) first")




# ---------------------------------------------------------------- PyTorch's BLAS-style products
#
# `mm`, `bmm`, `mv` and the fused `addmm` family check shapes and dtypes as PyTorch does
# (operands of one dtype, no broadcasting of the matrices) and then are `matmul` (or an
# einsum), so their derivatives, forward mode, vmap and rg.jit come from those ops.

def _no_bool(name: str, ts) -> None:
    if any(t.data.dtype.kind == "b" for t in ts):
        raise NotImplementedError(f"{name}(): not implemented for bool tensors (as in "
                                  "PyTorch); convert with .to(rg.int64) or .float() first")


def _ndim(name: str, what: str, t: Tensor, nd: int) -> None:
    if t.ndim != nd:
        kind = {1: "a vector (1-D)", 2: "a matrix (2-D)", 3: "a batch of matrices (3-D)"}[nd]
        raise RuntimeError(f"{name}(): {what} must be {kind}, got shape {t.shape}")


def _product_operands(name: str, *pairs):
    """The operands as tensors, checked: (what, tensor, ndim) each; one dtype, no bool."""
    ts = []
    for what, x, nd in pairs:
        t = _t(x)
        _ndim(name, what, t, nd)
        ts.append(t)
    _same_dtype(name, ts)
    _no_bool(name, ts)
    return ts


def _inner_dims(name: str, a: Tensor, b: Tensor) -> None:
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise RuntimeError(f"{name}(): shapes {a.shape} and {b.shape} cannot be multiplied "
                           f"({a.shape[-1]} != {b.shape[-2 if b.ndim > 1 else 0]})")


def mm(input, mat2) -> Tensor:  # noqa: A002
    """The matrix product of two 2-D tensors, (n, m) @ (m, p) -> (n, p); no broadcasting
    and one dtype, as `torch.mm` (`rg.matmul` for vectors and batches)."""
    if _state.flops is not None:
        return _state.flops.run("mm", mm, input, mat2)
    a, b = _product_operands("mm", ("input", input, 2), ("mat2", mat2, 2))
    _inner_dims("mm", a, b)
    return apply(ops.matmul, a, b)


def bmm(input, mat2) -> Tensor:  # noqa: A002
    """Batched matrix product of two 3-D tensors, (b, n, m) @ (b, m, p) -> (b, n, p), with
    the same batch size b (no broadcasting), as `torch.bmm`."""
    if _state.flops is not None:
        return _state.flops.run("bmm", bmm, input, mat2)
    a, b = _product_operands("bmm", ("input", input, 3), ("mat2", mat2, 3))
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"bmm(): input and mat2 must have the same batch size, got shapes "
                           f"{a.shape} and {b.shape}")
    _inner_dims("bmm", a, b)
    return apply(ops.matmul, a, b)


def mv(input, vec) -> Tensor:  # noqa: A002
    """Matrix-vector product, (n, m) @ (m,) -> (n,), as `torch.mv`."""
    a, v = _product_operands("mv", ("input", input, 2), ("vec", vec, 1))
    _inner_dims("mv", a, v)
    return apply(ops.matmul, a, v)


def vdot(input, other) -> Tensor:  # noqa: A002
    """sum(conj(input) * other) of two 1-D tensors of one length and dtype, as `torch.vdot`
    (the first operand conjugated; `rg.dot` does not conjugate)."""
    a, b = _product_operands("vdot", ("input", input, 1), ("other", other, 1))
    if a.shape != b.shape:
        raise RuntimeError(f"vdot(): expected two vectors of the same length, got shapes "
                           f"{a.shape} and {b.shape}")
    if a.dtype.kind == "c":
        a = apply(ops.conj, a)
    return apply(ops.matmul, a, b)


def _coefficient(name: str, arg: str, value, dtype: np.dtype):
    """beta, alpha or value as a Python number fit for `dtype` (PyTorch's checks: no
    floating coefficient for integer tensors, no complex one for real tensors)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"{name}(): {arg} must be a number, got a tensor of shape "
                               f"{value.shape}")
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, (int, float, complex)):
        raise TypeError(f"{name}(): {arg} must be a number, got {type(value).__name__}")
    if dtype.kind in "biu" and isinstance(value, (float, complex)):
        raise RuntimeError(f"{name}(): for integral input tensors, argument {arg} must not be a "
                           f"floating point number, got {arg}={value!r}")
    if dtype.kind != "c" and isinstance(value, complex):
        raise RuntimeError(f"{name}(): for real input tensors, argument {arg} must not be a "
                           f"complex number, got {arg}={value!r}")
    return value


def _scaled_sum(name: str, input: Tensor, product: Tensor, beta, alpha) -> Tensor:  # noqa: A002
    """beta * input + alpha * product, `input` broadcast to the product's shape (and never
    the other way). With beta == 0 the input's values are ignored (a nan or inf in it does
    not propagate) and its gradient is zero, as in PyTorch."""
    shape = product.shape
    if not broadcasts_into(input.shape, shape):
        raise RuntimeError(f"{name}(): input of shape {input.shape} cannot be broadcast to the "
                           f"product's shape {shape}")
    dt = product.data.dtype
    beta = _coefficient(name, "beta", beta, dt)
    alpha = _coefficient(name, "alpha", alpha, dt)
    if dt.kind == "b":
        from .math import logical_and, logical_or
        out = product if alpha else logical_and(product, False)
        return logical_or(out, input) if beta else out
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        from .elementwise import where
        ignored = where(Tensor(np.zeros((), np.bool_)), input, 0)  # zero gradient, no nan
        return product + ignored if input.requires_grad else product
    return product + (input if beta == 1 else input * beta)


def _same_dtype_input(name: str, input, operands) -> Tensor:  # noqa: A002
    i = _t(input)
    _same_dtype(name, [i, *operands])
    return i


def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2), `input` broadcast to (n, p); as `torch.addmm`
    (one dtype for the three; with beta=0 the input is ignored)."""
    if _state.flops is not None:
        return _state.flops.run("addmm", addmm, input, mat1, mat2, beta=beta, alpha=alpha)
    a, b = _product_operands("addmm", ("mat1", mat1, 2), ("mat2", mat2, 2))
    _inner_dims("addmm", a, b)
    i = _same_dtype_input("addmm", input, (a, b))
    return _scaled_sum("addmm", i, apply(ops.matmul, a, b), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * (mat @ vec), `input` broadcast to (n,); as `torch.addmv`."""
    a, v = _product_operands("addmv", ("mat", mat, 2), ("vec", vec, 1))
    _inner_dims("addmv", a, v)
    i = _same_dtype_input("addmv", input, (a, v))
    return _scaled_sum("addmv", i, apply(ops.matmul, a, v), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * bmm(batch1, batch2), `input` broadcast to (b, n, p); as
    `torch.baddbmm`."""
    if _state.flops is not None:
        return _state.flops.run("baddbmm", baddbmm, input, batch1, batch2, beta=beta,
                                alpha=alpha)
    prod = bmm(batch1, batch2)
    i = _same_dtype_input("baddbmm", input, (prod,))
    return _scaled_sum("baddbmm", i, prod, beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * sum_b batch1[b] @ batch2[b], `input` broadcast to (n, p); as
    `torch.addbmm` (the batch summed inside one einsum)."""
    a, b = _product_operands("addbmm", ("batch1", batch1, 3), ("batch2", batch2, 3))
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"addbmm(): batch1 and batch2 must have the same number of "
                           f"batches, got shapes {a.shape} and {b.shape}")
    _inner_dims("addbmm", a, b)
    i = _same_dtype_input("addbmm", input, (a, b))
    return _scaled_sum("addbmm", i, apply(ops.einsum, a, b, spec="bij,bjk->ik"), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """beta * input + alpha * outer(vec1, vec2), `input` broadcast to (n, m); as `torch.addr`
    the three are promoted to a common dtype (bool tensors: logical or of and's)."""
    i, a, b = promote(_t(input), _t(vec1), _t(vec2))
    for what, t in (("vec1", a), ("vec2", b)):
        _ndim("addr", what, t, 1)
    prod = apply(ops.reshape, a, shape=a.shape + (1,))
    if a.data.dtype.kind == "b":
        from .math import logical_and
        prod = logical_and(prod, b)
    else:
        prod = prod * b
    return _scaled_sum("addr", i, prod, beta, alpha)


_UNSET = object()


def _old_value_form(name: str, tensor1, tensor2, rest: tuple, value) -> tuple:
    """(tensor1, tensor2, value), reading PyTorch's deprecated `addcmul(input, value,
    tensor1, tensor2)` (old optimizers' `v.addcmul_(1 - beta2, g, g)`) with its warning."""
    if not rest:
        return tensor1, tensor2, 1 if value is _UNSET else value
    scalar = isinstance(tensor1, (bool, int, float, complex, np.number)) or (
        isinstance(tensor1, Tensor) and tensor1.ndim == 0)
    if len(rest) != 1 or value is not _UNSET or not scalar:
        raise TypeError(f"{name}() takes input, tensor1, tensor2 and a keyword value "
                        f"(or the deprecated input, value, tensor1, tensor2), got "
                        f"{3 + len(rest)} positional arguments"
                        + (" and value=" if value is not _UNSET else ""))
    warnings.warn(f"This overload of {name} is deprecated: {name}(Number value, Tensor "
                  f"tensor1, Tensor tensor2); use {name}(Tensor tensor1, Tensor tensor2, *, "
                  "Number value)", UserWarning, stacklevel=4)
    return tensor2, rest[0], tensor1


@float16_in_float32("input", "tensor1", "tensor2")  # rounded once, as torch's opmath
def addcmul(input, tensor1, tensor2, *rest, value=_UNSET) -> Tensor:  # noqa: A002
    """input + value * tensor1 * tensor2, broadcast and promoted, as `torch.addcmul` (a
    floating `value` with integer tensors is refused: PyTorch truncates it)."""
    tensor1, tensor2, value = _old_value_form("addcmul", tensor1, tensor2, rest, value)
    i, a, b = promote(_t(input), _t(tensor1), _t(tensor2))
    dt = i.data.dtype
    _no_bool("addcmul", [i])
    value = _coefficient("addcmul", "value", value, dt)
    prod = a * b
    return i + (prod if value == 1 else prod * value)


@float16_in_float32("input", "tensor1", "tensor2")
def addcdiv(input, tensor1, tensor2, *rest, value=_UNSET) -> Tensor:  # noqa: A002
    """input + value * tensor1 / tensor2, broadcast and promoted, as `torch.addcdiv`: integer
    tensor1 and tensor2 together are refused (PyTorch no longer divides them)."""
    tensor1, tensor2, value = _old_value_form("addcdiv", tensor1, tensor2, rest, value)
    t1, t2 = _t(tensor1), _t(tensor2)
    if t1.data.dtype.kind in "biu" and t2.data.dtype.kind in "biu":
        raise RuntimeError(f"addcdiv(): integer division of tensor1 ({t1.dtype}) by tensor2 "
                           f"({t2.dtype}) is not supported (as in PyTorch); use "
                           "input + value * rg.div(tensor1, tensor2, rounding_mode=...)")
    i, a, b = promote(input, t1, t2)
    value = _coefficient("addcdiv", "value", value, i.data.dtype)
    q = a / b
    return i + (q if value == 1 else q * value)
