"""Sample inputs for every op in the table, for `retrograd check` and the tests.

`SAMPLES[name](rng)` lists cases `(inputs, attrs)`: float64 arrays (or other
values) placed away from the op's non-differentiable points, so that central
differences are meaningful. An op missing here fails the generated tests, so
adding an op to a file of `ops/` means adding a line here too.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...primitive import ArgumentError

SHAPES = [(), (4,), (3, 4), (1, 4), (3, 1, 4)]


def _valid_pairs():
    for a, b in itertools.product(SHAPES, SHAPES):
        try:
            np.broadcast_shapes(a, b)
        except ValueError:
            continue
        yield a, b


def _draw(rng, shape, domain):
    if domain == "real":
        return rng.uniform(-2, 2, shape)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "gt-1":
        return rng.uniform(-0.5, 2.0, shape)
    if domain == "tan":
        return rng.uniform(-1.2, 1.2, shape)
    if domain == "nonzero":  # away from a kink at 0
        return rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    raise ArgumentError(domain)


def unary(domain="real", **attrs):
    return lambda rng: [([_draw(rng, s, domain)], dict(attrs)) for s in SHAPES]


def binary(dx="real", dy="real"):
    return lambda rng: [([_draw(rng, a, dx), _draw(rng, b, dy)], {}) for a, b in _valid_pairs()]


def _separated(rng):
    """Pairs whose elements differ by at least 0.2 (maximum/minimum have kinks at ties)."""
    cases = []
    for a, b in _valid_pairs():
        shape = np.broadcast_shapes(a, b)
        for _ in range(200):
            x, y = _draw(rng, a, "real"), _draw(rng, b, "real")
            if np.min(np.abs(np.broadcast_to(x, shape) - np.broadcast_to(y, shape))) >= 0.2:
                cases.append(([x, y], {}))
                break
    return cases


def _distinct(rng, shape):
    """Values with no ties (max/min are differentiable there)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.3 + rng.uniform(0, 0.1, n)).reshape(shape) - 0.15 * n


def _reductions(draw):
    def cases(rng):
        out = []
        for shape, axes in [((), [None]), ((4,), [None, 0, -1]), ((3, 4), [None, 0, 1, (0, 1)]),
                            ((3, 1, 4), [None, 0, 2, (0, 2)])]:
            for axis in axes:
                for keepdims in (False, True):
                    out.append(([draw(rng, shape)], {"axis": _norm(axis, len(shape)),
                                                      "keepdims": keepdims}))
        return out
    return cases


def _norm(axis, ndim):
    if axis is None:
        return None
    if isinstance(axis, tuple):
        return tuple(a % ndim for a in axis)
    return axis % ndim


def _along(rng):
    return [([rng.uniform(-2, 2, s)], {"axis": a}) for s, a in
            [((4,), 0), ((3, 4), 1), ((3, 4), 0), ((3, 1, 4), 2)]]


def _where(rng):
    cases = []
    for a, b in _valid_pairs():
        shape = np.broadcast_shapes(a, b)
        cond = rng.random(shape) > 0.5
        cases.append(([cond, _draw(rng, a, "real"), _draw(rng, b, "real")], {}))
    return cases


def _clamp(rng):
    out = []
    for s in SHAPES:
        x = rng.uniform(-2, 2, s)
        x = np.where(np.abs(np.abs(x) - 0.5) < 0.1, x + 0.3, x)
        for lo, hi in [(-0.5, 0.5), (None, 0.5), (-0.5, None)]:
            out.append(([x], {"lo": lo, "hi": hi}))
    return out


def _clamp_bounds(*which):
    """x (3, 4) away from tensor bounds near -0.5 (shape (4,)) and 0.5 (shape (3, 1))."""
    def draw(rng):
        x = rng.choice([-1.5, -0.9, 0.0, 0.9, 1.5], (3, 4)) + rng.uniform(-0.1, 0.1, (3, 4))
        bounds = {"lo": -0.5 + rng.uniform(-0.1, 0.1, 4),
                  "hi": 0.5 + rng.uniform(-0.1, 0.1, (3, 1))}
        return [([x] + [bounds[w] for w in which], {})]
    return draw


def _pow(rng):
    return [([_draw(rng, a, "pos"), _draw(rng, b, "real")], {}) for a, b in _valid_pairs()]


def _matmul(rng):
    pairs = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
             ((2, 3, 4), (4, 5)), ((2, 3, 4), (1, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,))]
    return [([rng.standard_normal(a), rng.standard_normal(b)], {}) for a, b in pairs]


def _einsum(rng):
    specs = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]),
             ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(4,), (4,)]),
             ("i,j->ij", [(3,), (4,)]), ("...ij,jk->...ik", [(2, 3, 4), (4, 5)]),
             ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("ij", [(3, 4)]), ("ij->ji", [(3, 4)]),
             # a repeated index in one operand: diagonals and traces
             ("ii->i", [(3, 3)]), ("ii->", [(3, 3)]), ("ii", [(3, 3)]), ("bii->bi", [(2, 3, 3)]),
             ("iij->j", [(3, 3, 4)]), ("iii->i", [(3, 3, 3)]), ("ij,jj->i", [(3, 4), (4, 4)]),
             ("bii,bi->b", [(2, 3, 3), (2, 3)]), ("...ii->...i", [(2, 3, 3)])]
    return [([rng.standard_normal(s) for s in shapes], {"spec": spec}) for spec, shapes in specs]


def _reshape(rng):
    return [([rng.standard_normal((3, 4))], {"shape": (4, 3)}),
            ([rng.standard_normal((3, 4))], {"shape": (12,)}),
            ([rng.standard_normal(())], {"shape": (1, 1)}),
            ([rng.standard_normal((3, 1, 4))], {"shape": (2, 6)})]


def _permute(rng):
    return [([rng.standard_normal((3, 4))], {"axes": (1, 0)}),
            ([rng.standard_normal((3, 1, 4))], {"axes": (2, 0, 1)}),
            ([rng.standard_normal((4,))], {"axes": (0,)})]


def _expand(rng):
    return [([rng.standard_normal((1, 4))], {"shape": (3, 4)}),
            ([rng.standard_normal((3, 1, 4))], {"shape": (2, 3, 5, 4)}),
            ([rng.standard_normal(())], {"shape": (2, 3)})]


def _getitem(rng):
    x = rng.standard_normal((3, 4))
    return [([x], {"idx": (slice(None), 1)}), ([x], {"idx": (slice(0, 2), slice(None, None, 2))}),
            ([x], {"idx": np.array([0, 2, 0])}), ([x], {"idx": (np.array([1, 1]),
                                                                 np.array([3, 3]))}),
            ([x], {"idx": x > 0}), ([x], {"idx": (Ellipsis, None, 2)}),
            ([rng.standard_normal((3, 1, 4))], {"idx": (1, 0, slice(1, 3))})]


def _cat(rng):
    return [([rng.standard_normal((2, 4)), rng.standard_normal((3, 4))], {"axis": 0}),
            ([rng.standard_normal((3, 1)), rng.standard_normal((3, 2)),
              rng.standard_normal((3, 4))], {"axis": 1}),
            ([rng.standard_normal((4,))], {"axis": 0})]


def _cast(rng):
    return [([rng.standard_normal((3, 4))], {"dtype": np.dtype(np.float64)})]


def _unfold(rng):
    k = dict(kernel=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(1, 1))
    return [([rng.standard_normal((2, 2, 5, 6))], k)]


def _fold(rng):
    k = dict(kernel=(2, 3), stride=(1, 2), padding=(1, 0), dilation=(1, 1))
    return [([rng.standard_normal((2, 2, 2, 3, 6, 2))], dict(shape=(2, 2, 5, 6), **k))]


def _scatter(rng):
    return [([rng.standard_normal((3,))], {"idx": np.array([0, 2, 0]), "shape": (4,)}),
            ([rng.standard_normal((2, 4))], {"idx": slice(1, 3), "shape": (5, 4)})]


def _setitem(rng):
    return [([rng.standard_normal((3, 4)), rng.standard_normal((4,))], {"idx": 1}),
            ([rng.standard_normal((3, 4)), rng.standard_normal(())],
             {"idx": (slice(None), slice(1, 3))})]


def _prod(rng):
    def draw(rng, shape):
        return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    return _reductions(draw)(rng)


def _linear(rng):
    def draw(*shape):
        return rng.standard_normal(shape)
    return [([draw(3, 4), draw(5, 4), draw(5)], {}), ([draw(2, 3, 4), draw(5, 4), draw(5)], {}),
            ([draw(4), draw(5, 4), draw(5)], {}), ([draw(3, 4), draw(5, 4), None], {})]


def _cross_entropy(rng):
    y = np.array([0, 2, 1, 2, 0])
    out = [([rng.standard_normal((5, 3)), y], {"reduction": r, "smoothing": s})
           for r in ("mean", "sum", "none") for s in (0.0, 0.2)]
    # rows labelled `ignore` dropped: padding (-1), and a class label (2)
    return out + [([rng.standard_normal((5, 3)), np.array([0, -1, 1, -1, 2])],
                   {"reduction": r, "smoothing": s, "ignore": -1})
                  for r in ("mean", "sum", "none") for s in (0.0, 0.2)] + [
        ([rng.standard_normal((5, 3)), y], {"reduction": "mean", "smoothing": 0.2, "ignore": 2})]


def _max_pool2d(rng):
    """Windows without ties (the max is differentiable there), floor mode trimming too."""
    return [([_distinct(rng, (2, 3, 4, 6))], {"kernel": (2, 2)}),
            ([_distinct(rng, (1, 2, 5, 7))], {"kernel": (2, 3)}),
            ([_distinct(rng, (2, 1, 4, 4))], {"kernel": (1, 2)})]


SAMPLES = {
    "neg": unary(), "exp": unary(), "log": unary("pos"), "log1p": unary("gt-1"),
    "sqrt": unary("pos"), "sin": unary(), "cos": unary(), "tan": unary("tan"),
    "tanh": unary(), "sigmoid": unary(), "relu": unary("nonzero"), "abs": unary("nonzero"),
    "sign": unary("nonzero"),
    "clamp": _clamp, "clamp_t": _clamp_bounds("lo", "hi"), "clamp_min_t": _clamp_bounds("lo"),
    "clamp_max_t": _clamp_bounds("hi"), "add": binary(), "sub": binary(), "mul": binary(),
    "div": binary("real", "nonzero"), "pow": _pow, "maximum": _separated,
    "minimum": _separated, "fmax": _separated, "where": _where,
    "sum": _reductions(lambda rng, s: rng.uniform(-2, 2, s)), "prod": _prod,
    "max": _reductions(_distinct), "min": _reductions(_distinct),
    "logsumexp": _reductions(lambda rng, s: rng.uniform(-2, 2, s)),
    "softmax": _along, "log_softmax": _along,
    "reshape": _reshape, "permute": _permute, "expand": _expand, "getitem": _getitem,
    "scatter": _scatter, "setitem": _setitem, "cat": _cat, "cast": _cast,
    "contiguous": lambda rng: [([rng.standard_normal((4, 3)).T], {})],
    "matmul": _matmul, "einsum": _einsum, "unfold": _unfold, "fold": _fold,
    "linear": _linear, "cross_entropy": _cross_entropy, "max_pool2d": _max_pool2d,
}
"""Ops with no entry here carry no gradient (comparisons, argmax, sign, ...)."""


def _merge_family_samples() -> None:
    """Each other module of this package holds one family's samples as `SAMPLES`."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        SAMPLES.update(importlib.import_module(f"{__name__}.{info.name}").SAMPLES)


_merge_family_samples()
