"""Forward mode: tangents pushed alongside values (dual tensors), nestable.

A `Level` is one forward-mode derivative in progress (one `jvp` call). Tangents
live on the tensors themselves, in `t._fw`, a dict from level to tangent
Tensor, so every op applied while a level is active carries its tangent along:
`engine.apply` calls `Stack.push`, which runs the op's jvp rules from the op
table. That costs a small constant times the forward pass, whatever the size of
the output.

Perturbation confusion (Autodidax, Siskind & Pearlmutter) is avoided by tagging:
each level is a distinct object, a tangent is looked up by its level, and the
primal that a `jvp` call differentiates is a fresh tensor, so a value closed
over from outside the call has no tangent at the inner level.

Nesting. `state.forward` is a `Stack` of the active levels, outermost first.
While the tangent for level k is computed, levels k and deeper are switched off
and the outer ones stay on: the tangent arithmetic is itself differentiated by
the outer levels (jvp of jvp) and, being made of recorded Tensor ops, by reverse
mode (grad of jvp), but never by its own level. Levels are processed outermost
first, because a rule may read the op's output, whose outer tangents must then
already be set.

Batches. A level may carry a batch shape (jacfwd, jacrev and hessian push a
whole basis of tangents at once): its tangents have shape `batch + x.shape`,
and the jvp rules in `ops/` treat leading extra dimensions as batch.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import batching, ops
from .devices import as_result, namespace_of
from .engine import TENSOR, apply
from .grad_mode import state
from .primitive import ArgumentError
from .tensor import Tensor


class Level:
    """One forward-mode derivative in progress: the unique tag of its tangents.

    A `vmap` level is the same machinery put to another use: what a tensor holds
    at the level is not a tangent but its batched value (`batch + t.shape`), and
    each op computes its output's batched value with the batching rules of
    `batching.py` instead of the jvp rules. A tensor without a value at a vmap
    level is the same for every batch element.
    """

    __slots__ = ("batch", "vmap", "randomness", "inputs", "_tracked", "_limit", "__weakref__")

    def __init__(self, batch: tuple = (), vmap: bool = False,
                 randomness: str | None = "error") -> None:
        self.batch = tuple(batch)
        self.vmap = vmap
        # a vmap level's: "error", or "same" (draws shared); a jacfwd level's: "error"
        # refuses draws as torch.func.jacfwd's vmap does, None (plain jvp) allows them
        self.randomness = randomness
        # a vmap level's batched inputs, weakly by id (the caller's tensors, batch moved to
        # the front; batched values shared through jvp's duals and detach): an in-place
        # write into a tensor whose batched value is one is written through to it
        self.inputs = {}
        self._tracked = []   # weak references to every tensor given a tangent here
        self._limit = 1024

    def _track(self, t: Tensor) -> None:
        tracked = self._tracked
        tracked.append(weakref.ref(t))
        if len(tracked) >= self._limit:  # forget dead tensors, amortised O(1)
            tracked[:] = [r for r in tracked if r() is not None]
            self._limit = max(1024, 2 * len(tracked))

    def write_into(self, b: Tensor) -> None:
        """Make `b` a batched value that in-place writes at this vmap level write into."""
        self.inputs[id(b)] = weakref.ref(b)

    def writes_into(self, b: Tensor) -> bool:
        r = self.inputs.get(id(b))
        return r is not None and r() is b

    def close(self) -> None:
        """Remove this level's tangents from every tensor still alive.

        Frees them early and breaks the cycle output -> tangent -> node -> output
        that recording a tangent computation for reverse mode would leave.
        """
        for r in self._tracked:
            t = r()
            if t is not None and t._fw is not None:
                t._fw.pop(self, None)
                if not t._fw:
                    t._fw = None
        self._tracked = []
        self.inputs = {}

    def __repr__(self) -> str:
        return f"<forward level batch={self.batch}>"


class Stack:
    """The active forward-mode levels, outermost first (`grad_mode.state.forward`)."""

    __slots__ = ("levels", "outers", "vmapped")

    def __init__(self, prev: Stack | None, level: Level) -> None:
        if prev is None:
            self.levels = (level,)
            self.outers = (None,)
        else:
            self.levels = prev.levels + (level,)
            self.outers = prev.outers + (prev,)  # outers[k]: the stack of levels[:k]
        self.vmapped = any(lv.vmap for lv in self.levels)

    def push(self, op, inputs, attrs, out: Tensor) -> None:
        """Give `out` its tangent at every level where an input has one."""
        for x in inputs:
            if getattr(x, "_fw", None) is not None:
                break
        else:
            return
        floating = out.data.dtype.kind in "fc"  # comparisons, argmax: no tangent
        if not floating and not self.vmapped:
            return
        st = state
        for k, lv in enumerate(self.levels):
            if not floating and not lv.vmap:
                continue
            pairs = None
            for j, x in enumerate(inputs):
                fw = getattr(x, "_fw", None)
                if fw is not None:
                    t = fw.get(lv)
                    if t is not None:
                        if pairs is None:
                            pairs = []
                        pairs.append((j, t))
            if pairs is None:
                continue
            if lv.vmap:
                fast = k == 0 and st.tracer is None and not (st.enabled and _batch_grad(inputs,
                                                                                         pairs))
                saved = st.forward
                st.forward = self.outers[k]
                try:
                    value = batching.batched(op, inputs, attrs, out, pairs, lv, fast)
                finally:
                    st.forward = saved
                _set(out, lv, value)
                continue
            if op.jvps is None:
                raise RuntimeError(
                    f"op '{op.name}' has no forward-mode (jvp) rule, so forward-mode "
                    "derivatives (rg.func.jvp, jacfwd, hessian, hvp) cannot pass through it")
            fast = k == 0 and st.tracer is None and not (st.enabled and _any_grad(inputs, pairs))
            saved = st.forward
            st.forward = self.outers[k]
            try:
                acc = _tangent(op, inputs, attrs, out, pairs, lv, fast)
            finally:
                st.forward = saved
            if acc is not None:
                _set(out, lv, acc)

    def push_function(self, cls, ctx, args, outs, vmap_rule=None) -> None:
        """Tangents for the outputs of a custom `rg.autograd.Function`, from its `jvp`; at a
        vmap level (a jvp inside the vmap: `vmap(jvp(f))`), the outputs' batched values
        from `vmap_rule(k)` (the Function's batching rule at level k), before the inner
        levels' jvp, which then runs batched."""
        if not any(getattr(a, "_fw", None) is not None for a in args):
            return
        st = state
        for k, lv in enumerate(self.levels):
            ts = [a._fw.get(lv) if getattr(a, "_fw", None) is not None else None for a in args]
            if all(t is None for t in ts):
                continue
            if lv.vmap and vmap_rule is not None:
                for o, b in zip(outs, vmap_rule(k)):
                    if b is not None:
                        _set(o, lv, b)
                continue
            if lv.vmap:  # its jvp would carry the batch as if the Function were linear
                raise RuntimeError(
                    f"{cls.__name__} (an rg.autograd.Function) cannot run inside rg.func.vmap on "
                    "a batched input: its forward runs once, on unbatched values, and its jvp "
                    "is a derivative, not a batching rule; define its vmap staticmethod "
                    "or set generate_vmap_rule = True, vmap a function written with rg ops, "
                    "or loop over the batch")
            if getattr(cls, "jvp", None) is None:  # NotImplementedError, as torch
                raise NotImplementedError(
                    f"{cls.__name__} (an rg.autograd.Function) defines no jvp(ctx, *tangents), "
                    "so forward-mode derivatives (rg.func.jvp, jacfwd, hessian, hvp) cannot "
                    "pass through it; add a static jvp method")
            saved = st.forward
            st.forward = self.outers[k]
            try:
                res = _function_tangents(cls, ctx, args, ts, outs, lv)
            finally:
                st.forward = saved
            for o, t in zip(outs, res):
                if t is not None and o.dtype.kind in "fc":
                    _set(o, lv, t)

    def check_inplace(self, target: Tensor, other, op) -> bool:
        """True where the write carries tangents that `write_inplace` can move onto the
        target: a target that is neither a view nor viewed (views would go stale), and, at a
        vmap level, batched itself where the source is (as torch.vmap). Else refuse the write
        when a tangent is involved; False when none is."""
        fws = [getattr(t, "_fw", None) for t in (target, other)]
        live = [lv for lv in self.levels if any(fw is not None and lv in fw for fw in fws)]
        if not live:
            return False
        batched = all(not lv.vmap or (fws[0] is not None and lv in fws[0]) for lv in live)
        # an integer or bool target carries batched values at vmap levels (no tangents)
        kind_ok = target.data.dtype.kind in "fc" or all(lv.vmap for lv in live)
        if getattr(target, "_view", None) is None and not getattr(target, "_views", None) \
                and kind_ok and batched:
            return True
        if batched and state.tracer is None and kind_ok:
            # a view of a root made inside the transform: the root has a value at each level
            # where the view has one (not a vmap/jvp input, a view of the caller's tensor)
            vw = _view_write(target)
            if vw is not None and all(lv in (vw[0]._fw or ()) or lv not in (fws[0] or ())
                                      for lv in live):
                return "view"
        if not batched:  # torch.func.vmap's refusal: the source has a batch, the target not
            raise RuntimeError(
                f"vmap: in-place '{op.name}' is not possible: the tensor written in place "
                f"(shape {target.shape}) is not vmapped over but the other operand is, so the "
                "result has more elements than the tensor written into; use an out-of-place "
                "op instead")
        for t in (target, other):
            fw = getattr(t, "_fw", None)
            if fw is not None and any(lv.vmap and lv in fw for lv in self.levels):
                raise RuntimeError(
                    f"in-place '{op.name}' on or with a batched tensor (shape {t.shape}) inside "
                    "rg.func.vmap is not supported; use an out-of-place op instead")
            if fw is not None and any(lv in fw for lv in self.levels):
                raise RuntimeError(
                    f"in-place '{op.name}' on or with a tensor that carries a forward-mode "
                    f"tangent (shape {t.shape}) is not supported inside jvp/jacfwd/hessian/hvp; "
                    "use an out-of-place op (e.g. rg.where, rg.cat, rg.stack) instead")
        return False

    def write_inplace(self, target: Tensor, other, op, attrs: dict) -> Tensor:
        """An in-place op on a tensor that carries tangents (nn.ReLU(inplace=True) inside
        vmap or jvp): the op out of place on a copy of the old value that keeps the
        tangents and history, its values written into the target, and the result's
        tangents and node moved onto the target."""
        from .api._args import promote

        old = _old_value(target)
        inputs = self._inputs_of(target, old, op)
        if op is not ops.setitem:
            old, other = promote(old, other, floating=op is ops.div)
        result = apply(op, old, other, **attrs)
        if result.data.dtype != target.data.dtype:
            result = result.to(target.data.dtype)
        target.data[...] = result.data
        target._cell()[0] += 1
        _take_history(target, result)
        self._write_through(target, inputs)
        return target

    def _inputs_of(self, t: Tensor, old: Tensor, op) -> list:
        """The vmap levels (index, level, input) at which t's batched value is a batched
        input of that vmap (t is an argument of the vmapped function): a write into t
        writes into the input, as torch.func.vmap writes into the caller's tensor. `old`
        (t's old value) gets a recorded copy of each such input, so the write does not
        change the values the op computes from (nor those saved for its gradient)."""
        fw = t._fw
        found = []
        for k, lv in enumerate(self.levels):
            if lv.vmap and lv.inputs and fw is not None:
                b = fw.get(lv)
                if b is not None and lv.writes_into(b):
                    found.append((k, lv, b))
        st = state
        for k, lv, b in found:
            v = getattr(b, "_view", None)
            for r in (b,) if v is None else (b, v[0]):
                if st.enabled and r.requires_grad and r.grad_fn is None:
                    raise RuntimeError(
                        f"a leaf tensor that requires grad (shape {r.shape}) is being used in "
                        f"an in-place operation ('{op.name}' on a batched argument inside "
                        "rg.func.vmap, which writes into it); pass a non-leaf copy (x * 1 or "
                        "x.clone()) or use an out-of-place op")
            saved = st.forward
            st.forward = self.outers[k]
            try:
                old._fw[lv] = b.clone()
            finally:
                st.forward = saved
        return found

    def _write_through(self, t: Tensor, inputs: list) -> None:
        """After a write into t (which took the new batched values): copy each new batched
        value into the vmap input it replaces (an in-place write at the outer levels, so
        their batched values, tangents and gradients follow), which t keeps as its own."""
        st = state
        for k, lv, b in inputs:
            new = t._fw[lv]
            saved = st.forward
            st.forward = self.outers[k]
            try:
                b.copy_(new)
            finally:
                st.forward = saved
            _set(t, lv, b)


    def write_view_inplace(self, target: Tensor, other, op, attrs: dict) -> Tensor:
        """An in-place op on a view, or a viewed tensor, that carries tangents or batched
        values (`x[..., 0].mul_(2)`, `x.view(-1).add_(1)` inside vmap or jvp): the root's
        new value computed out of place, its old value with the view's new elements put in
        (recorded ops, so tangents, batched values and gradients follow), written into the
        root's memory; the root and each of its views take the new value's tangents and
        history, as PyTorch's views see their base's in-place writes."""
        from .api._args import promote
        from .api.inplace import through

        root, chain, flat = _view_write(target)
        if state.enabled and root.requires_grad and root.grad_fn is None:
            raise RuntimeError(f"in-place '{op.name}': a view (shape {target.shape}) of a leaf "
                               f"tensor that requires grad (shape {root.shape}) is being used "
                               "in an in-place operation; clone() it first")
        old_root = _old_value(root)
        inputs = self._inputs_of(root, old_root, op)
        old = through(old_root, chain)
        if op is not ops.setitem:
            old, other = promote(old, other, floating=op is ops.div)
        result = apply(op, old, other, **attrs)
        if result.data.dtype != target.data.dtype:
            result = result.to(target.data.dtype)
        if chain:
            new = apply(ops.setitem, apply(ops.reshape, old_root, shape=(-1,)),
                        apply(ops.reshape, result, shape=(-1,)), idx=flat)
            new = apply(ops.reshape, new, shape=root.shape)
        else:
            new = result
        root.data[...] = new.data
        root._cell()[0] += 1
        _take_history(root, new)
        self._write_through(root, inputs)
        views = [r() for r in getattr(root, "_views", None) or ()]
        for t, sub in [(w, w._view[1]) for w in views + [target]
                                      if w is not None and w is not root
                                      and getattr(w, "_view", None) is not None
                                      and w._view[0] is root
                                      and np.may_share_memory(w.data, root.data)]:
            _take_history(t, through(root, sub))
        return target

    def check_read(self, t, what: str) -> None:
        """Refuse to read a batched tensor's values in Python inside vmap (the values seen
        would be one batch element's, and the function's branches would follow them)."""
        fw = getattr(t, "_fw", None)
        if fw is not None and any(lv.vmap and lv in fw for lv in self.levels):
            raise RuntimeError(
                f"rg.func.vmap: {what} reads the values of a batched tensor (shape {t.shape} "
                "per batch element) in Python, which vmap cannot batch; data-dependent control "
                "flow is not supported: compute with tensor ops instead (e.g. rg.where)")

    def check_random(self) -> None:
        """Random numbers inside vmap would be shared by every batch element: refuse, unless
        every vmap level asked for that (`randomness="same"`)."""
        if self.vmapped and any(lv.vmap and lv.randomness != "same" for lv in self.levels):
            raise RuntimeError(
                "rg.func.vmap: random numbers inside a vmapped function would be the same for "
                "every batch element; draw them outside and pass them in as a batched argument, "
                "or pass randomness='different' (independent draws per element) or "
                "randomness='same' (one draw shared) to vmap")
        if any(not lv.vmap and lv.randomness == "error" for lv in self.levels):
            raise RuntimeError(
                "rg.func.jacfwd: called a random operation with randomness='error' (as "
                "torch.func.jacfwd does); pass randomness='same' or 'different' to jacfwd")

    def detached(self, src: Tensor, dst: Tensor) -> None:
        """`dst = src.detach()` (or a copy, `Tensor(src)`, maybe of another dtype): keep
        `src`'s batched values (detached, in `dst`'s dtype) at vmap levels."""
        for lv, value in src._fw.items():
            if lv.vmap and lv in self.levels:
                value = value.detach()
                if value.dtype != dst.dtype:
                    value = value.to(dst.dtype)
                elif _shares(value, src._fw[lv]) and _shares(dst, src):
                    lv.write_into(value)  # dst shares src's memory: a write into it
                set_tangent(dst, value, lv)      # is written into src's batch too


_REBASED = frozenset({"reshape", "permute", "getitem", "diagonal", "expand", "unfold_view",
                      "as_strided_view"})


def _shares(a: Tensor, b: Tensor) -> bool:
    """Do a and b show the same host memory?"""
    return a.data.__class__ is np.ndarray and b.data.__class__ is np.ndarray \
        and np.may_share_memory(a.data, b.data)


def _old_value(t: Tensor) -> Tensor:
    """A copy of t's values that keeps its history and tangents: the input an in-place
    op under vmap/jvp is computed from, out of place."""
    old = Tensor._wrap(t.data.copy())
    old.grad_fn, old.requires_grad = t.grad_fn, t.requires_grad
    if t._fw:
        old._fw = dict(t._fw)
    return old


def _take_history(t: Tensor, made: Tensor) -> None:
    """t, written in place with `made`'s values, takes its node and tangents."""
    if made.requires_grad and made.grad_fn is not None:
        t.grad_fn, t.requires_grad = made.grad_fn, True
    t._fw = None
    for lv, v in (made._fw or {}).items():
        _set(t, lv, v)


def _view_write(t: Tensor):
    """(root, view ops, flat indices of the root's elements t shows) for a write into t,
    a view sharing its root's memory on the host (no ops: t is the root, with views),
    through view ops that select elements; else None."""
    v = getattr(t, "_view", None)
    if v is None:
        return (t, (), None) if getattr(t, "_views", None) else None
    root, chain = v
    if getattr(root, "_view", None) is not None or t.data.__class__ is not np.ndarray \
            or root.data.__class__ is not np.ndarray \
            or not np.may_share_memory(t.data, root.data) or t.dtype != root.dtype \
            or any(op.name not in _REBASED for op, _ in chain):
        return None
    idx = np.arange(root.data.size).reshape(root.data.shape)
    for op, attrs in chain:
        idx = op.forward(idx, **attrs)
    if idx.shape != t.shape:
        return None
    return root, chain, np.ascontiguousarray(idx).reshape(-1)


def _batch_grad(inputs, pairs) -> bool:
    """Must a batching rule record its ops? Only if a value it computes with requires grad:
    a batched value, or an input that has none (a batched input's own primal is not read)."""
    for _, t in pairs:
        if t.requires_grad:
            return True
    batched = [j for j, _ in pairs]
    for j, x in enumerate(inputs):
        if j not in batched and getattr(x, "requires_grad", False):
            return True
    return False


def _any_grad(inputs, pairs) -> bool:
    for x in inputs:
        if getattr(x, "requires_grad", False):
            return True
    return any(t.requires_grad for _, t in pairs)


def _tangent(op, inputs, attrs, out, pairs, lv, fast):
    """Sum over inputs with tangents of the op's jvp rule, expanded to batch + out.shape.

    `fast`: nothing needs recording (no outer level, no reverse mode, no tracer), so
    the rules run on NumPy arrays; otherwise on Tensors, so they are differentiable.
    """
    rules = op.jvps
    nb = len(lv.batch)
    if fast:
        m = ops.NUMPY
        xs = tuple([x.data if isinstance(x, Tensor) else x for x in inputs])
        o = out.data
    else:
        m = TENSOR
        xs = inputs
        o = out
    acc = None
    for j, t in pairs:
        rule = rules[0] if op.variadic else rules[j]
        if rule is None:  # an input the output does not depend on smoothly
            continue
        if fast:
            t = t.data
        x = xs[j]
        if nb and op.broadcast and x.ndim < o.ndim:  # line the batch up before broadcasting
            t = m.reshape(t, shape=t.shape[:nb] + (1,) * (o.ndim - x.ndim) + x.shape)
        r = rule(m, t, o, *xs, argnum=j, **attrs) if op.variadic else rule(m, t, o, *xs, **attrs)
        acc = r if acc is None else acc + r
    if acc is None:
        return None
    shape = lv.batch + o.shape
    if acc.shape != shape:
        acc = m.expand(acc, shape=shape)
    if acc.dtype != o.dtype:
        acc = m.cast(acc, dtype=o.dtype)
    return Tensor._wrap(as_result(acc)) if fast else acc


def _function_tangents(cls, ctx, args, ts, outs, lv) -> list:
    full = []
    for a, t in zip(args, ts):
        if t is None and isinstance(a, Tensor) and a.dtype.kind in "fc":
            t = Tensor._wrap(namespace_of(a.data).zeros(lv.batch + a.shape, dtype=a.dtype))
        full.append(t)
    if not lv.batch:
        return _call_jvp(cls, ctx, full, outs)
    # a user's jvp need not know about batches: call it once per batch element
    from .api import reshape, stack

    n = int(np.prod(lv.batch))
    flat = [reshape(t, (n,) + t.shape[len(lv.batch):]) if isinstance(t, Tensor) else t
            for t in full]
    rows = [_call_jvp(cls, ctx, [t[i] if isinstance(t, Tensor) else t for t in flat], outs)
            for i in range(n)]
    res = []
    for k, o in enumerate(outs):
        col = [r[k] for r in rows]
        res.append(None if col[0] is None else reshape(stack(col), lv.batch + o.shape))
    return res


def _call_jvp(cls, ctx, tangents, outs) -> list:
    ctx._in_jvp = True  # saved_tensors: save_for_forward's tensors, as in PyTorch
    try:
        res = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    if len(res) != len(outs):
        raise RuntimeError(f"{cls.__name__}.jvp returned {len(res)} tangents but forward "
                           f"returned {len(outs)} outputs")
    for k, (r, o) in enumerate(zip(res, outs)):
        if r is None:
            continue
        if not isinstance(r, Tensor):
            r = res[k] = Tensor(np.asarray(r, dtype=o.dtype))
        if r.shape != o.shape:
            raise RuntimeError(f"{cls.__name__}.jvp returned a tangent of shape {r.shape} for "
                               f"output {k} of shape {o.shape}")
    return res


def _set(t: Tensor, lv: Level, tangent: Tensor) -> None:
    fw = t._fw
    if fw is None:
        t._fw = {lv: tangent}
    else:
        fw[lv] = tangent
    lv._track(t)


# ---------------------------------------------------------------- the API rg.func builds on

class level:
    """`with level(batch) as lv:` makes `lv` the innermost active forward-mode level
    (a vmap level with `vmap=True`).

    On exit the previous stack is restored and the level's tangents are removed,
    so read the tangents you need (`tangent_of`) inside the block.
    """

    def __init__(self, batch: tuple = (), vmap: bool = False,
                 randomness: str | None = None) -> None:
        self.level = Level(batch, vmap, randomness)

    def __enter__(self) -> Level:
        self._prev = state.forward
        state.forward = Stack(self._prev, self.level)
        return self.level

    def __exit__(self, *exc) -> None:
        state.forward = self._prev
        self.level.close()


def make_dual(x: Tensor, tangent: Tensor, lv: Level) -> Tensor:
    """A fresh tensor equal to `x` (same graph, same outer tangents) with `tangent` at `lv`.

    Fresh, so that `x` itself, if also closed over, stays without a tangent at `lv`. It
    shares `x`'s memory and version counter but is a root of its own for view tracking:
    an in-place write into it (torch.func.jvp lets `f` mutate its inputs, as
    F.batch_norm does its running stats) changes `x`'s values, never `x`'s tangents.
    """
    d = apply(ops.reshape, x, shape=x.shape)
    v = getattr(d, "_view", None)
    if v is not None:
        d._view = None
        views = getattr(v[0], "_views", None)
        if views:
            views[:] = [r for r in views if r() is not d]
    expect = lv.batch + x.shape
    if tangent.shape != expect:
        raise ArgumentError(f"tangent of shape {tangent.shape} for a primal of shape {x.shape}")
    for outer, b in (x._fw or {}).items():  # inside vmap, d shares x's batched values too:
        if outer.vmap and outer in d._fw:    # a write into d writes them (vmap(jvp(f)))
            d._fw[outer] = b
            outer.write_into(b)
    set_tangent(d, tangent, lv)
    return d


def set_tangent(x: Tensor, tangent: Tensor, lv: Level) -> None:
    """Attach `tangent` to `x` at level `lv`."""
    if x._fw is None:
        x._fw = {}
    _set(x, lv, tangent)


def tangent_of(x, lv: Level) -> Tensor | None:
    """`x`'s tangent at `lv`, or None where it has none (a zero tangent)."""
    fw = getattr(x, "_fw", None)
    return None if fw is None else fw.get(lv)


