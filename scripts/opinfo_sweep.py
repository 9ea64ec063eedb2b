"""Run PyTorch's own OpInfo sample inputs (torch.testing._internal's op_db) against
retrograd: a sweep for gaps, not a test (it needs `expecttest`, in the `test` extra).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/opinfo_sweep.py --from a --to f --grad
    .venv/bin/python scripts/opinfo_sweep.py --ops abs,add --dtypes float64,complex128
    .venv/bin/python scripts/opinfo_sweep.py --from r --to z --mode err   # error_inputs
    .venv/bin/python scripts/opinfo_sweep.py --ops sort,gather --mode vmap --grad
    .venv/bin/python scripts/opinfo_sweep.py --from a --to c --mode jvp   # or --jvp

For every OpInfo whose name falls in [from, to] (first letter of the last dotted part, or
the --ops list), each sample input is converted to retrograd (values copied), the op is
called in both libraries and the results compared: values (allclose, NaN equal), dtype,
shape; where torch raises, retrograd must raise too. The modes (--mode M; jvp and the
ones after it also as the flag --M, `--jvp --fwad` meaning fwad):

  sample     (default) the sample_inputs, in each of --dtypes; with --grad, float64
             samples are also differentiated (vjp with a fixed random cotangent w.r.t.
             every input tensor, through the op's gradcheck_wrapper and the sample's
             output_process_fn_grad).
  ref        the same on the larger reference_inputs.
  err        the error_inputs (float64 only): retrograd must raise, of the same type.
  vmap       the samples batched (three perturbed copies of each tensor, kept sorted or
             symmetric where the sample is), torch.func.vmap vs rg.func.vmap, in_dims all 0,
             first at -1 (others unbatched), first unbatched (others 0); with --grad also
             vmap(grad(sum of the first float output)) per sample, one sample per op.
  jvp        forward mode: torch.func.jvp vs rg.func.jvp, random tangents for every float
             or complex tensor (primal outputs and tangents compared), for the ops with
             supports_forward_ad.
  fwad       the same through dual numbers (autograd.forward_ad make_dual/unpack_dual).
  jacfwd     torch.func.jacfwd vs rg.func.jacfwd w.r.t. all of them (samples of at most
             150 input elements).
  gradgrad   second order, float64: vjp with create_graph=True, then the grad of
             <vjp, w> w.r.t. the inputs and the cotangent (ops with supports_gradgrad).
  complex    complex128: the forward samples, and vjps with complex cotangents v (in
             torch's convention the grads of L = sum(real(out * conj(v)))) where
             complex128 backward is supported.
  cgradgrad  gradgrad on complex128 samples.

Lambda entries of the table are rerun with `torch` bound to retrograd. Prints one line per
op with counts and the first mismatch of each kind (a reproducer; with -v also the first
sample torch itself refuses). Some reports are the harness's own artifacts or PyTorch
quirks: check each by hand.
"""
import argparse
import sys
import traceback
import types
import warnings

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

import retrograd as rg

warnings.filterwarnings("ignore")

MODES = ("sample", "ref", "err", "vmap", "jvp", "fwad", "jacfwd", "gradgrad", "complex",
         "cgradgrad")
FLAG_MODES = ("jvp", "fwad", "jacfwd", "gradgrad", "complex", "cgradgrad")
ERRT = {}

DT = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64,
      "bool": torch.bool, "complex128": torch.complex128, "int32": torch.int32,
      "uint8": torch.uint8, "float16": torch.float16}


# Keyed by op name or name.variant; the table's other lambdas are rebound (_rebind).
SPECIAL = {
    "zero_": lambda x: rg.zero_(x.clone()),
    "svd_lowrank": lambda a, b, **k: rg.svd_lowrank(a @ b.mT, **k),
    "pca_lowrank": lambda a, b, **k: rg.pca_lowrank(a @ b.mT, **k),
    "where": lambda self, c, other, **k: rg.where(c, self, other, **k),
    "to": lambda x, *a, **k: x.to(*a, **k),
    "linalg.pinv.singular": lambda a, b, **k: rg.linalg.pinv(a @ b.mT, **k),
    "linalg.lstsq.grad_oriented":
        lambda a, b, driver=None: rg.linalg.lstsq(a, b, driver=driver)[:2],
}
NO_REBIND = ("bernoulli", "svd_lowrank", "pca_lowrank")


def _rebind(fn):
    """`fn` (a lambda of the OpInfo table) rerun with `torch` bound to retrograd; functions
    it closes over are rebound too, and so are the ones it creates when called."""
    cells = None
    if fn.__closure__:
        cells = tuple(types.CellType(_rebind(c.cell_contents) if isinstance(
            c.cell_contents, types.FunctionType) else c.cell_contents) for c in fn.__closure__)
    g = dict(fn.__globals__)
    g["torch"] = rg
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, cells)


def label_of(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def rg_callable(op):
    name = op.name
    for key in (label_of(op), name):
        if key in SPECIAL:
            return SPECIAL[key]
    if getattr(op.op, "__name__", "") == "<lambda>" and name not in NO_REBIND:
        return _rebind(op.op)
    if name.startswith("__r") or name.startswith("__"):
        meth = name
        return lambda x, *a, **k: getattr(x, meth)(*a, **k)
    parts = name.split(".")
    mod = rg
    try:
        for p in parts:
            mod = getattr(mod, p)
        return mod
    except AttributeError:
        pass
    if len(parts) == 1 and hasattr(rg.Tensor, name):
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    return None


def wrapped(op, f_rg):
    """Both libraries' callables through the op's gradcheck_wrapper (hermitian, triangular,
    ctc_loss's log_softmax, ...), the retrograd one rebound; the masked and seeded wrappers
    are left out (retrograd has no torch.masked)."""
    w = op.gradcheck_wrapper
    wn = getattr(w, "__name__", "")
    if "masked" in wn or wn == "wrapper_set_seed":
        return op, f_rg
    w_rg = _rebind(w)
    return (lambda *a, **k: w(op, *a, **k)), (lambda *a, **k: w_rg(f_rg, *a, **k))


def to_rg(x):
    if isinstance(x, torch.Tensor):
        t = rg.tensor(x.detach().resolve_conj().resolve_neg().numpy().copy())
        if x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(to_rg(v) for v in x) if not hasattr(x, "_fields") else x
    if isinstance(x, dict):
        return {k: to_rg(v) for k, v in x.items()}
    if isinstance(x, torch.nn.PairwiseDistance):
        return rg.nn.PairwiseDistance(p=x.norm, eps=x.eps, keepdim=x.keepdim)
    if isinstance(x, torch.memory_format):
        return getattr(rg, str(x).split(".")[1], x)
    if isinstance(x, torch.dtype):
        return getattr(rg, str(x).split(".")[1], x)
    return x


def flat(x):
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out += flat(v)
        return out
    return [x]


def _leaves(tree, pred):
    """The leaves of (input, args, kwargs)-like trees that satisfy `pred`, in order."""
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return [y for v in tree for y in _leaves(v, pred)]
    if isinstance(tree, dict):
        return [y for v in tree.values() for y in _leaves(v, pred)]
    return [tree] if pred(tree) else []


def _subst(tree, pred, it):
    """`tree` with its `pred` leaves replaced, in order, by the items of `it`."""
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return type(tree)(_subst(v, pred, it) for v in tree)
    if isinstance(tree, dict):
        return {k: _subst(v, pred, it) for k, v in tree.items()}
    return next(it) if pred(tree) else tree


def _plugged(f, tree, pred, kw=None, post=None):
    """`f` on `tree` = [input, args] or [input, args, kwargs] (plus the fixed `kw`), its
    `pred` leaves replaced, in order, by the arguments; `post` applied to the result."""
    def g(*ts):
        inp, args, *k = _subst(tree, pred, iter(ts))
        out = f(inp, *args, **(k[0] if k else {}), **(kw or {}))
        return post(out) if post else out
    return g


def _is_t(x):
    return isinstance(x, torch.Tensor)


def _is_r(x):
    return isinstance(x, rg.Tensor)


def _is_diff_t(x):
    return _is_t(x) and (x.dtype.is_floating_point or x.dtype.is_complex)


def _is_diff_r(x):
    return _is_r(x) and x.dtype.kind in "fc"


def _kind(o):
    return "c" if o.is_complex() else "f" if o.is_floating_point() else "i"


def grad_leaves(lib, s_in, s_args, s_kw):
    T = torch.Tensor if lib is torch else rg.Tensor
    return [x for x in flat([s_in, list(s_args), list(s_kw.values())])
            if isinstance(x, T) and x.requires_grad]


def _diffable(lib, out, kinds="fc"):
    T = torch.Tensor if lib is torch else rg.Tensor
    return [o for o in flat(out) if isinstance(o, T) and o.requires_grad and _kind(o) in kinds]


def _rnd(gen, shape, cplx):
    r = gen.standard_normal(shape)
    return r + 1j * gen.standard_normal(shape) if cplx else r


def as_np(x):
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided:
            x = x.to_dense()
        return x.detach().resolve_conj().resolve_neg().numpy(force=True)
    if isinstance(x, rg.Tensor):
        return np.asarray(x.detach().numpy())
    return x


def compare(e, a, rtol, atol):
    fe, fa = flat(e), flat(a)
    if len(fe) != len(fa):
        return f"{len(fa)} outputs vs torch's {len(fe)}"
    for i, (x, y) in enumerate(zip(fe, fa)):
        if isinstance(x, torch.Tensor):
            if not isinstance(y, rg.Tensor):
                return f"output {i}: {type(y).__name__}, torch gives a Tensor"
            xn, yn = as_np(x), as_np(y)
            if str(x.dtype).split(".")[1] != str(yn.dtype):
                if not (x.dtype == torch.bool and yn.dtype == np.bool_):
                    return f"output {i}: dtype {yn.dtype}, torch {x.dtype}"
            if xn.shape != yn.shape:
                return f"output {i}: shape {yn.shape}, torch {tuple(xn.shape)}"
            if xn.dtype.kind in "fc":
                if not np.allclose(yn, xn, rtol=rtol, atol=atol, equal_nan=True):
                    d = np.nanmax(np.abs(yn.astype(complex) - xn.astype(complex))) if xn.size else 0
                    return f"output {i}: values differ (max abs diff {d:.3g})"
            elif not np.array_equal(yn, xn):
                return f"output {i}: values differ"
        elif isinstance(x, (int, float, bool, complex)):
            yv = y.item() if isinstance(y, rg.Tensor) else y
            if not (x == yv or (x != x and yv != yv)) and not np.isclose(x, yv, rtol, atol):
                return f"output {i}: {yv!r}, torch {x!r}"
    return None


def _cmp_grads(ge, ga, shapes, rtol=1e-6, atol=1e-8):
    """Gradients (None = zeros) against torch's."""
    for i, (x, y) in enumerate(zip(ge, ga)):
        if x is None and y is None:
            continue
        xn = np.zeros(shapes[i]) if x is None else as_np(x)
        yn = np.zeros(shapes[i]) if y is None else as_np(y)
        if xn.shape != yn.shape:
            return f"grad {i}: shape {yn.shape}, torch {xn.shape}"
        if not np.allclose(yn, xn, rtol, atol, equal_nan=True):
            d = np.nanmax(np.abs(yn - xn)) if xn.size else 0
            return f"grad {i} differs (max abs diff {d:.3g})"
    return None


def _tol(dn):
    return ((1e-7, 1e-9) if dn in ("float64", "complex128")
            else (2e-3, 1e-3) if dn == "float16" else (1e-4, 1e-5))


def describe(s):
    def d(x):
        if isinstance(x, torch.Tensor):
            return f"T{tuple(x.shape)}:{str(x.dtype)[6:]}" + ("" if x.is_contiguous() else "(nc)")
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(d(v) for v in x) + "]"
        return repr(x)
    kwargs = {k: d(v) for k, v in s.kwargs.items()}
    return f"input={d(s.input)} args={d(list(s.args))} kwargs={kwargs}"


def _samples(op, dt, requires_grad=False):
    try:
        return list(op.sample_inputs("cpu", dt, requires_grad=requires_grad))
    except Exception:
        return []


def _dtypes(op, dtypes):
    return [(dn, DT[dn]) for dn in dtypes if DT[dn] in op.supported_dtypes("cpu")]


# ------------------------------------------------------------ sample / ref / err

def check_forward(op, f_rg, mode, dtypes, stats, first):
    for dn, dt in _dtypes(op, dtypes):
        try:
            if mode == "ref":
                samples = list(op.reference_inputs("cpu", dt, requires_grad=False))
            elif mode == "err":
                samples = []
                if dn == "float64":
                    for ei in op.error_inputs("cpu"):
                        samples.append(ei.sample_input)
                        ERRT[id(ei.sample_input)] = ei.error_type
            else:
                samples = list(op.sample_inputs("cpu", dt, requires_grad=False))
        except Exception:
            continue
        for s in samples:
            try:
                e = op(s.input, *s.args, **s.kwargs)
                te = None
            except Exception as exc:
                te = exc
            try:
                a = f_rg(to_rg(s.input), *to_rg(s.args), **to_rg(s.kwargs))
                ta = None
            except Exception as exc:
                ta = exc
            key = None
            if te is not None and ta is not None:
                stats["both_raise"] += 1
                if not isinstance(ta, type(te)) and not (isinstance(te, RuntimeError)
                                                         and isinstance(ta, RuntimeError)):
                    first.setdefault("exc_type", f"[{dn}] {describe(s)} -> rg "
                                     f"{type(ta).__name__}: {str(ta)[:100]} | torch "
                                     f"{type(te).__name__}: {str(te)[:100]}")
                continue
            if te is not None:
                key, msg = "rg_missing_raise", f"torch raises {type(te).__name__}: {str(te)[:100]}"
            elif ta is not None:
                key, msg = "rg_raises", f"{type(ta).__name__}: {str(ta)[:160]}"
            else:
                m = compare(e, a, *_tol(dn))
                if m:
                    key, msg = "mismatch", m
            if key is None:
                stats["ok"] += 1
            else:
                stats[key] += 1
                first.setdefault(key, f"[{dn}] {describe(s)} -> {msg}")


def _grad_cases(op, ft, dt, kinds="fc"):
    """Per sample that torch differentiates: (sample, torch's leaves, its differentiable
    outputs, a random cotangent per output, the generator for any further draws)."""
    for s in _samples(op, dt, requires_grad=True):
        leaves_t = grad_leaves(torch, s.input, s.args, s.kwargs)
        if not leaves_t:
            continue
        gen = np.random.default_rng(0)
        try:
            outs = _diffable(torch, s.output_process_fn_grad(ft(s.input, *s.args, **s.kwargs)),
                             kinds)
        except Exception:
            continue
        if outs:
            yield s, leaves_t, outs, [_rnd(gen, o.shape, o.is_complex()) for o in outs], gen


def _rg_case(s, fr, n_outs: int, kinds: str = "fc"):
    """retrograd's side of a `_grad_cases` sample: its leaves and differentiable outputs
    (as many as torch's, else RuntimeError)."""
    rin, rargs, rkw = to_rg(s.input), to_rg(s.args), to_rg(s.kwargs)
    leaves_r = grad_leaves(rg, rin, rargs, rkw)
    outs_r = _diffable(rg, s.output_process_fn_grad(fr(rin, *rargs, **rkw)), kinds)
    if len(outs_r) != n_outs:
        raise RuntimeError(f"{len(outs_r)} differentiable outputs, torch {n_outs}")
    return leaves_r, outs_r


def check_vjp(op, f_rg, stats, first, dt=torch.float64):
    """vjp with a fixed random cotangent w.r.t. every input tensor; for complex128, the
    grads of the real loss L = sum(real(out * conj(v)))."""
    ft, fr = wrapped(op, f_rg)
    tag = "cx" if dt == torch.complex128 else "grad"
    for s, leaves_t, outs, cots, _ in _grad_cases(op, ft, dt, "fc"):
        try:
            ge = torch.autograd.grad(outs, leaves_t, [torch.tensor(c) for c in cots],
                                     allow_unused=True)
        except Exception:
            continue
        try:
            leaves_r, outs_r = _rg_case(s, fr, len(outs))
            bad = compare(outs, outs_r, 1e-7, 1e-9)
            if bad:
                stats["mismatch"] += 1
                first.setdefault(f"{tag}_value", f"[{tag}] {describe(s)} -> {bad}")
                continue
            ga = rg.autograd.grad(outs_r, leaves_r, [rg.tensor(c) for c in cots],
                                  allow_unused=True)
        except Exception as exc:
            stats["rg_raises"] += 1
            first.setdefault(f"{tag}_raises", f"[{tag}] {describe(s)} -> "
                             f"{type(exc).__name__}: {str(exc)[:160]}")
            continue
        bad = _cmp_grads(ge, ga, [x.shape for x in leaves_t])
        if bad:
            stats["mismatch"] += 1
            first.setdefault(f"{tag}_mismatch", f"[{tag}] {describe(s)} -> {bad}")
        else:
            stats["ok"] += 1


def check_gradgrad(op, f_rg, stats, first, dt=torch.float64):
    """vjp with create_graph=True, then grad of <vjp, w> w.r.t. inputs and cotangent."""
    ft, fr = wrapped(op, f_rg)
    kinds = "fc" if dt == torch.complex128 else "f"

    def inner(lib, gi, w):
        wt = lib.tensor(w)
        return (gi * wt.conj()).real.sum() if gi.is_complex() else (gi * wt).sum()
    for s, leaves_t, outs, cots, gen in _grad_cases(op, ft, dt, kinds):
        try:
            ws = [_rnd(gen, x.shape, x.is_complex()) for x in leaves_t]
            vt = [torch.tensor(c, requires_grad=True) for c in cots]
            g = torch.autograd.grad(outs, leaves_t, vt, create_graph=True, allow_unused=True)
            terms = [inner(torch, gi, w) for gi, w in zip(g, ws)
                     if gi is not None and gi.requires_grad]
            if not terms:
                continue
            ge = torch.autograd.grad(sum(terms), leaves_t + vt, allow_unused=True)
        except Exception:
            continue
        try:
            leaves_r, outs_r = _rg_case(s, fr, len(outs), kinds)
            vr = [rg.tensor(c, requires_grad=True) for c in cots]
            gr = rg.autograd.grad(outs_r, leaves_r, vr, create_graph=True, allow_unused=True)
            first_cmp = _cmp_grads([x.detach() if x is not None else None for x in g],
                                   [x.detach() if x is not None else None for x in gr],
                                   [x.shape for x in leaves_t])
            if first_cmp:
                stats["mismatch"] += 1
                first.setdefault("gg_first_order", f"[gg] {describe(s)} -> {first_cmp}")
                continue
            terms_r = [inner(rg, gi, w) for gi, w in zip(gr, ws)
                       if gi is not None and gi.requires_grad]
            if not terms_r:
                ga = [None] * len(ge)
            else:
                ga = rg.autograd.grad(sum(terms_r), leaves_r + vr, allow_unused=True)
        except Exception as exc:
            stats["rg_raises"] += 1
            first.setdefault("gg_raises", f"[gg] {describe(s)} -> "
                             f"{type(exc).__name__}: {str(exc)[:160]}")
            continue
        bad = _cmp_grads(ge, ga, [x.shape for x in leaves_t] + [v.shape for v in vt])
        if bad:
            stats["mismatch"] += 1
            first.setdefault("gg_mismatch", f"[gg] {describe(s)} -> {bad}")
        else:
            stats["ok"] += 1


# ------------------------------------------------------------ jvp / fwad / jacfwd

def _fwad_jvp(lib):
    """jvp by dual numbers (autograd.forward_ad): tangents of tensor outputs, zeros where
    an output carries none."""
    fwAD = lib.autograd.forward_ad

    def jvp(f, prims, tans):
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) for p, t in zip(prims, tans)]
            out = f(*duals)

            def unpack(o):
                if isinstance(o, (list, tuple)):
                    vals = [unpack(v) for v in o]
                    return [v[0] for v in vals], [v[1] for v in vals]
                if isinstance(o, lib.Tensor):
                    p, t = fwAD.unpack_dual(o)
                    return p, lib.zeros_like(p) if t is None else t
                return o, None
            p, t = unpack(out)
        return p, t
    return jvp


def check_forward_ad(op, f_rg, mode, dtypes, stats, first):
    wt, wr = wrapped(op, f_rg)
    for dn, dt in _dtypes(op, dtypes):
        for si, s in enumerate(_samples(op, dt)):
            kw = dict(s.kwargs)
            fixed = {}
            if any(n in op.name for n in ("nll_loss", "cross_entropy")) and "weight" in kw:
                fixed["weight"] = kw.pop("weight")  # torch: not differentiable (zero tangent)
            tree_t = [s.input, list(s.args), kw]
            prim_t = [x.detach() for x in _leaves(tree_t, _is_diff_t)]
            if not prim_t:
                continue
            fixed_r = to_rg(fixed)
            gen = np.random.default_rng(si)
            tans = [_rnd(gen, p.shape, p.dtype.is_complex).astype(as_np(p).dtype)
                    for p in prim_t]
            tree_r = to_rg(tree_t)
            prim_r = _leaves(tree_r, _is_diff_r)

            ft = _plugged(wt, tree_t, _is_diff_t, fixed, s.output_process_fn_grad)
            fr = _plugged(wr, tree_r, _is_diff_r, fixed_r, s.output_process_fn_grad)
            where = f"[{dn}] {describe(s)}"
            if mode == "jacfwd" and sum(p.numel() for p in prim_t) > 150:
                continue
            nums = tuple(range(len(prim_t)))
            try:
                eo, et = _forward_call(torch, mode, ft, prim_t, tans, nums)
            except Exception as exc:
                stats["torch_raises"] += 1
                first.setdefault("torch_raises", f"{where} -> {type(exc).__name__}: "
                                 f"{str(exc)[:100]}")
                continue
            try:
                if len(prim_r) != len(prim_t):
                    raise RuntimeError(f"harness: {len(prim_r)} rg primals vs {len(prim_t)}")
                ao, at = _forward_call(rg, mode, fr, prim_r, tans, nums)
            except Exception as exc:
                stats["rg_raises"] += 1
                first.setdefault("rg_raises", f"{where} -> {type(exc).__name__}: "
                                 f"{str(exc)[:160]}")
                continue
            if mode == "jacfwd":
                m = compare(eo, ao, 1e-6, 1e-8)
                m = m and "jac " + m
            else:
                m = compare(eo, ao, 1e-7, 1e-9)
                if m:
                    m = "primal " + m
                else:
                    m = compare(et, at, 1e-6, 1e-8)
                    m = m and "tangent " + m
            if m:
                stats["mismatch"] += 1
                first.setdefault("mismatch", f"{where} -> {m}")
            else:
                stats["ok"] += 1


def _forward_call(lib, mode, f, prims, tans, nums):
    """(outputs, tangents) of `f` at `prims` in `lib` (torch or rg): jacfwd's Jacobians
    (tangents None), or jvp through func.jvp or dual numbers (fwad)."""
    if mode == "jacfwd":
        return lib.func.jacfwd(f, argnums=nums)(*prims), None
    jvp = _fwad_jvp(lib) if mode == "fwad" else lib.func.jvp
    return jvp(f, tuple(prims), tuple(lib.tensor(v) for v in tans))


# ------------------------------------------------------------ vmap

def _perturb(x, gen, k):
    """A copy of `x` with other values of the same kind (k = which copy)."""
    if x.numel() == 0:
        return x.clone()
    if x.is_floating_point() or x.is_complex():
        u = torch.tensor(gen.uniform(-1, 1, size=tuple(x.shape)), dtype=torch.float64)
        y = x.detach().to(torch.complex128 if x.is_complex() else torch.float64)
        z = y * (1 + 0.05 * k * u)
        if x.ndim >= 2 and x.shape[-1] == x.shape[-2] and torch.allclose(y, y.mH):
            z = (z + z.mH) / 2  # keep symmetric/Hermitian samples so
    else:
        flat_ = x.detach().reshape(-1)
        perm = torch.tensor(gen.permutation(flat_.numel()))
        z = flat_[perm].reshape(x.shape).clone()
    if x.ndim >= 1 and x.dtype != torch.bool and not x.is_complex() and x.shape[-1] > 1 \
            and bool((x.diff(dim=-1) >= 0).all()):
        z = z.sort(dim=-1).values  # keep sorted samples sorted (searchsorted, bucketize)
    return z.to(x.dtype)


def _batch(copies, d):
    st = torch.stack(copies, 0)
    return st if d in (0, None) else st.movedim(0, d).contiguous()


def check_vmap(op, f_rg, dtypes, grad, stats, first):
    gen = np.random.default_rng(0)
    for dn, dt in _dtypes(op, dtypes):
        samples = _samples(op, dt)
        for s in samples:
            pos = [s.input, list(s.args)]   # the positional tensors are batched
            tens = _leaves(pos, _is_t)
            if not tens:
                continue
            call_t = _plugged(op, pos, _is_t, s.kwargs)
            pert = [[t, _perturb(t, gen, 1), _perturb(t, gen, 2)] for t in tens]
            try:  # the perturbed copies must be valid inputs (each copy run alone)
                for b in range(3):
                    call_t(*[c[b] for c in pert])
            except Exception:
                pert = [[t, t.clone(), t.clone()] for t in tens]
            # in_dims cases: all at 0; first at -1 (others None); first None (others at 0)
            cases = [[0] * len(tens)]
            if tens[0].ndim >= 1:
                cases.append([-1] + [None] * (len(tens) - 1))
            elif len(tens) > 1 and tens[1].ndim >= 1:
                cases.append([None, 1] + [None] * (len(tens) - 2))
            if len(tens) > 1:
                cases.append([None] + [0] * (len(tens) - 1))
            call_r = _plugged(f_rg, to_rg(pos), _is_r, to_rg(s.kwargs))
            for dims in cases:
                args_t = [(_batch(c, d) if d is not None else t)
                          for t, c, d in zip(tens, pert, dims)]
                try:
                    e = torch.func.vmap(call_t, in_dims=tuple(dims))(*args_t)
                    te = None
                except Exception as exc:
                    te = exc
                try:
                    a = rg.func.vmap(call_r, in_dims=tuple(dims))(*[to_rg(x) for x in args_t])
                    ta = None
                except Exception as exc:
                    ta = exc
                key = None
                where = f"[{dn} in_dims={dims}] {describe(s)}"
                if te is not None and ta is not None:
                    stats["both_raise"] += 1
                    continue
                if te is not None:
                    stats["torch_raises"] += 1
                    first.setdefault("torch_raises", f"{where} -> torch {type(te).__name__}: "
                                     f"{str(te)[:100]}")
                    continue
                if ta is not None:
                    key, msg = "rg_raises", f"{type(ta).__name__}: {str(ta)[:160]}"
                else:
                    msg = compare(e, a, *_tol(dn))
                    if msg:
                        key = "mismatch"
                if key is None:
                    stats["ok"] += 1
                else:
                    stats[key] += 1
                    first.setdefault(key, f"{where} -> {msg}")
        if grad and dn == "float64" and op.supports_autograd:
            for s in samples:  # per-sample gradients: vmap(grad), one sample per op
                if not (isinstance(s.input, torch.Tensor) and s.input.is_floating_point()):
                    continue
                x = s.input
                xb = _batch([x, _perturb(x, gen, 1), _perturb(x, gen, 2)], 0)

                def gt(xx, s=s):
                    o = op(xx, *s.args, **s.kwargs)
                    return [v for v in flat(o) if _is_t(v) and v.is_floating_point()][0].sum()
                try:
                    e = torch.func.vmap(torch.func.grad(gt))(xb)
                except Exception:
                    continue
                rargs, rkw = to_rg(s.args), to_rg(s.kwargs)

                def gr(xx, rargs=rargs, rkw=rkw):
                    o = f_rg(xx, *rargs, **rkw)
                    return [v for v in flat(o) if _is_r(v) and v.dtype.kind == "f"][0].sum()
                try:
                    a = rg.func.vmap(rg.func.grad(gr))(to_rg(xb))
                except Exception as exc:
                    stats["rg_raises"] += 1
                    first.setdefault("grad_raises", f"[vmap(grad)] {describe(s)} -> "
                                     f"{type(exc).__name__}: {str(exc)[:160]}")
                    break
                m = compare(e, a, 1e-6, 1e-8)
                if m:
                    stats["mismatch"] += 1
                    first.setdefault("grad_mismatch", f"[vmap(grad)] {describe(s)} -> {m}")
                else:
                    stats["ok"] += 1
                break


# ------------------------------------------------------------ driver

def run_op(op, mode, dtypes, grad, verbose):
    label = label_of(op)
    if mode in ("jvp", "fwad", "jacfwd") and not op.supports_forward_ad:
        return
    if mode in ("gradgrad", "cgradgrad") and not (op.supports_autograd
                                                  and op.supports_gradgrad):
        return
    if mode == "cgradgrad" and torch.complex128 not in op.supported_backward_dtypes("cpu"):
        return
    f_rg = rg_callable(op)
    if f_rg is None:
        print(f"{label}: MISSING in retrograd")
        return
    if mode in ("jvp", "fwad", "jacfwd"):
        stats = {"ok": 0, "mismatch": 0, "rg_raises": 0, "torch_raises": 0}
    else:
        stats = {"ok": 0, "mismatch": 0, "rg_raises": 0, "rg_missing_raise": 0,
                 "both_raise": 0}
        if mode == "vmap":
            stats["torch_raises"] = 0
    first = {}
    if mode in ("sample", "ref", "err"):
        check_forward(op, f_rg, mode, dtypes, stats, first)
        if grad and "float64" in dtypes and op.supports_autograd \
                and torch.float64 in op.supported_dtypes("cpu"):
            check_vjp(op, f_rg, stats, first)
    elif mode == "complex":
        if torch.complex128 in op.supported_dtypes("cpu"):
            check_forward(op, f_rg, "sample", ["complex128"], stats, first)
        if op.supports_autograd and torch.complex128 in op.supported_backward_dtypes("cpu"):
            check_vjp(op, f_rg, stats, first, torch.complex128)
    elif mode == "gradgrad":
        check_gradgrad(op, f_rg, stats, first)
    elif mode == "cgradgrad":
        check_gradgrad(op, f_rg, stats, first, torch.complex128)
    elif mode == "vmap":
        check_vmap(op, f_rg, dtypes, grad, stats, first)
    else:
        check_forward_ad(op, f_rg, mode, dtypes, stats, first)
    n_bad = stats["mismatch"] + stats["rg_raises"] + stats.get("rg_missing_raise", 0)
    tr = stats.get("torch_raises", 0)
    print(f"{label}: {stats}" if n_bad or verbose else f"{label}: ok {stats['ok']}"
          + (f" (torch raises {tr})" if tr else ""))
    for k, v in first.items():
        if k != "torch_raises" or verbose:
            print(f"    {k}: {v}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="lo", default="a")
    ap.add_argument("--to", dest="hi", default="z")
    ap.add_argument("--ops", default=None)
    ap.add_argument("--dtypes", default="float64,float32,int64,bool")
    ap.add_argument("--grad", action="store_true")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--mode", default="sample", choices=MODES)
    for m in FLAG_MODES:
        ap.add_argument(f"--{m}", action="store_true", help=f"the same as --mode {m}")
    args = ap.parse_args()
    flags = [m for m in FLAG_MODES if getattr(args, m)]
    if args.fwad or args.jacfwd:  # as in `--jvp --fwad`: the variant names the mode
        flags = [m for m in flags if m != "jvp"]
    if len(flags) > 1 or (flags and args.mode != "sample"):
        ap.error("one mode at a time")
    mode = flags[0] if flags else args.mode
    dtypes = args.dtypes.split(",")
    names = set(args.ops.split(",")) if args.ops else None
    for op in op_db:
        last = op.name.split(".")[-1].lstrip("_")
        if names is not None:
            if op.name not in names and last not in names:
                continue
        elif not (args.lo <= last[:1] <= args.hi):
            continue
        try:
            run_op(op, mode, dtypes, args.grad, args.v)
        except Exception:
            print(f"{op.name}: HARNESS ERROR\n" + traceback.format_exc(limit=2))


if __name__ == "__main__":
    main()
