"""Run PyTorch's own OpInfo sample inputs (torch.testing._internal's op_db) against
retrograd: a sweep for gaps, not a test (it needs `expecttest`, in the `test` extra).

    OMP_NUM_THREADS=1 .venv/bin/python scripts/opinfo_sweep.py --from a --to f --grad
    .venv/bin/python scripts/opinfo_sweep.py --ops abs,add --dtypes float64,complex128
    .venv/bin/python scripts/opinfo_sweep.py --from r --to z --mode err   # error_inputs

For every OpInfo whose name falls in [from, to] (first letter of the last dotted part, or
the --ops list), each sample input is converted to retrograd (values copied), the op is
called in both libraries and the results compared: values (allclose, NaN equal), dtype,
shape; where torch raises, retrograd must raise too. With --grad, float64 samples are also
differentiated (vjp with a fixed random cotangent w.r.t. every input tensor); `--mode ref`
uses the larger reference_inputs, `--mode err` the error_inputs (exception types). Prints
one line per op with counts and the first mismatch of each kind (a reproducer). Some
reports are the harness's own artifacts or PyTorch quirks: check each by hand.
"""
import argparse
import sys
import traceback
import warnings

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

import retrograd as rg

warnings.filterwarnings("ignore")

MODE = "sample"
ERRT = {}

DT = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64,
      "bool": torch.bool, "complex128": torch.complex128, "int32": torch.int32,
      "uint8": torch.uint8, "float16": torch.float16}


SPECIAL = {
    "zero_": lambda x: rg.zero_(x.clone()),
    "svd_lowrank": lambda a, b, **k: rg.svd_lowrank(a @ b.mT, **k),
    "where": lambda self, c, other, **k: rg.where(c, self, other, **k),
    "to": lambda x, *a, **k: x.to(*a, **k),
    "short": lambda x, *a, **k: x.short(*a, **k),
}


def rg_callable(op):
    name = op.name
    if name in SPECIAL:
        return SPECIAL[name]
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
        return f"{len(fe)} outputs vs torch's {len(fe)}"
    for i, (x, y) in enumerate(zip(fe, fa)):
        if isinstance(x, torch.Tensor):
            if not isinstance(y, rg.Tensor):
                return f"output {i}: {type(y).__name__}, torch gives a Tensor"
            xn, yn = as_np(x), as_np(y)
            if str(x.dtype).split(".")[1] != str(yn.dtype).replace("bool", "bool"):
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
        elif isinstance(x, (int, float, bool, complex)) and not isinstance(x, torch.Tensor):
            yv = y.item() if isinstance(y, rg.Tensor) else y
            if not (x == yv or (x != x and yv != yv)) and not np.isclose(x, yv, rtol, atol):
                return f"output {i}: {yv!r}, torch {x!r}"
    return None


def describe(s):
    def d(x):
        if isinstance(x, torch.Tensor):
            return f"T{tuple(x.shape)}:{str(x.dtype)[6:]}" + ("" if x.is_contiguous() else "(nc)")
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(d(v) for v in x) + "]"
        return repr(x)
    kwargs = {k: d(v) for k, v in s.kwargs.items()}
    return f"input={d(s.input)} args={d(list(s.args))} kwargs={kwargs}"


def run_op(op, dtypes, grad, verbose):
    f_rg = rg_callable(op)
    label = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
    if f_rg is None:
        print(f"{label}: MISSING in retrograd")
        return
    stats = {"ok": 0, "mismatch": 0, "rg_raises": 0, "rg_missing_raise": 0, "both_raise": 0}
    first = {}
    for dn in dtypes:
        dt = DT[dn]
        if dt not in op.supported_dtypes("cpu"):
            continue
        try:
            if MODE == "ref":
                samples = list(op.reference_inputs("cpu", dt, requires_grad=False))
            elif MODE == "err":
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
                tol = ((1e-7, 1e-9) if dn in ("float64", "complex128")
                       else (2e-3, 1e-3) if dn == "float16" else (1e-4, 1e-5))
                m = compare(e, a, *tol)
                if m:
                    key, msg = "mismatch", m
            if key is None:
                stats["ok"] += 1
            else:
                stats[key] += 1
                first.setdefault(key, f"[{dn}] {describe(s)} -> {msg}")
        if grad and dn == "float64" and op.supports_autograd:
            try:
                samples = list(op.sample_inputs("cpu", dt, requires_grad=True))
            except Exception:
                samples = []
            for s in samples:
                leaves_t = [x for x in flat([s.input, list(s.args), list(s.kwargs.values())])
                            if isinstance(x, torch.Tensor) and x.requires_grad]
                if not leaves_t:
                    continue
                try:
                    e = op(s.input, *s.args, **s.kwargs)
                    outs = [o for o in flat(e) if isinstance(o, torch.Tensor) and o.requires_grad]
                    if not outs:
                        continue
                    gen = np.random.default_rng(0)
                    cots = [gen.standard_normal(o.shape) for o in outs]
                    ge = torch.autograd.grad(outs, leaves_t, [torch.tensor(c) for c in cots],
                                             allow_unused=True)
                except Exception:
                    continue
                rin, rargs, rkw = to_rg(s.input), to_rg(s.args), to_rg(s.kwargs)
                leaves_r = [x for x in flat([rin, list(rargs), list(rkw.values())])
                            if isinstance(x, rg.Tensor) and x.requires_grad]
                try:
                    a = f_rg(rin, *rargs, **rkw)
                    outs_r = [o for o in flat(a) if isinstance(o, rg.Tensor) and o.requires_grad]
                    if len(outs_r) != len(outs):
                        raise RuntimeError(f"{len(outs_r)} differentiable outputs, "
                                           f"torch {len(outs)}")
                    ga = rg.autograd.grad(outs_r, leaves_r, [rg.tensor(c) for c in cots],
                                          allow_unused=True)
                except Exception as exc:
                    stats["rg_raises"] += 1
                    first.setdefault("grad_raises", f"[grad] {describe(s)} -> "
                                     f"{type(exc).__name__}: {str(exc)[:160]}")
                    continue
                bad = None
                for i, (x, y) in enumerate(zip(ge, ga)):
                    if x is None and y is None:
                        continue
                    xn = np.zeros(leaves_t[i].shape) if x is None else as_np(x)
                    yn = np.zeros(leaves_t[i].shape) if y is None else as_np(y)
                    if xn.shape != yn.shape or not np.allclose(yn, xn, 1e-6, 1e-8, equal_nan=True):
                        bad = f"grad of input {i} differs"
                        break
                if bad:
                    stats["mismatch"] += 1
                    first.setdefault("grad_mismatch", f"[grad] {describe(s)} -> {bad}")
                else:
                    stats["ok"] += 1
    n_bad = stats["mismatch"] + stats["rg_raises"] + stats["rg_missing_raise"]
    print(f"{label}: {stats}" if n_bad or verbose else f"{label}: ok {stats['ok']}")
    for k, v in first.items():
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
    ap.add_argument("--mode", default="sample")
    args = ap.parse_args()
    global MODE
    MODE = args.mode
    names = set(args.ops.split(",")) if args.ops else None
    for op in op_db:
        last = op.name.split(".")[-1].lstrip("_")
        if names is not None:
            if op.name not in names and last not in names:
                continue
        elif not (args.lo <= last[:1] <= args.hi):
            continue
        try:
            run_op(op, args.dtypes.split(","), args.grad, args.v)
        except Exception:
            print(f"{op.name}: HARNESS ERROR\n" + traceback.format_exc(limit=2))


if __name__ == "__main__":
    main()
