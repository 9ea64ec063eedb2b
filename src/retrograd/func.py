"""`rg.func`: JAX-style function transforms on top of the op table.

    grad, value_and_grad, vjp     reverse mode (one backward pass)
    jvp                           forward mode (tangents pushed with the values)
    jacrev (= jacobian), jacfwd   whole Jacobians, a batch of basis vectors at once
    vmap                          a function mapped over a batch dimension, no loop
    hessian, hvp                  forward over reverse

Inputs may be Tensors, NumPy arrays or Python floats; results are Tensors.
Transforms compose: `grad(grad(f))`, `jacfwd(jacrev(f))`, `jvp(grad(f), ...)`.

How nesting stays correct:
- The argument a transform differentiates is always a fresh node (an identity
  op on the caller's value), so a value closed over from an outer transform and
  the argument are distinct paths, and the nested derivatives of
  `grad(lambda x: x * grad(lambda y: x + y)(x))` keep their perturbations apart.
  Forward mode tags tangents by level to the same end (see forward.py).
- Reverse mode records its own backward pass (`create_graph`) only when
  something outside may differentiate the result: another transform is running,
  forward mode is active, an input already requires grad, or `f` closes over a
  tensor that requires grad. Plain top-level use does not pay for it.
- Jacobians push all basis vectors as one batch: jacfwd seeds a batched forward
  level (the jvp rules treat leading extra tangent dimensions as batch); jacrev
  is `vmap` of the vjp over the cotangent basis, one backward pass on the whole
  batch.
- `vmap` is a forward-mode level whose "tangents" are batched values, computed
  by the batching rules of `batching.py` (which reuse the jvp rules of linear
  ops); it nests and composes with the other transforms the same way.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence

import numpy as np

from . import forward, ops
from . import func_trees as _trees
from .autograd._core import grad as _autograd_grad
from .devices import namespace_of
from .engine import Node, apply
from .grad_mode import enable_grad, state
from .primitive import ArgumentError
from .tensor import GradDtypeError, Tensor

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacrev", "jacfwd", "jacobian", "hessian",
           "hvp", "vmap",
           "grad_and_value", "linearize", "functional_call", "stack_module_state",
           "replace_all_batch_norm_modules_", "functionalize"]

_depth = [0]  # transforms whose function is running: results must stay differentiable
_internal: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # leaves made by _fresh


# ---------------------------------------------------------------- helpers

def _nested() -> bool:
    return _depth[0] > 0 or state.forward is not None


def _as_tensor(x, what: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic, float, int, list, tuple)) and not isinstance(
            x, bool):
        return Tensor(x)
    raise TypeError(f"{what}: expected a Tensor, NumPy array or number, got {type(x).__name__}")


class ForwardDtypeError(TypeError, ValueError):
    """A non-floating primal of a forward-mode transform (jvp, jacfwd, hessian, linearize):
    a TypeError (the contract) and PyTorch's ValueError for it."""


def _float_input(x, what: str) -> Tensor:
    """`x` as a tensor, refused unless floating: reverse mode raises PyTorch's RuntimeError
    (as GradDtypeError, also a TypeError), forward mode its ValueError."""
    t = _as_tensor(x, what)
    if t.dtype.kind not in "fc":
        forward_mode = what.startswith(("jvp", "jacfwd", "linearize"))
        err = ForwardDtypeError if forward_mode else GradDtypeError
        raise err(f"{what} has dtype {t.dtype}; only floating inputs can be differentiated "
                  "(pass floats, or convert with .float()/.double())")
    return t


class ArgnumsTypeError(TypeError, RuntimeError):
    """argnums neither an int nor a tuple of ints (PyTorch: RuntimeError)."""


def _argnums(argnums, nargs: int, what: str) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
    nums = (argnums,) if single else argnums
    if not isinstance(nums, tuple) or not all(  # a list is refused too, as in PyTorch
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in nums):
        raise ArgnumsTypeError(f"{what}: argnums must be an int or a tuple of ints, got "
                               f"{argnums!r}")
    if not nums:
        raise ArgumentError(f"{what}: argnums is empty; name at least one argument")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ArgumentError(f"{what}: argnums {a} is out of range for a function called with "
                                f"{nargs} positional argument(s)")
        out.append(int(a) % nargs)
    if len(set(out)) != len(out):
        raise ArgumentError(f"{what}: argnums {argnums!r} repeats an argument")
    return tuple(out), single


def _fresh(x: Tensor) -> Tensor:
    """A new node equal to `x`, differentiable as a leaf of its own if `x` is not already.

    An identity op keeps `x`'s graph, its forward-mode tangents and a jit trace;
    being a distinct node it is what reverse mode's `grad` differentiates against.
    """
    d = apply(ops.reshape, x, shape=x.shape)
    if not d.requires_grad:
        d.requires_grad = True
        _internal[id(d)] = d
    return d


def _split_aux(res, has_aux: bool, what: str):
    if not has_aux:
        return res, None
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        raise TypeError(f"{what}: with has_aux=True the function must return a pair "
                        f"(output, aux), got {type(res).__name__}")
    return res[0], res[1]


class _Tree:
    """`single` for outputs in containers (a tuple, a list, a dict, nested): false as
    `single` is for several outputs, and `_pack` rebuilds the same containers around the
    results, as torch.func returns them."""

    __slots__ = ("spec",)

    def __init__(self, spec) -> None:
        self.spec = spec

    def __bool__(self) -> bool:
        return False


class OutputDtypeError(TypeError, RuntimeError):
    """An output of `f` that cannot be differentiated (not a tensor; for vjp/jacrev, not
    floating): a TypeError (the contract) and PyTorch's RuntimeError for it."""


def _outputs(out, what: str, integral_ok: bool = False) -> tuple[list[Tensor], bool]:
    """The outputs of `f` as a flat list of tensors and how to pack them back. Forward mode
    (`integral_ok`) lets integer/bool outputs through (their tangent is zero, as in
    torch.func.jvp/jacfwd: `jvp(torch.max(x, 1))` gives the indices a zero tangent);
    reverse mode refuses them, as PyTorch does."""
    if isinstance(out, dict) or (isinstance(out, (tuple, list)) and _trees.is_tree(out)):
        outs, spec = _trees.flatten(out)
        single = _Tree(spec)
    else:
        single = not isinstance(out, (tuple, list))
        outs = [out] if single else list(out)
    res = []
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):  # a number or array has no tangent/graph: it would
            raise OutputDtypeError(     # silently get a zero derivative (PyTorch refuses)
                f"{what}: expected f(*primals) to return only tensors, got output {k} of type "
                f"{type(o).__name__} (a .item(), float() or .numpy() inside f cuts the "
                "derivative; return tensors)")
        if o.dtype.kind not in "fc" and not integral_ok:
            raise OutputDtypeError(f"{what}: output {k} has dtype {o.dtype}; only floating "
                                   "outputs can be differentiated")
        res.append(o)
    return res, single


def _call(f, args, kwargs):
    _depth[0] += 1
    try:
        return f(*args, **kwargs)
    finally:
        _depth[0] -= 1


def _external(leaf: Tensor) -> bool:
    return _internal.get(id(leaf)) is not leaf


def _captures_grad(outs: list[Tensor]) -> bool:
    """Does the graph of `outs` reach a caller's tensor that requires grad?

    Leaves that the transforms made themselves (`_fresh`) do not count.
    """
    stack = [o.grad_fn for o in outs if o.grad_fn is not None]
    seen = set(stack)
    while stack:
        for nxt in stack.pop().nexts:
            if nxt.__class__ is Node:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
            elif _external(nxt):
                return True
    return any(o.grad_fn is None and o.requires_grad and _external(o) for o in outs)


def _needs_graph(xs, outs, caller_enabled: bool) -> bool:
    """Must results stay differentiable, because something outside may differentiate them?

    Yes inside another transform or forward mode, or when an input, or a tensor
    that `f` closes over, requires grad (and grad mode was on for the caller).
    """
    if _nested():
        return True
    if not caller_enabled:
        return False
    if any(x.requires_grad for x in xs):
        return True
    return _captures_grad(outs)


def _zeros(x: Tensor, batch: tuple = ()) -> Tensor:
    return Tensor._wrap(namespace_of(x.data).zeros(batch + x.shape, dtype=x.dtype))


def _grads(outs, cots, diffs, create_graph: bool) -> list[Tensor]:
    """Gradients of sum(<out, cot>) with respect to `diffs` (zeros where unused)."""
    live = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
    if not live:
        return [_zeros(d) for d in diffs]
    gs = _autograd_grad([o for o, _ in live], diffs, [c for _, c in live],
                        create_graph=create_graph, allow_unused=True)
    return [g if g is not None else _zeros(d) for g, d in zip(gs, diffs)]


def _cotangent(c, o: Tensor, k: int, what: str) -> Tensor:
    c = _as_tensor(c, f"{what}: cotangent {k}")
    if c.shape != o.shape:
        raise ArgumentError(f"{what}: cotangent {k} has shape {c.shape} but the output has shape "
                            f"{o.shape}")
    return c if c.dtype == o.dtype else c.to(o.dtype)


def _detach(t: Tensor) -> Tensor:
    """Cut a top-level result from the graph (rg.jit traces the detached copy as an alias)."""
    return t.detach() if t.requires_grad else t


def _pack(items: list, single: bool):
    if single:
        return items[0]
    return _trees.unflatten(single.spec, items) if single.__class__ is _Tree else tuple(items)


def _to_jac(rows: Tensor, out_shape: tuple, x_shape: tuple, lead_is_x: bool) -> Tensor:
    """One Jacobian block, shape out_shape + x_shape, from rows stacked along axis 0.

    jacrev's rows are indexed by output (rows: (out.size,) + x_shape); jacfwd's by
    input (rows: (x.size,) + out_shape), so they are moved to the end first.
    """
    from .api import permute, reshape

    if lead_is_x and rows.ndim > 1:
        rows = permute(rows, tuple(range(1, rows.ndim)) + (0,))
    return reshape(rows, out_shape + x_shape)


def _chunks(n: int, chunk_size: int | None) -> list[tuple[int, int]]:
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ArgumentError(f"chunk_size must be a positive int or None, got {chunk_size!r}")
    size = n if chunk_size is None else chunk_size
    return [(a, min(a + size, n)) for a in range(0, n, max(size, 1))] or [(0, 0)]


def _cat_rows(parts: list[Tensor]) -> Tensor:
    from .api import cat

    return parts[0] if len(parts) == 1 else cat(parts, 0)


def _substitute(args, nums, values) -> list:
    """`args` with the arguments at positions `nums` replaced by `values`."""
    call = list(args)
    for i, v in zip(nums, values):
        call[i] = v
    return call


# ---------------------------------------------------------------- reverse mode

def _is_tree(x) -> bool:
    """A dict, or a tuple/list holding tensors, NumPy arrays or scalars, or containers:
    differentiated leaf by leaf (as torch.func and JAX do); a list of plain Python numbers
    stays one tensor-like argument."""
    return isinstance(x, dict) or (isinstance(x, (tuple, list)) and any(
        isinstance(e, (Tensor, np.ndarray, np.generic, dict, tuple, list)) for e in x))


def _value_and_grad(f, argnums, has_aux, what, args, kwargs):
    nums, single = _argnums(argnums, len(args), what)
    trees = [args[i] if _is_tree(args[i]) else _float_input(args[i], f"{what}: argument {i}")
             for i in nums]
    xs: list = []
    for i, t in zip(nums, trees):
        _tree_map(t, lambda leaf, i=i: xs.append(_float_input(leaf, f"{what}: argument {i}")))
    caller = state.enabled
    with enable_grad():
        diffs = [_fresh(x) for x in xs]
        it = iter(diffs)
        new = [_tree_map(t, lambda _: next(it)) for t in trees]
        out, aux = _split_aux(_call(f, _substitute(args, nums, new), kwargs), has_aux, what)
        if not isinstance(out, Tensor):  # a number has no graph: the gradient would be 0
            raise RuntimeError(f"{what}: expected f(*args) to return a Tensor, got "
                               f"{type(out).__name__} (a .item() or float() inside f cuts "
                               "the graph)")
        if out.data.size != 1:
            raise RuntimeError(
                f"{what}: the function's output is not a scalar (shape {out.shape}); grad needs "
                "a single-element output. Use jacrev/jacfwd or vjp for other outputs.")
        if out.dtype.kind not in "fc":
            raise TypeError(f"{what}: the output has dtype {out.dtype}; it must be floating")
        if out.dtype.kind == "c":
            raise RuntimeError(f"{what}: grad can be implicitly created only for real scalar "
                               f"outputs but got {out.dtype}; take .real or .abs() of the "
                               "output, or use vjp")
        cg = _needs_graph(xs, [out], caller)
        gs = _grads([out], [None], diffs, cg)
    if not cg:
        out = _detach(out)
        if has_aux:  # as torch.func: the aux comes back without the transform's graph
            aux = _tree_map(aux, lambda a: _detach(a) if isinstance(a, Tensor) else a)
    it = iter(gs)
    gs = [_tree_map(t, lambda _: next(it)) for t in trees]
    return out, aux, _pack(gs, single)


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable:
    """`f` and its gradient in one call: `(value, grad)`, or `((value, aux), grad)`.

    `f` must return one element; `argnums` picks the argument(s) differentiated
    (a tuple gives a tuple of gradients).
    """
    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        out, aux, g = _value_and_grad(f, argnums, has_aux, "value_and_grad", args, kwargs)
        return ((out, aux) if has_aux else out), g

    return value_and_grad_f


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function: `grad(f)(x)` is df/dx, shaped like `x`.

    A tuple `argnums` gives a tuple of gradients; `has_aux=True` means `f` returns
    `(output, aux)` and the result is `(gradient, aux)`. Nests to any order.
    """
    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        _, aux, g = _value_and_grad(f, argnums, has_aux, "grad", args, kwargs)
        return (g, aux) if has_aux else g

    return grad_f


def grad_and_value(f: Callable, argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable:
    """torch.func's name: `(grad, value)`, or `(grad, (value, aux))` -- the reverse of
    `value_and_grad`'s order."""
    @functools.wraps(f)
    def grad_and_value_f(*args, **kwargs):
        out, aux, g = _value_and_grad(f, argnums, has_aux, "grad_and_value", args, kwargs)
        return g, ((out, aux) if has_aux else out)

    return grad_and_value_f


def vjp(f: Callable, *primals, has_aux: bool = False):
    """`(out, vjp_fn)`, with `vjp_fn(cotangent)` the tuple of cotangent-Jacobian products.

    One entry per primal, as in JAX. With `has_aux=True`, `(out, vjp_fn, aux)`.
    `f` may return a Tensor or a tuple of them (then pass one cotangent each).
    """
    if any(_trees.is_tree(p) for p in primals):  # dicts of parameters, ...: leaf by leaf
        return _trees.vjp(vjp, f, primals, has_aux)
    xs = [_float_input(p, f"vjp: primal {k}") for k, p in enumerate(primals)]
    caller = state.enabled
    with enable_grad():
        diffs = [_fresh(x) for x in xs]
        out, aux = _split_aux(_call(f, diffs, {}), has_aux, "vjp")
    outs, single = _outputs(out, "vjp")
    keep = _needs_graph(xs, outs, caller)

    def vjp_fn(*cotangents) -> tuple:
        if single.__class__ is _Tree and len(cotangents) == 1 and (
                isinstance(cotangents[0], dict) or _trees.is_tree(cotangents[0])):
            cotangents = tuple(_trees.flatten(cotangents[0])[0])  # one tree, as the output's
        elif not single and len(cotangents) == 1 and isinstance(cotangents[0], (tuple, list)):
            cotangents = cotangents[0]  # vjp_fn((c1, c2)) as well as vjp_fn(c1, c2)
        if len(cotangents) != len(outs):
            raise ArgumentError(f"vjp_fn: expected {len(outs)} cotangent(s), one per output, got "
                                f"{len(cotangents)}")
        cots = [_cotangent(c, o, k, "vjp_fn") for k, (c, o) in enumerate(zip(cotangents, outs))]
        cg = keep or _nested() or any(c.requires_grad or c._fw is not None for c in cots)
        gs = _grads(outs, cots, diffs, cg)
        return tuple(gs)

    result = outs if keep else [_detach(o) for o in outs]
    res = (_pack(result, single), vjp_fn)
    return res + (aux,) if has_aux else res


# ---------------------------------------------------------------- forward mode

def jvp(f: Callable, primals: Sequence, tangents: Sequence, *, has_aux: bool = False):
    """`(out, tangent_out)`: `f(*primals)` and its directional derivative along `tangents`.

    True forward mode: each op pushes the tangent alongside its value. With
    `has_aux=True`, `(out, tangent_out, aux)`.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument), "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise ArgumentError(f"jvp: got {len(primals)} primals but {len(tangents)} tangents")
    if any(_trees.is_tree(p) for p in (*primals, *tangents)):
        return _trees.jvp(jvp, f, primals, tangents, has_aux)
    xs = [_float_input(p, f"jvp: primal {k}") for k, p in enumerate(primals)]
    caller = state.enabled
    ts = []
    for k, (x, t) in enumerate(zip(xs, tangents)):
        t = _as_tensor(t, f"jvp: tangent {k}")
        if t.shape != x.shape:
            raise ArgumentError(f"jvp: tangent {k} has shape {t.shape} but primal {k} has shape "
                                f"{x.shape}; they must match")
        ts.append(t if t.dtype == x.dtype else t.to(x.dtype))
    with forward.level() as lv:
        duals = [forward.make_dual(x, t, lv) for x, t in zip(xs, ts)]
        out, aux = _split_aux(_call(f, duals, {}), has_aux, "jvp")
        outs, single = _outputs(out, "jvp", integral_ok=True)
        touts = [forward.tangent_of(o, lv) for o in outs]
    touts = [t if t is not None else _zeros(o) for t, o in zip(touts, outs)]
    if not _needs_graph(xs + ts, outs + touts, caller):
        outs, touts = [_detach(o) for o in outs], [_detach(t) for t in touts]
    res = (_pack(outs, single), _pack(touts, single))
    return res + (aux,) if has_aux else res


# ---------------------------------------------------------------- Jacobians

def _tree_args(args, argnums, what):
    """(argnums, single) when an argument differentiated is a container (torch.func's
    pytrees, e.g. a dict of parameters), else None."""
    nums, single = _argnums(argnums, len(args), what)
    return (nums, single) if any(_trees.is_tree(args[i]) for i in nums) else None


def _jac_inputs(args, argnums, what):
    nums, single = _argnums(argnums, len(args), what)
    xs = [_float_input(args[i], f"{what}: argument {i}") for i in nums]
    return nums, single, xs


def _assemble(outs, xs, rows_for, lead_is_x, single_out, single_in):
    """Jacobian blocks [output][input], packed the way JAX and torch.func return them."""
    res = []
    for a, o in enumerate(outs):
        blocks = [_to_jac(rows_for(a, b), o.shape, x.shape, lead_is_x) for b, x in enumerate(xs)]
        res.append(_pack(blocks, single_in))
    return _pack(res, single_out)


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
           chunk_size: int | None = None, randomness: str = "error") -> Callable:
    """The Jacobian by forward mode: shape `out.shape + x.shape`, one pass for all inputs.

    All basis tangents travel as one batch (or `chunk_size` at a time; 1 is a loop
    of plain jvps). Best when inputs are few and outputs many. `randomness` is
    torch.func.jacfwd's: "error" refuses random draws inside `f`; "same" and
    "different" allow them (one draw serves every basis tangent: the primal is
    not batched here).
    """
    @functools.wraps(f)
    def jacfwd_f(*args, **kwargs):
        if randomness not in _RANDOMNESS:  # at the call, as torch's
            raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', "
                               f"or 'same'. Got {randomness}")
        tree = _tree_args(args, argnums, "jacfwd")
        if tree is not None:
            core = functools.partial(jacfwd, randomness=randomness)
            return _trees.jac(core, f, *tree, has_aux, chunk_size, args, kwargs)
        nums, single_in, xs = _jac_inputs(args, argnums, "jacfwd")
        caller = state.enabled
        sizes = [x.data.size for x in xs]
        offs = np.cumsum([0] + sizes)
        n = int(offs[-1])
        parts, outs, aux, single_out = [], None, None, True
        for a, b in _chunks(n, chunk_size):
            loop = chunk_size == 1
            batch = () if loop else (b - a,)
            with forward.level(batch, randomness="error" if randomness == "error" else None) as lv:
                call = list(args)
                for k, (i, x) in enumerate(zip(nums, xs)):
                    seed = namespace_of(x.data).zeros((b - a, sizes[k]), dtype=x.dtype)
                    lo, hi = max(a, offs[k]), min(b, offs[k + 1])
                    if lo < hi:
                        np.fill_diagonal(seed[lo - a:hi - a, lo - offs[k]:hi - offs[k]], 1)
                    seed = seed.reshape(batch + x.shape)
                    call[i] = forward.make_dual(x, Tensor._wrap(seed), lv)
                out, aux = _split_aux(_call(f, call, kwargs), has_aux, "jacfwd")
                outs, single_out = _outputs(out, "jacfwd", integral_ok=True)
                ts = [forward.tangent_of(o, lv) for o in outs]
            ts = [t if t is not None else _zeros(o, batch) for t, o in zip(ts, outs)]
            if loop:
                from .api import unsqueeze

                ts = [unsqueeze(t, 0) for t in ts]
            parts.append(ts)
        rows = [_cat_rows([p[k] for p in parts]) for k in range(len(outs))]
        if not _needs_graph(xs, rows, caller):
            rows = [_detach(r) for r in rows]
        jac = _assemble(outs, xs, lambda a, b: rows[a][int(offs[b]):int(offs[b + 1])], True,
                        single_out, single_in)
        return (jac, aux) if has_aux else jac

    return jacfwd_f


def jacrev(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian by reverse mode: shape `out.shape + x.shape`, one backward for all rows.

    The cotangent basis travels through the backward pass as one batch (or
    `chunk_size` at a time; 1 is a loop of plain vjps). Best when outputs are few.
    """
    @functools.wraps(f)
    def jacrev_f(*args, **kwargs):
        tree = _tree_args(args, argnums, "jacrev")
        if tree is not None:
            return _trees.jac(jacrev, f, *tree, has_aux, chunk_size, args, kwargs)
        nums, single_in, xs = _jac_inputs(args, argnums, "jacrev")
        caller = state.enabled
        with enable_grad():
            diffs = [_fresh(x) for x in xs]
            out, aux = _split_aux(_call(f, _substitute(args, nums, diffs), kwargs), has_aux,
                                  "jacrev")
            outs, single_out = _outputs(out, "jacrev")
            cg = _needs_graph(xs, outs, caller)
            sizes = [o.data.size for o in outs]
            offs = np.cumsum([0] + sizes)
            m = int(offs[-1])
            if m == 1 or chunk_size == 1:
                rows = _jacrev_loop(outs, diffs, offs, m, cg)
            else:
                rows = _jacrev_batched(outs, diffs, offs, m, chunk_size)
        if not cg:
            rows = [_detach(r) for r in rows]
        jac = _assemble(outs, xs, lambda a, b: rows[b][int(offs[a]):int(offs[a + 1])], False,
                        single_out, single_in)
        return (jac, aux) if has_aux else jac

    return jacrev_f


def _jacrev_loop(outs, diffs, offs, m, cg) -> list[Tensor]:
    """One plain backward pass per output element."""
    from .api import stack

    per_input = [[] for _ in diffs]
    for o in outs:
        for e in range(o.data.size):
            seed = namespace_of(o.data).zeros(o.shape, dtype=o.dtype)
            seed.reshape(-1)[e] = 1
            gs = _grads([o], [Tensor._wrap(seed)], diffs, cg)
            for k, g in enumerate(gs):
                per_input[k].append(g)
    return [stack(r) if r else _zeros(d, (0,)) for r, d in zip(per_input, diffs)]


def _jacrev_batched(outs, diffs, offs, m, chunk_size) -> list[Tensor]:
    """One backward pass per chunk of rows: `vmap` of the vjp over the cotangent basis,
    so the pass runs once on the whole batch through the batching rules."""
    parts = []
    for a, b in _chunks(m, chunk_size):
        live, seeds = [], []
        for k, o in enumerate(outs):
            lo, hi = max(a, offs[k]), min(b, offs[k + 1])
            if lo < hi:  # outputs with no row in this chunk get no cotangent at all
                seed = namespace_of(o.data).zeros((b - a, o.data.size), dtype=o.dtype)
                np.fill_diagonal(seed[lo - a:hi - a, lo - offs[k]:hi - offs[k]], 1)
                live.append(o)
                seeds.append(Tensor._wrap(seed.reshape((b - a,) + o.shape)))

        def rows(*cots, live=live):
            return tuple(_grads(live, list(cots), diffs, True))

        parts.append(list(vmap(rows)(*seeds)))
    return [_cat_rows([p[k] for p in parts]) for k in range(len(diffs))]


jacobian = jacrev


def hessian(f: Callable, argnums: int | Sequence[int] = 0, *,
            chunk_size: int | None = None) -> Callable:
    """The Hessian, forward over reverse: `jacfwd(jacrev(f))`, shape `x.shape + x.shape`."""
    return jacfwd(jacrev(f, argnums), argnums, chunk_size=chunk_size)


def hvp(f: Callable, x, v):
    """The Hessian-vector product H(x) v, forward over reverse; never forms the Hessian.

    `x` and `v` are one argument each, or equally long tuples (then a tuple returns).
    """
    if isinstance(x, (tuple, list)):
        n = len(x)
        if not isinstance(v, (tuple, list)) or len(v) != n:
            raise ArgumentError("hvp: with a tuple of primals, v must be a tuple of the same "
                                "length")
        return jvp(grad(f, argnums=tuple(range(n))), tuple(x), tuple(v))[1]
    return jvp(grad(f), (x,), (v,))[1]


# ---------------------------------------------------------------- vmap

def _tree_leaves(tree, dims, where: str, out: list) -> None:
    """Collect (leaf, dim, where) from `tree`; `dims` is an int/None for the whole subtree or
    a structure matching it (tuple/list for tuples and lists, dict for dicts)."""
    if isinstance(tree, (tuple, list)):
        if isinstance(dims, (tuple, list)):
            if len(dims) != len(tree):
                raise ArgumentError(f"vmap: in_dims {dims!r} at {where} has {len(dims)} entries "
                                    f"for {len(tree)} values")
            for k, (t, d) in enumerate(zip(tree, dims)):
                _tree_leaves(t, d, f"{where}[{k}]", out)
            return
        for k, t in enumerate(tree):
            _tree_leaves(t, dims, f"{where}[{k}]", out)
        return
    if isinstance(tree, dict):
        for k, t in tree.items():
            d = dims[k] if isinstance(dims, dict) else dims
            _tree_leaves(t, d, f"{where}[{k!r}]", out)
        return
    if isinstance(dims, (tuple, list, dict)):
        raise ArgumentError(f"vmap: in_dims at {where} is a {type(dims).__name__} but the value "
                            f"there is a {type(tree).__name__}")
    if dims is not None and not (isinstance(dims, (int, np.integer)) and not isinstance(dims,
                                                                                         bool)):
        raise TypeError(f"vmap: in_dims entries must be ints or None, got {dims!r} at {where}")
    out.append((tree, dims, where))


def _tree_map(tree, fn):
    if isinstance(tree, tuple):
        return tuple(_tree_map(t, fn) for t in tree)
    if isinstance(tree, list):
        return [_tree_map(t, fn) for t in tree]
    if isinstance(tree, dict):
        return {k: _tree_map(t, fn) for k, t in tree.items()}
    return fn(tree)


def _move_to_front(x: Tensor, d: int) -> Tensor:
    from .api import permute

    if d == 0:
        return x
    axes = list(range(x.ndim))
    axes.insert(0, axes.pop(d))
    return permute(x, tuple(axes))


def _move_from_front(x: Tensor, d: int) -> Tensor:
    from .api import permute

    if d == 0:
        return x
    axes = list(range(1, x.ndim))
    axes.insert(d, 0)
    return permute(x, tuple(axes))


_RANDOMNESS = ("error", "different", "same")


def vmap(f: Callable, in_dims=0, out_dims=0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """`f` mapped over a batch dimension of its arguments, without a Python loop.

    `in_dims`: an int (the batched dimension of every argument), None (not
    batched), or a tuple with one entry per positional argument (an entry may
    itself be a tuple, list or dict matching a nested argument). `out_dims`: an
    int, None, or a tuple with one entry per output (again possibly nested),
    saying where the batch dimension goes; outputs may be tensors in tuples,
    named tuples, lists and dicts. Composes with the other transforms (`vmap(grad(f))`,
    `jacrev(vmap(f))`, nested `vmap`).

    Inside `f` each batched argument looks like one batch element (its shape has no batch
    dimension). Ops compute on the whole batch at once through the batching rules
    (`retrograd.batching`). In-place ops on batched tensors work as in torch.func.vmap: one
    on a batched argument writes into the caller's tensor (all of its batch), one writing a
    batched value into an unbatched tensor raises. Reading a batched value in Python
    (`item()`, `bool()`, `numpy()`, indexing with a batched tensor), drawing random numbers,
    and `backward()` inside `f` raise, as in torch.func.vmap; so do library functions that
    need a batched tensor's values in Python (a result whose shape depends on them, as
    `nonzero`; `allclose`; `one_hot` inferring the class count; batch_norm updating running
    statistics). Their checks (label and index ranges, distribution supports) see every
    batch element.

    `randomness` ("error", "different", "same"), as torch.func.vmap's: "same" lets `f`
    draw random numbers, one draw shared by every batch element; "different" gives each
    element its own draws, by running `f` on one element at a time and stacking the
    results (a Python loop: right, but without vmap's speed). `chunk_size` is accepted
    (torch's memory bound); the batch runs at once, with the same results.
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(
            chunk_size, (int, np.integer)) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(f)
    def vmapped(*args, **kwargs):
        dims = in_dims
        if isinstance(dims, list):
            dims = tuple(dims)
        if isinstance(dims, tuple) and len(dims) != len(args):
            raise ArgumentError(f"vmap: in_dims has {len(dims)} entries but the function was "
                                f"called with {len(args)} positional arguments")
        leaves: list = []
        _tree_leaves(tuple(args), dims if isinstance(dims, tuple) else dims, "args", leaves)
        size, first = None, None
        batched = []  # per leaf, in the order _tree_map visits them: (tensor, dim) or None
        for leaf, d, where in leaves:
            if d is None:
                batched.append(None)
                continue
            t = leaf if isinstance(leaf, Tensor) else _as_tensor(leaf, f"vmap: {where}")
            if not -t.ndim <= d < t.ndim or t.ndim == 0:
                raise ArgumentError(f"vmap: in_dim {d} is out of range for {where} of shape "
                                    f"{t.shape}")
            d = int(d) % t.ndim
            n = t.shape[d]
            if size is None:
                size, first = n, where
            elif n != size:
                raise ArgumentError(f"vmap: expected all batched inputs to have the same size in "
                                    f"the mapped dimension; {first} has {size} and {where} has "
                                    f"{n}")
            batched.append((t, d))
        if size is None:
            raise ArgumentError("vmap: no input is batched (in_dims are all None, or there are "
                                "no tensor arguments); at least one input must be batched")
        if size == 0:
            raise ArgumentError("vmap: the mapped dimension has size 0")
        if randomness == "different":
            return _vmap_each(f, args, kwargs, batched, size, out_dims)
        with forward.level((size,), vmap=True, randomness=randomness) as lv:
            order = iter(batched)

            def enter(leaf):
                hit = next(order)
                if hit is None:
                    return leaf
                t, d = hit
                full = _move_to_front(t, d)
                # a copy, not a view of `full`: an in-place write into it goes to `full`
                # through its batched value
                sample = apply(ops.getitem, full, idx=0).clone()
                forward.set_tangent(sample, full, lv)
                lv.write_into(full)
                return sample

            call = _tree_map(tuple(args), enter)
            res = _call(f, call, kwargs)
            odims = out_dims
            if isinstance(odims, (tuple, list)) and not isinstance(res, (tuple, list)):
                raise ArgumentError(f"vmap: out_dims has {len(odims)} entries but the function "
                                    "returned 1 output")
            return _outputs_tree(res, odims, lv, size, "output")

    return vmapped


def _vmap_each(f, args, kwargs, batched, size: int, out_dims):
    """vmap with randomness="different": `f` on each batch element in turn (so each draws
    its own random numbers), the results stacked at `out_dims`."""
    from .api.indexing import select

    def element(i: int):
        order = iter(batched)

        def pick(leaf):
            hit = next(order)
            return leaf if hit is None else select(hit[0], hit[1], i)

        return _tree_map(tuple(args), pick)

    results = [_call(f, element(i), kwargs) for i in range(size)]
    return _stack_tree(results, out_dims, "output")


def _stack_tree(results: list, d, where: str):
    """The per-element results of `_vmap_each` (same structure each) stacked leaf by leaf,
    each leaf's batch at its out_dim (an int, or a structure matching the results)."""
    from .api import stack

    o = results[0]
    if isinstance(o, (tuple, list)):
        if isinstance(d, (tuple, list)) and len(d) != len(o):
            raise ArgumentError(f"vmap: out_dims has {len(d)} entries but the function "
                                f"returned {len(o)} outputs")
        items = [_stack_tree([r[k] for r in results],
                             d[k] if isinstance(d, (tuple, list)) else d, _at(where, k))
                 for k in range(len(o))]
        return type(o)(*items) if hasattr(o, "_fields") else type(o)(items)
    if isinstance(o, dict):
        return {k: _stack_tree([r[k] for r in results], d[k] if isinstance(d, dict) else d,
                               f"{where}[{k!r}]") for k in o}
    if not isinstance(o, Tensor):
        raise ArgumentError(f"vmap: {where} must be a Tensor, got {type(o).__name__}")
    if d is None:
        raise ArgumentError(f"vmap: out_dims None for {where} with randomness='different': "
                            "each batch element's draws differ, so the output is batched; "
                            "give it an int out_dim")
    return stack(results, dim=int(d))


def _outputs_tree(o, d, lv, size: int, where: str):
    """The vmapped function's result `o` (tensors, possibly in tuples, named tuples, lists
    and dicts) with each tensor's batch put at its out_dim; `d` is an int/None for the
    whole subtree or a structure matching it."""
    if isinstance(o, (tuple, list)):
        if isinstance(d, (tuple, list)):
            if len(d) != len(o):
                what = "outputs" if where == "output" else f"entries at {where}"
                raise ArgumentError(f"vmap: out_dims has {len(d)} entries but the function "
                                    f"returned {len(o)} {what}")
            items = [_outputs_tree(v, e, lv, size, _at(where, k))
                     for k, (v, e) in enumerate(zip(o, d))]
        else:
            items = [_outputs_tree(v, d, lv, size, _at(where, k)) for k, v in enumerate(o)]
        return type(o)(*items) if hasattr(o, "_fields") else type(o)(items)
    if isinstance(o, dict):
        return {k: _outputs_tree(v, d[k] if isinstance(d, dict) else d, lv, size,
                                 f"{where}[{k!r}]") for k, v in o.items()}
    return _vmap_output(o, d, lv, size, where)


def _at(where: str, k: int) -> str:
    return f"output {k}" if where == "output" else f"{where}[{k}]"


def _vmap_output(o, d, lv, size: int, where: str):
    from .api import expand, reshape

    if not isinstance(o, Tensor):
        if d is None:
            return o
        raise ValueError(f"vmap: {where} is a {type(o).__name__}; a vmapped function must "
                         "return tensors (or use out_dims=None for that output)")
    value = forward.tangent_of(o, lv)
    if d is None:
        if value is not None:
            raise ArgumentError(f"vmap: {where} is batched but out_dims is None for it")
        return o
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError(f"vmap: out_dims entries must be ints or None, got {d!r}")
    if value is None:  # the same for every batch element
        value = expand(reshape(o, (1,) + o.shape), (size,) + o.shape)
    if not -value.ndim <= d < value.ndim:
        raise ArgumentError(f"vmap: out_dim {d} is out of range for {where} with "
                            f"{value.ndim} dimensions (batch included)")
    return _move_from_front(value, int(d) % value.ndim)


# ---------------------------------------------------------------- modules as functions

def linearize(func: Callable, *primals) -> tuple:
    """`(output, jvp_fn)`: `func(*primals)` and a function giving its directional derivative
    at `primals` along given tangents, `jvp_fn(*tangents)` (recomputed by forward mode on
    each call; torch.func traces it once)."""
    for k, p in enumerate(primals):
        if isinstance(p, Tensor):
            _float_input(p, f"linearize: primal {k}")
    out = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangent(s), one per primal, "
                               f"got {len(tangents)}")
        for k, (p, t) in enumerate(zip(primals, tangents)):
            if isinstance(p, Tensor) and isinstance(t, Tensor) and p.shape != t.shape:
                raise RuntimeError(f"linearize: tangent {k} has shape {tuple(t.shape)}, but "
                                   f"its primal has shape {tuple(p.shape)}")
        return jvp(func, primals, tangents)[1]

    return _tree_map(out, lambda o: _detach(o) if isinstance(o, Tensor) else o), jvp_fn


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call `module(*args, **kwargs)` with its parameters and buffers replaced by the given
    tensors (a dict by dotted name, or a tuple of dicts), the module itself left unchanged;
    composes with `grad`/`vmap` for per-sample gradients and model ensembles."""
    from .nn.utils.stateless import _functional_call

    return _functional_call(module, parameter_and_buffer_dicts, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def stack_module_state(models) -> tuple[dict, dict]:
    """The parameters and buffers of same-class `models`, each stacked on a new leading
    dimension: `(params, buffers)` dicts for `vmap(functional_call)` over an ensemble.
    Stacked parameters are new leaves that require grad."""
    from .api import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def leaf(tensors, name):
        req = [t.requires_grad for t in tensors]
        if any(req) and not all(req):
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               ".requires_grad")
        out = stack([t.detach() for t in tensors])
        if all(req):
            out.requires_grad_(True)
        return out

    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: leaf([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every BatchNorm in `root` stop tracking running statistics (running_mean,
    running_var and num_batches_tracked become None), in place, so it can run under vmap;
    returns `root`."""
    from .nn.normalization import _BatchNorm, _InstanceNorm

    for m in root.modules():
        if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm) \
                and m.track_running_stats:
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """`torch.func.functionalize`: `func` with the same results and the same effect on its
    inputs. torch rewrites in-place ops out of place for its compilers; retrograd's
    transforms already take functions that mutate, so `func` is returned as it is."""
    if remove not in ("mutations", "mutations_and_views"):
        raise ArgumentError("functionalize(f, remove='mutations'): we only support 'mutations' "
                            f"and 'mutations_and_views', but got {remove!r}")
    if not callable(func):
        raise TypeError(f"functionalize(): func must be callable, got {type(func).__name__}")
    return func
