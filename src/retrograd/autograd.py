"""`rg.autograd`: gradients without touching `.grad`, custom ops, anomaly detection."""

from __future__ import annotations

import numpy as np

from . import engine, ops
from .grad_mode import detect_anomaly, enable_grad, no_grad, state
from .tensor import Tensor, _initial_grad

__all__ = ["grad", "Function", "FunctionCtx", "detect_anomaly", "no_grad", "enable_grad"]


def _seq(x) -> list:
    return [x] if isinstance(x, Tensor) else list(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool = False) -> tuple:
    """Gradients of `outputs` with respect to `inputs`, as a tuple; `.grad` is left untouched.

    With `create_graph=True` the results are themselves differentiable.
    """
    outs, ins = _seq(outputs), _seq(inputs)
    if grad_outputs is None:
        gouts = [None] * len(outs)
    else:
        gouts = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        if len(gouts) != len(outs):
            raise ValueError(f"grad(): got {len(gouts)} grad_outputs for {len(outs)} outputs")
    for k, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): input {k} is a {type(t).__name__}, not a Tensor")
        if not t.requires_grad:
            raise RuntimeError(f"grad(): input {k} (shape {t.shape}) does not require grad")
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
            result.append(None)
            continue
        if not isinstance(g, Tensor):
            g = np.asarray(g)
            g = Tensor._wrap(g if g.dtype == t.dtype else g.astype(t.dtype))
        result.append(g)
    return tuple(result)


class FunctionCtx:
    """What `forward` stores for `backward` (and `jvp`)."""

    def __init__(self) -> None:
        self.to_save: tuple = ()
        self.needs_input_grad: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        return self.to_save


class _FunctionOp:
    """Adapts a user's `Function` to the engine's op interface."""

    reads = ()
    save_out = False
    view = False
    simple = False  # the engine calls `backward`, never a rule of its own

    def __init__(self, cls, ctx, index, n_outputs, out_meta):
        self.cls, self.ctx, self.index, self.n, self.out_meta = cls, ctx, index, n_outputs, out_meta
        self.name = cls.__name__
        self.read_cache = {}  # the engine's per-op cache of which inputs the rules read

    def backward(self, node, g, m):
        create = m is not ops.NUMPY  # create_graph, or a backward traced by rg.jit
        gt = g if isinstance(g, Tensor) else Tensor._wrap(np.asarray(g))
        grads = [None] * self.n
        grads[self.index] = gt
        for k in range(self.n):
            if grads[k] is None:
                shape, dtype = self.out_meta[k]
                grads[k] = Tensor._wrap(np.zeros(shape, dtype))
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
            r = r if isinstance(r, Tensor) else Tensor(np.asarray(r))
            if r.shape != node.inputs[i].shape:
                raise RuntimeError(f"{self.name}.backward returned a gradient of shape {r.shape} "
                                   f"for input {i} of shape {node.inputs[i].shape}")
            out.append(r if create else r.data)
        return out


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

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        fw, state.forward = state.forward, None  # forward mode sees the Function as one op
        try:
            with no_grad():
                result = cls.forward(ctx, *args)
        finally:
            state.forward = fw
        single = not isinstance(result, tuple)
        outs = [result] if single else list(result)
        outs = [o if isinstance(o, Tensor) else Tensor(o) for o in outs]
        fresh = [Tensor._wrap(o.data) for o in outs]  # fresh tensors, no history
        if state.tracer is not None:  # rg.jit: the fresh outputs are the traced values
            for new, old in zip(fresh, outs):
                state.tracer.alias(new, old)
        outs = fresh
        needs = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
        if state.enabled and needs:
            meta = [(o.shape, o.dtype) for o in outs]
            for k, o in enumerate(outs):
                if o.dtype.kind in "fc":
                    op = _FunctionOp(cls, ctx, k, len(outs), meta)
                    engine._record(op, o, args, tuple(a.data if isinstance(a, Tensor) else a
                                                          for a in args), {}, needs)
        if state.forward is not None:
            state.forward.push_function(cls, ctx, args, outs)
        return outs[0] if single else tuple(outs)
