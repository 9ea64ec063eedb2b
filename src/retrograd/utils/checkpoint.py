"""Activation checkpointing, as `torch.utils.checkpoint`: trade compute for memory.

`checkpoint(function, *args)` returns what `function(*args)` returns, but keeps none of
the intermediate values its backward would need; backward runs `function` again (with
the host random state of the first run, so dropout draws the same masks) and
backpropagates through that recomputation. `checkpoint_sequential` does this for the
segments of a chain of modules.

How: the first run records a graph only long enough to find which tensors outside the
function it depends on (its tensor arguments, parameters and other tensors it reads),
then drops it, keeping the outputs' values. One `rg.autograd.Function` node stands for
the whole function in the caller's graph, with those tensors as its inputs, so gradients
reach them through `.backward()`, `rg.autograd.grad` and `rg.func.grad` alike, hooks on
them run once, and double backward (`create_graph=True`) works: in backward each outside
tensor is seen through a fresh identity node while the function runs again, so the
walk through the recomputed graph stops there. PyTorch's two variants
(`use_reentrant=True` or False) give the same gradients here; with True, as in
PyTorch, outputs do not require grad unless a tensor argument does.

Refused, with an error saying so: use inside `rg.jit`, `rg.func.vmap` and forward mode
(`jvp`, `jacfwd`); a function that changes its tensor arguments in place (at once) or
another outside tensor in place (at backward, when running it again would change it
again); and a recomputation whose outputs differ in shape or dtype. The random state
preserved is the host generator's (`rg.manual_seed`); device generators are not.
"""

from __future__ import annotations

import contextlib
import copy
import warnings

from .. import creation, engine
from ..autograd import Function
from ..grad_mode import enable_grad, no_grad, state
from ..jit import JitError
from ..primitive import OPS
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce the first run's outputs."""


def _flatten(x, out: list):
    """`x`'s structure with each floating tensor replaced by its position in `out`."""
    if isinstance(x, Tensor):
        if x.dtype.kind in "fc":
            out.append(x)
            return _Slot(len(out) - 1)
        return x.detach()
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_flatten(e, out) for e in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_flatten(e, out) for e in x)
    if isinstance(x, dict):
        return {k: _flatten(v, out) for k, v in x.items()}
    return x


def _fill(x, values: list):
    if isinstance(x, _Slot):
        return values[x.index]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_fill(e, values) for e in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_fill(e, values) for e in x)
    if isinstance(x, dict):
        return {k: _fill(v, values) for k, v in x.items()}
    return x


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _outside(outs: list, start: int) -> list:
    """The tensors requiring grad that the graph of `outs` (nodes numbered after `start`)
    reads from outside it: leaves and older results, each once."""
    found, seen_t, seen_n, stack = [], set(), set(), []

    def visit(t, node):
        if node.__class__ is engine.Node and node.seq > start:
            if id(node) not in seen_n:
                seen_n.add(id(node))
                stack.append(node)
        elif id(t) not in seen_t and t.requires_grad:
            seen_t.add(id(t))
            found.append(t)

    for o in outs:
        visit(o, o.grad_fn)
    while stack:
        node = stack.pop()
        for i, nxt in zip(node.needs, node.nexts):
            visit(node.inputs[i], nxt)
    return found


def _refuse_transforms() -> None:
    if state.tracer is not None:
        raise JitError("rg.utils.checkpoint inside rg.jit: the recomputation in backward "
                       "cannot be traced; call the function directly inside rg.jit")
    if state.forward is not None:
        raise RuntimeError("rg.utils.checkpoint inside rg.func.vmap or forward mode (jvp, "
                           "jacfwd, hessian): not supported; call the function directly")


class _Box:
    """What backward needs to run the function again, and the first run's outputs."""

    def __init__(self, function, args, kwargs, rng, outs) -> None:
        self.function, self.args, self.kwargs, self.rng = function, args, kwargs, rng
        self.meta = [(o.shape, o.dtype) for o in outs]
        self.outs = [o.data for o in outs]


def _versions(args) -> list:
    return [a._cell()[0] for a in args if isinstance(a, Tensor)]


@contextlib.contextmanager
def _random_state(saved):
    """Run with a copy of the host generator `saved` (None: the current one), then put
    the caller's back."""
    if saved is None:
        yield
        return
    current = creation._rng[0]
    creation._rng[0] = copy.deepcopy(saved)
    try:
        yield
    finally:
        creation._rng[0] = current


class _Checkpoint(Function):
    """One node for the whole function; its inputs are the outside tensors it reads."""

    @staticmethod
    def forward(ctx, box, *outside):
        ctx.box = box
        ctx.save_for_backward(*outside, *[a for a in box.args if isinstance(a, Tensor)])
        ctx.set_materialize_grads(False)
        outs, box.outs = box.outs, None  # the node holds the outputs' values no longer
        return tuple(Tensor._wrap(o) for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        _refuse_transforms()
        create = state.enabled  # create_graph: the gradients are recorded too
        box = ctx.box
        saved = ctx.saved_tensors  # raises if an input was changed in place since
        outside = saved[:len(saved) - len(_versions(box.args))]
        # While the function runs again, each outside tensor looks like the output of a
        # fresh identity node: the walk below stops there (its gradient is the node's
        # input gradient; the caller's walk goes on from it, running hooks once), and a
        # recorded (create_graph) gradient still leads back through it.
        with enable_grad():
            stand_ins = [engine.apply(OPS["reshape"], t, shape=t.shape).grad_fn
                         for t in outside]
        own = [t.grad_fn for t in outside]
        try:
            for t, node in zip(outside, stand_ins):
                t.grad_fn = node
            before = _versions(outside)
            with _random_state(box.rng), enable_grad():
                flat: list = []
                _flatten(box.function(*box.args, **box.kwargs), flat)
            if _versions(outside) != before:
                raise CheckpointError(
                    "rg.utils.checkpoint: the function changes a tensor from outside it in "
                    "place, so running it again in backward does not compute what the first "
                    "run did; change a copy (clone()) instead")
            got = [(o.shape, o.dtype) for o in flat]
            if got != box.meta:
                raise CheckpointError(
                    "rg.utils.checkpoint: recomputing the function in backward gave outputs "
                    f"{got}, but the first run gave {box.meta} (shapes, dtypes); the function "
                    "must compute the same thing both times")
            pairs = [(o, g if create else g.data) for o, g in zip(flat, grads)
                     if g is not None and o.requires_grad]
            found = [None] * len(outside)
            if pairs:
                found = engine.backward([o for o, _ in pairs], [g for _, g in pairs],
                                        create, targets=list(outside))
        finally:
            for t, node in zip(outside, own):
                t.grad_fn = node
        return (None, *found)


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None,
               determinism_check: str = "default", debug: bool = False,
               preserve_rng_state: bool = True, **kwargs):
    """`function(*args, **kwargs)`, keeping only the inputs for backward, which runs the
    function again. Like `torch.utils.checkpoint.checkpoint` (gradients equal the
    un-checkpointed ones; see the module docstring for what is refused)."""
    if use_reentrant is None:
        warnings.warn("rg.utils.checkpoint: pass use_reentrant explicitly (as PyTorch asks); "
                      "use_reentrant=False is recommended. Defaulting to True.", stacklevel=2)
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn is not None or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if context_fn is not None:
        raise NotImplementedError("rg.utils.checkpoint: context_fn (selective checkpointing) "
                                  "is not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if not state.enabled:
        return function(*args, **kwargs)
    _refuse_transforms()
    if use_reentrant and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)
        with no_grad():
            return function(*args, **kwargs)
    rng = copy.deepcopy(creation._rng[0]) if preserve_rng_state else None
    before = _versions(args)
    start = next(engine._counter)
    flat: list = []
    structure = _flatten(function(*args, **kwargs), flat)
    if _versions(args) != before:
        raise RuntimeError("rg.utils.checkpoint: the function changed one of its tensor "
                           "arguments in place; backward would run it on the changed values")
    outside = _outside(flat, start)
    box = _Box(function, args, kwargs, rng, flat)
    del flat  # the first run's graph dies here
    outs = _Checkpoint.apply(box, *outside) if box.meta else ()
    return _fill(structure, list(outs))


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run `functions` (a list of modules/functions, or an `nn.Sequential`) one after the
    other on `input`, checkpointing all but the last of `segments` equal segments. Like
    `torch.utils.checkpoint.checkpoint_sequential`."""
    if use_reentrant is None:
        warnings.warn("rg.utils.checkpoint.checkpoint_sequential: pass use_reentrant "
                      "explicitly (as PyTorch asks); use_reentrant=False is recommended. "
                      "Defaulting to True.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())

    def run(start: int, end: int):
        def forward(x):
            for f in functions[start:end + 1]:
                x = f(x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
