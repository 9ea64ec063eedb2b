"""The core of `rg.autograd`: `grad` (gradients without touching `.grad`) and custom `Function`s."""

from __future__ import annotations

import functools
import inspect
import weakref

import numpy as np

from .. import devices, engine, ops
from ..api.reductions import sum_to_size
from ..api.shape import stack
from ..grad_mode import detect_anomaly, enable_grad, no_grad, state
from ..primitive import ArgumentError
from ..tensor import Tensor, _initial_grad

__all__ = ["grad", "Function", "FunctionCtx", "detect_anomaly", "no_grad", "enable_grad"]


def _seq(x) -> list:
    return [x] if isinstance(x, Tensor) else list(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool | None = None, *, is_grads_batched: bool = False,
         materialize_grads: bool = False, only_inputs: bool = True) -> tuple:
    """Gradients of `outputs` with respect to `inputs`, as a tuple; `.grad` is left untouched.

    With `create_graph=True` the results are themselves differentiable. An input the
    outputs do not depend on raises, or with `allow_unused` gets None, or with
    `materialize_grads` zeros (as in PyTorch). `only_inputs` is accepted and ignored, as
    PyTorch does (keyword only here: SPEC.md puts allow_unused sixth).
    `is_grads_batched=True` reads the first dim of every grad_output as a batch and returns
    one gradient per batch item, stacked (as PyTorch's, which vmaps the backward pass).
    """
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    if materialize_grads and allow_unused is False:
        raise ArgumentError("grad(): expected allow_unused to be True or not passed when "
                            "materialize_grads=True")
    allow_unused = bool(materialize_grads if allow_unused is None else allow_unused)
    outs, ins = _seq(outputs), _seq(inputs)
    if grad_outputs is None:
        gouts = [None] * len(outs)
    else:
        gouts = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        if len(gouts) != len(outs):
            raise ArgumentError(f"grad(): got {len(gouts)} grad_outputs for {len(outs)} outputs")
    for k, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): input {k} is a {type(t).__name__}, not a Tensor")
        if not t.requires_grad:
            raise RuntimeError(f"grad(): input {k} (shape {t.shape}) does not require grad")
    if state.forward is not None and state.forward.vmapped:
        create_graph = True  # inside rg.func.vmap the rules must run as batched tensor ops
    roots, seeds = [], []
    for k, (o, g) in enumerate(zip(outs, gouts)):
        if not isinstance(o, Tensor) or not o.requires_grad:
            raise RuntimeError(f"grad(): output {k} does not require grad and has no grad_fn")
        roots.append(o)
        seeds.append(_initial_grad(o, g, create_graph, "grad()"))
    got = engine.backward(roots, seeds, create_graph, targets=ins)
    result = []
    for k, (t, g) in enumerate(zip(ins, got)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"grad(): input {k} (shape {t.shape}) appears not to have been used in the "
                    "graph; pass allow_unused=True to get None for it")
            result.append(Tensor._wrap(devices.namespace_of(t.data).zeros_like(t.data))
                          if materialize_grads else None)
            continue
        if not isinstance(g, Tensor):
            g = devices.as_result(g)
            g = g if g.dtype == t.dtype else g.astype(t.dtype)
            if g.__class__ is np.ndarray and not g.flags.c_contiguous:
                g = np.ascontiguousarray(g)  # row-major, as PyTorch's are (`.view` works)
            g = Tensor._wrap(g)
        else:
            if g.dtype != t.dtype and t.dtype.kind in "fc":
                g = g.to(t.dtype)  # recorded (create_graph, rg.jit): the input's dtype
            if g.data.__class__ is np.ndarray and not g.data.flags.c_contiguous:
                g = g.contiguous()
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads) -> tuple:
    """`grad(..., is_grads_batched=True)`: one backward pass per batch item, stacked."""
    outs = _seq(outputs)
    if grad_outputs is None:
        raise RuntimeError("grad(is_grads_batched=True): grad can be implicitly created only "
                           "for scalar outputs; pass grad_outputs with a batch dimension")
    gouts = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if len(gouts) != len(outs):
        raise ArgumentError(f"grad(): got {len(gouts)} grad_outputs for {len(outs)} outputs")
    sizes = []
    for k, (o, g) in enumerate(zip(outs, gouts)):
        if not isinstance(g, Tensor) or not isinstance(o, Tensor):
            raise TypeError(f"grad(is_grads_batched=True): grad_output {k} must be a Tensor "
                            f"with a batch dimension, got {type(g).__name__}")
        if tuple(g.shape[1:]) != tuple(o.shape) or g.ndim == 0:
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions "
                "are expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{k}] has a shape of {tuple(g.shape)} and output[{k}] "
                f"has a shape of {tuple(o.shape)}.")
        sizes.append(g.shape[0])
    if len(set(sizes)) > 1:
        raise ArgumentError("grad(is_grads_batched=True): expected all grad_outputs to have "
                            f"the same size in the batch dimension, got sizes {sizes}")
    n = sizes[0]
    if n == 0:
        raise IndexError("grad(is_grads_batched=True): the grad_outputs' batch dimension "
                         "has size 0")
    keep = create_graph if retain_graph is None else retain_graph
    rows = [grad(outs, inputs, [g[b] for g in gouts], retain_graph=keep if b == n - 1 else True,
                 create_graph=create_graph, allow_unused=allow_unused or materialize_grads)
            for b in range(n)]
    ins = _seq(inputs)
    # an unused input: None, or (materialize_grads) zeros of its own shape, unbatched, as torch
    return tuple(stack(list(col)) if col[0] is not None
                 else Tensor._wrap(devices.namespace_of(t.data).zeros_like(t.data))
                 if materialize_grads else None for t, col in zip(ins, zip(*rows)))


class FunctionCtx:
    """What `forward` stores for `backward` (and `jvp`).

    Tensors given to `save_for_backward` are version-checked, like the built-in
    ops' saved values: reading `saved_tensors` after one of them was changed in
    place raises. A saved output comes back as the output the caller holds (with
    its graph, so `create_graph` differentiates through it), found by a weak
    reference so that the graph holds no cycle.
    """

    def __init__(self) -> None:
        self.to_save: tuple = ()
        self.needs_input_grad: tuple = ()
        self.materialize_grads = True
        self._versions = None   # (counter, version) per saved tensor, set when apply returns
        self._outputs = None    # {position in to_save: weak reference to the caller's output}
        self._out_at = {}       # {position in to_save: index of the output it is}
        self._record_args = None  # what apply recorded the outputs' nodes from
        self._non_diff: set = set()
        self._name = "Function"
        self._nodes = None  # weak references to the outputs' nodes (None: not recorded)
        self._dirty: tuple = ()  # inputs changed in place by forward (mark_dirty)
        self._packed = None  # (hooks, packed values) under saved_tensors_hooks
        self._for_forward = None  # save_for_forward's tensors (None: never called)
        self._in_jvp = False  # inside the Function's jvp: saved_tensors are those

    def save_for_backward(self, *tensors) -> None:
        for k, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward: argument {k} is a {type(t).__name__}; only "
                                "tensors or None can be saved (store other values on ctx)")
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Tensors for `jvp`, which reads them as `saved_tensors` (as PyTorch's
        `save_for_forward`; `backward` still reads those of `save_for_backward`)."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError("save_for_forward expects all arguments to be tensors; "
                                     "you should save non-tensors as attributes on ctx.")
        self._for_forward = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that carry no gradient (indices, masks): they do not require grad."""
        self._non_diff = {id(t) for t in tensors}

    def mark_dirty(self, *tensors) -> None:
        """Inputs that `forward` changed in place and returns: the caller's tensor itself
        comes back, its history now through this Function (as PyTorch's `mark_dirty`)."""
        for k, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"mark_dirty: argument {k} is a {type(t).__name__}, not a "
                                "Tensor")
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, `backward` gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = bool(value)

    def _seal(self, outs: list, fresh: list) -> None:
        """Record the saved tensors' versions, and which of them are outputs (apply's end)."""
        versions = []
        where = {id(o): f for o, f in zip(outs, fresh)}
        index = {id(o): j for j, o in enumerate(outs)}
        for k, t in enumerate(self.to_save):
            if t is None:
                versions.append(None)
                continue
            cell = t._cell()
            versions.append((cell, cell[0]))
            f = where.get(id(t))
            if f is not None:
                if self._outputs is None:
                    self._outputs = {}
                self._outputs[k] = weakref.ref(f)
                self._out_at[k] = index[id(t)]
        self._versions = tuple(versions)

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp and self._for_forward is not None:
            return self._for_forward
        if self._versions is None:  # inside forward or jvp: nothing can have changed yet
            return self.to_save
        out = []
        for k, (t, saved) in enumerate(zip(self.to_save, self._versions)):
            if t is None:
                out.append(None)
                continue
            cell, version = saved
            if cell[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an in-place operation: saved tensor {k} (shape {t.shape}) of "
                    f"'{self._name}' is at version {cell[0]}; expected version {version}. "
                    "Avoid the in-place op, or clone() the tensor before changing it.")
            if self._packed is not None:
                out.append(self._packed[0].unpack(self._packed[1][k]))
                continue
            if self._outputs is not None and k in self._outputs:
                live = self._outputs[k]()  # the caller's output, with its graph
                if live is None and self._record_args is not None and state.enabled:
                    live = self._rebuild_output(self._out_at[k], t, cell)
                if live is not None:
                    t = live
            out.append(t)
        return tuple(out)


def _rebuild(ctx: FunctionCtx, j: int, t: Tensor, cell) -> Tensor | None:
    """Output `j` of a Function the caller dropped, saved for backward: a new tensor on a
    new node of the same Function (as PyTorch keeps one node for all outputs), so that
    differentiating the backward (create_graph) reaches the inputs through it."""
    cls, args, datas, needs, meta, aliased, recorded = ctx._record_args
    if j not in recorded:  # a non-differentiable output: no graph
        return None
    live = Tensor._wrap(t.data)
    live._vc = cell
    op = _FunctionOp(cls, ctx, j, len(meta), meta)
    op.view = aliased[j]
    engine._record(op, live, args, datas, {}, needs)
    return live


FunctionCtx._rebuild_output = _rebuild


class _FunctionOp:
    """Adapts a user's `Function` to the engine's op interface."""

    reads = ()
    save_out = False
    view = False  # set on an instance whose output shares memory with an input
    simple = False  # the engine calls `backward`, never a rule of its own
    tuned = False
    saving = None

    def __init__(self, cls, ctx, index, n_outputs, out_meta):
        self.cls, self.ctx, self.index, self.n, self.out_meta = cls, ctx, index, n_outputs, out_meta
        self.name = cls.__name__
        self.read_cache = {}  # the engine's per-op cache of which inputs the rules read

    def backward(self, node, g, m, out=None):
        create = m is not ops.NUMPY  # create_graph, or a backward traced by rg.jit
        gt = g if isinstance(g, Tensor) else Tensor._wrap(devices.as_result(g))
        grads = [None] * self.n
        grads[self.index] = gt
        for k, ref in enumerate(self.ctx._nodes or ()):  # one call for all the outputs
            sib = None if k == self.index or ref is None else ref()
            gk = None if sib is None else engine.claim(sib)
            if gk is not None:
                grads[k] = gk if isinstance(gk, Tensor) else Tensor._wrap(devices.as_result(gk))
        if self.ctx.materialize_grads:
            for k in range(self.n):
                if grads[k] is None:
                    shape, dtype = self.out_meta[k]
                    grads[k] = Tensor._wrap(devices.namespace_of(gt.data).zeros(shape, dtype))
        res = self.cls.backward(self.ctx, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) < len(node.inputs):
            raise RuntimeError(f"{self.name}.backward returned {len(res)} gradients but forward "
                               f"took {len(node.inputs)} inputs")
        out = []
        for i in node.needs:
            r = res[i]
            if r is None:
                out.append(None)
                continue
            r = r if isinstance(r, Tensor) else Tensor(devices.as_result(r))
            shape = node.inputs[i].shape
            if r.shape != shape:  # one the input expands to is summed down, as torch does
                lead = r.ndim - len(shape)
                if lead < 0 or any(s not in (1, n) for s, n in zip(shape, r.shape[lead:])):
                    raise RuntimeError(f"{self.name}.backward returned a gradient of shape "
                                       f"{r.shape} for input {i} of shape {shape}")
                r = r.sum() if not shape else sum_to_size(r, shape)
            out.append(r if create else r.data)
        return out


def _dirty_inputs(cls, ctx: FunctionCtx, args: tuple, outs: list, recording: bool) -> tuple:
    """For `ctx.mark_dirty`: check each dirty tensor is an input that forward returns, bump
    its version (its values changed), and give back the arguments with each dirty one
    replaced by its value before the call (its old history), which the Function's node
    records as its input; the output, the caller's tensor, then takes the new node."""
    name = cls.__name__
    out_ids = {id(o) for o in outs}
    by_id = {id(a): k for k, a in enumerate(args) if isinstance(a, Tensor)}
    args = list(args)
    for t in ctx._dirty:
        if id(t) not in by_id:
            raise RuntimeError(f"{name}: a tensor marked dirty (shape {t.shape}) is not an "
                               "input of the Function")
        if id(t) not in out_ids:
            raise RuntimeError(f"{name}: some elements marked as dirty during the forward "
                               "method were not returned as output")
        t._cell()[0] += 1  # changed in place, as PyTorch bumps a dirty input's version
        if not recording:
            continue
        if t.requires_grad and t.grad_fn is None:
            raise RuntimeError(f"{name}: a leaf Variable that requires grad (shape {t.shape}) "
                               "is being used in an in-place operation (mark_dirty)")
        if getattr(t, "_view", None) is not None:
            raise RuntimeError(f"{name}: mark_dirty on a view (shape {t.shape}) while "
                               "recording gradients is not supported; clone() it first")
        old = Tensor._wrap(t.data)
        old.grad_fn, old.requires_grad = t.grad_fn, t.requires_grad
        args[by_id[id(t)]] = old
    return tuple(args)


class _VmapInfo:
    """What a Function's `vmap` staticmethod gets as `info` (torch's VmapInfo)."""

    __slots__ = ("batch_size", "randomness")

    def __init__(self, batch_size: int, randomness: str) -> None:
        self.batch_size, self.randomness = batch_size, randomness


def _apply_vmap_rule(cls, args):
    """`cls.apply(*args)` inside `rg.func.vmap` through the Function's own `vmap`
    staticmethod: it gets the innermost vmap level's batched arguments (batch first,
    `in_dims` 0, or None for an unbatched one) and returns the batched outputs and their
    `out_dims`; each per-element output carries its batched value at that level.

    Reverse mode over the vmap (`grad(vmap(f))`, `.backward()` of its result) runs through
    the batched outputs. A grad inside the vmap (`vmap(grad(f))`, per-sample gradients)
    walks the per-element outputs' own node (`_GradInsideVmap`).
    NotImplemented where the innermost level with a batched argument is not a vmap level
    (a jvp inside the vmap): `apply` then runs the Function on the per-element values,
    its batching rule giving the outputs' batched values and its jvp the tangents
    (`_push_tangents`)."""
    from .. import forward

    fw = state.forward
    tensors = [a for a in args if isinstance(a, Tensor)]
    k = next((j for j in range(len(fw.levels) - 1, -1, -1)
              if any(a._fw is not None and fw.levels[j] in a._fw for a in tensors)), None)
    if k is None or not fw.levels[k].vmap:
        return NotImplemented
    lv = fw.levels[k]
    guard = [a for a in tensors if a.requires_grad] if state.enabled else []
    single, full, batched = _rule_outputs(cls, args, k, keep=bool(guard))
    res, full_out = [], {}  # per output: its per-element sample; batched value by position
    for value, o in batched:
        if o is None:
            res.append(value)
            continue
        full_out[len(res)] = o
        res.append(engine.apply(ops.getitem, o, idx=0))
    pos = tuple(i for i in full_out if res[i].dtype.kind in "fc")
    if guard and pos:  # one node for all the outputs: backward gets every cotangent at once
        spec = (cls, args, full, lv, pos)
        saved, state.forward = state.forward, None
        try:
            guarded = _GradInsideVmap.apply(spec, len(pos), *[res[i].detach() for i in pos],
                                            *guard)
        finally:
            state.forward = saved
        for i, new in zip(pos, guarded if isinstance(guarded, tuple) else (guarded,)):
            for at, value in (res[i]._fw or {}).items():
                forward.set_tangent(new, value, at)
            res[i] = new
    for i, o in full_out.items():
        forward.set_tangent(res[i], o, lv)
    return res[0] if single else tuple(res)


def _rule_outputs(cls, args, k: int, keep: bool = False):
    """Run the Function's batching rule (its vmap staticmethod, or the generated one) on
    the batched values of `args` at forward level `k`, a vmap level, with the levels
    outside it active. Returns (single output?, the arguments' batched values, per output
    (value, None) where it is not batched or (None, its batched value, batch first)).
    With `keep`, the batched values returned are copies taken before the rule ran (on
    the graph), as a grad inside the vmap reruns the Function on them: a rule that writes
    its input in place (mark_dirty) must not change them."""
    fw = state.forward
    lv = fw.levels[k]
    full = [a._fw.get(lv) if isinstance(a, Tensor) and a._fw is not None else None
            for a in args]
    in_dims = tuple(None if f is None else 0 for f in full)
    call = [a if f is None else f for a, f in zip(args, full)]
    rule = cls.vmap if cls.vmap is not Function.vmap else functools.partial(_generated_rule, cls)
    saved, state.forward = state.forward, fw.outers[k]
    try:
        if keep:
            full = [f if f is None else f.clone() for f in full]
        res = rule(_VmapInfo(lv.batch[0], lv.randomness), in_dims, *call)
    finally:
        state.forward = saved
    if not (isinstance(res, tuple) and len(res) == 2):
        raise RuntimeError(f"{cls.__name__}.vmap must return (outputs, out_dims), got "
                           f"{type(res).__name__}")
    outs, out_dims = res
    single = not isinstance(outs, tuple)
    outs = (outs,) if single else outs
    dims = (out_dims,) * len(outs) if not isinstance(out_dims, tuple) else out_dims
    if len(dims) != len(outs):
        raise RuntimeError(f"{cls.__name__}.vmap returned {len(outs)} outputs but "
                           f"{len(dims)} out_dims")
    batched = []
    for o, d in zip(outs, dims):
        if d is None or not isinstance(o, Tensor):
            batched.append((o, None))
            continue
        if not -o.ndim <= d < o.ndim or o.shape[d] != lv.batch[0]:
            raise RuntimeError(f"{cls.__name__}.vmap: out_dim {d} of an output of shape "
                               f"{o.shape} is not a batch dimension of size {lv.batch[0]}")
        batched.append((None, o.movedim(d, 0) if d % o.ndim else o))
    return single, full, batched


def _generated_rule(cls, info: _VmapInfo, in_dims: tuple, *args):
    """The batching rule of a Function with `generate_vmap_rule = True`: `apply` on each
    batch element (batched arguments sliced, the others as they are), the outputs stacked
    along dim 0. Each element goes through the Function's own forward, backward and jvp,
    so gradients are the ones it defines (torch runs forward on the batch; the results are
    the same, at the cost of a Python loop over the batch)."""
    from ..api.shape import stack as stack_

    rows = []
    for b in range(info.batch_size):
        out = cls.apply(*[a if d is None else a[b] for a, d in zip(args, in_dims)])
        rows.append(out)
    single = not isinstance(rows[0], tuple)
    cols = [rows] if single else [list(c) for c in zip(*rows)]
    outs, dims = [], []
    for col in cols:
        if isinstance(col[0], Tensor):
            outs.append(stack_(col))
            dims.append(0)
        else:  # a non-tensor output: the first element's (torch requires them equal)
            outs.append(col[0])
            dims.append(None)
    return (outs[0], dims[0]) if single else (tuple(outs), tuple(dims))


class Function:
    """A custom op, the PyTorch way: subclass with static `forward(ctx, *args)` and
    `backward(ctx, *grads)` (and optionally `jvp(ctx, *tangents)`), call `MyFn.apply(...)`.

    `jvp(ctx, *tangents)` gets one tangent per forward argument (a zero tensor for a
    floating tensor argument without one, None for other arguments) and returns one
    tangent per output; what `forward` stored on `ctx` is available to it. Without
    it, forward mode (`rg.func.jvp`, `jacfwd`, `hessian`, `hvp`) through the
    Function raises an error that says so.
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("a Function subclass must define backward(ctx, *grads)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch 2's split form: a subclass that defines it has `forward(*args)` without
        ctx, and `setup_context(ctx, inputs, output)` saves what backward needs."""
        raise NotImplementedError("setup_context is not overridden")

    generate_vmap_rule = False  # True: rg.func.vmap runs apply per batch element

    @staticmethod
    def vmap(info, in_dims, *args):
        """torch's batching rule hook: `vmap(info, in_dims, *args) -> (outputs, out_dims)`,
        called by `rg.func.vmap` with the batched arguments (`info.batch_size`,
        `info.randomness`). Override it to run the Function under vmap."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        split = cls.setup_context is not Function.setup_context
        if kwargs or split:
            args = _bind_args(cls, args, kwargs, split)
        if (state.forward is not None and state.forward.vmapped
                and (cls.vmap is not Function.vmap or cls.generate_vmap_rule)):
            if cls.generate_vmap_rule and cls.vmap is not Function.vmap:
                raise RuntimeError(
                    f"You tried to vmap over {cls.__name__}, but it has both "
                    "generate_vmap_rule=True and an overridden vmap staticmethod. Please set "
                    "generate_vmap_rule=False or delete the overridden vmap staticmethod to "
                    "avoid ambiguity.")
            res = _apply_vmap_rule(cls, args)
            if res is not NotImplemented:
                return res
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        fw, state.forward = state.forward, None  # forward mode sees the Function as one op
        try:
            with no_grad():
                if cls.setup_context is not Function.setup_context:  # forward without ctx
                    result = cls.forward(*args)
                    cls.setup_context(ctx, args, result)
                else:
                    result = cls.forward(ctx, *args)
        finally:
            state.forward = fw
        single = not isinstance(result, tuple)
        outs = [result] if single else list(result)
        outs = [o if isinstance(o, Tensor) else Tensor(o) for o in outs]
        needs = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
        dirty = {id(t) for t in ctx._dirty}
        given = args  # a dirty input's tangents are read from the caller's tensor itself
        if dirty:
            args = _dirty_inputs(cls, ctx, args, outs, bool(state.enabled and needs))
        # fresh tensors, no history (a dirty input comes back as itself)
        fresh = [o if id(o) in dirty else Tensor._wrap(o.data) for o in outs]
        inputs = [a for a in args if isinstance(a, Tensor)]
        aliased = [id(o) not in dirty and any(np.may_share_memory(o.data, a.data)
                                              for a in inputs) for o in outs]
        for new, old in zip(fresh, outs):
            if new is not old:
                new._vc = old._cell()  # same memory, same version counter
        ctx._name = cls.__name__
        ctx._seal(outs, fresh)
        if state.tracer is not None:  # rg.jit: the fresh outputs are the traced values
            for new, old in zip(fresh, outs):
                if new is not old:
                    state.tracer.alias(new, old)
        non_diff = ctx._non_diff
        outs = fresh
        if state.enabled and needs:
            meta = [(o.shape, o.dtype) for o in outs]
            datas = tuple(a.data if isinstance(a, Tensor) else a for a in args)
            recorded = set()
            for k, (o, old) in enumerate(zip(outs, result if not single else (result,))):
                if o.dtype.kind in "fc" and id(old) not in non_diff:
                    recorded.add(k)
                    op = _FunctionOp(cls, ctx, k, len(outs), meta)
                    if aliased[k]:
                        op.view = True  # changing it in place would change an input unseen
                    engine._record(op, o, args, datas, {}, needs)
            if len(recorded) > 1:  # the first output node the walk reaches takes the others'
                ctx._nodes = [weakref.ref(o.grad_fn) if k in recorded else None
                              for k, o in enumerate(outs)]
            ctx._record_args = (cls, args, datas, needs, meta, aliased, recorded)
            if state.packing is not None and recorded:  # saved_tensors_hooks: pack them now
                ctx._packed = (state.packing,
                               [None if t is None else state.packing.pack(t) for t in ctx.to_save])
        if state.forward is not None:
            _push_tangents(ctx, cls, given, outs, result if not single else (result,))
        return outs[0] if single else tuple(outs)


def _push_tangents(ctx: FunctionCtx, cls, args: tuple, outs: list, made: tuple) -> None:
    """The outputs' tangents from the Function's `jvp`. An output it saved with
    `save_for_forward` reads as the caller's output (its graph and its tangents at outer
    levels, set before an inner level's `jvp` runs), so that differentiating the `jvp`
    (jacrev(jacfwd(f)), jacfwd(jacfwd(f))) sees how it depends on the inputs; held only
    during the call, so the graph keeps no cycle."""
    kept = ctx._for_forward
    if kept is not None:
        live = {id(m): o for m, o in zip(made, outs)}
        ctx._for_forward = tuple(None if t is None else live.get(id(t), t) for t in kept)
    rule = None
    if cls.vmap is not Function.vmap or cls.generate_vmap_rule:
        def rule(k: int) -> list:  # the outputs' batched values at vmap level k
            return [o for _, o in _rule_outputs(cls, args, k)[2]]
    try:
        state.forward.push_function(cls, ctx, args, outs, rule)
    finally:
        ctx._for_forward = kept


def _bind_args(cls, args: tuple, kwargs: dict, split: bool) -> tuple:
    """`apply`'s arguments bound to `forward`'s signature, as PyTorch binds them: keyword
    arguments become positional (inputs that backward returns gradients for), and with
    `setup_context` the defaults are filled in too (its `inputs` holds every argument).
    An argument forward does not take raises TypeError."""
    fwd = cls.forward
    key = getattr(fwd, "__func__", fwd)
    cached = cls.__dict__.get("_rg_forward_signature")  # (forward, its signature)
    if cached is None or cached[0] is not key:
        cached = (key, inspect.signature(fwd))
        cls._rg_forward_signature = cached
    sig = cached[1]
    lead = () if split else (None,)  # the ctx slot of forward(ctx, ...)
    try:
        bound = sig.bind(*lead, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}.forward(): {e}") from None
    if split:
        bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"{cls.__name__}.apply: keyword-only arguments of forward "
                        f"({', '.join(bound.kwargs)}) are not supported; pass them positionally")
    return tuple(bound.args[len(lead):])


class _GradInsideVmap(Function):
    """The per-element floating outputs of a Function run by its vmap rule, as one node of
    the per-element graph that a grad inside the vmap (`vmap(grad(f))`) walks. Its backward
    runs the Function once per batch element (slices of the batched arguments, the
    unbatched ones as they are) and differentiates each run with that element's
    cotangents, all outputs at once (the Function's backward is called once with every
    cotangent, as torch calls it): the per-element gradients, batched. Those are
    differentiable through the batched values (`grad(vmap(grad(f)))`); differentiating
    them again inside the vmap (`vmap(grad(grad(f)))`) raises."""

    @staticmethod
    def forward(ctx, spec, n, *values_and_guard):
        ctx.spec, ctx.n, ctx.guard = spec, n, values_and_guard[n:]
        outs = tuple(v.clone() for v in values_and_guard[:n])
        return outs[0] if n == 1 else outs

    @staticmethod
    def backward(ctx, *gs):
        from .. import forward
        from ..api.shape import stack as stack_

        cls, args, full, lv, pos = ctx.spec
        none = (None, None) + (None,) * (ctx.n + len(ctx.guard))
        fw = state.forward
        if fw is None or lv not in fw.levels:
            raise RuntimeError(f"{cls.__name__} (an rg.autograd.Function run through its vmap "
                               "staticmethod): its per-element output is differentiated "
                               "outside the vmap that made it")
        used = [(j, g) for j, g in zip(pos, gs) if g is not None]
        if not used:
            return none
        k = fw.levels.index(lv)
        if any(g._fw is not None and any(inner in g._fw for inner in fw.levels[k + 1:])
               for _, g in used):
            raise RuntimeError(
                f"{cls.__name__} (an rg.autograd.Function) ran inside rg.func.vmap through "
                "its vmap staticmethod; a batched backward inside that vmap (jacrev, "
                "vmap(vjp) or is_grads_batched within it) through it is not supported: "
                "use grad per output, or write the function with rg ops")
        size = lv.batch[0]
        ids = {id(a) for a in ctx.guard}
        saved, state.forward = fw, fw.outers[k]
        try:
            gfull = []
            for _, g in used:
                G = forward.tangent_of(g, lv)
                gfull.append(G if G is not None
                             else g.unsqueeze(0).expand((size,) + tuple(g.shape)))
            srcs = [f if f is None or f.requires_grad or id(a) not in ids
                    else f.detach().requires_grad_() for a, f in zip(args, full)]
            per = [[] for _ in ctx.guard]
            with enable_grad():
                for b in range(size):
                    elems = [a if f is None else f[b] for a, f in zip(args, srcs)]
                    # each run gets copies: one that writes its input in place (mark_dirty)
                    # changes neither the saved batch nor a view of it
                    out = cls.apply(*[e if f is None else e.clone()
                                      for e, f in zip(elems, srcs)])
                    out = out if isinstance(out, tuple) else (out,)
                    wrt = [e for a, e in zip(args, elems) if id(a) in ids]
                    roots = [(out[j], G[b]) for (j, _), G in zip(used, gfull)
                             if out[j].requires_grad]
                    got = grad([r for r, _ in roots], wrt, [c for _, c in roots],
                               allow_unused=True, create_graph=True) if roots \
                        else (None,) * len(wrt)
                    for lst, gb, w in zip(per, got, wrt):
                        lst.append(gb if gb is not None else w.detach() * 0)
            batched = [stack_(lst) for lst in per]
            if not (fw.outers[k] is not None or any(G.requires_grad for G in gfull) or any(
                    isinstance(a, Tensor) and a.requires_grad if f is None else f.requires_grad
                    for a, f in zip(args, full))):
                # nothing outside the vmap differentiates them: no graph (as torch's)
                batched = [G.detach() for G in batched]
        finally:
            state.forward = saved
        res = []
        for G in batched:
            sample = engine.apply(ops.getitem, G, idx=0).detach()
            saved, state.forward = state.forward, None
            try:
                sample = _NoGradOfGradInsideVmap.apply(cls.__name__, sample, *ctx.guard)
            finally:
                state.forward = saved
            forward.set_tangent(sample, G, lv)
            res.append(sample)
        return none[:2 + ctx.n] + tuple(res)


class _NoGradOfGradInsideVmap(Function):
    """A per-element gradient from `_GradInsideVmap`: differentiating it again inside the
    vmap is not supported, so its backward refuses (never a wrong second derivative)."""

    @staticmethod
    def forward(ctx, name, value, *guard):
        ctx.name = name
        return value.clone()

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            f"{ctx.name} (an rg.autograd.Function) ran inside rg.func.vmap through its vmap "
            "staticmethod; a second derivative inside the vmap (vmap(grad(grad(f))), "
            "vmap(hessian(f))) through it is not supported: write the function with rg ops")
