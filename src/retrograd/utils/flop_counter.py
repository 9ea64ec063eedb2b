"""`rg.utils.flop_counter`: PyTorch's `torch.utils.flop_counter.FlopCounterMode`, which counts
the floating-point operations of the matrix products, convolutions and attention a block
runs, forward and backward, in total and per module (for MFU estimates, model summaries).

    with FlopCounterMode(display=False) as fc:
        model(x).sum().backward()
    fc.get_total_flops(), fc.get_flop_counts()["Global"]

The counts are PyTorch's: a product of an (m, k) and a (k, n) matrix is 2 m k n flops, a
convolution 2 flops per multiply-add of its weight, attention its two batched products
(backward: five); other ops count nothing. They are kept under PyTorch's op names
("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution",
"aten.convolution_backward", "aten._scaled_dot_product_efficient_attention" or, for
float16/bfloat16 without a mask, "..._flash_attention", and their "_backward"), each
name chosen as PyTorch's decomposition of the call would choose it (`matmul` of a batch by
a matrix is one folded "aten.mm", a matrix-vector product counts nothing, as there).

How it sees the work: the public products, `F.linear`, the convolutions,
`scaled_dot_product_attention` and `einsum` check one global (`grad_mode.state.flops`)
and, while a counter is active, run through it. A call's backward is counted when the
gradient reaches its output (a tensor hook), by the counters active then (as torch's
modes), the one of its forward under the modules the forward ran in, and only for the
operands whose gradients the walk computes (`autograd.grad` of some inputs).

What is refused rather than miscounted: calling a function compiled by `rg.jit` (a replay
runs none of those calls); a backward through products recorded while no counter was
active (their backward cannot be counted); a backward with `create_graph=True` (the
products it records would be missed by the next one). Not counted, unlike torch: the
products inside other functions (`rg.linalg.matrix_power`, `multi_dot`, ..., the
recurrent layers RNN and GRU).
"""

from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from operator import itemgetter

from .. import engine as _engine
from ..engine import _raw
from ..grad_mode import state

__all__ = ["FlopCounterMode"]

_FORMULAS: dict[str, Callable] = {}
"""Counted calls by kind: `formula(*args, out=..., **kwargs)` -> (forward, backward): a list
of (op name, flops), and one of (op name, flops, operands): counted by a backward that
wants the gradient of one of those operands."""


_PRODUCT_OPS = frozenset(("matmul", "linear", "einsum", "attention", "conv_unit",
                          "conv_unit_bias", "conv_t_unit", "conv_t_unit_bias"))
"""The ops of the counted calls: a backward through one recorded outside every counter's
block is refused."""

_SPANS: list[list] = []
"""[first, last] node creation numbers of each outermost counter's block, in order (nodes
recorded in one)."""


def _in_a_block(seq: int) -> bool:
    i = bisect_right(_SPANS, seq, key=itemgetter(0)) - 1
    return i >= 0 and seq < _SPANS[i][1]


def _shape(x) -> tuple:
    return tuple(getattr(x, "shape", ()))


def _grad(x) -> bool:
    return bool(getattr(x, "requires_grad", False))


def _product(a, b, name: str, fwd_name: str | None = None, count: int | None = None):
    """A product counted as PyTorch's `name` op, its backward one `name` per operand that
    requires grad (each as much as the forward)."""
    back = [(name, count, (t,)) for t in (a, b) if _grad(t)]
    return [(fwd_name or name, count)], back


def _matmul(x, y, out=None):
    """`matmul` as PyTorch decomposes it: a matrix times a vector (mv, dot) counts nothing;
    a batch times a matrix folds into one mm; a matrix times a batch folds too (into mm, or
    into mv for a vector) unless only the batch requires grad; batches are one bmm."""
    xs, ys = _shape(x), _shape(y)
    if len(ys) == 1 or not xs:
        return [], []
    m = math.prod(xs[:-1])
    k, n = ys[-2], ys[-1]
    if len(ys) == 2:
        return _product(x, y, "aten.mm", count=2 * m * k * n)
    if len(xs) <= 2:
        batch = math.prod(ys[:-2])
        if _grad(x) or not _grad(y):  # folded
            if len(xs) == 1:
                return [], []
            return _product(x, y, "aten.mm", count=2 * m * k * n * batch)
        return _product(x, y, "aten.bmm", count=2 * batch * m * k * n)
    batch = math.prod(_broadcast(xs[:-2], ys[:-2]))
    return _product(x, y, "aten.bmm", count=2 * batch * xs[-2] * k * n)


def _broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(p, q) if 1 in (p, q) else p for p, q in zip(a, b))


def _mm(a, b, out=None):
    return _product(a, b, "aten.mm", count=2 * _shape(a)[0] * _shape(a)[1] * _shape(b)[1])


def _bmm(a, b, out=None):
    (n, m, k), p = _shape(a), _shape(b)[2]
    return _product(a, b, "aten.bmm", count=2 * n * m * k * p)


def _addmm(input, a, b, out=None, **kwargs):  # noqa: A002
    return _product(a, b, "aten.mm", "aten.addmm", _mm(a, b)[0][0][1])


def _baddbmm(input, a, b, out=None, **kwargs):  # noqa: A002
    return _product(a, b, "aten.bmm", "aten.baddbmm", _bmm(a, b)[0][0][1])


def _linear(x, w, b=None, out=None):
    """PyTorch's linear: addmm on the rows (a contiguous batch of rows folded into one
    matrix) with a bias, else mm (a non-contiguous batch, or no bias); a 1-D weight is a
    matrix-vector product (nothing)."""
    xs, ws = _shape(x), _shape(w)
    if len(ws) != 2:
        return [], []
    contiguous = len(xs) <= 2 or _contiguous(x)
    name = "aten.addmm" if b is not None and contiguous else "aten.mm"
    return _product(x, w, "aten.mm", name, 2 * math.prod(xs[:-1]) * xs[-1] * ws[0])


def _contiguous(x) -> bool:
    data = getattr(x, "data", None)
    flags = getattr(data, "flags", None)
    return bool(flags is None or flags.c_contiguous)


def _conv_count(x, w, out, transposed: bool) -> int:
    """2 flops per multiply-add: each weight entry meets every output position (a transposed
    convolution: every input position) of every batch item."""
    xs = _shape(x)
    spatial = xs[2:] if transposed else _shape(out)[-(len(xs) - 2):]
    return 2 * xs[0] * math.prod(_shape(w)) * math.prod(spatial)


def _conv(x, w, b, stride, padding, dilation, groups, *args, out=None):
    return _convolution(x, w, b, out, False, groups)


def _conv_transpose(x, w, b, stride, padding, output_padding, groups, *args, out=None):
    return _convolution(x, w, b, out, True, groups)


def _convolution(x, w, b, out, transposed: bool, groups: int):
    nd = len(_shape(w)) - 2
    if len(_shape(x)) == nd + 1:  # unbatched: one item
        x = _Shaped((1,) + _shape(x), _grad(x))
    fwd = _conv_count(x, w, out, transposed)
    back = []
    if _grad(x) or _grad(w) or _grad(b):
        # the input's gradient is the adjoint convolution, as much work as the forward; the
        # weight's is counted as PyTorch counts it, a convolution over all the channels
        # (groups times the forward)
        back = [("aten.convolution_backward", 0, (x, w, b))]  # (torch's key, even if
        back += [("aten.convolution_backward", n, (t,))       # only the bias's is wanted)
                 for t, n in ((x, fwd), (w, fwd * groups)) if _grad(t)]
    return [("aten.convolution", fwd)], back


def _wanted(back) -> list:
    """The backward's (op name, flops) that the running backward walk computes: those of
    the operands whose gradients it wants (`autograd.grad(y, inputs)` wants only what
    leads to its inputs)."""
    walk = _engine.running_walk()
    if walk is not None and walk[1]:
        raise NotImplementedError(
            "FlopCounterMode: a backward with create_graph=True is not counted (the products "
            "it records would be missed by a later backward); count first-order backwards")
    targets, live = (None, None) if walk is None else (walk[2], walk[6])
    if targets is None:
        return [(name, n) for name, n, _ in back]

    def wanted(t) -> bool:
        key = t.grad_fn if getattr(t, "grad_fn", None) is not None else t
        return key in targets or key in live
    return [(name, n) for name, n, ts in back if any(wanted(t) for t in ts if _grad(t))]


class _Shaped:
    __slots__ = ("shape", "requires_grad")

    def __init__(self, shape: tuple, requires_grad: bool) -> None:
        self.shape, self.requires_grad = shape, requires_grad


def _sdpa(q, k, v, attn_mask=None, *args, out=None, **kwargs):
    """Attention as PyTorch's fused kernels count it: the scores q k^T and their product with
    v (the heads of a grouped key/value shared, so counted per query head); backward five
    products (the scores again, then the gradients of the weights, v, q and k)."""
    qs, ks, vs = _shape(q), _shape(k), _shape(v)
    batch, L, S, E, Ev = math.prod(qs[:-2]), qs[-2], ks[-2], qs[-1], vs[-1]
    kind = "flash" if attn_mask is None and str(getattr(q, "dtype", "")) in (
        "float16", "bfloat16", "rg.float16", "rg.bfloat16") else "efficient"
    name = f"aten._scaled_dot_product_{kind}_attention"
    fwd = 2 * batch * L * S * (E + Ev)
    back = [(name + "_backward", 2 * batch * L * S * (3 * E + 2 * Ev), (q, k, v))] \
        if _grad(q) or _grad(k) or _grad(v) else []
    return [(name, fwd)], back


def _einsum(spec, *operands, out=None):
    """einsum as PyTorch runs it: operands contracted left to right, each pair one bmm
    (labels held by one side only and needed no more summed first, at no count), or an
    element-wise product (no count) where the pair shares no label to sum over."""
    from ..ops.linalg import _einsum_parse
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(spec, str) or len(operands) < 2:
        return [], []
    terms, result = _einsum_parse(spec, [_shape(t) for t in operands])
    size: dict[str, int] = {}
    for term, t in zip(terms, operands):
        for c, s in zip(term, _shape(t)):
            size[c] = max(size.get(c, 1), s)
    fwd, back = [], []
    left, left_from = set(terms[0]), (operands[0],) if _grad(operands[0]) else ()
    for i in range(1, len(terms)):
        right, right_from = set(terms[i]), (operands[i],) if _grad(operands[i]) else ()
        needed = set(result).union(*terms[i + 1:])
        both = left & right
        kept = (left | right) & needed
        if math.prod(size[c] for c in both - needed) > 1:  # else a product, no bmm
            count = 2 * math.prod(size[c] for c in kept | both)
            fwd.append(("aten.bmm", count))
            back += [("aten.bmm", count, ts) for ts in (left_from, right_from) if ts]
        left, left_from = kept, left_from + right_from
    return fwd, back


_FORMULAS.update(matmul=_matmul, mm=_mm, bmm=_bmm, addmm=_addmm, baddbmm=_baddbmm,
                 linear=_linear, conv=_conv, conv_transpose=_conv_transpose, sdpa=_sdpa,
                 einsum=_einsum)


class FlopCounterMode:
    """Count the flops of the block: `with FlopCounterMode() as fc: ...`, then
    `fc.get_total_flops()`, `fc.get_flop_counts()` ({"Global" or a module's name: {op name:
    flops}}) and `fc.get_table(depth)`; with `display=True` the table is printed at exit.
    Modules are named as torch's: the outermost by its class name, its children as
    "Class.child". `mods` is not needed (a warning, as torch's); a `custom_mapping` (torch's
    formulas take the arguments of its own aten ops) is refused."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict | None = None) -> None:
        self.depth = depth
        self.display = display
        self.flop_counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        if mods is not None:
            warnings.warn("FlopCounterMode: the mods argument is not needed (modules are "
                          "found as they run)", stacklevel=2)
        if custom_mapping:
            raise NotImplementedError(
                "FlopCounterMode: custom_mapping is not supported (torch's formulas take the "
                "arguments of its aten ops, which retrograd does not have)")
        self._stack: list[str] = []
        self._names: dict[int, tuple] = {}  # id -> (module, name): the modules are held
        self._named: set[int] = set()       # so that their ids stay theirs
        self._handles: list = []
        self._saved = None
        self._active = False

    # -- results
    def get_total_flops(self) -> int:
        """The flops of everything counted."""
        return sum(self.flop_counts.get("Global", {}).values())

    def get_flop_counts(self) -> dict[str, dict[str, int]]:
        """{"Global" or a module's name: {op name: flops}}, as plain dicts."""
        return {mod: dict(ops) for mod, ops in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as torch's table: a row per module (to `depth` levels of nesting, by
        name) with its total and share, under it a row per op; "Global" first unless one
        module holds every flop. Numbers in the unit (K, M, B, T) fitting the total."""
        depth = self.depth if depth is None else depth
        total = self.get_total_flops()
        unit = max(0, min(4, (len(str(total)) - 2) // 3))

        def num(n: int) -> str:
            return f"{n / 1000 ** unit:.3f}" + ("", "K", "M", "B", "T")[unit]

        def pct(n: int) -> str:
            return "0%" if total == 0 else f"{n / total:.2%}"

        def rows_of(mod: str, indent: str) -> list:
            ops = self.flop_counts[mod]
            n = sum(ops.values())
            return [[indent + mod, num(n), pct(n)]] + [
                [indent + " - " + op, num(f), pct(f)] for op, f in ops.items()]

        rows, whole = [], False
        for mod in sorted(m for m in self.flop_counts if m != "Global"):
            level = mod.count(".") + 1
            if level <= (999999 if depth is None else depth):
                rows += rows_of(mod, " " * (level - 1))
                whole = whole or sum(self.flop_counts[mod].values()) >= total
        if "Global" in self.flop_counts and not whole:
            rows = rows_of("Global", "") + [[" " + r[0], r[1], r[2]] for r in rows]
        if not rows:
            rows = [["Global", "0", "0%"]]
        rows.insert(0, ["Module", "FLOP", "% Total"])
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}" for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    # -- counting
    def __enter__(self) -> FlopCounterMode:
        if self._active:
            raise RuntimeError("FlopCounterMode: this counter is already active")
        from ..nn import hooks
        self.flop_counts.clear()
        self._saved = state.flops
        self._active = True
        self._span = None
        if not _SPANS or _SPANS[-1][1] != math.inf:  # (a nested block is in its outer one's)
            self._span = [next(_engine._counter), math.inf]
            _SPANS.append(self._span)
        state.flops = self
        self._handles = [hooks.register_module_forward_pre_hook(self._enter_module),
                         hooks.register_module_forward_hook(self._leave_module,
                                                            always_call=True)]
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        state.flops = self._saved
        self._active = False
        if self._span is not None:
            self._span[1] = next(_engine._counter)
        self._stack = []
        if self.display:
            print(self.get_table(self.depth))

    def _enter_module(self, module, args) -> None:
        self._stack.append(self._name_of(module))

    def _name_of(self, module) -> str:
        """torch's names: a module first met by its class's name, and then (once) all the
        modules under it by their paths from it."""
        name = self._names.setdefault(id(module), (module, type(module).__name__))[1]
        if id(module) not in self._named:
            self._named.add(id(module))
            for child, sub in module.named_children():
                self._names[id(sub)] = (sub, f"{name}.{child}")
                self._name_of(sub)
        return name

    def _leave_module(self, module, args, output) -> None:
        if self._stack:
            self._stack.pop()

    def run(self, kind: str, fn: Callable, *args, **kwargs):
        """Call `fn` (a counted call of this kind) uncounted inside, then count it."""
        state.flops = None
        try:
            out = fn(*args, **kwargs)
        finally:
            state.flops = self
        fwd, back = _FORMULAS[kind](*args, out=out, **kwargs)
        modules = {}  # this counter and those it is nested in: the modules it runs in
        c = self
        while c is not None:
            modules[c] = ("Global", *dict.fromkeys(c._stack))
            c._add(modules[c], fwd)
            c = c._saved
        if back and getattr(out, "requires_grad", False) and state.enabled:
            def count_backward(g):  # in the counters active now (as torch's modes)
                items = _wanted(back)
                c = state.flops
                while c is not None:
                    c._add(modules.get(c, ("Global",)), items)
                    c = c._saved
            out.register_hook(count_backward)
        return out

    def check_backward(self, nodes) -> None:
        """Refuse a backward through products recorded while no counter was active: their
        gradients' work cannot be counted (run the forward inside the block too)."""
        for node in nodes:
            if _raw(node.op).name in _PRODUCT_OPS and not _in_a_block(node.seq):
                raise RuntimeError(
                    "FlopCounterMode: this backward runs through products (matmul, linear, "
                    "convolution, attention, einsum) whose forward ran outside any "
                    "FlopCounterMode, so their backward cannot be counted; run the forward "
                    "inside the counter's block too")

    def _add(self, parents, items) -> None:
        if not items:
            return
        for mod in parents:
            counts = self.flop_counts[mod]
            for name, n in items:
                counts[name] += n
