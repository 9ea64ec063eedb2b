"""Pytree arguments for `rg.func`'s vjp, jvp, jacrev and jacfwd, as torch.func takes them.

`jacrev(f)(params, x)` with `params` a dict of tensors returns a dict of Jacobians;
`vjp(f, params)` returns a `vjp_fn` whose result holds a dict; `jvp(f, (params,),
(tangents,))` takes dicts of tangents. Each function here flattens the containers
(dicts, tuples, lists) into their tensor leaves, runs the tensor-only transform it is
given (`core`, from func.py: this module imports nothing of the package so that no
import cycle forms) over a function of the leaves, and rebuilds the containers.
"""

from __future__ import annotations

from collections.abc import Callable

from .primitive import ArgumentError

__all__ = ["is_tree", "flatten", "unflatten", "vjp", "jvp", "jac"]


def is_tree(x) -> bool:
    """A dict, or a tuple/list holding tensors, NumPy arrays or scalars, or containers (a
    list of plain Python numbers is one tensor-like value, as the transforms take it)."""
    return isinstance(x, dict) or (isinstance(x, (tuple, list)) and any(
        type(e) not in (bool, int, float, complex) for e in x))


def flatten(tree) -> tuple[list, object]:
    """(leaves in order, a spec that `unflatten` turns back into the same containers)."""
    leaves: list = []

    def walk(t):
        if isinstance(t, dict):
            return ("dict", list(t.keys()), [walk(v) for v in t.values()])
        if isinstance(t, (tuple, list)) and is_tree(t):
            return (type(t).__name__, None, [walk(v) for v in t])
        leaves.append(t)
        return None

    return leaves, walk(tree)


def unflatten(spec, leaves) -> object:
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, keys, children = s
        vals = [build(c) for c in children]
        if kind == "dict":
            return dict(zip(keys, vals))
        return tuple(vals) if kind == "tuple" else list(vals)

    return build(spec)


def _flatten_all(values) -> tuple[list, list]:
    """Leaves of every value in turn, and (start, count, spec) per value."""
    flat, slots = [], []
    for v in values:
        leaves, spec = flatten(v)
        slots.append((len(flat), len(leaves), spec))
        flat += leaves
    return flat, slots


def _rebuild(slots, flat) -> list:
    return [unflatten(spec, flat[a:a + n]) for a, n, spec in slots]


def vjp(core: Callable, f: Callable, primals, has_aux: bool):
    """`core` (func.vjp) over the leaves of `primals`; `vjp_fn` returns one container per
    primal, shaped like it."""
    flat, slots = _flatten_all(primals)
    res = core(lambda *leaves: f(*_rebuild(slots, leaves)), *flat, has_aux=has_aux)
    inner = res[1]

    def vjp_fn(*cotangents) -> tuple:
        return tuple(_rebuild(slots, list(inner(*cotangents))))

    return (res[0], vjp_fn) + tuple(res[2:])


def jvp(core: Callable, f: Callable, primals, tangents, has_aux: bool):
    """`core` (func.jvp) over the leaves of `primals` and of `tangents`, whose containers
    must match."""
    flat, slots = _flatten_all(primals)
    tflat, tslots = _flatten_all(tangents)
    if [(n, s) for _, n, s in slots] != [(n, s) for _, n, s in tslots]:
        raise ArgumentError("jvp: the tangents' containers must match the primals' (same dict "
                            "keys, tuple and list lengths)")
    return core(lambda *leaves: f(*_rebuild(slots, leaves)), tuple(flat), tuple(tflat),
                has_aux=has_aux)


def jac(core: Callable, f: Callable, nums: tuple, single_in: bool, has_aux: bool,
        chunk_size, args, kwargs):
    """`core` (func.jacrev or func.jacfwd) with respect to the leaves of the arguments at
    `nums`; each output's Jacobian comes back in its argument's containers (a tuple of
    them for a tuple `argnums`)."""
    flat, slots = _flatten_all([args[i] for i in nums])
    out_spec = []  # the output's containers, seen when `g` runs

    def g(*leaves):
        call = list(args)
        for i, v in zip(nums, _rebuild(slots, leaves)):
            call[i] = v
        res = f(*call, **kwargs)
        out, aux = res if has_aux else (res, None)
        outs, spec = flatten(out)
        out_spec.append(spec)
        out = tuple(outs) if spec is not None else outs[0]
        return (out, aux) if has_aux else out

    res = core(g, argnums=tuple(range(len(flat))), has_aux=has_aux,
               chunk_size=chunk_size)(*flat)
    jacs, aux = (res[0], res[1]) if has_aux else (res, None)

    def regroup(block):
        per_arg = _rebuild(slots, list(block))
        return per_arg[0] if single_in else tuple(per_arg)

    if out_spec[-1] is None:
        out = regroup(jacs)
    else:  # one block per output leaf, put back in the output's containers
        out = unflatten(out_spec[-1], [regroup(b) for b in jacs])
    return (out, aux) if has_aux else out
