"""Linear algebra: matrix products and einsum."""

from __future__ import annotations

import numpy as np

from ..devices import const_like
from ..primitive import ArgumentError, defop, sum_to


def _mT(m, a):
    axes = tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2)
    return m.permute(a, axes=axes)


def _matmul_vjp_x(m, g, out, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * y
    if y.ndim == 1:   # (..., n, k) @ (k,) -> (..., n)
        gx = m.reshape(g, shape=g.shape + (1,)) * y
    elif x.ndim == 1:  # (k,) @ (..., k, n) -> (..., n)
        gx = m.matmul(y, m.reshape(g, shape=g.shape + (1,)))
        gx = m.reshape(gx, shape=gx.shape[:-1])
    else:
        gx = m.matmul(g, _mT(m, y))
    return sum_to(m, gx, x.shape) if gx.shape != x.shape else gx


def _matmul_vjp_y(m, g, out, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * x
    if x.ndim == 1:   # (k,) @ (..., k, n)
        gy = m.reshape(x, shape=x.shape + (1,)) * m.reshape(g, shape=g.shape[:-1] + (1,)
                                                            + g.shape[-1:])
    elif y.ndim == 1 and x.ndim == 2:  # (n, k) @ (k,): the vector-matrix product g @ x
        gy = m.matmul(g, x)
    elif y.ndim == 1:  # (..., n, k) @ (k,)
        gy = m.matmul(_mT(m, x), m.reshape(g, shape=g.shape + (1,)))
        gy = m.reshape(gy, shape=gy.shape[:-1])
    else:
        gy = m.matmul(_mT(m, x), g)
    return sum_to(m, gy, y.shape) if gy.shape != y.shape else gy


def _mm_flat(m, t, y):
    """t (..., k) @ y (k, n) as one matrix product over all leading dimensions."""
    rows = int(np.prod(t.shape[:-1]))
    r = m.matmul(m.reshape(t, shape=(rows, t.shape[-1])), y)
    return m.reshape(r, shape=t.shape[:-1] + (y.shape[-1],))


def _matmul_jvp_x(m, t, out, x, y):
    lead = t.ndim - x.ndim
    if not lead:
        return m.matmul(t, y)
    batch = t.shape[:lead]
    if y.ndim == 2:  # (batch..., x..., k) @ (k, n): one matrix product
        return _mm_flat(m, t, y)
    y2 = y if y.ndim > 1 else m.reshape(y, shape=y.shape + (1,))
    x2 = x.shape if x.ndim > 1 else (1,) + x.shape  # a vector is a one-row matrix
    nb = max(len(x2), y2.ndim) - 2                   # matmul's own broadcast dimensions
    r = m.matmul(m.reshape(t, shape=batch + (1,) * (nb - len(x2) + 2) + x2), y2)
    return r if r.shape == batch + out.shape else m.reshape(r, shape=batch + out.shape)


def _matmul_jvp_y(m, t, out, x, y):
    lead = t.ndim - y.ndim
    if not lead:
        return m.matmul(x, t)
    batch = t.shape[:lead]
    if x.ndim == 2:  # x @ t_b for every b, as (t_b^T @ x^T)^T: one matrix product
        if y.ndim == 1:
            return _mm_flat(m, t, _mT(m, x))
        return _mT(m, _mm_flat(m, _mT(m, t), _mT(m, x)))
    x2 = x if x.ndim > 1 else m.reshape(x, shape=(1,) + x.shape)
    y2 = y.shape if y.ndim > 1 else y.shape + (1,)   # a vector is a one-column matrix
    nb = max(x2.ndim, len(y2)) - 2
    r = m.matmul(x2, m.reshape(t, shape=batch + (1,) * (nb - len(y2) + 2) + y2))
    return r if r.shape == batch + out.shape else m.reshape(r, shape=batch + out.shape)


matmul = defop("matmul", np.matmul, (_matmul_vjp_x, _matmul_vjp_y),
               (_matmul_jvp_x, _matmul_jvp_y), reads={0: (1,), 1: (0,)}, fresh=True)


def _einsum_parse(spec, shapes):
    """Explicit subscripts for every operand and the output ('...' expanded)."""
    spec = spec.replace(" ", "")
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins, out = spec, None
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ArgumentError(f"einsum '{spec}' names {len(terms)} operands but got {len(shapes)}")
    used = set(c for c in spec if c.isalpha())
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ell = ""
    if "..." in spec:
        nd = max(len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t)
        ell = "".join(spare[:nd])
        terms = [t.replace("...", ell[nd - (len(s) - (len(t) - 3)):]) if "..." in t else t
                 for t, s in zip(terms, shapes)]
        if out is not None:
            out = out.replace("...", ell)
    if out is None:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    for t, s in zip(terms, shapes):
        if len(t) != len(s):
            raise ArgumentError(f"einsum '{spec}': operand with subscripts '{t}' has shape {s}")
    return terms, out


def _einsum(*xs, spec):
    terms, out = _einsum_parse(spec, [x.shape for x in xs])
    return np.einsum(",".join(terms) + "->" + out, *xs, optimize=len(xs) > 2)


def _einsum_vjp(m, g, out, *xs, spec, argnum):
    terms, o = _einsum_parse(spec, [x.shape for x in xs])
    mine = terms[argnum]
    shape = xs[argnum].shape
    uniq = "".join(dict.fromkeys(mine))  # a repeated index ('ii') once: the diagonal
    sizes = {c: shape[mine.index(c)] for c in uniq}
    others = [t for k, t in enumerate(terms) if k != argnum]
    avail = set(o).union(*others) if others else set(o)
    reduced = "".join(c for c in uniq if c in avail)
    sub = ",".join([o] + others) + "->" + reduced
    r = m.einsum(g, *[x for k, x in enumerate(xs) if k != argnum], spec=sub)
    if reduced != uniq:  # indices summed in this operand alone: broadcast back over them
        r = m.reshape(r, shape=tuple(sizes[c] if c in reduced else 1 for c in uniq))
        r = m.expand(r, shape=tuple(sizes[c] for c in uniq))
    if uniq != mine:
        r = _diagonal_embed(m, r, uniq, mine, sizes, set("".join(terms) + o))
    return r


def _diagonal_embed(m, r, uniq, mine, sizes, used):
    """`r` (indices `uniq`) placed on the diagonals of an operand with indices `mine`
    ('ii', 'bii', 'iij', 'iii'), zeros elsewhere: an einsum with constant delta arrays,
    so it is linear in `r` and differentiable again."""
    fresh = iter(c for c in _LETTERS if c not in used)
    target, deltas, specs, seen, later = "", [], [], set(), {}
    for c in mine:
        if c not in seen:
            seen.add(c)
            target += c
            k = mine.count(c)
            if k > 1:
                names = "".join(next(fresh) for _ in range(k - 1))
                specs.append(c + names)
                n = sizes[c]
                d = np.zeros((n,) * k, dtype=r.dtype)
                d[(np.arange(n),) * k] = 1
                d.flags.writeable = False
                deltas.append(d)
                later[c] = iter(names)
        else:
            target += next(later[c])
    deltas = [const_like(d, r) for d in deltas]  # on r's device
    return m.einsum(r, *deltas, spec=",".join([uniq] + specs) + "->" + target)


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _einsum_jvp(m, t, out, *xs, spec, argnum):
    args = list(xs)
    args[argnum] = t
    lead = t.ndim - xs[argnum].ndim
    if not lead:
        return m.einsum(*args, spec=spec)
    terms, o = _einsum_parse(spec, [x.shape for x in xs])
    used = set("".join(terms) + o)
    batch = "".join([c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     if c not in used][:lead])
    terms[argnum] = batch + terms[argnum]
    return m.einsum(*args, spec=",".join(terms) + "->" + batch + o)


einsum = defop("einsum", _einsum, (_einsum_vjp,), (_einsum_jvp,), variadic=True)
