"""`rg.autograd.functional`: `torch.autograd.functional`'s API (`jacobian`, `hessian`,
`vjp`, `jvp`, `hvp`, `vhp`) built on the transforms of `rg.func`.

The conventions are PyTorch's: `inputs` is a Tensor or a tuple of Tensors, and the
results follow that (a Tensor for a Tensor, a tuple for a tuple); `func` returns a
Tensor or a tuple of Tensors. Without `create_graph` every result is detached; with
it, the results are differentiable with respect to inputs that require grad.
`strict=True` raises a RuntimeError where a result would be identically zero because
an output does not depend on an input (first order, or second order for the Hessian
functions). `vectorize` is accepted and changes nothing: `rg.func` always pushes a
whole basis of vectors at once.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import func as _func
from ..grad_mode import enable_grad, no_grad
from ..primitive import ArgumentError
from ..tensor import Tensor
from ._core import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, arg: str, fn: str) -> tuple[bool, tuple]:
    """(was it a tuple, the tuple), refusing anything but Tensors (TypeError, as torch)."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg}"
            raise TypeError(f"{fn}(): the {arg} must be either a Tensor or a tuple of Tensors "
                            f"but {where} has type {type(el).__name__}")
    return is_tuple, items


def _outputs(func: Callable, fn: str) -> Callable:
    """`func` wrapped to check its outputs are a Tensor or a tuple of Tensors."""
    def checked(*xs):
        out = func(*xs)
        _as_tuple(out, "outputs of the user-provided function", fn)
        return out
    return checked


def _unpack(res, is_tuple: bool):
    return res if is_tuple else res[0]


def _finish(items, create_graph: bool):
    if create_graph:
        return tuple(items)
    return tuple(t.detach() for t in items)


def _check_v(v, others: tuple, other_is_tuple: bool, fn: str) -> tuple:
    _, v = _as_tuple(v, "v", fn)
    if len(v) != len(others):
        if other_is_tuple:
            raise RuntimeError(f"{fn}(): v is a tuple of invalid length: should be "
                               f"{len(others)} but got {len(v)}")
        raise RuntimeError(f"{fn}(): the given v should contain a single Tensor, got {len(v)}")
    for i, (a, b) in enumerate(zip(v, others)):
        if a.shape != b.shape:
            raise RuntimeError(f"{fn}(): entry {i} of v has invalid shape {a.shape}; it should "
                               f"be {b.shape}")
    return v


def _strict(func: Callable, xs: tuple, second: bool, fn: str) -> None:
    """Refuse (RuntimeError) an output, or with `second` a gradient, independent of an input."""
    with enable_grad():
        leaves = tuple(x.detach().requires_grad_(True) for x in xs)
        out = func(*leaves)
        outs = out if isinstance(out, tuple) else (out,)
        for i, o in enumerate(outs):
            if not o.requires_grad:
                raise RuntimeError(f"{fn}(strict=True): output {i} of the user-provided "
                                   "function does not require gradients; it must be computed "
                                   "in a differentiable manner from the inputs")
        total = sum(o.sum() for o in outs)
        gs = _grad(total, leaves, create_graph=second, allow_unused=True)
        for i, g in enumerate(gs):
            if g is None:
                raise RuntimeError(f"{fn}(strict=True): the output of the user-provided function "
                                   f"is independent of input {i}")
        if not second:
            return
        for i, g in enumerate(gs):
            if not g.requires_grad:
                raise RuntimeError(f"{fn}(strict=True): the Hessian of the user-provided "
                                   f"function with respect to input {i} is independent of the "
                                   "inputs (a linear function, for example)")
        hs = _grad(sum(g.sum() for g in gs), leaves, allow_unused=True)
        for i, h in enumerate(hs):
            if h is None:
                raise RuntimeError(f"{fn}(strict=True): the Jacobian of the user-provided "
                                   f"function is independent of input {i}")


def _scalar(func: Callable, fn: str) -> Callable:
    """`func` checked to return one Tensor of one element, returned as a 0-d tensor."""
    def single(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor):
            raise RuntimeError(f"the function given to {fn} should return a single Tensor, got "
                               f"{type(out).__name__}")
        if out.numel() != 1:
            raise RuntimeError(f"the Tensor returned by the function given to {fn} should "
                               f"contain a single element, got shape {out.shape}")
        return out.reshape(())
    return single


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func_output, vjp)`: `func(*inputs)` and the vector-Jacobian product `v^T J`, shaped
    like `inputs`. `v` may be None only for an output of one element. Like
    `torch.autograd.functional.vjp`."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "vjp")
    f = _outputs(func, "vjp")
    if strict:
        _strict(f, xs, False, "vjp")
    out, fn = _func.vjp(f, *xs)
    out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "vjp")
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("vjp(): the vector v can only be None if the user-provided "
                               "function returns a single Tensor with a single element; got "
                               f"outputs of shapes {[o.shape for o in outs]}")
        vs = (outs[0].new_ones(outs[0].shape),)
    else:
        vs = _check_v(v, outs, out_tuple, "vjp")
    res = fn(*vs)
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func_output, jvp)`: `func(*inputs)` and the Jacobian-vector product `J v`, shaped
    like the outputs (by reverse mode's double-vjp trick, as torch). `v` may be None only
    for one input of one element.
    Like `torch.autograd.functional.jvp`."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "jvp")
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError("jvp(): the vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               f"element; got inputs of shapes {[x.shape for x in xs]}")
        vs = (xs[0].new_ones(xs[0].shape),)
    else:
        vs = _check_v(v, xs, in_tuple, "jvp")
    f = _outputs(func, "jvp")
    if strict:
        _strict(f, xs, False, "jvp")
    out, touts = _double_vjp(f, xs, vs)
    out_tuple = isinstance(out, tuple)
    outs = out if out_tuple else (out,)
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(touts, create_graph), out_tuple))


def _double_vjp(f: Callable, xs: tuple, vs: tuple) -> tuple:
    """`(f(*xs), J v)` in reverse mode only, as PyTorch's functional jvp/hvp compute it:
    the vjp `u -> J^T u` is linear in `u`, so its own vjp at `v` is `J v`. Needs no
    forward-mode rule, so it runs through an autograd.Function without `jvp`."""
    out, vjp_fn = _func.vjp(f, *xs)
    out_tuple = isinstance(out, tuple)
    outs = out if out_tuple else (out,)

    def back(*us):
        return vjp_fn(us if out_tuple else us[0])

    zeros = tuple(o.new_zeros(o.shape) for o in outs)
    touts = _func.vjp(back, *zeros)[1](tuple(vs))
    return out, tuple(t if t is not None else o.new_zeros(o.shape)
                      for t, o in zip(touts, outs))


class StrategyError(ArgumentError, AssertionError):
    """An unknown jacobian/hessian strategy: PyTorch asserts (AssertionError); a
    ValueError too, as retrograd's other argument errors."""


def _strategy(strategy: str, vectorize: bool, create_graph: bool, strict: bool,
              fn: str) -> None:
    if strategy not in ("forward-mode", "reverse-mode"):
        raise StrategyError(f"{fn}(): strategy must be 'forward-mode' or 'reverse-mode', got "
                            f"{strategy!r}")
    if strategy == "forward-mode":
        if create_graph and fn == "jacobian":
            raise NotImplementedError("jacobian(): create_graph=True and strategy="
                                      "'forward-mode' are not supported together (as torch)")
        if strict:
            raise RuntimeError(f"{fn}(): strict=True and strategy='forward-mode' are not "
                               "supported together (as torch)")
        if not vectorize:
            raise NotImplementedError(f"{fn}(): strategy='forward-mode' is only implemented "
                                      "for vectorize=True (as torch)")
    elif strict and vectorize:
        raise RuntimeError(f"{fn}(): strict=True and vectorize=True are not supported together "
                           "(as torch)")


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of `func` at `inputs`: block `[i][j]` has shape
    `outputs[i].shape + inputs[j].shape`; a Tensor when both are single, one level of tuple
    when one is a tuple, a tuple of tuples when both are. Like
    `torch.autograd.functional.jacobian` (reverse mode by `rg.func.jacrev`, forward mode by
    `rg.func.jacfwd`)."""
    _strategy(strategy, vectorize, create_graph, strict, "jacobian")
    in_tuple, xs = _as_tuple(inputs, "inputs", "jacobian")
    f = _outputs(func, "jacobian")
    if strict:
        _strict(f, xs, False, "jacobian")
    out_tuple = [False]

    def g(*args):
        out = f(*args)
        out_tuple[0] = isinstance(out, tuple)
        return out

    transform = _func.jacfwd if strategy == "forward-mode" else _func.jacrev
    jac = transform(g, argnums=tuple(range(len(xs))))(*xs)
    # rg.func packs [output][input], with one level less for a single output
    blocks = jac if out_tuple[0] else (jac,)
    blocks = tuple(_finish(row, create_graph) for row in blocks)
    if not in_tuple:
        blocks = tuple(row[0] for row in blocks)
    return blocks if out_tuple[0] else blocks[0]


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a function returning one element: `inputs[i].shape + inputs[j].shape`
    blocks, a Tensor for one input, a tuple of tuples for a tuple. Like
    `torch.autograd.functional.hessian` (reverse over reverse, as torch; forward over
    reverse with `outer_jacobian_strategy="forward-mode"`)."""
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise StrategyError("hessian(): outer_jacobian_strategy must be 'forward-mode' or "
                            f"'reverse-mode', got {outer_jacobian_strategy!r}")
    if outer_jacobian_strategy == "forward-mode":
        _strategy("forward-mode", vectorize, False, strict, "hessian")
    in_tuple, xs = _as_tuple(inputs, "inputs", "hessian")
    f = _scalar(_outputs(func, "hessian"), "hessian")
    if strict:
        _strict(f, xs, True, "hessian")
    nums = tuple(range(len(xs)))
    if outer_jacobian_strategy == "forward-mode":
        h = _func.hessian(f, argnums=nums)(*xs)
    else:  # reverse over reverse, as torch: no forward-mode rule needed
        h = _func.jacrev(_func.grad(f, argnums=nums), argnums=nums)(*xs)
    rows = tuple(_finish(row, create_graph) for row in h)
    if not in_tuple:
        return rows[0][0]
    return rows


def _value(f: Callable, xs: tuple, create_graph: bool) -> Tensor:
    if create_graph:
        with enable_grad():
            return f(*xs)
    with no_grad():
        return f(*xs)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func_output, vhp)`: the vector-Hessian product `v^T H` of a function returning one
    element (reverse over reverse), shaped like `inputs`. Like
    `torch.autograd.functional.vhp`."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func_output, hvp)`: the Hessian-vector product `H v` of a function returning one
    element (reverse over reverse, by the double-vjp trick, as torch), shaped like
    `inputs`. Like
    `torch.autograd.functional.hvp`."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, fn):
    in_tuple, xs = _as_tuple(inputs, "inputs", fn)
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError(f"{fn}(): the vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               f"element; got inputs of shapes {[x.shape for x in xs]}")
        vs = (xs[0].new_ones(xs[0].shape),)
    else:
        vs = _check_v(v, xs, in_tuple, fn)
    f = _scalar(_outputs(func, fn), fn)
    if strict:
        _strict(f, xs, True, fn)
    out = _value(func, xs, create_graph)
    nums = tuple(range(len(xs)))
    if fn == "hvp":  # torch's double-backward trick: reverse mode only
        res = _double_vjp(_func.grad(f, argnums=nums), xs, vs)[1]
    else:
        res = _func.vjp(_func.grad(f, argnums=nums), *xs)[1](vs)
    return (out if create_graph else out.detach()), _unpack(_finish(res, create_graph), in_tuple)
